// Shape/type inference and error messages of the norm ops.
#include <cmath>
#include <limits>

#include "tests/unit/infer_test_util.h"

namespace kfuse {
namespace {

using test::f32;
using test::i64;
using test::infer;

TensorType f64(Shape s) { return TensorType(DType::F64, std::move(s)); }
TensorType nhwc(Shape s) { return TensorType(DType::F32, std::move(s), Layout::NHWC); }

// ---------------------------------------------------------------- batch_norm

TEST(InferNorm, BatchNormKeepsXType) {
  TensorType x(DType::F32, {2, 3, 4, 4}, Layout::NCHW);
  auto r = infer("batch_norm", {x, f32({3}), f32({3}), f32({3}), f32({3})});
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0], x);
}

TEST(InferNorm, BatchNormNhwcChannelsAreLast) {
  auto r = infer("batch_norm", {nhwc({2, 4, 4, 3}), f32({3}), f32({3}), f32({3}), f32({3})});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)[0], nhwc({2, 4, 4, 3}));
  EXPECT_INFER_ERROR(infer("batch_norm", {nhwc({2, 3, 4, 4}), f32({3}), f32({3}), f32({3}), f32({3})}),
                     "operand 1 (scale) must be f32[4] to match x f32[2,3,4,4]#nhwc, got f32[3]");
}

TEST(InferNorm, BatchNormRank2) {
  auto r = infer("batch_norm", {f32({8, 5}), f32({5}), f32({5}), f32({5}), f32({5})});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)[0], f32({8, 5}));
}

TEST(InferNorm, BatchNormNamesTheBadVector) {
  EXPECT_INFER_ERROR(infer("batch_norm", {f32({2, 3, 4}), f32({3}), f32({3}), f32({4}), f32({3})}),
                     "op 'batch_norm': operand 3 (mean) must be f32[3] to match x f32[2,3,4], got f32[4]");
  EXPECT_INFER_ERROR(infer("batch_norm", {f32({2, 3, 4}), f32({3}), f32({3}), f32({3}), f32({1, 3})}),
                     "operand 4 (var) must be f32[3]");
  EXPECT_INFER_ERROR(infer("batch_norm", {f32({2, 3, 4}), f32({3}), f64({3}), f32({3}), f32({3})}),
                     "operand 2 (bias) must be f32[3] to match x f32[2,3,4], got f64[3]");
}

TEST(InferNorm, BatchNormNeedsFloatRank2X) {
  EXPECT_INFER_ERROR(infer("batch_norm", {i64({2, 3}), i64({3}), i64({3}), i64({3}), i64({3})}),
                     "operand 0 must be floating-point, got i64[2,3]");
  EXPECT_INFER_ERROR(infer("batch_norm", {f32({3}), f32({3}), f32({3}), f32({3}), f32({3})}),
                     "operand 0 (x) must have rank >= 2 (batch and channel axes), got f32[3]");
}

TEST(InferNorm, BatchNormRejectsFilterLayouts) {
  TensorType w(DType::F32, {4, 3, 2, 2}, Layout::OIHW);
  EXPECT_INFER_ERROR(infer("batch_norm", {w, f32({3}), f32({3}), f32({3}), f32({3})}),
                     "operand 0 (x) has layout oihw, but batch norm needs an activation layout");
}

TEST(InferNorm, BatchNormEpsilonIsChecked) {
  std::vector<TensorType> in = {f32({2, 3}), f32({3}), f32({3}), f32({3}), f32({3})};
  EXPECT_INFER_ERROR(infer("batch_norm", in, {{"epsilon", Attribute(-1e-5)}}),
                     "attribute epsilon = -1e-05 must be finite and non-negative");
  EXPECT_INFER_ERROR(infer("batch_norm", in, {{"epsilon", Attribute(std::numeric_limits<double>::quiet_NaN())}}),
                     "must be finite and non-negative");
  EXPECT_INFER_ERROR(infer("batch_norm", in, {{"epsilon", Attribute("small")}}),
                     "attribute 'epsilon' of op 'batch_norm' must be float, got string");
  EXPECT_TRUE(infer("batch_norm", in, {{"epsilon", Attribute(0)}}));  // an int converts
}

TEST(InferNorm, BatchNormArity) {
  EXPECT_INFER_ERROR(infer("batch_norm", {f32({2, 3}), f32({3}), f32({3})}), "op 'batch_norm' takes 5 operands, got 3");
}

// ---------------------------------------------------------- batch_norm_train

TEST(InferNorm, BatchNormTrainHasThreeResults) {
  auto r = infer("batch_norm_train", {f32({4, 3, 5, 5}), f32({3}), f32({3})});
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0], f32({4, 3, 5, 5}));
  EXPECT_EQ((*r)[1], f32({3}));
  EXPECT_EQ((*r)[2], f32({3}));
}

TEST(InferNorm, BatchNormTrainNhwcStatisticsArePerLastAxis) {
  auto r = infer("batch_norm_train", {TensorType(DType::F64, {2, 3, 3, 4}, Layout::NHWC), f64({4}), f64({4})});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)[0].layout, Layout::NHWC);
  EXPECT_EQ((*r)[1], f64({4}));
  EXPECT_EQ((*r)[2], f64({4}));
}

