// Loss ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (which is
// NLL of log_softmax over axis 1). The picked log-probabilities are a
// GatherElements along the class axis; class weights are gathered by label;
// ignore_index masks elements out of the sum and of the mean's divisor.
#include "frontend/onnx/lower_util.h"
#include "frontend/onnx/op_table.h"

namespace kfuse::onnx_import {
namespace {

// loss[n, d...] = -input[n, target[n, d...], d...] * weight[target], reduced.
Expected<Value*> nllLoss(LoweringContext& c, Value* input, Value* target, Value* weight) {
  KF_ASSIGN_OR_RETURN(std::string reduction, c.attrs().getString("reduction", "mean"));
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return Error(str("attribute reduction = \"", reduction, "\" is not none, sum or mean"));
  KF_RETURN_IF_ERROR(requireFloat(c, input, "input"));
  if (input->type().rank() < 2 || target->type().rank() + 1 != input->type().rank())
    return Error(str("input ", formatType(input->type()), " must be [N, C, d...] and target ",
                     formatType(target->type()), " [N, d...]"));
  KF_ASSIGN_OR_RETURN(Value* t, castTo(c, target, DType::I64));
  Value* valid = nullptr;
  if (c.attrs().has("ignore_index")) {
    KF_ASSIGN_OR_RETURN(int64_t ignore, c.attrs().getInt("ignore_index"));
    KF_ASSIGN_OR_RETURN(Value* ignored, c.build("equal", {t, c.scalar(DType::I64, static_cast<double>(ignore))}));
    KF_ASSIGN_OR_RETURN(valid, c.build("logical_not", {ignored}));
    // Ignored labels may be out of range: gather class 0 instead, masked below.
    KF_ASSIGN_OR_RETURN(t, c.build("where", {valid, t, c.scalar(DType::I64, 0)}));
  }
  KF_ASSIGN_OR_RETURN(Value* t1, c.build("unsqueeze", {t}, {{"axes", Attribute(std::vector<int64_t>{1})}}));
  KF_ASSIGN_OR_RETURN(Value* picked, gatherElements(c, input, t1, 1));
  KF_ASSIGN_OR_RETURN(picked, c.build("squeeze", {picked}, {{"axes", Attribute(std::vector<int64_t>{1})}}));
  KF_ASSIGN_OR_RETURN(Value* loss, c.build("neg", {picked}));
  Value* w = nullptr;  // per-element weight, null when all are 1
  if (weight) {
    KF_ASSIGN_OR_RETURN(w, c.build("gather", {weight, t}, {{"axis", int64_t{0}}}));
  }
  if (valid) {
    KF_ASSIGN_OR_RETURN(Value* mask, castTo(c, valid, input->type().dtype));
    if (w) {
      KF_ASSIGN_OR_RETURN(w, c.build("mul", {w, mask}));
    } else {
      w = mask;
    }
  }
  if (w) {
    KF_ASSIGN_OR_RETURN(loss, c.build("mul", {loss, w}));
  }
  if (reduction == "none") return loss;
  KF_ASSIGN_OR_RETURN(Value* total, c.build("reduce_sum", {loss}));
  if (reduction == "sum") return total;
  if (!w) return c.build("reduce_mean", {loss});
  KF_ASSIGN_OR_RETURN(Value* count, c.build("reduce_sum", {w}));
  return c.build("div", {total, count});
}

Status lowerNLL(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* input, c.input(0));
  KF_ASSIGN_OR_RETURN(Value* target, c.input(1));
  Value* weight = nullptr;
  if (c.hasInput(2)) {
    KF_ASSIGN_OR_RETURN(weight, c.input(2));
  }
  KF_ASSIGN_OR_RETURN(Value* y, nllLoss(c, input, target, weight));
  return done(c, y);
}

Status lowerSoftmaxCrossEntropy(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* scores, c.input(0));
  KF_ASSIGN_OR_RETURN(Value* labels, c.input(1));
  Value* weight = nullptr;
  if (c.hasInput(2)) {
    KF_ASSIGN_OR_RETURN(weight, c.input(2));
  }
  KF_RETURN_IF_ERROR(requireFloat(c, scores, "scores"));
  if (scores->type().rank() < 2) return Error(str("scores must be [N, C, d...], got ", formatType(scores->type())));
  KF_ASSIGN_OR_RETURN(Value* logProb, c.build("log_softmax", {scores}, {{"axis", int64_t{1}}}));
  KF_ASSIGN_OR_RETURN(Value* y, nllLoss(c, logProb, labels, weight));
  c.setOutput(0, y);
  c.setOutput(1, logProb);
  return Status::ok();
}

const std::vector<OpLowering> kTable = {
    {"NegativeLogLikelihoodLoss", {12, 13, 22}, lowerNLL,
     "unsqueeze + gather (GatherElements) + neg (+ gather of weights, where for ignore_index) + reduction"},
    {"SoftmaxCrossEntropyLoss", {12, 13}, lowerSoftmaxCrossEntropy, "log_softmax + NegativeLogLikelihoodLoss's ops"},
};

}  // namespace

std::span<const OpLowering> lossLowerings() { return kTable; }

}  // namespace kfuse::onnx_import
