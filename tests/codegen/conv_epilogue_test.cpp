// Direct convolutions that run their epilogue per block of output channels
// (exec/conv_epilogue.h, codegen/cpu/conv_emitter.h): which epilogues
// qualify and why the others stay after the convolution, and the results of
// every kind of block (rows, whole planes, whole planes in chunks of input
// channels, joined rows of a 1x1 convolution, depthwise, a pool over whole
// planes) against the
// interpreter at one and several threads.
#include <gtest/gtest.h>

#include "codegen/cpu/conv_emitter.h"
#include "codegen/plan/plan_builder.h"
#include "exec/conv_epilogue.h"
#include "tests/codegen/module_harness.h"

namespace kfuse {
namespace {

// Each Conv step's convEpilogue verdict ("" when it runs inside).
std::vector<std::string> verdicts(const Module& m) { return testing::verdicts(m, StepKind::Conv, convEpilogue); }

void setParams(Module& m) {
  double phase = 0.25;
  for (const auto& p : m.params()) m.setParamData(p->name, testing::waveTensor(p->type, phase += 0.5));
}

std::vector<Tensor> waveArgs(const Module& m) {
  std::vector<Tensor> args;
  double phase = 0.5;
  for (const auto& a : m.functions().front()->arguments()) args.push_back(testing::waveTensor(a->type(), phase += 1.0));
  return args;
}

// SiLU over whole 16x16 planes; a per-channel scale, a residual add and a
// tanh over panels of a 1x1 convolution (the epilogue's [2,24,16,16]
// walked in blocks of 32 pixels across the convolution's joined rows); a depthwise
// convolution with bias and a sigmoid; a convolution over 160 channels of
// 16x16 planes (taken whole, in chunks of input channels) with a tanh; an
// unpadded convolution over rows of 30 pixels (20 channels: a block and a
// remainder wherever blocks are 16 channels or fewer) with a tanh.
const char* const kEpilogues = R"(module @m {
  param @w1 : f32[24,16,3,3]
  param @b1 : f32[24]
  param @w2 : f32[24,24,1,1]
  param @s2 : f32[1,24,1,1]
  param @w3 : f32[24,1,3,3]
  param @b3 : f32[24]
  param @w4 : f32[16,160,3,3]
  param @w5 : f32[20,8,3,3]
  param @b5 : f32[20]
  func @main(%x: f32[2,16,16,16], %r: f32[2,24,16,16], %z: f32[1,160,16,16], %v: f32[2,8,33,32]) -> (f32[2,24,16,16], f32[2,24,16,16], f32[1,16,16,16], f32[2,20,31,30]) {
    %0 = conv2d %x, @w1, @b1 {pads = [1, 1, 1, 1]} : f32[2,24,16,16]
    %1 = sigmoid %0 : f32[2,24,16,16]
    %2 = mul %0, %1 : f32[2,24,16,16]
    %3 = conv2d %2, @w2 : f32[2,24,16,16]
    %4 = mul %3, @s2 : f32[2,24,16,16]
    %5 = add %4, %r : f32[2,24,16,16]
    %6 = tanh %5 : f32[2,24,16,16]
    %7 = conv2d %6, @w3, @b3 {pads = [1, 1, 1, 1], groups = 24} : f32[2,24,16,16]
    %8 = sigmoid %7 : f32[2,24,16,16]
    %9 = conv2d %z, @w4 {pads = [1, 1, 1, 1]} : f32[1,16,16,16]
    %10 = tanh %9 : f32[1,16,16,16]
    %11 = conv2d %v, @w5, @b5 : f32[2,20,31,30]
    %12 = tanh %11 : f32[2,20,31,30]
    return %6, %8, %10, %12
  }
})";

TEST(ConvEpilogue, EveryKindOfBlockMatchesTheInterpreter) {
  auto m = testing::preparedModule(kEpilogues);
  ASSERT_TRUE(m);
  setParams(*m);
  EXPECT_EQ(verdicts(*m), (std::vector<std::string>{"", "", "", "", ""}));
  const std::vector<Tensor> args = waveArgs(*m);
  // Two convolutions in a row (144 and 24 terms of f32 products) before the
  // tanh of output 0.
  for (int threads : {1, 2, 3})
    EXPECT_EQ(testing::cpuMatchesInterpreter(*m, args, threads, 1e-4), "") << threads << " threads";
}