TEST(InferNorm, BatchNormTrainErrors) {
  EXPECT_INFER_ERROR(infer("batch_norm_train", {f32({4, 3}), f32({3}), f32({4})}),
                     "op 'batch_norm_train': operand 2 (bias) must be f32[3]");
  EXPECT_INFER_ERROR(infer("batch_norm_train", {f32({4, 3}), f32({3}), f32({3}), f32({3})}),
                     "takes 3 operands, got 4");
  EXPECT_INFER_ERROR(infer("batch_norm_train", {f32({4, 3}), f32({3}), f32({3})}, {{"momentum", Attribute(0.1)}}),
                     "op 'batch_norm_train' has no attribute 'momentum' (it takes: epsilon)");
}

// ---------------------------------------------------------------- layer_norm

TEST(InferNorm, LayerNormOperandCounts) {
  for (size_t n = 1; n <= 3; ++n) {
    std::vector<TensorType> in = {f32({2, 3, 8}), f32({8}), f32({8})};
    in.resize(n);
    auto r = infer("layer_norm", in);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ((*r)[0], f32({2, 3, 8}));
  }
  EXPECT_INFER_ERROR(infer("layer_norm", {f32({8}), f32({8}), f32({8}), f32({8})}), "takes 1 to 3 operands, got 4");
}

TEST(InferNorm, LayerNormScaleShapeFollowsAxis) {
  auto r = infer("layer_norm", {f32({2, 3, 8}), f32({3, 8}), f32({3, 8})}, {{"axis", Attribute(-2)}});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_TRUE(infer("layer_norm", {f32({2, 3, 8}), f32({2, 3, 8})}, {{"axis", Attribute(0)}}));
  EXPECT_INFER_ERROR(infer("layer_norm", {f32({2, 3, 8}), f32({8})}, {{"axis", Attribute(1)}}),
                     "op 'layer_norm': operand 1 (scale) must be f32[3,8] to match x f32[2,3,8], got f32[8]");
  EXPECT_INFER_ERROR(infer("layer_norm", {f32({2, 3, 8}), f32({8}), f32({1, 8})}),
                     "operand 2 (bias) must be f32[8] to match x f32[2,3,8], got f32[1,8]");
  EXPECT_INFER_ERROR(infer("layer_norm", {f32({2, 8}), f64({8})}), "got f64[8]");
}

TEST(InferNorm, LayerNormAxisOutOfRange) {
  EXPECT_INFER_ERROR(infer("layer_norm", {f32({2, 3})}, {{"axis", Attribute(2)}}),
                     "attribute axis = 2 is out of range for rank 2");
  EXPECT_INFER_ERROR(infer("layer_norm", {f32({2, 3})}, {{"axis", Attribute(-3)}}), "out of range for rank 2");
  EXPECT_INFER_ERROR(infer("layer_norm", {f32({2, 3})}, {{"axis", Attribute(std::numeric_limits<int64_t>::min())}}),
                     "out of range for rank 2");
  EXPECT_INFER_ERROR(infer("layer_norm", {f32({})}), "attribute axis = -1 is out of range for rank 0");
}

TEST(InferNorm, LayerNormTypeAndEpsilon) {
  EXPECT_INFER_ERROR(infer("layer_norm", {i64({2, 3})}), "operand 0 must be floating-point, got i64[2,3]");
  EXPECT_INFER_ERROR(infer("layer_norm", {f32({2, 3})}, {{"epsilon", Attribute(std::numeric_limits<double>::infinity())}}),
                     "attribute epsilon = inf must be finite and non-negative");
  EXPECT_INFER_ERROR(infer("layer_norm", {f32({2, 3})}, {{"axis", Attribute(0.5)}}),
                     "attribute 'axis' of op 'layer_norm' must be int, got float");
}

// ------------------------------------------------------------------- dropout

TEST(InferNorm, DropoutKeepsType) {
  TensorType x(DType::F32, {1, 3, 4, 4}, Layout::NCHW);
  auto r = infer("dropout", {x});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)[0], x);
  auto withStep = infer("dropout", {f64({5}), i64({})}, {{"ratio", Attribute(0.0)}, {"seed", Attribute(-7)}});
  ASSERT_TRUE(withStep) << withStep.error().message();
  EXPECT_EQ((*withStep)[0], f64({5}));
}

TEST(InferNorm, DropoutRatioMustBeInHalfOpenUnitInterval) {
  for (double bad : {1.0, -0.1, 2.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()})
    EXPECT_INFER_ERROR(infer("dropout", {f32({4})}, {{"ratio", Attribute(bad)}}), "must be in [0, 1)");
  EXPECT_INFER_ERROR(infer("dropout", {f32({4})}, {{"ratio", Attribute(1.0)}}), "attribute ratio = 1 must be in [0, 1)");
  EXPECT_TRUE(infer("dropout", {f32({4})}, {{"ratio", Attribute(0.999)}}));
}

