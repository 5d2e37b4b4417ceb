// Shape/type inference and error messages of the elementwise ops.
#include "tests/unit/infer_test_util.h"

namespace kfuse {
namespace {

using test::f32;
using test::i64;
using test::infer;

TEST(InferElementwise, BinaryBroadcasts) {
  auto r = infer("add", {f32({2, 1, 4}), f32({3, 1})});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)[0], f32({2, 3, 4}));
}

TEST(InferElementwise, ShapeMismatchNamesBothShapes) {
  EXPECT_INFER_ERROR(infer("add", {f32({2, 3}), f32({4})}), "shapes [2,3] and [4] do not broadcast");
}

TEST(InferElementwise, DTypeMismatch) {
  EXPECT_INFER_ERROR(infer("mul", {f32({2}), i64({2})}), "must have the same dtype");
}

TEST(InferElementwise, FloatOnlyOpsRejectIntegers) {
  EXPECT_INFER_ERROR(infer("exp", {i64({2})}), "operand 0 must be floating-point, got i64[2]");
}

TEST(InferElementwise, ComparisonsYieldBool) {
  auto r = infer("less", {f32({2, 3}), f32({3})});
  ASSERT_TRUE(r);
  EXPECT_EQ((*r)[0].dtype, DType::Bool);
}

TEST(InferElementwise, WhereNeedsBoolCondition) {
  EXPECT_INFER_ERROR(infer("where", {f32({2}), f32({2}), f32({2})}), "operand 0 must be bool");
}

TEST(InferElementwise, CastRejectsUnknownDType) {
  EXPECT_INFER_ERROR(infer("cast", {f32({2})}, {{"to", Attribute("f31")}}), "is not a dtype");
}

TEST(InferElementwise, MissingRequiredAttribute) {
  EXPECT_INFER_ERROR(infer("cast", {f32({2})}), "requires attribute 'to'");
}

TEST(InferElementwise, WrongAttributeKind) {
  EXPECT_INFER_ERROR(infer("leaky_relu", {f32({2})}, {{"alpha", Attribute("big")}}),
                     "attribute 'alpha' of op 'leaky_relu' must be float, got string");
}

TEST(InferElementwise, ArityIsChecked) {
  EXPECT_INFER_ERROR(infer("add", {f32({2})}), "op 'add' takes 2 operands, got 1");
}

TEST(InferElementwise, LayoutsPropagateAndConflict) {
  TensorType nchw(DType::F32, {1, 3, 4, 4}, Layout::NCHW);
  TensorType nhwc(DType::F32, {1, 4, 4, 3}, Layout::NHWC);
  auto r = infer("relu", {nchw});
  ASSERT_TRUE(r);
  EXPECT_EQ((*r)[0].layout, Layout::NCHW);
  TensorType nhwcSameShape(DType::F32, {1, 3, 4, 4}, Layout::NHWC);
  EXPECT_INFER_ERROR(infer("add", {nchw, nhwcSameShape}), "different layouts");
  (void)nhwc;
}

}  // namespace
}  // namespace kfuse
