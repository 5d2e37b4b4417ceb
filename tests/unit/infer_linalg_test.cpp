// Shape/type inference and error messages of the linalg ops.
#include <limits>

#include "tests/unit/infer_test_util.h"

namespace kfuse {
namespace {

using test::f32;
using test::i64;
using test::infer;

using Ints = std::vector<int64_t>;
constexpr int64_t kHuge = std::numeric_limits<int64_t>::max();

TensorType typed(DType d, Shape s, Layout l = Layout::Plain) { return TensorType(d, std::move(s), l); }
TensorType nhwc(Shape s) { return TensorType(DType::F32, std::move(s), Layout::NHWC); }
TensorType ohwi(Shape s) { return TensorType(DType::F32, std::move(s), Layout::OHWI); }

// The single result type, or a failed assertion with the error.
#define EXPECT_INFERS(expr, want)                       \
  do {                                                  \
    auto r_ = (expr);                                   \
    ASSERT_TRUE(r_) << r_.error().message();            \
    EXPECT_EQ(formatType((*r_)[0]), formatType(want)); \
  } while (0)

// ---------------------------------------------------------------- matmul

TEST(InferMatmul, Matrices) {
  EXPECT_INFERS(infer("matmul", {f32({3, 4}), f32({4, 5})}), f32({3, 5}));
  EXPECT_INFERS(infer("matmul", {f32({4, 3}), f32({4, 5})}, {{"transpose_a", Attribute(true)}}), f32({3, 5}));
  EXPECT_INFERS(infer("matmul", {f32({3, 4}), f32({5, 4})}, {{"transpose_b", Attribute(true)}}), f32({3, 5}));
}

TEST(InferMatmul, BatchAxesBroadcast) {
  EXPECT_INFERS(infer("matmul", {f32({2, 1, 3, 4}), f32({7, 4, 5})}), f32({2, 7, 3, 5}));
  EXPECT_INFERS(infer("matmul", {f32({3, 4}), f32({2, 4, 5})}), f32({2, 3, 5}));
}

TEST(InferMatmul, VectorsArePromotedAndDropped) {
  EXPECT_INFERS(infer("matmul", {f32({4}), f32({4, 5})}), f32({5}));
  EXPECT_INFERS(infer("matmul", {f32({3, 4}), f32({4})}), f32({3}));
  EXPECT_INFERS(infer("matmul", {f32({4}), f32({4})}), f32({}));
  EXPECT_INFERS(infer("matmul", {f32({4}), f32({2, 4, 5})}), f32({2, 5}));
  EXPECT_INFERS(infer("matmul", {f32({2, 3, 4}), f32({4})}), f32({2, 3}));
}

TEST(InferMatmul, AcceptsEveryFloatDType) {
  for (DType d : {DType::F16, DType::BF16, DType::F64})
    EXPECT_INFERS(infer("matmul", {typed(d, {2, 3}), typed(d, {3, 4})}), typed(d, {2, 4}));
}

TEST(InferMatmul, ResultIsPlain) {
  TensorType a = typed(DType::F32, {1, 2, 3, 4}, Layout::NCHW);
  EXPECT_INFERS(infer("matmul", {a, f32({4, 5})}), f32({1, 2, 3, 5}));
}

TEST(InferMatmul, ContractionMismatchNamesBothOperands) {
  EXPECT_INFER_ERROR(infer("matmul", {f32({3, 4}), f32({5, 6})}),
                     "contraction sizes differ: operand 0 f32[3,4] gives K = 4, operand 1 f32[5,6] gives K = 5");
  EXPECT_INFER_ERROR(infer("matmul", {f32({3, 4}), f32({4, 6})}, {{"transpose_a", Attribute(true)}}),
                     "operand 0 f32[3,4] (transposed) gives K = 3");
}

TEST(InferMatmul, BatchMismatch) {
  EXPECT_INFER_ERROR(infer("matmul", {f32({2, 3, 4}), f32({3, 4, 5})}),
                     "batch dimensions: shapes [2] and [3] do not broadcast");
}

TEST(InferMatmul, TransposeNeedsAMatrix) {
  EXPECT_INFER_ERROR(infer("matmul", {f32({4}), f32({4, 5})}, {{"transpose_a", Attribute(true)}}),
                     "attribute transpose_a = true needs operand 0 of rank >= 2, got f32[4]");
  EXPECT_INFER_ERROR(infer("matmul", {f32({3, 4}), f32({4})}, {{"transpose_b", Attribute(true)}}),
                     "attribute transpose_b = true needs operand 1 of rank >= 2, got f32[4]");
}

TEST(InferMatmul, RejectsScalarsIntegersAndMixedDTypes) {
  EXPECT_INFER_ERROR(infer("matmul", {f32({}), f32({3})}), "operand 0 must have rank >= 1, got f32[]");
  EXPECT_INFER_ERROR(infer("matmul", {i64({2, 2}), i64({2, 2})}), "operand 0 must be floating-point");
  EXPECT_INFER_ERROR(infer("matmul", {f32({2, 2}), typed(DType::F64, {2, 2})}), "must have the same dtype");
  EXPECT_INFER_ERROR(infer("matmul", {f32({2, 2})}), "op 'matmul' takes 2 operands, got 1");
}

// ---------------------------------------------------------------- conv2d

TEST(InferConv2d, DefaultsAndOutputSizeFormula) {
  EXPECT_INFERS(infer("conv2d", {f32({2, 3, 7, 6}), f32({4, 3, 3, 3})}), f32({2, 4, 5, 4}));
  // oH = floor((9 + 1 + 2 - 2*(3-1) - 1) / 2) + 1 = 4, oW = floor((8 + 0 + 1 - 1*(2-1) - 1) / 3) + 1 = 3
  AttrMap attrs = {{"strides", Attribute(Ints{2, 3})},
                   {"pads", Attribute(Ints{1, 0, 2, 1})},
                   {"dilations", Attribute(Ints{2, 1})}};
  EXPECT_INFERS(infer("conv2d", {f32({1, 3, 9, 8}), f32({5, 3, 3, 2}), f32({5})}, attrs), f32({1, 5, 4, 3}));
}

TEST(InferConv2d, GroupsAndDepthwise) {
  EXPECT_INFERS(infer("conv2d", {f32({1, 4, 5, 5}), f32({6, 2, 3, 3})}, {{"groups", Attribute(2)}}),
                f32({1, 6, 3, 3}));
  EXPECT_INFERS(infer("conv2d", {f32({1, 4, 5, 5}), f32({8, 1, 3, 3})}, {{"groups", Attribute(4)}}),
                f32({1, 8, 3, 3}));
}

TEST(InferConv2d, LayoutsFollowTheInput) {
  // NHWC [N,H,W,C] with OHWI [O,kH,kW,I] gives NHWC [N,oH,oW,O].
  EXPECT_INFERS(infer("conv2d", {nhwc({2, 7, 6, 3}), ohwi({4, 3, 3, 3})}), nhwc({2, 5, 4, 4}));
  EXPECT_INFERS(infer("conv2d", {nhwc({2, 7, 6, 3}), f32({4, 3, 3, 3})}), nhwc({2, 5, 4, 4}));
  TensorType nchw = typed(DType::F32, {1, 3, 5, 5}, Layout::NCHW);
  EXPECT_INFERS(infer("conv2d", {nchw, ohwi({2, 3, 3, 3})}), typed(DType::F32, {1, 2, 3, 3}, Layout::NCHW));
}

TEST(InferConv2d, ChannelMismatch) {
  EXPECT_INFER_ERROR(infer("conv2d", {f32({1, 3, 5, 5}), f32({2, 4, 3, 3})}),
                     "input channels 3 do not match weight in-channels 4 x groups 1");
  EXPECT_INFER_ERROR(infer("conv2d", {f32({1, 6, 5, 5}), f32({4, 4, 3, 3})}, {{"groups", Attribute(4)}}),
                     "input channels 6 do not match weight in-channels 4 x groups 4");
  EXPECT_INFER_ERROR(infer("conv2d", {f32({1, 4, 5, 5}), f32({3, 2, 3, 3})}, {{"groups", Attribute(2)}}),
                     "weight out-channels 3 are not divisible by groups 2");
  // An NHWC input's channels are its last axis.
  EXPECT_INFER_ERROR(infer("conv2d", {nhwc({1, 5, 5, 3}), f32({2, 5, 3, 3})}),
                     "input channels 3 do not match weight in-channels 5");
}

TEST(InferConv2d, GroupsMustBePositive) {
  for (int64_t g : {int64_t{0}, int64_t{-2}})
    EXPECT_INFER_ERROR(infer("conv2d", {f32({1, 4, 5, 5}), f32({4, 4, 3, 3})}, {{"groups", Attribute(g)}}),
                       str("attribute groups must be >= 1, got ", g));
  EXPECT_INFER_ERROR(infer("conv2d", {f32({1, 4, 5, 5}), f32({4, 4, 3, 3})}, {{"groups", Attribute(kHuge)}}),
                     "input channels 4 do not match");
}

TEST(InferConv2d, ListAttributesAreChecked) {
  auto conv = [](AttrMap a) { return infer("conv2d", {f32({1, 3, 5, 5}), f32({2, 3, 3, 3})}, std::move(a)); };
  EXPECT_INFER_ERROR(conv({{"strides", Attribute(Ints{0, 1})}}), "attribute strides must have values >= 1, got [0, 1]");
  EXPECT_INFER_ERROR(conv({{"strides", Attribute(Ints{-1, 1})}}), "attribute strides must have values >= 1");
  EXPECT_INFER_ERROR(conv({{"strides", Attribute(Ints{2})}}), "attribute strides must have 2 values, got [2]");
  EXPECT_INFER_ERROR(conv({{"pads", Attribute(Ints{1, 1})}}), "attribute pads must have 4 values, got [1, 1]");
  EXPECT_INFER_ERROR(conv({{"pads", Attribute(Ints{0, -1, 0, 0})}}), "attribute pads must have values >= 0");
  EXPECT_INFER_ERROR(conv({{"dilations", Attribute(Ints{1, 0})}}), "attribute dilations must have values >= 1");
  EXPECT_INFER_ERROR(conv({{"dilations", Attribute(Ints{1, 1, 1})}}), "attribute dilations must have 2 values");
}

TEST(InferConv2d, KernelLargerThanPaddedInput) {
  EXPECT_INFER_ERROR(infer("conv2d", {f32({1, 3, 2, 5}), f32({2, 3, 3, 3})}, {{"pads", Attribute(Ints{0, 0, 0, 0})}}),
                     "kernel height 3 (dilated to 3) exceeds the padded input height 2 (2 + pads 0 + 0)");
  EXPECT_INFER_ERROR(infer("conv2d", {f32({1, 3, 5, 5}), f32({2, 3, 3, 3})}, {{"dilations", Attribute(Ints{1, 3})}}),
                     "kernel width 3 (dilated to 7) exceeds the padded input width 5");
  // Padding may make room for the kernel.
  EXPECT_INFERS(infer("conv2d", {f32({1, 3, 2, 5}), f32({2, 3, 3, 3})}, {{"pads", Attribute(Ints{1, 0, 0, 0})}}),
                f32({1, 2, 1, 3}));
}

TEST(InferConv2d, HugeAttributesGiveErrorsNotOverflow) {
  auto conv = [](AttrMap a) { return infer("conv2d", {f32({1, 3, 5, 5}), f32({2, 3, 3, 3})}, std::move(a)); };
  EXPECT_INFER_ERROR(conv({{"pads", Attribute(Ints{kHuge, 0, kHuge, 0})}}), "window along height overflows int64");
  EXPECT_INFER_ERROR(conv({{"dilations", Attribute(Ints{kHuge, 1})}}), "window along height overflows int64");
  EXPECT_INFER_ERROR(conv({{"pads", Attribute(Ints{kHuge / 2, kHuge / 2, 0, 0})}}),
                     "has more elements than int64 can count");
  EXPECT_INFERS(conv({{"strides", Attribute(Ints{kHuge, kHuge})}}), f32({1, 2, 1, 1}));
}

TEST(InferConv2d, ZeroSizedKernelIsRejected) {
  EXPECT_INFER_ERROR(infer("conv2d", {f32({1, 3, 5, 5}), f32({2, 3, 0, 3})}),
                     "weight kernel must be at least 1x1, got 0x3");
}

TEST(InferConv2d, OperandTypesAndLayouts) {
  EXPECT_INFER_ERROR(infer("conv2d", {f32({3, 5, 5}), f32({2, 3, 3, 3})}),
                     "operand 0 must have rank 4, got f32[3,5,5]");
  EXPECT_INFER_ERROR(infer("conv2d", {f32({1, 3, 5, 5}), f32({2, 3, 3})}), "operand 1 must have rank 4");
  EXPECT_INFER_ERROR(infer("conv2d", {i64({1, 3, 5, 5}), i64({2, 3, 3, 3})}), "operand 0 must be floating-point");
  EXPECT_INFER_ERROR(infer("conv2d", {f32({1, 3, 5, 5}), typed(DType::F64, {2, 3, 3, 3})}),
                     "must have the same dtype");
  EXPECT_INFER_ERROR(infer("conv2d", {ohwi({1, 5, 5, 3}), f32({2, 3, 3, 3})}),
                     "operand 0 has layout ohwi, expected nchw or nhwc");
  EXPECT_INFER_ERROR(infer("conv2d", {f32({1, 3, 5, 5}), nhwc({2, 3, 3, 3})}),
                     "operand 1 has layout nhwc, expected oihw or ohwi");
}

TEST(InferConv2d, Bias) {
  EXPECT_INFER_ERROR(infer("conv2d", {f32({1, 3, 5, 5}), f32({2, 3, 3, 3}), f32({3})}),
                     "bias must have shape [2] (the weight's out-channels), got f32[3]");
  EXPECT_INFER_ERROR(infer("conv2d", {f32({1, 3, 5, 5}), f32({2, 3, 3, 3}), f32({1, 2})}), "bias must have shape [2]");
  EXPECT_INFER_ERROR(infer("conv2d", {f32({1, 3, 5, 5}), f32({2, 3, 3, 3}), typed(DType::F64, {2})}),
                     "operands 0 and 2 must have the same dtype");
  EXPECT_INFER_ERROR(infer("conv2d", {f32({1, 3, 5, 5})}), "op 'conv2d' takes 2 to 3 operands, got 1");
}

// ---------------------------------------------------------------- conv2d gradients

AttrMap gradInput(Ints xShape, AttrMap more = {}) {
  more.emplace("input_shape", Attribute(std::move(xShape)));
  return more;
}
AttrMap gradWeight(Ints wShape, std::string layout = "plain", AttrMap more = {}) {
  more.emplace("weight_shape", Attribute(std::move(wShape)));
  more.emplace("weight_layout", Attribute(std::move(layout)));
  return more;
}

TEST(InferConv2dGrad, ResultsHaveTheForwardOperandTypes) {
  AttrMap s2 = {{"strides", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{1, 1, 1, 1})}};
  // x [1,3,8,7] (8 rows: the last is never read at stride 2) with w [4,3,3,3] gives dy [1,4,4,4].
  EXPECT_INFERS(infer("conv2d_grad_input", {f32({1, 4, 4, 4}), f32({4, 3, 3, 3})}, gradInput({1, 3, 8, 7}, s2)),
                f32({1, 3, 8, 7}));
  EXPECT_INFERS(
      infer("conv2d_grad_weight", {f32({1, 4, 4, 4}), f32({1, 3, 8, 7})}, gradWeight({4, 3, 3, 3}, "plain", s2)),
      f32({4, 3, 3, 3}));
  // NHWC x and dy, OHWI w; the weight's tag comes from weight_layout.
  AttrMap g2 = {{"groups", Attribute(int64_t{2})}};
  EXPECT_INFERS(infer("conv2d_grad_input", {nhwc({1, 4, 4, 6}), ohwi({6, 3, 3, 2})}, gradInput({1, 6, 6, 4}, g2)),
                nhwc({1, 6, 6, 4}));
  EXPECT_INFERS(
      infer("conv2d_grad_weight", {nhwc({1, 4, 4, 6}), nhwc({1, 6, 6, 4})}, gradWeight({6, 3, 3, 2}, "ohwi", g2)),
      ohwi({6, 3, 3, 2}));
  EXPECT_INFERS(infer("conv2d_grad_weight", {f32({1, 2, 3, 3}), f32({1, 3, 5, 5})}, gradWeight({2, 3, 3, 3}, "oihw")),
                typed(DType::F32, {2, 3, 3, 3}, Layout::OIHW));
}

TEST(InferConv2dGrad, DyMustMatchTheForwardResult) {
  EXPECT_INFER_ERROR(infer("conv2d_grad_input", {f32({1, 4, 5, 5}), f32({4, 3, 3, 3})}, gradInput({1, 3, 8, 8})),
                     "operand 0 (dy) must be f32[1,4,6,6], got f32[1,4,5,5]");
  EXPECT_INFER_ERROR(infer("conv2d_grad_weight", {f32({1, 4, 6, 6}), nhwc({1, 8, 8, 3})}, gradWeight({4, 3, 3, 3})),
                     "operand 0 (dy) must be f32[1,6,6,4]#nhwc, got f32[1,4,6,6]");
  EXPECT_INFER_ERROR(infer("conv2d_grad_input", {f32({1, 4, 6, 6}), typed(DType::F64, {4, 3, 3, 3})},
                           gradInput({1, 3, 8, 8})),
                     "operands 0 and 1 must have the same dtype");
  EXPECT_INFER_ERROR(infer("conv2d_grad_input", {i64({1, 4, 6, 6}), i64({4, 3, 3, 3})}, gradInput({1, 3, 8, 8})),
                     "operand 0 must be floating-point");
  EXPECT_INFER_ERROR(infer("conv2d_grad_input", {f32({4, 6, 6}), f32({4, 3, 3, 3})}, gradInput({1, 3, 8, 8})),
                     "operand 0 (dy) must have rank 4");
}

TEST(InferConv2dGrad, ShapeAttributesAreChecked) {
  EXPECT_INFER_ERROR(infer("conv2d_grad_input", {f32({1, 4, 6, 6}), f32({4, 3, 3, 3})}, gradInput({3, 8, 8})),
                     "attribute input_shape must have 4 sizes, got [3, 8, 8]");
  EXPECT_INFER_ERROR(infer("conv2d_grad_input", {f32({1, 4, 6, 6}), f32({4, 3, 3, 3})}, gradInput({1, -3, 8, 8})),
                     "negative size -3");
  EXPECT_INFER_ERROR(infer("conv2d_grad_input", {f32({1, 4, 6, 6}), f32({4, 3, 3, 3})}, gradInput({1, 2, 8, 8})),
                     "input channels 2 do not match weight in-channels 3 x groups 1");
  EXPECT_INFER_ERROR(infer("conv2d_grad_weight", {f32({1, 4, 6, 6}), f32({1, 3, 8, 8})}, gradWeight({4, 3, 3})),
                     "attribute weight_shape must have 4 sizes");
  EXPECT_INFER_ERROR(
      infer("conv2d_grad_weight", {f32({1, 4, 6, 6}), f32({1, 3, 8, 8})}, gradWeight({4, 3, 3, 3}, "nhwc")),
      "attribute weight_layout = \"nhwc\" must be \"plain\", \"oihw\" or \"ohwi\"");
  EXPECT_INFER_ERROR(infer("conv2d_grad_weight", {f32({1, 4, 6, 6}), f32({1, 3, 8, 8})}, gradWeight({4, 3, 9, 9})),
                     "kernel height 9 (dilated to 9) exceeds the padded input height 8");
  EXPECT_INFER_ERROR(infer("conv2d_grad_input", {f32({1, 4, 6, 6}), f32({4, 3, 3, 3})}),
                     "input_shape");
}

}  // namespace
}  // namespace kfuse
