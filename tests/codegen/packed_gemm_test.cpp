// Packed GEMMs (codegen/cpu/gemm_emitter.h, exec/packed_gemm.h) against
// a plain triple loop in double: shapes with row and column remainders,
// partial vectors and panels, transposed B, each generated with several
// tilings so that every kind of block occurs whatever the host's vector
// width; and which GEMM steps the cpu target packs.
#include <gtest/gtest.h>

#include <cmath>

#include "codegen/backend.h"
#include "codegen/cpu/gemm_emitter.h"
#include "codegen/cpu/jit.h"
#include "tests/codegen/jit_harness.h"
#include "tests/codegen/module_harness.h"
#include "codegen/plan/plan_builder.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "exec/packed_gemm.h"
#include "tests/unit/test_util.h"

namespace kfuse {
namespace {

std::vector<float> wave(int64_t n, double phase) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + phase));
  return v;
}

// Generates g with `t`, packs B, runs it over C full of garbage; the first
// element that differs from the double-precision product by more than f32
// rounding of k terms, or "".
std::string check(const GemmSpec& g, const cpu::GemmTiling& t) {
  std::vector<float> a = wave(g.m * g.k, 0.0), b = wave(g.k * g.n, 1.0), c = wave(g.m * g.n + 64, 2.0);
  const std::vector<float> guard(c.end() - 64, c.end());
  cpu::PackedGemm gemm{"gemm", g, t};
  auto compiled = testing::sharedJit().compile(cpu::CodeBatch{{}, {}, std::span(&gemm, 1)});
  if (!compiled) return compiled.error().message();
  std::vector<float> packed(static_cast<size_t>(packedBElements(g)), NAN);
  packB(g, b.data(), packed.data());
  void* buffers[] = {a.data(), packed.data(), c.data()};
  testing::runInRanges(compiled->gemms[0], buffers, packedGemmWork(g));
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j) {
      double want = 0, scale = 0;
      for (int64_t kk = 0; kk < g.k; ++kk) {
        double bv = g.transB ? b[static_cast<size_t>(j * g.k + kk)] : b[static_cast<size_t>(kk * g.n + j)];
        want += static_cast<double>(a[static_cast<size_t>(i * g.k + kk)]) * bv;
        scale += std::fabs(static_cast<double>(a[static_cast<size_t>(i * g.k + kk)]) * bv);
      }
      double got = c[static_cast<size_t>(i * g.n + j)];
      if (!(std::fabs(got - want) <= 1e-6 * (scale + 1.0) * static_cast<double>(g.k)))
        return str("C[", i, ",", j, "] = ", got, ", want ", want);
    }
  if (!std::equal(guard.begin(), guard.end(), c.end() - 64)) return "wrote past C";
  return "";
}

const cpu::GemmTiling kTilings[] = {{16, 2, 12}, {8, 2, 6}, {4, 2, 6}, {16, 1, 5}, {8, 4, 3}, {4, 8, 1}};

TEST(PackedGemm, MatchesTheProductForEveryBlockShape) {
  struct Shape3 {
    int64_t m, k, n;
  };
  // The last four run columns outer: B past kPackedMaxBytes, of whole
  // panels only and ending in a partial panel (in groups of 256 and 51
  // panels, gemm_emitter.cpp's panelGroup), in groups of 6 that the ranges
  // cut, and one panel at a time with k past kPackedMaxK.
  const Shape3 shapes[] = {{1, 1, 1},          {12, 8, 32},    {13, 5, 33},   {25, 17, 100}, {7, 64, 16},
                           {36, 3, 64},        {2, 9, 47},     {13, 8, 65536 + 64}, {7, 40, 13213},
                           {5, 300, 6500},     {3, 1100, 70}};
  for (const cpu::GemmTiling& t : kTilings)
    for (const Shape3& s : shapes)
      for (bool transB : {false, true}) {
        GemmSpec g;
        g.m = s.m;
        g.k = s.k;
        g.n = s.n;
        g.transB = transB;
        EXPECT_EQ(check(g, t), "") << s.m << "x" << s.k << "x" << s.n << (transB ? " B^T" : "") << " with " << t.rows
                                   << "x" << t.vectors << "x" << t.lanes;
      }
}

TEST(PackedGemm, RefusesWhatItCannotCompute) {
  llvm::LLVMContext ctx;
  llvm::Module m("m", ctx);
  GemmSpec batched;
  batched.m = batched.n = batched.k = 4;
  batched.batch = {2};
  auto e = cpu::emitPackedGemm({"g", batched, {16, 2, 12}}, m);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message().find("GEMM @g: has no packed form"), std::string::npos) << e.error().message();
  GemmSpec plain;
  plain.m = plain.n = plain.k = 4;
  auto bad = cpu::emitPackedGemm({"g", plain, {16, 3, 12}}, m);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("does not divide the packed panel"), std::string::npos);
}

