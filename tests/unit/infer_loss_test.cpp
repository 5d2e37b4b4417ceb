// Shape/type inference and error messages of the loss ops, and the runtime
// label check of cross_entropy's reference implementation.
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "tests/unit/infer_test_util.h"

namespace kfuse {
namespace {

using test::f32;
using test::i64;
using test::infer;

TensorType f64(Shape s) { return TensorType(DType::F64, std::move(s)); }

// ------------------------------------------------------------- cross_entropy

TEST(InferLoss, CrossEntropyIsRank0OfLogitsDType) {
  for (const char* red : {"mean", "sum"}) {
    auto r = infer("cross_entropy", {f32({6, 5}), i64({6})}, {{"reduction", Attribute(red)}});
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ((*r)[0], f32({}));
  }
  auto r = infer("cross_entropy", {f64({6, 5}), i64({6})}, {{"ignore_index", Attribute(3)}});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)[0], f64({}));
}

TEST(InferLoss, CrossEntropyShapes) {
  EXPECT_INFER_ERROR(infer("cross_entropy", {f32({6, 5}), i64({5})}),
                     "op 'cross_entropy': labels i64[5] must have one entry per row of logits f32[6,5]");
  EXPECT_INFER_ERROR(infer("cross_entropy", {f32({2, 6, 5}), i64({2})}),
                     "operand 0 must have rank 2, got f32[2,6,5]");
  EXPECT_INFER_ERROR(infer("cross_entropy", {f32({6, 5}), i64({6, 1})}), "operand 1 must have rank 1, got i64[6,1]");
}

TEST(InferLoss, CrossEntropyDTypes) {
  EXPECT_INFER_ERROR(infer("cross_entropy", {i64({6, 5}), i64({6})}), "operand 0 must be floating-point, got i64[6,5]");
  EXPECT_INFER_ERROR(infer("cross_entropy", {f32({6, 5}), TensorType(DType::I32, {6})}),
                     "operand 1 must be i64, got i32[6]");
  EXPECT_INFER_ERROR(infer("cross_entropy", {f32({6, 5}), f32({6})}), "operand 1 must be i64, got f32[6]");
}

TEST(InferLoss, CrossEntropyAttributes) {
  EXPECT_INFER_ERROR(infer("cross_entropy", {f32({6, 5}), i64({6})}, {{"reduction", Attribute("none")}}),
                     "attribute reduction = \"none\" must be \"mean\" or \"sum\"");
  EXPECT_INFER_ERROR(infer("cross_entropy", {f32({6, 5}), i64({6})}, {{"reduction", Attribute(1)}}),
                     "attribute 'reduction' of op 'cross_entropy' must be string, got int");
  EXPECT_INFER_ERROR(infer("cross_entropy", {f32({6, 5}), i64({6})}, {{"ignore_index", Attribute(1.5)}}),
                     "attribute 'ignore_index' of op 'cross_entropy' must be int, got float");
  EXPECT_INFER_ERROR(infer("cross_entropy", {f32({6, 5}), i64({6})}, {{"label_smoothing", Attribute(0.1)}}),
                     "has no attribute 'label_smoothing' (it takes: reduction, ignore_index)");
  EXPECT_INFER_ERROR(infer("cross_entropy", {f32({6, 5})}), "op 'cross_entropy' takes 2 operands, got 1");
}

// Runs a one-node cross_entropy module on the given labels.
Expected<InterpreterResult> runCrossEntropy(const std::vector<double>& labels, const std::string& attrs = "") {
  std::string n = std::to_string(labels.size());
  std::string text = "module @m {\n  func @main(%x: f32[" + n + ",5], %l: i64[" + n + "]) -> (f32[]) {\n" +
                     "    %0 = cross_entropy %x, %l" + attrs + " : f32[]\n    return %0\n  }\n}\n";
  auto m = parseModule(text, "<cross_entropy test>");
  if (!m) return m.error();
  Tensor x(f32({static_cast<int64_t>(labels.size()), 5}));
  Tensor l = Tensor::fromDoubles(i64({static_cast<int64_t>(labels.size())}), labels);
  return interpret(*(*m)->functions().front(), {x, l});
}

TEST(InferLoss, CrossEntropyLabelOutOfRangeIsARuntimeError) {
  auto r = runCrossEntropy({0, 1, 2, 7});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("label 7 at position 3 is out of range for 5 classes"), std::string::npos)
      << r.error().message();
  auto neg = runCrossEntropy({-1, 0});
  ASSERT_FALSE(neg);
  EXPECT_NE(neg.error().message().find("label -1 at position 0 is out of range for 5 classes"), std::string::npos)
      << neg.error().message();
  auto five = runCrossEntropy({0, 5});
  ASSERT_FALSE(five);
  EXPECT_NE(five.error().message().find("label 5 at position 1"), std::string::npos) << five.error().message();
}

