// Reduction kernels on the CPU JIT against the kernel interpreter: row and
// column reductions, multi-dim reduce spaces, dependent reductions, Index
// leaves, prologue/global/final stores, empty spaces.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/codegen/jit_harness.h"
#include "tests/codegen/kernel_builder.h"

namespace kfuse::testing {
namespace {

// Sums of n f32 terms in f32 against a double sum: the error grows with n.
Tolerance sumTolerance(int64_t n) { return {1e-6 * static_cast<double>(n), 1e-6 * static_cast<double>(n)}; }

TEST(CpuReduction, Softmax) {
  EXPECT_TRUE(matchesInterpreter(softmaxKernel(33, 77, DType::F32), Tolerance{1e-5, 1e-7}, 1, {-10, 10}));
  EXPECT_TRUE(matchesInterpreter(softmaxKernel(8, 1000, DType::F64), Tolerance{1e-13, 1e-15}, 2, {-10, 10}));
  EXPECT_TRUE(matchesInterpreter(softmaxKernel(5, 64, DType::F16), Tolerance{1e-5, 1e-7}, 3, {-10, 10}));
  EXPECT_TRUE(matchesInterpreter(softmaxKernel(5, 64, DType::BF16), Tolerance{1e-5, 1e-7}, 4, {-10, 10}));
}

TEST(CpuReduction, ColumnSumAlongStridedAxis) {
  EXPECT_TRUE(matchesInterpreter(columnSumKernel(129, 65, DType::F32, DType::F32), sumTolerance(129)));
  EXPECT_TRUE(matchesInterpreter(columnSumKernel(300, 7, DType::F64, DType::F64), Tolerance{1e-13, 1e-13}));
  EXPECT_TRUE(matchesInterpreter(columnSumKernel(64, 33, DType::BF16, DType::F32), sumTolerance(64)));
  // Integers sum exactly, and saturate on the narrow store.
  EXPECT_TRUE(matchesInterpreter(columnSumKernel(100, 9, DType::I32, DType::I64), Tolerance::exact(), 5, {-1e6, 1e6}));
  EXPECT_TRUE(matchesInterpreter(columnSumKernel(100, 9, DType::I8, DType::I8), Tolerance::exact(), 6, {-100, 100}));
}

TEST(CpuReduction, MultiDimReduceSpace) {
  // out[b] = sum over (a, c) of x[a, b, c]: outer [B], reduce [A, C].
  const int64_t A = 3, B = 5, C = 7;
  KernelBuilder b("sum_a_c", {B}, {A, C});
  Scalar x = b.loadAxes(b.input(DType::F32, {A, B, C}), {1, 0, 2});
  b.storeAxes(b.output(DType::F32, {B}), {0}, b.reduce(Combiner::Sum, x), StoreScope::Row);
  EXPECT_TRUE(matchesInterpreter(b.build(), sumTolerance(A * C)));
}

TEST(CpuReduction, MultiDimOuterAndReduceWithElementStores) {
  // y[a, b, c, d] = x - max over (b, d) of x, outer [A, C], reduce [B, D].
  const int64_t A = 2, B = 3, C = 4, D = 9;
  KernelBuilder b("sub_max", {A, C}, {B, D});
  int x = b.input(DType::F32, {A, B, C, D});
  Scalar v = b.loadAxes(x, {0, 2, 1, 3});
  Scalar m = b.reduce(Combiner::Max, v);
  b.storeAxes(b.output(DType::F32, {A, B, C, D}), {0, 2, 1, 3}, v - m);
  EXPECT_TRUE(matchesInterpreter(b.build(), Tolerance::exact()));
}

TEST(CpuReduction, MaxAndMinPropagateNaN) {
  for (Combiner c : {Combiner::Max, Combiner::Min}) {
    KernelBuilder b("nan_reduce", {40}, {13});
    Scalar acc = b.reduce(c, b.loadAxes(b.input(DType::F32, {40, 13}), {0, 1}));
    b.storeAxes(b.output(DType::F32, {40}), {0}, acc, StoreScope::Row);
    EXPECT_TRUE(matchesInterpreter(b.build(), Tolerance::exact(), 7, {-5, 5, 0.03}));
  }
}

// Row maxima and minima run on integer keys (codegen/cpu/llvm_emitter.cpp):
// infinities, negative values only, subnormals, zeros of both signs and
// NaN (which wins) on rows long enough to take the vector loop and its
// remainder, in f32 and f64.
TEST(CpuReduction, MaxAndMinOrderEveryKindOfFloat) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::vector<double>> rows = {
      {-inf, -inf, -inf}, {inf, 1, -inf}, {-0.0, 0.0, -0.0}, {-1e30, -1e-30, -5, -3e38},
      {1e-45, -1e-45, 0.0}, {2, nan, -inf}, {-0.0, -0.0}, {7, 6.5, 7.25, -7.5}};
  const int64_t width = 37;
  for (DType t : {DType::F32, DType::F64}) {
    std::vector<double> values;
    for (const auto& row : rows)
      for (int64_t i = 0; i < width; ++i) values.push_back(row[static_cast<size_t>(i) % row.size()]);
    auto n = static_cast<int64_t>(rows.size());
    for (Combiner c : {Combiner::Max, Combiner::Min}) {
      KernelBuilder b("extremes", {n}, {width});
      Scalar acc = b.reduce(c, b.loadAxes(b.input(t, {n, width}), {0, 1}));
      b.storeAxes(b.output(t, {n}), {0}, acc, StoreScope::Row);
      std::vector<Tensor> buffers = {Tensor::fromDoubles(TensorType(t, {n, width}), values), Tensor(TensorType(t, {n}))};
      EXPECT_TRUE(matchesInterpreter(b.build(), buffers, Tolerance::exact())) << dtypeName(t);
    }
  }
}

TEST(CpuReduction, IntegerAndBoolReductions) {
  for (Combiner c : {Combiner::Sum, Combiner::Max, Combiner::Min}) {
    KernelBuilder b("int_reduce", {10}, {17});
    Scalar acc = b.reduce(c, b.loadAxes(b.input(DType::I32, {10, 17}), {0, 1}));
    b.storeAxes(b.output(DType::I64, {10}), {0}, acc, StoreScope::Row);
    EXPECT_TRUE(matchesInterpreter(b.build(), Tolerance::exact(), 8, {-1000, 1000}));
  }
  // any / all through max / min of bools, and a count through a bool sum.
  KernelBuilder b("bool_reduce", {10}, {5});
  Scalar flag = b.loadAxes(b.input(DType::Bool, {10, 5}), {0, 1});
  b.storeAxes(b.output(DType::Bool, {10}), {0}, b.reduce(Combiner::Max, flag), StoreScope::Row);
  b.storeAxes(b.output(DType::Bool, {10}), {0}, b.reduce(Combiner::Min, flag), StoreScope::Row);
  KernelBuilder counter("bool_count", {10}, {5});
  Scalar f = counter.loadAxes(counter.input(DType::Bool, {10, 5}), {0, 1});
  Scalar n = counter.reduce(Combiner::Sum, f, DType::I64);  // read as i64: the count, not "any"
  counter.storeAxes(counter.output(DType::I64, {10}), {0}, n, StoreScope::Row);
  EXPECT_TRUE(matchesInterpreter(b.build(), Tolerance::exact(), 9));
  EXPECT_TRUE(matchesInterpreter(counter.build(), Tolerance::exact(), 10));
}

TEST(CpuReduction, LabelLookupReadsIndexLeaf) {
  Kernel k = labelLookupKernel(37, 11);
  std::vector<Tensor> buffers = randomBuffers(k, 11);
  std::mt19937_64 rng(12);
  buffers[1] = randomTensor(buffers[1].type(), rng, {-1, 10});  // -1 matches no class
  EXPECT_TRUE(matchesInterpreter(k, buffers, Tolerance::exact()));
}

TEST(CpuReduction, MeanLossWithPrologueGlobalAndFinalStore) {
  Kernel k = meanLossKernel(64, 10);
  std::vector<Tensor> buffers = randomBuffers(k, 13, {-4, 4});
  std::mt19937_64 rng(14);
  buffers[1] = randomTensor(buffers[1].type(), rng, {-1, 9});
  EXPECT_TRUE(matchesInterpreter(k, buffers, sumTolerance(64)));
  // Every label ignored: 0 / 0.
  for (int64_t i = 0; i < 64; ++i) buffers[1].set(i, -1);
  EXPECT_TRUE(matchesInterpreter(k, buffers, Tolerance::exact()));
}

TEST(CpuReduction, DependentAndIndependentReductions) {
  EXPECT_TRUE(matchesInterpreter(layerNormKernel(17, 100), Tolerance{1e-4, 1e-5}));
  // Sum and sum of squares read no accumulator: they share one loop.
  KernelBuilder b("moments", {6}, {50});
  Scalar x = b.loadAxes(b.input(DType::F32, {6, 50}), {0, 1});
  Scalar s1 = b.reduce(Combiner::Sum, x);
  Scalar s2 = b.reduce(Combiner::Sum, x * x);
  b.storeAxes(b.output(DType::F32, {6}), {0}, s2 / 50.0 - (s1 / 50.0) * (s1 / 50.0), StoreScope::Row);
  EXPECT_TRUE(matchesInterpreter(b.build(), sumTolerance(50)));
}

TEST(CpuReduction, GlobalMaxAbsOverAllElements) {
  KernelBuilder b("amax", {31, 9});
  Scalar x = b.loadOuter(b.input(DType::F32, {31, 9}));
  Scalar g = b.global(Combiner::Max, abs(x));
  b.store(b.output(DType::F32, {}), {0, 0}, g, StoreScope::Final);
  EXPECT_TRUE(matchesInterpreter(b.build(), Tolerance::exact()));
}

TEST(CpuReduction, ElementStoresReadRunningGlobal) {
  // A running maximum: each element store sees the globals folded so far.
  KernelBuilder b("running", {12});
  Scalar x = b.loadOuter(b.input(DType::F32, {12}));
  Scalar g = b.global(Combiner::Max, x);
  b.storeOuter(b.output(DType::F32, {12}), max(g, x));
  EXPECT_TRUE(matchesInterpreter(b.build(), Tolerance::exact()));
}

TEST(CpuReduction, EmptyReduceSpaceGivesInitialValues) {
  for (Combiner c : {Combiner::Sum, Combiner::Max, Combiner::Min}) {
    KernelBuilder b("empty_row", {4}, {0});
    Scalar acc = b.reduce(c, b.loadAxes(b.input(DType::F32, {4, 0}), {0, 1}));
    b.storeAxes(b.output(DType::F32, {4}), {0}, acc, StoreScope::Row);
    EXPECT_TRUE(matchesInterpreter(b.build(), Tolerance::exact()));
  }
  // An empty outer space still runs the final stores (of the initial globals).
  KernelBuilder b("empty_outer", {0, 3}, {5});
  Scalar x = b.loadAxes(b.input(DType::F32, {0, 3, 5}), {0, 1, 2});
  Scalar g = b.global(Combiner::Sum, b.reduce(Combiner::Sum, x));
  Scalar n = b.prologue(Combiner::Sum, Scalar::constant(1, DType::F32));
  b.store(b.output(DType::F32, {}), {0, 0, 0}, g / n, StoreScope::Final);
  EXPECT_TRUE(matchesInterpreter(b.build(), Tolerance::exact()));
}

}  // namespace
}  // namespace kfuse::testing