// A global average pool of the activation runs inside a convolution over
// whole planes, each block of channels folding its planes; over rows (an
// unpadded convolution) a plane is complete only after the last row and it
// stays after. So does a transposed read of the output.
TEST(ConvEpilogue, ReductionsRunInsideOverWholePlanesOnly) {
  auto m = testing::preparedModule(R"(module @m {
  param @w1 : f32[20,8,3,3]
  param @w2 : f32[16,8,3,3]
  param @w3 : f32[8,8,3,3]
  func @main(%x: f32[2,8,16,16], %v: f32[1,8,33,32]) -> (f32[2,20,16,16], f32[2,20,1,1], f32[1,16,1,1], f32[2,8,16,16]) {
    %0 = conv2d %x, @w1 {pads = [1, 1, 1, 1]} : f32[2,20,16,16]
    %1 = sigmoid %0 : f32[2,20,16,16]
    %2 = mul %0, %1 : f32[2,20,16,16]
    %3 = reduce_mean %2 {axes = [2, 3], keepdims = true} : f32[2,20,1,1]
    %4 = conv2d %v, @w2 : f32[1,16,31,30]
    %5 = tanh %4 : f32[1,16,31,30]
    %6 = reduce_mean %5 {axes = [2, 3], keepdims = true} : f32[1,16,1,1]
    %7 = conv2d %x, @w3 {pads = [1, 1, 1, 1]} : f32[2,8,16,16]
    %8 = transpose %7 {perm = [0, 1, 3, 2]} : f32[2,8,16,16]
    %9 = tanh %8 : f32[2,8,16,16]
    return %2, %3, %6, %9
  }
})");
  ASSERT_TRUE(m);
  setParams(*m);
  std::vector<std::string> v = verdicts(*m);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0], "");
  EXPECT_NE(v[1].find("it reduces across blocks"), std::string::npos) << v[1];
  EXPECT_NE(v[2].find("not walked as the convolution's output is"), std::string::npos) << v[2];
  const std::vector<Tensor> args = waveArgs(*m);
  for (int threads : {1, 3}) EXPECT_EQ(testing::cpuMatchesInterpreter(*m, args, threads), "") << threads << " threads";
}

// A 1x1 convolution with a packed filter over joined rows of more than one
// (14x14 planes: two rows of 98) takes rows as its work units
// (exec/packed_filter.h's packedFilterRowUnits): a tanh runs inside per
// row, a global average pool stays after; over one row (7x7 planes) the
// pool runs inside, a row being the plane.
TEST(ConvEpilogue, PackedFilterRowsHoldWholePlanesOnlyWhenARowIsThePlane) {
  auto m = testing::preparedModule(R"(module @m {
  param @w1 : f32[48,256,1,1]
  param @w2 : f32[32,256,1,1]
  param @w3 : f32[32,64,1,1]
  func @main(%x: f32[2,256,14,14], %z: f32[1,64,7,7]) -> (f32[2,48,14,14], f32[2,32,1,1], f32[1,32,1,1]) {
    %0 = conv2d %x, @w1 : f32[2,48,14,14]
    %1 = tanh %0 : f32[2,48,14,14]
    %2 = conv2d %x, @w2 : f32[2,32,14,14]
    %3 = relu %2 : f32[2,32,14,14]
    %4 = reduce_mean %3 {axes = [2, 3], keepdims = true} : f32[2,32,1,1]
    %5 = conv2d %z, @w3 : f32[1,32,7,7]
    %6 = relu %5 : f32[1,32,7,7]
    %7 = reduce_mean %6 {axes = [2, 3], keepdims = true} : f32[1,32,1,1]
    return %1, %4, %7
  }
})");
  ASSERT_TRUE(m);
  setParams(*m);
  std::vector<std::string> v = verdicts(*m);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0], "");
  EXPECT_NE(v[1].find("it reduces across blocks"), std::string::npos) << v[1];
  EXPECT_EQ(v[2], "");
  const std::vector<Tensor> args = waveArgs(*m);
  for (int threads : {1, 2, 3})
    EXPECT_EQ(testing::cpuMatchesInterpreter(*m, args, threads, 1e-4), "") << threads << " threads";
}

// Output channels padded to whole panels in the packed filter
// (ops::packedFilterOutputs): the last vector's epilogue takes only the
// channels there are. A classifier to 100 channels over 7x7 with its ReLU
// and global average pool inside (SqueezeNet's, smaller), and a 1x1 layer
// to 72 over rows of 14x14 with a residual add and a tanh inside.
TEST(ConvEpilogue, PaddedPackedFiltersRunTheirEpilogueOverTheChannelsThereAre) {
  auto m = testing::preparedModule(R"(module @m {
  param @w1 : f32[100,64,1,1]
  param @w2 : f32[72,256,1,1]
  func @main(%x: f32[1,64,7,7], %z: f32[2,256,14,14], %r: f32[2,72,14,14]) -> (f32[1,100,1,1], f32[2,72,14,14]) {
    %0 = conv2d %x, @w1 : f32[1,100,7,7]
    %1 = relu %0 : f32[1,100,7,7]
    %2 = reduce_mean %1 {axes = [2, 3], keepdims = true} : f32[1,100,1,1]
    %3 = conv2d %z, @w2 : f32[2,72,14,14]
    %4 = add %3, %r : f32[2,72,14,14]
    %5 = tanh %4 : f32[2,72,14,14]
    return %2, %5
  }
})");
  ASSERT_TRUE(m);
  setParams(*m);
  EXPECT_EQ(verdicts(*m), (std::vector<std::string>{"", ""}));
  const std::vector<Tensor> args = waveArgs(*m);
  for (int threads : {1, 2, 3})
    EXPECT_EQ(testing::cpuMatchesInterpreter(*m, args, threads, 1e-4), "") << threads << " threads";
}

