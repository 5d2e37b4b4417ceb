// Shape/type inference and error messages of the reduction ops.
#include <limits>

#include "tests/unit/infer_test_util.h"

namespace kfuse {
namespace {

using test::f32;
using test::i64;
using test::infer;

using Ints = std::vector<int64_t>;

TensorType of(DType d, Shape s) { return TensorType(d, std::move(s)); }

TEST(InferReduction, DefaultReducesEveryAxis) {
  auto r = infer("reduce_sum", {f32({2, 3, 4})});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)[0], f32({}));
}

TEST(InferReduction, EmptyAxesWithKeepdimsKeepsRank) {
  auto r = infer("reduce_max", {f32({2, 3})}, {{"keepdims", Attribute(true)}});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)[0], f32({1, 1}));
}

TEST(InferReduction, NegativeAxesAndKeepdims) {
  auto r = infer("reduce_mean", {f32({2, 3, 4})}, {{"axes", Attribute(Ints{-1, 0})}});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)[0], f32({3}));
  r = infer("reduce_mean", {f32({2, 3, 4})}, {{"axes", Attribute(Ints{-1, 0})}, {"keepdims", Attribute(true)}});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)[0], f32({1, 3, 1}));
}

TEST(InferReduction, RankZeroPassesThrough) {
  auto r = infer("reduce_min", {f32({})});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)[0], f32({}));
  EXPECT_INFER_ERROR(infer("reduce_sum", {f32({})}, {{"axes", Attribute(Ints{0})}}),
                     "attribute axes contains axis 0, out of range for rank 0");
}

TEST(InferReduction, IntegersKeepTheirDType) {
  auto r = infer("reduce_sum", {i64({4, 5})}, {{"axes", Attribute(Ints{1})}});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)[0], i64({4}));
  r = infer("reduce_max", {of(DType::I32, {4, 5})}, {{"axes", Attribute(Ints{0})}});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)[0], of(DType::I32, {5}));
}

TEST(InferReduction, AxisOutOfRange) {
  EXPECT_INFER_ERROR(infer("reduce_sum", {f32({2, 3})}, {{"axes", Attribute(Ints{2})}}),
                     "op 'reduce_sum': attribute axes contains axis 2, out of range for rank 2");
  EXPECT_INFER_ERROR(infer("reduce_max", {f32({2, 3})}, {{"axes", Attribute(Ints{-3})}}),
                     "attribute axes contains axis -3, out of range for rank 2");
  int64_t huge = std::numeric_limits<int64_t>::max(), tiny = std::numeric_limits<int64_t>::min();
  EXPECT_INFER_ERROR(infer("reduce_min", {f32({2, 3})}, {{"axes", Attribute(Ints{huge})}}), "out of range for rank 2");
  EXPECT_INFER_ERROR(infer("reduce_min", {f32({2, 3})}, {{"axes", Attribute(Ints{tiny})}}), "out of range for rank 2");
}

TEST(InferReduction, RepeatedAxes) {
  EXPECT_INFER_ERROR(infer("reduce_sum", {f32({2, 3})}, {{"axes", Attribute(Ints{1, 1})}}),
                     "attribute axes repeats an axis: [1, 1]");
  // -1 and 1 name the same axis of a rank-2 operand.
  EXPECT_INFER_ERROR(infer("reduce_mean", {f32({2, 3})}, {{"axes", Attribute(Ints{1, -1})}}),
                     "attribute axes repeats an axis: [1, -1]");
}

TEST(InferReduction, AxesMustBeAnIntList) {
  EXPECT_INFER_ERROR(infer("reduce_sum", {f32({2})}, {{"axes", Attribute(int64_t{0})}}),
                     "attribute 'axes' of op 'reduce_sum' must be int list, got int");
}

TEST(InferReduction, MeanNeedsFloatingPoint) {
  EXPECT_INFER_ERROR(infer("reduce_mean", {i64({2, 3})}), "operand 0 must be floating-point, got i64[2,3]");
}

TEST(InferReduction, BoolIsRejected) {
  EXPECT_INFER_ERROR(infer("reduce_sum", {of(DType::Bool, {3})}), "operand 0 must be numeric, got bool[3]");
  EXPECT_INFER_ERROR(infer("argmax", {of(DType::Bool, {3})}), "operand 0 must be numeric, got bool[3]");
}