// Inference weights and constants are packed, marked so when the plan is
// built; a GEMM whose B is computed, or a weight the plan updates, goes to
// BLAS. Which GEMMs that run columns outer pack is the CPU's to say.
TEST(PackedGemm, PacksOnlyWhatNoStepWrites) {
  auto m = parseModule(R"(module @m {
  param @w : f32[8,16]
  func @main(%x: f32[4,8], %y: f32[16,3]) -> (f32[4,16], f32[4,3]) {
    %0 = matmul %x, @w : f32[4,16]
    %1 = matmul %0, %y : f32[4,3]
    return %0, %1
  }
})", "packed.kir");
  ASSERT_TRUE(m) << m.error().message();
  const Graph& fn = *(*m)->functions().front();
  const PackedGemmPolicy avx2 = cpu::packedGemmPolicy(testing::subtargetNamed("haswell").gemm);
  const PackedGemmPolicy avx512 = cpu::packedGemmPolicy(testing::subtargetNamed("skylake-avx512").gemm);
  auto plan = buildPlan(fn, {.packGemms = avx2});
  ASSERT_TRUE(plan) << plan.error().message();
  std::vector<size_t> gemms;
  for (size_t s = 0; s < plan->steps.size(); ++s)
    if (plan->steps[s].kind() == StepKind::Gemm) gemms.push_back(s);
  ASSERT_EQ(gemms.size(), 2u);
  EXPECT_EQ(packedGemmSteps(*plan), std::vector<size_t>{gemms[0]});
  EXPECT_TRUE(plan->steps[gemms[0]].gemm().packedB);
  EXPECT_FALSE(plan->steps[gemms[1]].gemm().packedB);  // B is computed
  auto unmarked = buildPlan(fn, {});  // no policy (the interpreter's and cuda's plans): none
  ASSERT_TRUE(unmarked) << unmarked.error().message();
  EXPECT_TRUE(packedGemmSteps(*unmarked).empty());
  // Columns outer where B is past what a block of rows streams from cache:
  // k past kPackedMaxK, or B past 2 MiB; packed while A is small enough for
  // the CPU's blocks to stream (GemmTiling::columnsOuterMaxA).
  Plan large = *plan;
  GemmSpec& g = large.steps[gemms[0]].gemm();
  auto packs = [&](const PackedGemmPolicy& policy) {
    markPackedGemms(large, policy);
    return packedGemmSteps(large) == std::vector<size_t>{gemms[0]};
  };
  EXPECT_FALSE(packedColumnsOuter(g));
  g.k = kPackedMaxK + 1;  // a classifier head: 4 rows of A, 16 KB
  EXPECT_TRUE(packedColumnsOuter(g));
  EXPECT_TRUE(packs(avx2));
  EXPECT_TRUE(packs(avx512));
  g.m = 128;  // A of 513 KB
  EXPECT_FALSE(packs(avx2));
  EXPECT_TRUE(packs(avx512));
  g.m = 4;
  g.k = 1024;  // B of 2.2 MB
  g.n = 544;
  EXPECT_TRUE(packedColumnsOuter(g));
  EXPECT_TRUE(packs(avx2));
  g.m = 200;  // A of 800 KB
  EXPECT_FALSE(packs(avx2));
  EXPECT_TRUE(packs(avx512));
  g.m = 600;  // A of 2.4 MB, past what was measured
  EXPECT_FALSE(packs(avx512));
  EXPECT_FALSE(packs(nullptr));
  // A mark on a GEMM whose weight the plan updates packs nothing.
  plan->updates.emplace_back("w", plan->steps[gemms[0]].gemm().c);
  EXPECT_TRUE(plan->steps[gemms[0]].gemm().packedB);
  EXPECT_TRUE(packedGemmSteps(*plan).empty());
  markPackedGemms(*plan, avx512);
  EXPECT_FALSE(plan->steps[gemms[0]].gemm().packedB);
}

// Each GEMM step with its packedEpilogue verdict ("" when it runs inside).
std::vector<std::string> verdicts(const Module& m) { return testing::verdicts(m, StepKind::Gemm, packedEpilogue); }

// Bias + ReLU, a residual add and a row softmax run per block of 12 rows
// (30 rows: two full blocks and a remainder) and give the interpreter's
// results; the first product is reshaped, so the epilogue's space is not
// the product's own shape.
TEST(PackedGemm, EpiloguesRunPerBlockOfRows) {
  auto m = testing::preparedModule(R"(module @m {
  param @w1 : f32[16,40]
  param @b1 : f32[40]
  param @w2 : f32[40,24]
  func @main(%x: f32[2,15,16], %r: f32[30,24]) -> (f32[30,24], f32[30,24]) {
    %0 = matmul %x, @w1 : f32[2,15,40]
    %1 = add %0, @b1 : f32[2,15,40]
    %2 = relu %1 : f32[2,15,40]
    %3 = reshape %2 {shape = [30, 40]} : f32[30,40]
    %4 = matmul %3, @w2 : f32[30,24]
    %5 = add %4, %r : f32[30,24]
    %6 = softmax %5 {axis = 1} : f32[30,24]
    return %5, %6
  }
})");
  ASSERT_TRUE(m);
  for (const char* p : {"w1", "b1", "w2"})
    m->setParamData(p, testing::waveTensor(m->findParam(p)->type, static_cast<double>(p[1])));
  const Graph& fn = *m->functions().front();
  std::vector<Tensor> args = {testing::waveTensor(fn.arguments()[0]->type(), 0.5), testing::waveTensor(fn.arguments()[1]->type(), 1.5)};
  EXPECT_EQ(verdicts(*m), (std::vector<std::string>{"", ""}));
  EXPECT_EQ(testing::cpuMatchesInterpreter(*m, args), "");
}

