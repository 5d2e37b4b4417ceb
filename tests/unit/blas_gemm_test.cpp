// GEMM steps that run through BLAS (B not constant) split into blocks of
// columns, or of rows where C is narrow, when their matrices are few
// (exec/parallel.h's blasGemmSplit): plain, transposed B, a batch of two,
// f64, narrow C with A plain and transposed. On the cpu target each must
// match the interpreter and give the same bits on 1, 2 and 3 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>

#include "codegen/backend.h"
#include "exec/parallel.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "tests/unit/test_util.h"

namespace kfuse {
namespace {

Tensor wave(const TensorType& t, double phase) {
  Tensor x(t);
  for (int64_t i = 0; i < x.numElements(); ++i) x.set(i, std::sin(0.37 * static_cast<double>(i) + phase));
  return x;
}

struct Case {
  const char* name;
  const char* text;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

const Case kCases[] = {
    {"plain", R"(module @m {
  func @main(%a: f32[64,256], %b: f32[256,1000]) -> (f32[64,1000]) {
    %c = matmul %a, %b : f32[64,1000]
    return %c
  }
})"},
    {"transposed_b", R"(module @m {
  func @main(%a: f32[48,192], %b: f32[1100,192]) -> (f32[48,1100]) {
    %c = matmul %a, %b {transpose_b = true} : f32[48,1100]
    return %c
  }
})"},
    {"batch_of_two", R"(module @m {
  func @main(%a: f32[2,64,256], %b: f32[2,256,600]) -> (f32[2,64,600]) {
    %c = matmul %a, %b : f32[2,64,600]
    return %c
  }
})"},
    {"f64", R"(module @m {
  func @main(%a: f64[64,256], %b: f64[256,777]) -> (f64[64,777]) {
    %c = matmul %a, %b : f64[64,777]
    return %c
  }
})"},
    // A narrow model's linear layer (128 wide): blocks of rows, the last
    // one shorter.
    {"narrow", R"(module @m {
  func @main(%a: f32[600,128], %b: f32[128,128]) -> (f32[600,128]) {
    %c = matmul %a, %b : f32[600,128]
    return %c
  }
})"},
    {"narrow_transposed_a", R"(module @m {
  func @main(%a: f32[96,520], %b: f32[96,100]) -> (f32[520,100]) {
    %c = matmul %a, %b {transpose_a = true} : f32[520,100]
    return %c
  }
})"},
};

class BlasGemm : public testing::TestWithParam<Case> {};

TEST_P(BlasGemm, SplitsIntoColumnBlocksWithTheSameBitsOnEveryThreadCount) {
  auto module = parseModule(GetParam().text, "gemm.kir", {});
  ASSERT_TRUE(module) << module.error().message();
  const Graph& fn = *(*module)->functions().front();
  std::vector<Tensor> args;
  for (size_t i = 0; i < fn.arguments().size(); ++i)
    args.push_back(wave(fn.arguments()[i]->type(), static_cast<double>(i)));
  auto want = interpret(fn, args);
  ASSERT_TRUE(want) << want.error().message();

  // The case really splits.
  const Shape& a = fn.arguments()[0]->type().shape;
  const Shape& c = want->outputs[0].type().shape;
  GemmSpec g;
  g.batch = Shape(a.begin(), a.end() - 2);
  g.m = c[c.size() - 2];
  g.k = a[a.size() - 2] + a.back() - g.m;  // whichever of A's dims is not C's rows
  g.n = c.back();
  EXPECT_GT(blasGemmSplit(g).blocks, 1);

  std::vector<Tensor> outputs;
  for (int threads : {1, 2, 3}) {
    auto exec = createExecutor("cpu", {.threads = threads});
    ASSERT_TRUE(exec) << exec.error().message();
    auto got = (*exec)->run(fn, args);
    ASSERT_TRUE(got) << got.error().message();
    outputs.push_back(got->outputs[0]);
  }
  const bool f64 = want->outputs[0].type().dtype == DType::F64;
  EXPECT_EQ(test::compareTensors(outputs[0], want->outputs[0], f64 ? 1e-12 : 1e-4, f64 ? 1e-12 : 1e-5), "");
  for (size_t i = 1; i < outputs.size(); ++i)
    EXPECT_EQ(test::compareTensors(outputs[i], outputs[0], 0, 0), "") << "threads " << i + 1 << " against 1";
}

INSTANTIATE_TEST_SUITE_P(Shapes, BlasGemm, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

TEST(BlasGemmSplit, KeepsSmallProductsAndManyMatricesWhole) {
  GemmSpec g;
  g.m = 8, g.n = 64, g.k = 64;  // 65 KFLOP
  EXPECT_EQ(blasGemmSplit(g).blocks, 1);
  g.m = 128, g.n = 50257, g.k = 768;  // a language model's head: 4 blocks
  EXPECT_EQ(blasGemmSplit(g).blocks, 4);
  EXPECT_EQ(blasGemmSplit(g).columns % 32, 0);
  g.batch = {8};  // eight matrices share the threads already
  EXPECT_EQ(blasGemmSplit(g).blocks, 1);
  EXPECT_EQ(blasGemmWork(g).units, 8);
}

// C too narrow to cut into columns: rows instead, in blocks of at least 64
// (a multiple of 16), the same blocks whatever the thread count.
TEST(BlasGemmSplit, CutsNarrowProductsIntoRows) {
  GemmSpec g;
  g.m = 512, g.n = 128, g.k = 128;  // GPT-tiny's projections: 16.8 MFLOP
  GemmSplit s = blasGemmSplit(g);
  EXPECT_EQ(s.columns, 128);
  EXPECT_EQ(s.rows, 128);
  EXPECT_EQ(s.blocks, 4);
  g.m = 600;
  s = blasGemmSplit(g);
  EXPECT_EQ(s.rows, 160);
  EXPECT_EQ(s.blocks, 4);
  g.m = 100, g.k = 1024;  // too few rows for two blocks
  EXPECT_EQ(blasGemmSplit(g).blocks, 1);
  g.m = 512, g.n = 64, g.k = 64;  // 4 MFLOP: whole
  EXPECT_EQ(blasGemmSplit(g).blocks, 1);
}

}  // namespace
}  // namespace kfuse