TEST(InferReduction, EmptyAxisHasNoMaximum) {
  EXPECT_INFER_ERROR(infer("reduce_max", {f32({2, 0})}, {{"axes", Attribute(Ints{1})}}),
                     "cannot reduce axis 1 of extent 0 of operand 0 (f32[2,0]): the maximum of no elements");
  EXPECT_INFER_ERROR(infer("reduce_min", {f32({0, 2})}), "the minimum of no elements is undefined");
  EXPECT_INFER_ERROR(infer("argmax", {f32({3, 0})}), "cannot reduce axis 1 of extent 0");
  // Sum and mean of no elements are 0 and NaN.
  auto r = infer("reduce_sum", {f32({2, 0})}, {{"axes", Attribute(Ints{1})}});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)[0], f32({2}));
  // Reducing a non-empty axis of an empty tensor is fine.
  EXPECT_TRUE(infer("reduce_max", {f32({0, 2})}, {{"axes", Attribute(Ints{1})}}));
}

TEST(InferReduction, LayoutKeptOnlyWithKeepdims) {
  TensorType nhwc(DType::F32, {1, 8, 8, 3}, Layout::NHWC);
  auto r = infer("reduce_mean", {nhwc}, {{"axes", Attribute(Ints{1, 2})}, {"keepdims", Attribute(true)}});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)[0], TensorType(DType::F32, {1, 1, 1, 3}, Layout::NHWC));
  r = infer("reduce_mean", {nhwc}, {{"axes", Attribute(Ints{1, 2})}});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)[0], f32({1, 3}));
  r = infer("argmax", {nhwc}, {{"keepdims", Attribute(true)}});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)[0], TensorType(DType::I64, {1, 8, 8, 1}, Layout::NHWC));
  r = infer("softmax", {nhwc});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)[0], nhwc);
}

TEST(InferReduction, ArgmaxYieldsI64) {
  auto r = infer("argmax", {f32({2, 3, 4})});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)[0], i64({2, 3}));
  r = infer("argmax", {i64({2, 3, 4})}, {{"axis", Attribute(int64_t{-3})}, {"keepdims", Attribute(true)}});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)[0], i64({1, 3, 4}));
  r = infer("argmax", {f32({5})});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)[0], i64({}));
}

TEST(InferReduction, ArgmaxAxisOutOfRange) {
  EXPECT_INFER_ERROR(infer("argmax", {f32({2, 3})}, {{"axis", Attribute(int64_t{2})}}),
                     "op 'argmax': attribute axis = 2 is out of range for rank 2");
  EXPECT_INFER_ERROR(infer("argmax", {f32({2, 3})}, {{"axis", Attribute(int64_t{-3})}}),
                     "attribute axis = -3 is out of range for rank 2");
}

TEST(InferReduction, ArgmaxOfRankZeroHasNoAxis) {
  EXPECT_INFER_ERROR(infer("argmax", {f32({})}), "operand 0 (f32[]) has rank 0, so attribute axis = -1 names no axis");
  EXPECT_INFER_ERROR(infer("argmax", {f32({})}, {{"axis", Attribute(int64_t{0})}}), "has rank 0");
}

TEST(InferReduction, SoftmaxKeepsType) {
  for (const char* op : {"softmax", "log_softmax"}) {
    auto r = infer(op, {of(DType::F64, {2, 3})}, {{"axis", Attribute(int64_t{0})}});
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ((*r)[0], of(DType::F64, {2, 3}));
  }
}

TEST(InferReduction, SoftmaxErrors) {
  EXPECT_INFER_ERROR(infer("softmax", {i64({2, 3})}), "op 'softmax': operand 0 must be floating-point, got i64[2,3]");
  EXPECT_INFER_ERROR(infer("log_softmax", {f32({2, 3})}, {{"axis", Attribute(int64_t{5})}}),
                     "op 'log_softmax': attribute axis = 5 is out of range for rank 2");
  EXPECT_INFER_ERROR(infer("softmax", {f32({})}), "has rank 0");
  EXPECT_INFER_ERROR(infer("softmax", {f32({2})}, {{"axis", Attribute(std::string("last"))}}),
                     "attribute 'axis' of op 'softmax' must be int, got string");
}

TEST(InferReduction, ArityIsChecked) {
  EXPECT_INFER_ERROR(infer("reduce_sum", {f32({2}), f32({2})}), "op 'reduce_sum' takes 1 operand");
  EXPECT_INFER_ERROR(infer("softmax", {}), "op 'softmax' takes 1 operand");
}

}  // namespace
}  // namespace kfuse