// A B past kPackedMaxBytes runs columns outer, its epilogue after the
// whole GEMM; results are the interpreter's.
TEST(PackedGemm, ColumnsOuterRunsItsEpilogueAfter) {
  auto m = testing::preparedModule(R"(module @m {
  param @w : f32[16,33000]
  param @b : f32[33000]
  func @main(%x: f32[5,16]) -> (f32[5,33000]) {
    %0 = matmul %x, @w : f32[5,33000]
    %1 = add %0, @b : f32[5,33000]
    %2 = relu %1 : f32[5,33000]
    return %2
  }
})");
  ASSERT_TRUE(m);
  for (const char* p : {"w", "b"}) m->setParamData(p, testing::waveTensor(m->findParam(p)->type, static_cast<double>(p[0])));
  const Graph& fn = *m->functions().front();
  std::vector<std::string> v = verdicts(*m);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NE(v[0].find("columns outer"), std::string::npos) << v[0];
  EXPECT_EQ(testing::cpuMatchesInterpreter(*m, {testing::waveTensor(fn.arguments()[0]->type(), 0.5)}), "");
}

// An epilogue is an ordinary kernel inlined into the GEMM: its vector math
// must stay vectorised (the hand-blocked GEMM alone is optimised lightly,
// codegen/cpu/compile.cpp). Compiled for a named CPU, not run.
TEST(PackedGemm, EpiloguesKeepTheirVectorMath) {
  auto m = testing::preparedModule(R"(module @m {
  param @w : f32[64,128]
  func @main(%x: f32[32,64]) -> (f32[32,128]) {
    %0 = matmul %x, @w : f32[32,128]
    %1 = tanh %0 : f32[32,128]
    return %1
  }
})");
  ASSERT_TRUE(m);
  const cpu::CpuSubtarget& haswell = testing::subtargetNamed("haswell");
  auto plan = buildPlan(*m->functions().front(), {.packGemms = cpu::packedGemmPolicy(haswell.gemm)});
  ASSERT_TRUE(plan) << plan.error().message();
  std::vector<size_t> gemms = packedGemmSteps(*plan);
  ASSERT_EQ(gemms.size(), 1u);
  cpu::PackedGemm gemm = cpu::packedGemmOf(*plan, gemms[0], "gemm_tanh", haswell.gemm);
  ASSERT_NE(gemm.epilogue, nullptr) << "the tanh must run inside the GEMM";
  cpu::CompileOptions options;
  options.keepOptimizedIR = true;
  auto compiled = cpu::emitObject(cpu::CodeBatch{{}, {}, std::span(&gemm, 1)}, haswell, options);
  ASSERT_TRUE(compiled) << compiled.error().message();
  EXPECT_NE(compiled->optimizedIR.find("call <8 x float> @_ZGVdN8v_tanhf("), std::string::npos) << compiled->optimizedIR;
}

// A new weight tensor is packed again; an epilogue that reads the product
// in another order runs after the whole GEMM.
TEST(PackedGemm, RepacksNewWeightsAndKeepsOutOfOrderEpiloguesOutside) {
  auto m = testing::preparedModule(R"(module @m {
  param @w : f32[20,20]
  func @main(%x: f32[20,20]) -> (f32[20,20]) {
    %0 = matmul %x, @w : f32[20,20]
    %1 = transpose %0 {perm = [1, 0]} : f32[20,20]
    %2 = add %0, %1 : f32[20,20]
    return %2
  }
})");
  ASSERT_TRUE(m);
  const Graph& fn = *m->functions().front();
  std::vector<Tensor> args = {testing::waveTensor(fn.arguments()[0]->type(), 0.5)};
  std::vector<std::string> v = verdicts(*m);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NE(v[0], "") << "the transposed read must keep the epilogue outside";
  auto exec = createExecutor("cpu", {.inplace = true, .poison = true});
  ASSERT_TRUE(exec);
  for (double phase : {1.0, 2.0}) {
    m->setParamData("w", testing::waveTensor(m->findParam("w")->type, phase));
    auto want = interpret(fn, args);
    ASSERT_TRUE(want) << want.error().message();
    auto got = (*exec)->run(fn, args);
    ASSERT_TRUE(got) << got.error().message();
    EXPECT_EQ(test::compareTensors(got->outputs[0], want->outputs[0], 1e-5, 1e-5), "") << "weights " << phase;
  }
}

}  // namespace
}  // namespace kfuse
