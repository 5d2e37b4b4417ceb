// Loss functions: each reduces a batch to a rank-0 loss of the input's float
// dtype, so they are Reduction ops. Semantics follow torch.nn.functional.
#include <cmath>
#include <limits>

#include "ir/ops/op_helpers.h"

namespace kfuse {
namespace {

using ops::one;

AttrSpec reductionAttr() { return {"reduction", AttrKind::String, Attribute("mean")}; }

// "none" is deliberately absent: a per-sample loss is an ordinary
// elementwise graph, and these ops promise a rank-0 result.
Status checkReduction(const OpCall& c) {
  const std::string& r = c.getString("reduction");
  if (r == "mean" || r == "sum") return Status::ok();
  return Error(str("attribute reduction = ", quoteString(r), " must be \"mean\" or \"sum\""));
}

// The sum of `count` terms, or its mean when reduction = "mean" (0 / 0 = NaN
// for an empty mean, as torch gives).
double reduce(const OpCall& c, double sum, double count) {
  return c.getString("reduction") == "mean" ? sum / count : sum;
}

// log(sum_j exp(row[j])) with the maximum subtracted first so that large
// logits do not overflow. Infinite logits give NaN (inf - inf), as torch's
// log_softmax does.
double logSumExp(const Tensor& logits, int64_t base, int64_t classes) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < classes; ++j) m = std::max(m, logits.at(base + j));
  double s = 0;
  for (int64_t j = 0; j < classes; ++j) s += std::exp(logits.at(base + j) - m);
  return m + std::log(s);
}

void registerCrossEntropy(OpRegistry& r) {
  OpDef d;
  d.name = "cross_entropy";
  d.summary = "softmax cross-entropy of logits [N, C] against i64 labels [N], as torch's cross_entropy; "
              "samples whose label is ignore_index are left out of the sum and the mean";
  d.minInputs = d.maxInputs = 2;
  d.attrs = {reductionAttr(), {"ignore_index", AttrKind::Int, Attribute(-100)}};
  d.fusion = FusionClass::Reduction;
  d.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> {
    KF_RETURN_IF_ERROR(ops::requireFloat(c, 0));
    KF_RETURN_IF_ERROR(ops::requireRank(c, 0, 2));
    KF_RETURN_IF_ERROR(ops::requireDType(c, 1, DType::I64));
    KF_RETURN_IF_ERROR(ops::requireRank(c, 1, 1));
    KF_RETURN_IF_ERROR(checkReduction(c));
    if (c.inputs[1].shape[0] != c.inputs[0].shape[0])
      return Error(str("labels ", formatType(c.inputs[1]), " must have one entry per row of logits ",
                       formatType(c.inputs[0])));
    return one(TensorType(c.inputs[0].dtype, {}));
  };
  d.reference = [](const OpCall& c, std::span<const Tensor* const> in,
                   std::span<const TensorType> out) -> Expected<std::vector<Tensor>> {
    const Tensor& logits = *in[0];
    // Labels are read as integers: Tensor::at goes through double.
    const int64_t* labels = in[1]->as<int64_t>();
    int64_t rows = logits.shape()[0], classes = logits.shape()[1];
    int64_t ignore = c.getInt("ignore_index");
    double sum = 0, count = 0;
    for (int64_t i = 0; i < rows; ++i) {
      int64_t label = labels[i];
      if (label == ignore) continue;
      if (label < 0 || label >= classes)
        return Error(str("label ", label, " at position ", i, " is out of range for ", classes, " classes"));
      sum += logSumExp(logits, i * classes, classes) - logits.at(i * classes + label);
      count += 1;
    }
    return std::vector<Tensor>{Tensor::fromDoubles(out[0], {reduce(c, sum, count)})};
  };
  r.add(std::move(d));
}

void registerMseLoss(OpRegistry& r) {
  OpDef d;
  d.name = "mse_loss";
  d.summary = "mean (or sum) of (a - b)^2 over all elements of two same-shaped float tensors";
  d.minInputs = d.maxInputs = 2;
  d.attrs = {reductionAttr()};
  d.fusion = FusionClass::Reduction;
  d.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> {
    KF_RETURN_IF_ERROR(ops::requireFloat(c, 0));
    KF_RETURN_IF_ERROR(ops::requireSameDType(c, 0, 1));
    KF_RETURN_IF_ERROR(checkReduction(c));
    // No broadcasting: a shape mismatch in a loss is almost always a bug.
    if (c.inputs[0].shape != c.inputs[1].shape)
      return Error(str("operands must have the same shape, got ", formatType(c.inputs[0]), " and ",
                       formatType(c.inputs[1])));
    KF_RETURN_IF_ERROR(ops::resultLayout(c, c.inputs[0].rank()).status());
    return one(TensorType(c.inputs[0].dtype, {}));
  };
  d.reference = [](const OpCall& c, std::span<const Tensor* const> in,
                   std::span<const TensorType> out) -> Expected<std::vector<Tensor>> {
    double sum = 0;
    int64_t n = in[0]->numElements();
    for (int64_t i = 0; i < n; ++i) {
      double diff = in[0]->at(i) - in[1]->at(i);
      sum += diff * diff;
    }
    return std::vector<Tensor>{Tensor::fromDoubles(out[0], {reduce(c, sum, static_cast<double>(n))})};
  };
  r.add(std::move(d));
}

}  // namespace

void registerLossOps(OpRegistry& r) {
  registerCrossEntropy(r);
  registerMseLoss(r);
}

}  // namespace kfuse