TEST(InferNorm, DropoutStepMustBeI64Scalar) {
  EXPECT_INFER_ERROR(infer("dropout", {f32({4}), i64({1})}), "operand 1 must have rank 0, got i64[1]");
  EXPECT_INFER_ERROR(infer("dropout", {f32({4}), f32({})}), "operand 1 must be i64, got f32[]");
  EXPECT_INFER_ERROR(infer("dropout", {i64({4})}), "operand 0 must be floating-point, got i64[4]");
  EXPECT_INFER_ERROR(infer("dropout", {f32({4})}, {{"seed", Attribute(0.5)}}),
                     "attribute 'seed' of op 'dropout' must be int, got float");
}

TEST(InferNorm, DropoutMaskIsABoolSecondResult) {
  TensorType x(DType::F32, {2, 3, 4, 4}, Layout::NHWC);
  auto r = infer("dropout", {x, i64({})}, {{"mask", Attribute(true)}});
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0], x);
  EXPECT_EQ((*r)[1], TensorType(DType::Bool, {2, 3, 4, 4}, Layout::NHWC));
  EXPECT_INFER_ERROR(infer("dropout", {f32({4})}, {{"mask", Attribute(int64_t{1})}}),
                     "attribute 'mask' of op 'dropout' must be bool, got int");
}

// ---------------------------------------------------------------- gradients

TEST(InferNormGrad, BatchNormTrainGradResults) {
  TensorType x(DType::F32, {2, 3, 3, 4}, Layout::NHWC);
  auto r = infer("batch_norm_train_grad", {x, x, f32({4}), f32({4}), f32({4})});
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0], x);
  EXPECT_EQ((*r)[1], f32({4}));
  EXPECT_EQ((*r)[2], f32({4}));
}

TEST(InferNormGrad, BatchNormTrainGradErrors) {
  auto bn = [](std::vector<TensorType> in, AttrMap a = {}) { return infer("batch_norm_train_grad", in, a); };
  EXPECT_INFER_ERROR(bn({f32({4, 3, 2}), f32({4, 3}), f32({3}), f32({3}), f32({3})}),
                     "operand 0 (dy) must be f32[4,3], got f32[4,3,2]");
  EXPECT_INFER_ERROR(bn({f32({4, 3}), f32({4, 3}), f32({3}), f32({3}), f32({4})}),
                     "operand 4 (batch_var) must be f32[3], got f32[4]");
  EXPECT_INFER_ERROR(bn({f32({4, 3}), f32({4, 3}), f64({3}), f32({3}), f32({3})}),
                     "operand 2 (scale) must be f32[3], got f64[3]");
  EXPECT_INFER_ERROR(bn({f32({4}), f32({4}), f32({4}), f32({4}), f32({4})}),
                     "operand 1 (x) must have rank >= 2 (batch and channel axes), got f32[4]");
  EXPECT_INFER_ERROR(bn({f32({4, 3}), f32({4, 3}), f32({3}), f32({3})}), "takes 5 operands, got 4");
  EXPECT_INFER_ERROR(bn({f32({4, 3}), f32({4, 3}), f32({3}), f32({3}), f32({3})}, {{"epsilon", Attribute(-1.0)}}),
                     "attribute epsilon = -1 must be finite and non-negative");
}

TEST(InferNormGrad, LayerNormGradIsDxAlone) {
  auto plain = infer("layer_norm_grad", {f32({2, 3, 8}), f32({2, 3, 8})});
  ASSERT_TRUE(plain) << plain.error().message();
  ASSERT_EQ(plain->size(), 1u);  // no scale: dx only
  EXPECT_EQ((*plain)[0], f32({2, 3, 8}));
  auto affine = infer("layer_norm_grad", {f32({2, 3, 8}), f32({2, 3, 8}), f32({3, 8})}, {{"axis", Attribute(1)}});
  ASSERT_TRUE(affine) << affine.error().message();
  ASSERT_EQ(affine->size(), 1u);  // dscale and dbias are reduce_sums the gradient rule builds
  EXPECT_EQ((*affine)[0], f32({2, 3, 8}));
}

TEST(InferNormGrad, LayerNormGradErrors) {
  EXPECT_INFER_ERROR(infer("layer_norm_grad", {f32({2, 8}), f32({2, 3, 8})}),
                     "operand 0 (dy) must be f32[2,3,8], got f32[2,8]");
  EXPECT_INFER_ERROR(infer("layer_norm_grad", {f32({2, 3, 8}), f32({2, 3, 8}), f32({8})}, {{"axis", Attribute(1)}}),
                     "operand 2 (scale) must be f32[3,8], got f32[8]");
  EXPECT_INFER_ERROR(infer("layer_norm_grad", {f32({2, 3}), f32({2, 3})}, {{"axis", Attribute(2)}}),
                     "attribute axis = 2 is out of range for rank 2");
  EXPECT_INFER_ERROR(infer("layer_norm_grad", {i64({2, 3}), i64({2, 3})}), "operand 0 must be floating-point");
  EXPECT_INFER_ERROR(infer("layer_norm_grad", {f32({2, 3})}), "takes 2 to 3 operands, got 1");
}

}  // namespace
}  // namespace kfuse