// Where a second pass is as good: a depthwise convolution over rows (a
// unit of 30 outputs), blocks of 16 channels of 24x24 planes (36 KB) that
// would leave the first-level cache. A ReLU over rows runs inside.
TEST(ConvEpilogue, ShortOrLargeBlocksStayAfter) {
  auto m = testing::preparedModule(R"(module @m {
  param @w1 : f32[16,8,3,3]
  param @w2 : f32[8,1,3,3]
  param @w3 : f32[16,8,3,3]
  func @main(%x: f32[1,8,33,32], %y: f32[1,8,24,24]) -> (f32[1,16,31,30], f32[1,8,31,30], f32[1,16,24,24]) {
    %0 = conv2d %x, @w1 : f32[1,16,31,30]
    %1 = relu %0 : f32[1,16,31,30]
    %2 = conv2d %x, @w2 {groups = 8} : f32[1,8,31,30]
    %3 = tanh %2 : f32[1,8,31,30]
    %4 = conv2d %y, @w3 {pads = [1, 1, 1, 1]} : f32[1,16,24,24]
    %5 = tanh %4 : f32[1,16,24,24]
    return %1, %3, %5
  }
})");
  ASSERT_TRUE(m);
  std::vector<std::string> v = verdicts(*m);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0], "");
  EXPECT_NE(v[1].find("a unit of its work holds 30 outputs"), std::string::npos) << v[1];
  EXPECT_NE(v[2].find("a block of its outputs takes up to 36864 bytes"), std::string::npos) << v[2];
}

// The epilogue's pointers move by the strides of each buffer along the
// convolution's image, channel, row and column, whatever the shape of the
// epilogue's own space: over the joined rows of a 1x1 convolution (8x8
// planes as rows of 64), a per-channel operand does not move along rows or
// columns; one read per column of the plane (a broadcast row) is not affine
// in the joined row's column.
TEST(ConvEpilogue, BlocksFollowTheConvolutionsDims) {
  auto m = testing::preparedModule(R"(module @m {
  param @w : f32[8,4,1,1]
  param @s : f32[1,8,1,1]
  func @main(%x: f32[2,4,8,8]) -> (f32[2,8,8,8]) {
    %0 = conv2d %x, @w : f32[2,8,8,8]
    %1 = mul %0, @s : f32[2,8,8,8]
    %2 = tanh %1 : f32[2,8,8,8]
    return %2
  }
})");
  ASSERT_TRUE(m);
  auto plan = buildPlan(*m->functions().front());
  ASSERT_TRUE(plan) << plan.error().message();
  ASSERT_EQ(plan->steps.size(), 1u);
  const ConvSpec& c = plan->steps[0].conv();
  ASSERT_EQ(c.ow, 64) << "the 1x1 convolution's rows are joined";
  kernel::Kernel k = plan->kernels[static_cast<size_t>(plan->steps[0].kernels[0])];
  std::vector<bool> confined;
  int scale = -1;
  for (size_t i = 0; i < k.buffers.size(); ++i) {
    confined.push_back(k.buffers[i].type.shape != Shape{1, 8, 1, 1});
    if (!confined.back()) scale = static_cast<int>(i);
  }
  ASSERT_GE(scale, 0);
  auto b = convBlocksOf(k, c, confined);
  ASSERT_TRUE(b) << b.error().message();
  EXPECT_EQ(b->strides[static_cast<size_t>(scale)], (std::array<int64_t, 4>{0, 1, 0, 0}));
  for (size_t i = 0; i < k.buffers.size(); ++i)
    if (confined[i]) {
      EXPECT_EQ(b->strides[i], (std::array<int64_t, 4>{512, 64, 0, 1})) << k.buffers[i].name;
    }
  const kernel::Kernel cut = convBlockKernel(k, *b, 3, 1, 64);
  EXPECT_EQ(cut.outer, (Shape{3, 1, 64}));
  for (const kernel::Load& l : cut.loads)
    if (l.buffer == scale) {
      EXPECT_EQ(l.map.strides, (std::vector<int64_t>{1, 0, 0}));
    }
  for (kernel::Load& l : k.loads)
    if (l.buffer == scale) l.map.strides.back() = 1;  // s[ox % 8] of the plane's columns
  auto rowRead = convBlocksOf(k, c, confined);
  ASSERT_FALSE(rowRead);
  EXPECT_NE(rowRead.error().message().find("is not affine"), std::string::npos) << rowRead.error().message();
}

