// Shape/type inference and error messages of the pooling ops.
#include <limits>

#include "tests/unit/infer_test_util.h"

namespace kfuse {
namespace {

using test::f32;
using test::i64;
using test::infer;

using Ints = std::vector<int64_t>;
constexpr int64_t kHuge = std::numeric_limits<int64_t>::max();

TensorType nhwc(Shape s) { return TensorType(DType::F32, std::move(s), Layout::NHWC); }

#define EXPECT_INFERS(expr, want)                       \
  do {                                                  \
    auto r_ = (expr);                                   \
    ASSERT_TRUE(r_) << r_.error().message();            \
    EXPECT_EQ(formatType((*r_)[0]), formatType(want)); \
  } while (0)

AttrMap kernel(int64_t kh, int64_t kw, AttrMap more = {}) {
  more.emplace("kernel", Attribute(Ints{kh, kw}));
  return more;
}

TEST(InferPool, StridesDefaultToTheKernel) {
  EXPECT_INFERS(infer("max_pool2d", {f32({2, 3, 6, 7})}, kernel(2, 3)), f32({2, 3, 3, 2}));
  EXPECT_INFERS(infer("avg_pool2d", {f32({2, 3, 6, 7})}, kernel(2, 3)), f32({2, 3, 3, 2}));
}

TEST(InferPool, OutputSizeFormula) {
  // oH = floor((7 + 1 + 0 - 2*(3-1) - 1) / 2) + 1 = 2; oW = floor((6 + 1 + 1 - 2) / 1) + 1 = 7
  AttrMap a = kernel(3, 2, {{"strides", Attribute(Ints{2, 1})}, {"pads", Attribute(Ints{1, 1, 0, 1})},
                            {"dilations", Attribute(Ints{2, 1})}});
  EXPECT_INFERS(infer("max_pool2d", {f32({1, 2, 7, 6})}, a), f32({1, 2, 2, 7}));
}

TEST(InferPool, CeilModeAddsAWindowThatStartsInsideTheInput) {
  EXPECT_INFERS(infer("max_pool2d", {f32({1, 1, 5, 5})}, kernel(2, 2)), f32({1, 1, 2, 2}));
  EXPECT_INFERS(infer("max_pool2d", {f32({1, 1, 5, 5})}, kernel(2, 2, {{"ceil_mode", Attribute(true)}})),
                f32({1, 1, 3, 3}));
  // H=3, k=2, s=2, pad 1: the extra window would start at 4 >= 3 + 1, in the bottom padding.
  AttrMap a = kernel(2, 2, {{"pads", Attribute(Ints{1, 1, 1, 1})}, {"ceil_mode", Attribute(true)}});
  EXPECT_INFERS(infer("avg_pool2d", {f32({1, 1, 3, 3})}, a), f32({1, 1, 2, 2}));
}

TEST(InferPool, LayoutsFollowTheInput) {
  EXPECT_INFERS(infer("max_pool2d", {nhwc({2, 6, 8, 3})}, kernel(2, 2)), nhwc({2, 3, 4, 3}));
  TensorType nchw(DType::F32, {2, 3, 6, 8}, Layout::NCHW);
  EXPECT_INFERS(infer("avg_pool2d", {nchw}, kernel(2, 2)), TensorType(DType::F32, {2, 3, 3, 4}, Layout::NCHW));
  EXPECT_INFERS(infer("global_avg_pool2d", {f32({2, 3, 6, 8})}), f32({2, 3, 1, 1}));
  EXPECT_INFERS(infer("global_avg_pool2d", {nhwc({2, 6, 8, 3})}), nhwc({2, 1, 1, 3}));
  EXPECT_INFERS(infer("global_avg_pool2d", {TensorType(DType::BF16, {1, 4, 2, 2})}),
                TensorType(DType::BF16, {1, 4, 1, 1}));
}

TEST(InferPool, KernelIsRequiredAndChecked) {
  EXPECT_INFER_ERROR(infer("max_pool2d", {f32({1, 1, 4, 4})}), "op 'max_pool2d' requires attribute 'kernel'");
  EXPECT_INFER_ERROR(infer("avg_pool2d", {f32({1, 1, 4, 4})}, {{"kernel", Attribute(Ints{2})}}),
                     "attribute kernel must have 2 values, got [2]");
  EXPECT_INFER_ERROR(infer("max_pool2d", {f32({1, 1, 4, 4})}, kernel(0, 2)),
                     "attribute kernel must have values >= 1, got [0, 2]");
  EXPECT_INFER_ERROR(infer("max_pool2d", {f32({1, 1, 4, 4})}, kernel(5, 2)),
                     "kernel height 5 (dilated to 5) exceeds the padded input height 4 (4 + pads 0 + 0)");
}

TEST(InferPool, ListAttributesAreChecked) {
  auto pool = [](AttrMap a) { return infer("max_pool2d", {f32({1, 1, 6, 6})}, kernel(3, 3, std::move(a))); };
  EXPECT_INFER_ERROR(pool({{"strides", Attribute(Ints{0, 1})}}), "attribute strides must have values >= 1, got [0, 1]");
  EXPECT_INFER_ERROR(pool({{"strides", Attribute(Ints{1, 1, 1})}}), "attribute strides must have 2 values");
  EXPECT_INFER_ERROR(pool({{"pads", Attribute(Ints{0, 0, -1, 0})}}), "attribute pads must have values >= 0");
  EXPECT_INFER_ERROR(pool({{"pads", Attribute(Ints{1})}}), "attribute pads must have 4 values, got [1]");
  EXPECT_INFER_ERROR(pool({{"dilations", Attribute(Ints{-1, 1})}}), "attribute dilations must have values >= 1");
  EXPECT_INFER_ERROR(infer("avg_pool2d", {f32({1, 1, 6, 6})}, kernel(3, 3, {{"dilations", Attribute(Ints{2, 2})}})),
                     "op 'avg_pool2d' has no attribute 'dilations'");
  EXPECT_INFER_ERROR(infer("max_pool2d", {f32({1, 1, 6, 6})}, kernel(3, 3, {{"count_include_pad", Attribute(true)}})),
                     "op 'max_pool2d' has no attribute 'count_include_pad'");
}

TEST(InferPool, PadsMustBeSmallerThanTheWindow) {
  EXPECT_INFER_ERROR(infer("avg_pool2d", {f32({1, 1, 6, 6})}, kernel(3, 3, {{"pads", Attribute(Ints{0, 3, 0, 0})}})),
                     "pads along width (3, 0) must be smaller than the kernel 3: a window could hold only padding");
  // A dilated window spans more, so it tolerates more padding.
  AttrMap dilated = kernel(2, 2, {{"pads", Attribute(Ints{2, 0, 2, 0})}, {"dilations", Attribute(Ints{3, 1})}});
  EXPECT_INFERS(infer("max_pool2d", {f32({1, 1, 6, 6})}, dilated), f32({1, 1, 4, 3}));
  dilated["pads"] = Attribute(Ints{0, 0, 4, 0});
  EXPECT_INFER_ERROR(infer("max_pool2d", {f32({1, 1, 6, 6})}, dilated),
                     "pads along height (0, 4) must be smaller than the dilated kernel 4");
}

TEST(InferPool, HugeAttributesGiveErrorsNotOverflow) {
  auto pool = [](AttrMap a) { return infer("max_pool2d", {f32({1, 1, 6, 6})}, kernel(3, 3, std::move(a))); };
  EXPECT_INFER_ERROR(pool({{"dilations", Attribute(Ints{kHuge, 1})}}), "window along height overflows int64");
  EXPECT_INFER_ERROR(infer("max_pool2d", {f32({1, 1, 6, 6})}, kernel(kHuge, 1)), "exceeds the padded input height");
  EXPECT_INFERS(pool({{"strides", Attribute(Ints{kHuge, kHuge})}, {"ceil_mode", Attribute(true)}}),
                f32({1, 1, 1, 1}));
  AttrMap padded = kernel(3, 3, {{"pads", Attribute(Ints{2, 0, 2, 0})}});
  EXPECT_INFER_ERROR(infer("max_pool2d", {f32({1, 1, kHuge, 6})}, padded), "window along height overflows int64");
}

TEST(InferPool, OperandIsAFloatImage) {
  for (std::string op : {"max_pool2d", "avg_pool2d", "global_avg_pool2d"}) {
    AttrMap a = op == "global_avg_pool2d" ? AttrMap{} : kernel(1, 1);
    EXPECT_INFER_ERROR(infer(op, {f32({1, 4, 4})}, a), "operand 0 must have rank 4, got f32[1,4,4]");
    EXPECT_INFER_ERROR(infer(op, {i64({1, 1, 4, 4})}, a), "operand 0 must be floating-point");
    EXPECT_INFER_ERROR(infer(op, {TensorType(DType::F32, {1, 1, 4, 4}, Layout::OIHW)}, a),
                       "operand 0 has layout oihw, expected nchw or nhwc");
    EXPECT_INFER_ERROR(infer(op, {f32({1, 3, 0, 4})}, a), "input height and width must be at least 1, got 0x4");
    EXPECT_INFER_ERROR(infer(op, {f32({1, 1, 4, 4}), f32({1, 1, 4, 4})}, a), "takes 1 operand, got 2");
  }
}

// ---------------------------------------------------------------- gradients

TEST(InferPoolGrad, MaxPoolGradHasXType) {
  AttrMap a = kernel(3, 3, {{"strides", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{1, 1, 1, 1})}});
  EXPECT_INFERS(infer("max_pool2d_grad", {f32({1, 2, 3, 3}), f32({1, 2, 6, 5})}, a), f32({1, 2, 6, 5}));
  EXPECT_INFERS(infer("max_pool2d_grad", {nhwc({1, 3, 3, 2}), nhwc({1, 6, 5, 2})}, a), nhwc({1, 6, 5, 2}));
}

TEST(InferPoolGrad, MaxPoolGradDyMustMatchTheForwardResult) {
  EXPECT_INFER_ERROR(infer("max_pool2d_grad", {f32({1, 2, 2, 2}), f32({1, 2, 6, 6})}, kernel(2, 2)),
                     "operand 0 (dy) must be f32[1,2,3,3], got f32[1,2,2,2]");
  EXPECT_INFER_ERROR(infer("max_pool2d_grad", {f32({1, 2, 3, 3}), nhwc({1, 6, 6, 2})}, kernel(2, 2)),
                     "operand 0 (dy) must be f32[1,3,3,2]#nhwc, got f32[1,2,3,3]");
  EXPECT_INFER_ERROR(infer("max_pool2d_grad", {f32({1, 2, 3, 3}), i64({1, 2, 6, 6})}, kernel(2, 2)),
                     "operand 1 must be floating-point");
  EXPECT_INFER_ERROR(infer("max_pool2d_grad", {f32({1, 2, 3, 3}), f32({1, 2, 6, 6})}, kernel(7, 7)),
                     "kernel height 7 (dilated to 7) exceeds the padded input height 6");
  EXPECT_INFER_ERROR(infer("max_pool2d_grad", {f32({1, 2, 3, 3})}, kernel(2, 2)), "takes 2 operands, got 1");
}

AttrMap avgGrad(Ints xShape, AttrMap more = {}) {
  more.emplace("input_shape", Attribute(std::move(xShape)));
  return kernel(2, 2, std::move(more));
}

TEST(InferPoolGrad, AvgPoolGradHasInputShapeAndDyLayout) {
  EXPECT_INFERS(infer("avg_pool2d_grad", {f32({1, 2, 3, 3})}, avgGrad({1, 2, 7, 6})), f32({1, 2, 7, 6}));
  EXPECT_INFERS(infer("avg_pool2d_grad", {nhwc({1, 3, 4, 2})}, avgGrad({1, 5, 7, 2}, {{"ceil_mode", Attribute(true)}})),
                nhwc({1, 5, 7, 2}));
}

TEST(InferPoolGrad, AvgPoolGradErrors) {
  EXPECT_INFER_ERROR(infer("avg_pool2d_grad", {f32({1, 2, 3, 3})}, avgGrad({1, 2, 8, 8})),
                     "operand 0 (dy) must be f32[1,2,4,4], got f32[1,2,3,3]");
  EXPECT_INFER_ERROR(infer("avg_pool2d_grad", {f32({1, 2, 3, 3})}, avgGrad({1, 2, 6})),
                     "attribute input_shape must have 4 sizes, got [1, 2, 6]");
  EXPECT_INFER_ERROR(infer("avg_pool2d_grad", {f32({1, 2, 3, 3})}, avgGrad({1, 2, 0, 6})),
                     "input height and width must be at least 1, got 0x6");
  EXPECT_INFER_ERROR(infer("avg_pool2d_grad", {TensorType(DType::F32, {1, 2, 3, 3}, Layout::OIHW)},
                           avgGrad({1, 2, 6, 6})),
                     "operand 0 (dy) has layout oihw, expected nchw or nhwc");
  EXPECT_INFER_ERROR(infer("avg_pool2d_grad", {i64({1, 2, 3, 3})}, avgGrad({1, 2, 6, 6})),
                     "operand 0 must be floating-point");
  EXPECT_INFER_ERROR(infer("avg_pool2d_grad", {f32({1, 2, 3, 3})}, kernel(2, 2)),
                     "op 'avg_pool2d_grad' requires attribute 'input_shape'");
}

}  // namespace
}  // namespace kfuse
