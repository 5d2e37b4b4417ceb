// Loss functions: each reduces a batch to a rank-0 loss of the input's float
// dtype, so they are Reduction ops. Semantics follow torch.nn.functional.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/ops/grad_helpers.h"

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

// Logits [N, C] (operand i, float) and i64 labels [N] (operand i + 1).
Status checkLogitsAndLabels(const OpCall& c, size_t i) {
  KF_RETURN_IF_ERROR(ops::requireFloat(c, i));
  KF_RETURN_IF_ERROR(ops::requireRank(c, i, 2));
  KF_RETURN_IF_ERROR(ops::requireDType(c, i + 1, DType::I64));
  KF_RETURN_IF_ERROR(ops::requireRank(c, i + 1, 1));
  KF_RETURN_IF_ERROR(checkReduction(c));
  if (c.inputs[i + 1].shape[0] != c.inputs[i].shape[0])
    return Error(str("labels ", formatType(c.inputs[i + 1]), " must have one entry per row of logits ",
                     formatType(c.inputs[i])));
  return Status::ok();
}

// Which rows count (their label is not ignore_index); an Error for a counted
// label outside [0, classes). Labels are read as integers: Tensor::at goes
// through double.
Expected<std::vector<bool>> countedRows(const OpCall& c, const Tensor& labelTensor, int64_t classes) {
  const int64_t* labels = labelTensor.as<int64_t>();
  int64_t ignore = c.getInt("ignore_index");
  std::vector<bool> counted(static_cast<size_t>(labelTensor.numElements()));
  for (size_t i = 0; i < counted.size(); ++i) {
    int64_t label = labels[i];
    counted[i] = label != ignore;
    if (counted[i] && (label < 0 || label >= classes))
      return Error(str("label ", label, " at position ", i, " is out of range for ", classes, " classes"));
  }
  return counted;
}

// cross_entropy_grad(dloss, logits, labels): for each counted row,
// (softmax(logits) - onehot(label)) * dloss / count, count = the counted rows
// for "mean" and 1 for "sum"; ignored rows get 0, as torch gives (and so an
// all-ignored batch gets 0, not the forward's 0 / 0).
Expected<std::vector<Tensor>> crossEntropyGradReference(const OpCall& c, std::span<const Tensor* const> in,
                                                        std::span<const TensorType> out) {
  const Tensor& logits = *in[1];
  int64_t classes = logits.shape()[1];
  KF_ASSIGN_OR_RETURN(std::vector<bool> counted, countedRows(c, *in[2], classes));
  const int64_t* labels = in[2]->as<int64_t>();
  double count = static_cast<double>(std::count(counted.begin(), counted.end(), true));
  double scale = in[0]->at(0) / (c.getString("reduction") == "mean" ? count : 1.0);
  Tensor dx(out[0]);
  for (size_t i = 0; i < counted.size(); ++i) {
    if (!counted[i]) continue;
    auto base = static_cast<int64_t>(i) * classes;
    double lse = logSumExp(logits, base, classes);
    for (int64_t j = 0; j < classes; ++j) {
      double p = std::exp(logits.at(base + j) - lse);
      dx.set(base + j, (p - (j == labels[i] ? 1.0 : 0.0)) * scale);
    }
  }
  return std::vector<Tensor>{std::move(dx)};
}

// ---- row programs: one row per sample, the classes along the row

std::vector<int64_t> axesUpTo(size_t rank) {
  std::vector<int64_t> axes(rank);
  for (size_t d = 0; d < rank; ++d) axes[d] = static_cast<int64_t>(d);
  return axes;
}

// Operands: optional scalar dloss first, then logits [N, C] and labels [N].
RowSpec sampleRows(bool withDloss, RowScope result) {
  RowSpec s;
  if (withDloss) s.operandAxes.push_back({});
  s.primary = s.operandAxes.size();
  s.operandAxes.push_back({0, 1});
  s.operandAxes.push_back({0});
  s.reduceAxes = {1};
  s.resultAxes = {result == RowScope::Global ? std::vector<int64_t>{} : std::vector<int64_t>{0, 1}};
  s.resultScopes = {result};
  return s;
}

// The row's log-sum-exp pieces: max, sum of exp(x - max).
struct RowLse {
  Scalar max, sum;
};
RowLse logSumExp(RowBuilder& b, const Scalar& x) {
  Scalar m = b.reduce(RowCombiner::Max, x);
  return {m, b.reduce(RowCombiner::Sum, exp(x - m))};
}

Scalar counted(const OpCall& c, const Scalar& label) {
  return notEqual(label, Scalar::constant(static_cast<double>(c.getInt("ignore_index")), DType::I64));
}