TEST(InferLoss, CrossEntropyIgnoredLabelMayBeOutOfRange) {
  auto r = runCrossEntropy({-100, 2});
  ASSERT_TRUE(r) << r.error().message();
  auto custom = runCrossEntropy({9, 2}, " {ignore_index = 9}");
  ASSERT_TRUE(custom) << custom.error().message();
}

// ------------------------------------------------------------------ mse_loss

TEST(InferLoss, MseLossIsRank0) {
  auto r = infer("mse_loss", {f32({3, 4}), f32({3, 4})});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)[0], f32({}));
  auto s = infer("mse_loss", {f64({}), f64({})}, {{"reduction", Attribute("sum")}});
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ((*s)[0], f64({}));
}

TEST(InferLoss, MseLossNeedsSameShapeAndFloatDType) {
  EXPECT_INFER_ERROR(infer("mse_loss", {f32({3, 4}), f32({4})}),
                     "op 'mse_loss': operands must have the same shape, got f32[3,4] and f32[4]");
  EXPECT_INFER_ERROR(infer("mse_loss", {f32({3}), f64({3})}), "operands 0 and 1 must have the same dtype");
  EXPECT_INFER_ERROR(infer("mse_loss", {i64({3}), i64({3})}), "operand 0 must be floating-point, got i64[3]");
  TensorType nchw(DType::F32, {1, 3, 4, 4}, Layout::NCHW), nhwc(DType::F32, {1, 3, 4, 4}, Layout::NHWC);
  EXPECT_INFER_ERROR(infer("mse_loss", {nchw, nhwc}), "different layouts");
}

TEST(InferLoss, MseLossReductionIsChecked) {
  EXPECT_INFER_ERROR(infer("mse_loss", {f32({3}), f32({3})}, {{"reduction", Attribute("max")}}),
                     "attribute reduction = \"max\" must be \"mean\" or \"sum\"");
  EXPECT_INFER_ERROR(infer("mse_loss", {f32({3}), f32({3}), f32({3})}), "takes 2 operands, got 3");
}

// -------------------------------------------------------- cross_entropy_grad

TEST(InferLoss, CrossEntropyGradHasLogitsType) {
  auto r = infer("cross_entropy_grad", {f32({}), f32({6, 5}), i64({6})}, {{"reduction", Attribute("sum")}});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)[0], f32({6, 5}));
}

TEST(InferLoss, CrossEntropyGradErrors) {
  EXPECT_INFER_ERROR(infer("cross_entropy_grad", {f32({1}), f32({6, 5}), i64({6})}),
                     "operand 0 must have rank 0, got f32[1]");
  EXPECT_INFER_ERROR(infer("cross_entropy_grad", {f64({}), f32({6, 5}), i64({6})}),
                     "operands 0 and 1 must have the same dtype");
  EXPECT_INFER_ERROR(infer("cross_entropy_grad", {f32({}), f32({6, 5}), i64({5})}),
                     "labels i64[5] must have one entry per row of logits f32[6,5]");
  EXPECT_INFER_ERROR(infer("cross_entropy_grad", {f32({}), f32({6, 5}), f32({6})}), "operand 2 must be i64");
  EXPECT_INFER_ERROR(infer("cross_entropy_grad", {f32({}), f32({6, 5}), i64({6})}, {{"reduction", Attribute("none")}}),
                     "attribute reduction = \"none\" must be \"mean\" or \"sum\"");
  EXPECT_INFER_ERROR(infer("cross_entropy_grad", {f32({}), f32({6, 5})}), "takes 3 operands, got 2");
}

// cross_entropy_grad checks the labels it reads at run time, as the forward does.
TEST(InferLoss, CrossEntropyGradLabelOutOfRangeIsARuntimeError) {
  std::string text =
      "module @m {\n  func @main(%d: f32[], %x: f32[3,5], %l: i64[3]) -> (f32[3,5]) {\n"
      "    %0 = cross_entropy_grad %d, %x, %l {ignore_index = 9} : f32[3,5]\n    return %0\n  }\n}\n";
  auto m = parseModule(text, "<cross_entropy_grad test>");
  ASSERT_TRUE(m) << m.error().message();
  auto run = [&](std::vector<double> labels) {
    return interpret(*(*m)->functions().front(),
                     {Tensor::scalar(DType::F32, 1.0), Tensor(f32({3, 5})), Tensor::fromDoubles(i64({3}), labels)});
  };
  auto r = run({0, 5, 1});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("label 5 at position 1 is out of range for 5 classes"), std::string::npos)
      << r.error().message();
  EXPECT_TRUE(run({0, 9, 1}));  // ignored, so never read as a class
}

}  // namespace
}  // namespace kfuse
