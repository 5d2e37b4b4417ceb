// The backend-neutral schedule both kernel emitters read
// (codegen/kernel/emission_schedule.h).
#include <gtest/gtest.h>

#include "codegen/kernel/emission_schedule.h"
#include "jit_harness.h"
#include "kernel_builder.h"

namespace kfuse::testing {
namespace {

using kernel::scheduleEmission;

TEST(EmissionSchedule, SoftmaxFoldsItsMaxThenItsSumAndKeepsTheSum) {
  kernel::EmissionSchedule s = scheduleEmission(softmaxKernel(4, 64, DType::F32));
  // The sum reads the max's accumulator: two passes over the row.
  ASSERT_EQ(s.groups.size(), 2u);
  EXPECT_EQ(s.groups[0], std::make_pair(size_t{0}, size_t{1}));
  EXPECT_EQ(s.groups[1], std::make_pair(size_t{1}, size_t{2}));
  EXPECT_FALSE(s.rowsAcross);
  ASSERT_TRUE(s.keptSum.has_value());
  EXPECT_EQ(s.keptSum->reduction, 1u);
  EXPECT_TRUE(s.elementStores);
  EXPECT_FALSE(s.rowStores);
  EXPECT_FALSE(s.finalStores);
}

TEST(EmissionSchedule, ColumnSumsRunAcrossRows) {
  Kernel k = columnSumKernel(32, 16, DType::F32, DType::F32);
  kernel::EmissionSchedule s = scheduleEmission(k);
  EXPECT_TRUE(s.rowsAcross);
  EXPECT_FALSE(s.keptSum.has_value());
  EXPECT_TRUE(s.rowLevel(k));
}

// A layer norm over the channels of NCHW pixels (ConvNeXt's, transposes
// folded): its rows are strided, its pixels contiguous, so it runs across
// rows; the weight and bias, contiguous along the row but the same at every
// pixel, do not make it run row by row (it did: 587 -> 310 us on
// ConvNeXt-atto's 56x56x40 blocks).
TEST(EmissionSchedule, ChannelNormsRunAcrossRowsWhateverTheirWeights) {
  KernelBuilder b("channel_norm", {4, 16}, {8});
  int x = b.input(DType::F32, {8, 4, 16});
  int w = b.input(DType::F32, {8});
  Scalar v = b.load(x, {16, 1, 64});
  Scalar mean = b.reduce(Combiner::Sum, v) / 8.0;
  b.storeAxes(b.output(DType::F32, {8, 4, 16}), {2, 0, 1}, (v - mean) * b.loadAxes(w, {2}));
  Kernel k = b.build();
  EXPECT_TRUE(scheduleEmission(k).rowsAcross);
  EXPECT_TRUE(matchesInterpreter(k, Tolerance::f32()));
}

TEST(EmissionSchedule, AccumulatorsOfBoolSumsCount) {
  KernelBuilder b("count", {3}, {5});
  int x = b.input(DType::Bool, {3, 5});
  Scalar n = b.reduce(Combiner::Sum, b.loadAxes(x, {0, 1}), DType::I64);
  b.storeAxes(b.output(DType::I64, {3}), {0}, n, StoreScope::Row);
  kernel::EmissionSchedule s = scheduleEmission(b.build());
  ASSERT_EQ(s.accumulators.size(), 1u);
  EXPECT_EQ(s.accumulators[0], DType::I64);
}

TEST(EmissionSchedule, ALoadIsReadOnlyAndOfOneElementInvariantUnlessTheKernelWritesItsBuffer) {
  KernelBuilder b("scale", {64});
  int x = b.input(DType::F32, {64});
  int lr = b.input(DType::F32, {});
  int y = b.output(DType::F32, {64});
  Scalar xv = b.loadOuter(x);  // load 0 (operands of * are evaluated in no set order)
  Scalar lrv = b.load(lr, {0});
  b.storeOuter(y, xv * lrv);
  kernel::EmissionSchedule s = scheduleEmission(b.build());
  EXPECT_EQ(s.invariantLoads, (std::vector<bool>{false, true}));
  EXPECT_EQ(s.readOnlyLoads, (std::vector<bool>{true, true}));

  // The same element, but of the buffer the kernel stores to (its first
  // element, written at point 0): read at every point.
  KernelBuilder w("self", {64});
  int z = w.output(DType::F32, {64});
  w.storeOuter(z, w.load(z, {0}) + 1.0);
  kernel::EmissionSchedule ws = scheduleEmission(w.build());
  EXPECT_EQ(ws.invariantLoads, std::vector<bool>{false});
  EXPECT_EQ(ws.readOnlyLoads, std::vector<bool>{false});
}

TEST(EmissionSchedule, MeanLossHasPrologueAndMainGlobalsAndAFinalStore) {
  Kernel k = meanLossKernel(8, 10);
  kernel::EmissionSchedule s = scheduleEmission(k);
  EXPECT_EQ(s.numGlobals(), k.prologue.size() + k.globals.size());
  EXPECT_GE(k.prologue.size(), 1u);
  EXPECT_TRUE(s.finalStores);
  EXPECT_TRUE(s.rowLevel(k));
}

}  // namespace
}  // namespace kfuse::testing