void registerCrossEntropyGrad(OpRegistry& r) {
  OpDef d;
  d.name = "cross_entropy_grad";
  d.rowSpec = [](const OpCall&) -> Expected<RowSpec> { return sampleRows(true, RowScope::Element); };
  d.row = [](RowBuilder& b, const OpCall& c, std::span<const Scalar> in) -> std::vector<Scalar> {
    const Scalar &dloss = in[0], &x = in[1], &label = in[2];
    Scalar valid = counted(c, label);
    Scalar one = Scalar::constant(1, x.type()), zero = Scalar::constant(0, x.type());
    // A mean divides by the number of counted rows, known before any row
    // is processed only through a prologue over the labels.
    Scalar count = c.getString("reduction") == "mean" ? b.prologue(RowCombiner::Sum, select(valid, one, zero)) : one;
    RowLse lse = logSumExp(b, x);
    Scalar onehot = select(equal(b.position(1), label), one, zero);
    return {select(valid, (exp(x - lse.max) / lse.sum - onehot) * dloss / count, zero)};
  };
  d.summary = "cross_entropy backward from (dloss, logits, labels): (softmax(logits) - onehot(labels)) * dloss / "
              "count per counted row (count = counted rows for mean, 1 for sum), 0 for ignored rows";
  d.minInputs = d.maxInputs = 3;
  d.attrs = {reductionAttr(), {"ignore_index", AttrKind::Int, Attribute(-100)}};
  d.fusion = FusionClass::Reduction;
  d.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> {
    KF_RETURN_IF_ERROR(ops::requireFloat(c, 0));
    KF_RETURN_IF_ERROR(ops::requireRank(c, 0, 0));
    KF_RETURN_IF_ERROR(checkLogitsAndLabels(c, 1));
    KF_RETURN_IF_ERROR(ops::requireSameDType(c, 0, 1));
    return one(c.inputs[1]);
  };
  d.reference = crossEntropyGradReference;
  r.add(std::move(d));
}

void registerCrossEntropy(OpRegistry& r) {
  OpDef d;
  d.name = "cross_entropy";
  d.rowSpec = [](const OpCall&) -> Expected<RowSpec> { return sampleRows(false, RowScope::Global); };
  d.row = [](RowBuilder& b, const OpCall& c, std::span<const Scalar> in) -> std::vector<Scalar> {
    const Scalar &x = in[0], &label = in[1];
    Scalar valid = counted(c, label);
    Scalar one = Scalar::constant(1, x.type()), zero = Scalar::constant(0, x.type());
    RowLse lse = logSumExp(b, x);
    Scalar picked = b.reduce(RowCombiner::Sum, select(equal(b.position(1), label), x, zero));
    Scalar total = b.global(RowCombiner::Sum, select(valid, log(lse.sum) + lse.max - picked, zero));
    if (c.getString("reduction") != "mean") return {total};
    return {total / b.global(RowCombiner::Sum, select(valid, one, zero))};
  };
  d.summary = "softmax cross-entropy of logits [N, C] against i64 labels [N], as torch's cross_entropy; "
              "samples whose label is ignore_index are left out of the sum and the mean";
  d.minInputs = d.maxInputs = 2;
  d.attrs = {reductionAttr(), {"ignore_index", AttrKind::Int, Attribute(-100)}};
  d.fusion = FusionClass::Reduction;
  d.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> {
    KF_RETURN_IF_ERROR(checkLogitsAndLabels(c, 0));
    return one(TensorType(c.inputs[0].dtype, {}));
  };
  d.reference = [](const OpCall& c, std::span<const Tensor* const> in,
                   std::span<const TensorType> out) -> Expected<std::vector<Tensor>> {
    const Tensor& logits = *in[0];
    int64_t classes = logits.shape()[1];
    KF_ASSIGN_OR_RETURN(std::vector<bool> counted, countedRows(c, *in[1], classes));
    const int64_t* labels = in[1]->as<int64_t>();
    double sum = 0, count = 0;
    for (size_t i = 0; i < counted.size(); ++i) {
      if (!counted[i]) continue;
      auto base = static_cast<int64_t>(i) * classes;
      sum += logSumExp(logits, base, classes) - logits.at(base + labels[i]);
      count += 1;
    }
    return std::vector<Tensor>{Tensor::fromDoubles(out[0], {reduce(c, sum, count)})};
  };
  r.add(std::move(d));
}

void registerMseLoss(OpRegistry& r) {
  OpDef d;
  d.name = "mse_loss";
  // Every axis is reduced: one row, its result stored once.
  d.rowSpec = [](const OpCall& c) -> Expected<RowSpec> {
    RowSpec s;
    s.reduceAxes = axesUpTo(c.inputs[0].rank());
    s.operandAxes = {s.reduceAxes, s.reduceAxes};
    s.resultAxes = {{}};
    s.resultScopes = {RowScope::Row};
    return s;
  };
  d.row = [](RowBuilder& b, const OpCall& c, std::span<const Scalar> in) -> std::vector<Scalar> {
    Scalar sum = b.reduce(RowCombiner::Sum, (in[0] - in[1]) * (in[0] - in[1]));
    if (c.getString("reduction") != "mean") return {sum};
    return {sum / static_cast<double>(c.inputs[0].numElements())};
  };
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
  registerCrossEntropyGrad(r);
  registerMseLoss(r);
}

}  // namespace kfuse