// A 1x1 convolution over panels (ConvSpec::pointwisePanels: 16x64 planes,
// rows too long to join) runs its epilogue per unit of 32 pixels of the
// flattened plane, across rows: a per-channel operand qualifies, a
// broadcast row (the same 64 values down every row of the plane) does not,
// and a unit of 4 channels (128 outputs) is too short to pay for a call.
TEST(ConvEpilogue, PanelBlocksRunAcrossRows) {
  auto verdict = [](const char* operand, int64_t channels) {
    const std::string o = std::to_string(channels);
    const std::string text = str(R"(module @m {
  param @w : f32[)", o, R"(,16,1,1]
  param @s : )", operand, R"(
  func @main(%x: f32[1,16,16,64]) -> (f32[1,)", o, R"(,16,64]) {
    %0 = conv2d %x, @w : f32[1,)", o, R"(,16,64]
    %1 = mul %0, @s : f32[1,)", o, R"(,16,64]
    %2 = tanh %1 : f32[1,)", o, R"(,16,64]
    return %2
  }
})");
    auto m = testing::preparedModule(text.c_str());
    EXPECT_TRUE(m);
    auto plan = buildPlan(*m->functions().front());
    EXPECT_TRUE(plan) << plan.error().message();
    const ConvSpec& c = plan->steps.at(0).conv();
    EXPECT_TRUE(c.pointwisePanels());
    EXPECT_EQ(str(c.oh, "x", c.ow), "16x64");
    auto b = convEpilogue(*plan, 0);
    return b ? std::string("inside") : b.error().message();
  };
  EXPECT_EQ(verdict("f32[1,16,1,1]", 16), "inside");
  const std::string row = verdict("f32[1,1,1,64]", 16);
  EXPECT_NE(row.find("rows do not follow one another"), std::string::npos) << row;
  const std::string narrow = verdict("f32[1,4,1,1]", 4);
  EXPECT_NE(narrow.find("a unit of its work holds 128 outputs"), std::string::npos) << narrow;
}

// A buffer the epilogue only stores (a concat's run, codegen/plan/
// copy_elision.h) may lie anywhere and walk other strides, as long as no
// two outputs reach one element; one it also reads must walk as y does.
TEST(ConvEpilogue, StoredOnlyBuffersMayWalkOtherStridesThatNeverCollide) {
  auto m = testing::preparedModule(R"(module @m {
  param @w : f32[4,4,3,3]
  func @main(%x: f32[1,4,8,8]) -> (f32[1,4,8,8]) {
    %0 = conv2d %x, @w {pads = [1, 1, 1, 1]} : f32[1,4,8,8]
    %1 = tanh %0 : f32[1,4,8,8]
    return %1
  }
})");
  ASSERT_TRUE(m);
  auto plan = buildPlan(*m->functions().front());
  ASSERT_TRUE(plan) << plan.error().message();
  const ConvSpec& c = plan->steps[0].conv();
  kernel::Kernel k = plan->kernels[static_cast<size_t>(plan->steps[0].kernels[0])];
  ASSERT_EQ(k.stores.size(), 1u);
  const auto out = static_cast<size_t>(k.stores[0].buffer);
  const std::vector<bool> confined(k.buffers.size(), true);
  std::vector<bool> storedOnly(k.buffers.size(), false);
  storedOnly[out] = true;
  // The second half of a [1,8,8,8] concat: 256 elements in.
  k.buffers[out].type.shape = {1, 8, 8, 8};
  k.stores[0].map = kernel::IndexMap{256, {512, 64, 8, 1}};
  EXPECT_FALSE(convBlocksOf(k, c, confined)) << "without storedOnly, the rule of y's walk";
  auto b = convBlocksOf(k, c, confined, storedOnly);
  ASSERT_TRUE(b) << b.error().message();
  EXPECT_EQ(b->strides[out], (std::array<int64_t, 4>{0, 64, 8, 1}));
  // Rows of 10, each ending in a border: still one element per output.
  k.stores[0].map = kernel::IndexMap{11, {400, 100, 10, 1}};
  EXPECT_TRUE(convBlocksOf(k, c, confined, storedOnly));
  // Channels 32 apart over 64-pixel planes: two outputs on one element.
  k.stores[0].map = kernel::IndexMap{0, {128, 32, 8, 1}};
  auto overlap = convBlocksOf(k, c, confined, storedOnly);
  ASSERT_FALSE(overlap);
  EXPECT_NE(overlap.error().message().find("could reach past its own"), std::string::npos)
      << overlap.error().message();
}

}  // namespace
}  // namespace kfuse
