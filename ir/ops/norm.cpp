// Normalisation ops (batch norm in its inference and training forms, layer
// norm) and dropout. The norms reduce over axes, so they are Reduction ops;
// dropout maps each element on its own (its mask is a pure function of the
// element's flat index, see ir/philox.h), so it is Elementwise.
#include <cmath>

#include "ir/ops/grad_helpers.h"
#include "ir/philox.h"

namespace kfuse {
namespace {

using ops::channelAxisOf;

using ops::one;

AttrSpec epsilonAttr() { return {"epsilon", AttrKind::Float, Attribute(1e-5)}; }

// A negative or non-finite epsilon would turn a zero variance into NaN or a
// silent zero; reject it at build time rather than at run time.
Status checkEpsilon(const OpCall& c) {
  double eps = c.getFloat("epsilon");
  if (std::isfinite(eps) && eps >= 0) return Status::ok();
  return Error(str("attribute epsilon = ", eps, " must be finite and non-negative"));
}


Expected<int64_t> channelAxis(const OpCall& c) { return channelAxisOf(c.inputs[0], "operand 0 (x)"); }

// Operand i (called `name`) must have exactly `want`'s shape and x's dtype.
Status requireOperandShape(const OpCall& c, size_t i, const char* name, const Shape& want) {
  const TensorType& t = c.inputs[i];
  if (t.dtype == c.inputs[0].dtype && t.shape == want) return Status::ok();
  return Error(str("operand ", i, " (", name, ") must be ", dtypeName(c.inputs[0].dtype), formatDims(want),
                   " to match x ", formatType(c.inputs[0]), ", got ", formatType(t)));
}

// Checks x and the per-channel [C] vectors named in `names` (operands 1...).
Expected<int64_t> checkBatchNorm(const OpCall& c, std::initializer_list<const char*> names) {
  KF_RETURN_IF_ERROR(ops::requireFloat(c, 0));
  KF_RETURN_IF_ERROR(checkEpsilon(c));
  KF_ASSIGN_OR_RETURN(int64_t axis, channelAxis(c));
  Shape vec = {c.inputs[0].shape[static_cast<size_t>(axis)]};
  size_t i = 1;
  for (const char* name : names) KF_RETURN_IF_ERROR(requireOperandShape(c, i++, name, vec));
  return axis;
}

// Calls fn(channel, flat) for every element of x, channel = its index on `axis`.
void forEachWithChannel(const Tensor& x, int64_t axis, const std::function<void(size_t, int64_t)>& fn) {
  ops::forEachIndex(x.shape(), [&](const std::vector<int64_t>& idx, int64_t flat) {
    fn(static_cast<size_t>(idx[static_cast<size_t>(axis)]), flat);
  });
}

struct ChannelStats {
  std::vector<double> mean, var;
};

// Per-channel mean and biased variance over every axis but `axis`, two-pass
// for accuracy. A channel with no elements (a zero-sized batch) gets NaN (0 / 0).
ChannelStats channelStats(const Tensor& x, int64_t axis) {
  size_t channels = static_cast<size_t>(x.shape()[static_cast<size_t>(axis)]);
  std::vector<double> sum(channels, 0.0), sq(channels, 0.0);
  double count = channels == 0 ? 0.0 : static_cast<double>(x.numElements()) / static_cast<double>(channels);
  forEachWithChannel(x, axis, [&](size_t ch, int64_t flat) { sum[ch] += x.at(flat); });
  ChannelStats s{std::vector<double>(channels), std::vector<double>(channels)};
  for (size_t ch = 0; ch < channels; ++ch) s.mean[ch] = sum[ch] / count;
  forEachWithChannel(x, axis, [&](size_t ch, int64_t flat) {
    double d = x.at(flat) - s.mean[ch];
    sq[ch] += d * d;
  });
  for (size_t ch = 0; ch < channels; ++ch) s.var[ch] = sq[ch] / count;
  return s;
}

// y = (x - mean[c]) / sqrt(var[c] + eps) * scale[c] + bias[c], c = the channel of each element.
Tensor normalizeChannels(const Tensor& x, int64_t axis, const ChannelStats& s, const Tensor& scale,
                         const Tensor& bias, double eps, const TensorType& outType) {
  Tensor y(outType);
  forEachWithChannel(x, axis, [&](size_t ch, int64_t flat) {
    auto c = static_cast<int64_t>(ch);
    y.set(flat, (x.at(flat) - s.mean[ch]) / std::sqrt(s.var[ch] + eps) * scale.at(c) + bias.at(c));
  });
  return y;
}

// ---- batch norm gradients

// batch_norm_train_grad(dy, x, scale, batch_mean, batch_var): torch's
// training-mode backward, per channel over its M elements, with
// invstd = 1 / sqrt(batch_var + eps) and xhat = (x - batch_mean) * invstd:
//   dbias = sum(dy),  dscale = sum(dy * xhat),
//   dx = scale * invstd * (dy - dbias / M - xhat * dscale / M).
Expected<int64_t> checkBatchNormTrainGrad(const OpCall& c) {
  KF_RETURN_IF_ERROR(ops::requireFloat(c, 0));
  KF_RETURN_IF_ERROR(checkEpsilon(c));
  const TensorType& x = c.inputs[1];
  KF_ASSIGN_OR_RETURN(int64_t axis, channelAxisOf(x, "operand 1 (x)"));
  KF_RETURN_IF_ERROR(ops::requireType(c, 0, "dy", x));
  TensorType vec(x.dtype, {x.shape[static_cast<size_t>(axis)]});
  const char* names[] = {"dy", "x", "scale", "batch_mean", "batch_var"};
  for (size_t i = 2; i < 5; ++i) KF_RETURN_IF_ERROR(ops::requireType(c, i, names[i], vec));
  return axis;
}

Expected<std::vector<Tensor>> batchNormTrainGradReference(const OpCall& c, std::span<const Tensor* const> in,
                                                          std::span<const TensorType> out) {
  KF_ASSIGN_OR_RETURN(int64_t axis, checkBatchNormTrainGrad(c));
  const Tensor &dy = *in[0], &x = *in[1], &scale = *in[2];
  std::vector<double> mean = in[3]->toDoubles(), invStd = in[4]->toDoubles();
  for (double& v : invStd) v = 1.0 / std::sqrt(v + c.getFloat("epsilon"));
  size_t channels = mean.size();
  double m = channels == 0 ? 0.0 : static_cast<double>(x.numElements()) / static_cast<double>(channels);
  std::vector<double> dbias(channels, 0.0), dscale(channels, 0.0);
  auto xhat = [&](size_t ch, int64_t flat) { return (x.at(flat) - mean[ch]) * invStd[ch]; };
  forEachWithChannel(x, axis, [&](size_t ch, int64_t flat) {
    dbias[ch] += dy.at(flat);
    dscale[ch] += dy.at(flat) * xhat(ch, flat);
  });
  Tensor dx(out[0]);
  forEachWithChannel(x, axis, [&](size_t ch, int64_t flat) {
    double k = scale.at(static_cast<int64_t>(ch)) * invStd[ch];
    dx.set(flat, k * (dy.at(flat) - dbias[ch] / m - xhat(ch, flat) * dscale[ch] / m));
  });
  std::vector<Tensor> res;
  res.push_back(std::move(dx));
  res.push_back(Tensor::fromDoubles(out[1], dscale));
  res.push_back(Tensor::fromDoubles(out[2], dbias));
  return res;
}

// ---- row programs: per-channel loops (batch norm) and per-row ones (layer norm)

std::vector<int64_t> everyAxis(size_t rank) {
  std::vector<int64_t> axes(rank);
  for (size_t d = 0; d < rank; ++d) axes[d] = static_cast<int64_t>(d);
  return axes;
}

// Batch norms loop over channels; with `reduce` the other axes form the row.
// Operands listed in `full` span every axis of x, the others the channel.
RowSpec channelSpec(const TensorType& x, int64_t channel, bool reduce, std::vector<bool> full,
                    std::vector<RowScope> scopes) {
  RowSpec s;
  s.primary = 0;
  while (!full[s.primary]) ++s.primary;
  for (int64_t d = 0; d < static_cast<int64_t>(x.rank()) && reduce; ++d)
    if (d != channel) s.reduceAxes.push_back(d);
  for (bool f : full) s.operandAxes.push_back(f ? everyAxis(x.rank()) : std::vector<int64_t>{channel});
  for (RowScope scope : scopes)
    s.resultAxes.push_back(scope == RowScope::Element ? everyAxis(x.rank()) : std::vector<int64_t>{channel});
  s.resultScopes = std::move(scopes);
  return s;
}

double channelCount(const TensorType& x, int64_t channel) {
  return static_cast<double>(x.numElements()) / static_cast<double>(x.shape[static_cast<size_t>(channel)]);
}

void registerBatchNormTrainGrad(OpRegistry& r) {
  OpDef d;
  d.name = "batch_norm_train_grad";
  d.rowSpec = [](const OpCall& c) -> Expected<RowSpec> {
    KF_ASSIGN_OR_RETURN(int64_t axis, checkBatchNormTrainGrad(c));
    return channelSpec(c.inputs[1], axis, true, {true, true, false, false, false},
                       {RowScope::Element, RowScope::Row, RowScope::Row});
  };
  d.row = [](RowBuilder& b, const OpCall& c, std::span<const Scalar> in) -> std::vector<Scalar> {
    double m = channelCount(c.inputs[1], *checkBatchNormTrainGrad(c));
    Scalar invStd = 1.0 / sqrt(in[4] + c.getFloat("epsilon"));
    Scalar xhat = (in[1] - in[3]) * invStd;
    Scalar dbias = b.reduce(RowCombiner::Sum, in[0]);
    Scalar dscale = b.reduce(RowCombiner::Sum, in[0] * xhat);
    return {in[2] * invStd * (in[0] - dbias / m - xhat * dscale / m), dscale, dbias};
  };
  d.summary = "batch_norm_train backward from (dy, x, scale, batch_mean, batch_var), torch's training formula; "
              "results (dx, dscale, dbias)";
  d.minInputs = d.maxInputs = 5;
  d.attrs = {epsilonAttr()};
  d.fusion = FusionClass::Reduction;
  d.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> {
    KF_RETURN_IF_ERROR(checkBatchNormTrainGrad(c).status());
    return std::vector<TensorType>{c.inputs[1], c.inputs[2], c.inputs[2]};
  };
  d.reference = batchNormTrainGradReference;
  d.layout = {LayoutClass::Native, {}, {0, 1}, {}, {0}, {}};  // dy, x; the [C] vectors do not move
  r.add(std::move(d));
}

void registerBatchNorm(OpRegistry& r) {
  OpDef d;
  d.name = "batch_norm";
  // No reduction: a per-channel affine map, the vectors indexed by channel.
  d.rowSpec = [](const OpCall& c) -> Expected<RowSpec> {
    KF_ASSIGN_OR_RETURN(int64_t axis, channelAxis(c));
    return channelSpec(c.inputs[0], axis, false, {true, false, false, false, false}, {RowScope::Element});
  };
  d.row = [](RowBuilder&, const OpCall& c, std::span<const Scalar> in) -> std::vector<Scalar> {
    return {(in[0] - in[3]) / sqrt(in[4] + c.getFloat("epsilon")) * in[1] + in[2]};
  };
  d.summary = "inference batch norm: y = (x - mean) / sqrt(var + epsilon) * scale + bias per channel "
              "(axis 1, or the last axis of an nhwc x)";
  d.minInputs = d.maxInputs = 5;
  d.attrs = {epsilonAttr()};
  d.fusion = FusionClass::Reduction;
  d.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> {
    KF_RETURN_IF_ERROR(checkBatchNorm(c, {"scale", "bias", "mean", "var"}));
    return one(c.inputs[0]);
  };
  d.reference = [](const OpCall& c, std::span<const Tensor* const> in,
                   std::span<const TensorType> out) -> Expected<std::vector<Tensor>> {
    KF_ASSIGN_OR_RETURN(int64_t axis, channelAxis(c));
    ChannelStats s{in[3]->toDoubles(), in[4]->toDoubles()};
    return std::vector<Tensor>{normalizeChannels(*in[0], axis, s, *in[1], *in[2], c.getFloat("epsilon"), out[0])};
  };
  d.layout = {LayoutClass::Native, {}, {0}, {}, {0}, {}};  // the channel axis follows x's tag
  r.add(std::move(d));
}

void registerBatchNormTrain(OpRegistry& r) {
  OpDef d;
  d.name = "batch_norm_train";
  d.rowSpec = [](const OpCall& c) -> Expected<RowSpec> {
    KF_ASSIGN_OR_RETURN(int64_t axis, channelAxis(c));
    return channelSpec(c.inputs[0], axis, true, {true, false, false},
                       {RowScope::Element, RowScope::Row, RowScope::Row});
  };
  d.row = [](RowBuilder& b, const OpCall& c, std::span<const Scalar> in) -> std::vector<Scalar> {
    double n = channelCount(c.inputs[0], *channelAxis(c));
    Scalar mean = b.reduce(RowCombiner::Sum, in[0]) / n;
    Scalar var = b.reduce(RowCombiner::Sum, (in[0] - mean) * (in[0] - mean)) / n;
    return {(in[0] - mean) / sqrt(var + c.getFloat("epsilon")) * in[1] + in[2], mean, var};
  };
  d.summary = "training batch norm: normalises with the batch's per-channel mean and biased variance; "
              "results (y, batch_mean, batch_var)";
  d.minInputs = d.maxInputs = 3;
  d.attrs = {epsilonAttr()};
  d.fusion = FusionClass::Reduction;
  d.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> {
    KF_ASSIGN_OR_RETURN(int64_t axis, checkBatchNorm(c, {"scale", "bias"}));
    TensorType stat(c.inputs[0].dtype, {c.inputs[0].shape[static_cast<size_t>(axis)]});
    return std::vector<TensorType>{c.inputs[0], stat, stat};
  };
  d.reference = [](const OpCall& c, std::span<const Tensor* const> in,
                   std::span<const TensorType> out) -> Expected<std::vector<Tensor>> {
    KF_ASSIGN_OR_RETURN(int64_t axis, channelAxis(c));
    ChannelStats s = channelStats(*in[0], axis);
    std::vector<Tensor> res;
    res.push_back(normalizeChannels(*in[0], axis, s, *in[1], *in[2], c.getFloat("epsilon"), out[0]));
    res.push_back(Tensor::fromDoubles(out[1], s.mean));
    res.push_back(Tensor::fromDoubles(out[2], s.var));
    return res;
  };
  d.layout = {LayoutClass::Native, {}, {0}, {}, {0}, {}};  // the channel axis follows x's tag
  r.add(std::move(d));
}

// ---- layer norm gradient
//
// layer_norm_grad(dy, x[, scale]) is dx alone, and recomputes each row's
// mean and variance from x: the forward does not return them, and the
// backward reads every row of x anyway (for xhat). Per row of D elements,
// with xhat = (x - mean) * rstd and g = dy * scale (dy without a scale):
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
// one row at a time, so it is a row kernel like the forward. The scale's
// and bias's gradients sum over rows instead (dscale = sum of dy * xhat,
// dbias = sum of dy): the gradient rule builds them from reduce_sum, which
// iterates the other way (passes/gradients/norm.cpp).

// x seen as `rows` rows of the `inner` elements that layer_norm normalises together.
struct LayerRows {
  int64_t rows = 0, inner = 0;
};
Expected<LayerRows> layerRows(const OpCall& c, const TensorType& x) {
  KF_ASSIGN_OR_RETURN(int64_t axis, ops::axisAttr(c, "axis", static_cast<int64_t>(x.rank())));
  LayerRows r;
  r.inner = numElements(Shape(x.shape.begin() + axis, x.shape.end()));
  r.rows = r.inner == 0 ? 0 : x.numElements() / r.inner;
  return r;
}

Expected<std::vector<TensorType>> inferLayerNormGrad(const OpCall& c) {
  KF_RETURN_IF_ERROR(ops::requireFloat(c, 0));
  KF_RETURN_IF_ERROR(checkEpsilon(c));
  const TensorType& x = c.inputs[1];
  KF_RETURN_IF_ERROR(ops::requireType(c, 0, "dy", x));
  KF_ASSIGN_OR_RETURN(int64_t axis, ops::axisAttr(c, "axis", static_cast<int64_t>(x.rank())));
  if (c.inputs.size() < 3) return one(x);
  TensorType inner(x.dtype, Shape(x.shape.begin() + axis, x.shape.end()));
  KF_RETURN_IF_ERROR(ops::requireType(c, 2, "scale", inner));
  return one(x);
}

// One row's statistics, computed as the forward does (two passes).
struct RowStats {
  double mean, rstd;
};
RowStats rowStats(const Tensor& x, int64_t base, int64_t inner, double eps) {
  double sum = 0, sq = 0;
  for (int64_t j = 0; j < inner; ++j) sum += x.at(base + j);
  double mean = sum / static_cast<double>(inner);
  for (int64_t j = 0; j < inner; ++j) sq += (x.at(base + j) - mean) * (x.at(base + j) - mean);
  return {mean, 1.0 / std::sqrt(sq / static_cast<double>(inner) + eps)};
}

Expected<std::vector<Tensor>> layerNormGradReference(const OpCall& c, std::span<const Tensor* const> in,
                                                     std::span<const TensorType> out) {
  const Tensor &dy = *in[0], &x = *in[1];
  const Tensor* scale = in.size() > 2 ? in[2] : nullptr;
  KF_ASSIGN_OR_RETURN(LayerRows lr, layerRows(c, x.type()));
  Tensor dx(out[0]);
  for (int64_t row = 0; row < lr.rows; ++row) {
    int64_t base = row * lr.inner;
    RowStats st = rowStats(x, base, lr.inner, c.getFloat("epsilon"));
    auto xhat = [&](int64_t j) { return (x.at(base + j) - st.mean) * st.rstd; };
    auto g = [&](int64_t j) { return dy.at(base + j) * (scale ? scale->at(j) : 1.0); };
    double meanG = 0, meanGx = 0;
    for (int64_t j = 0; j < lr.inner; ++j) {
      meanG += g(j) / static_cast<double>(lr.inner);
      meanGx += g(j) * xhat(j) / static_cast<double>(lr.inner);
    }
    for (int64_t j = 0; j < lr.inner; ++j) dx.set(base + j, st.rstd * (g(j) - meanG - xhat(j) * meanGx));
  }
  return std::vector<Tensor>{std::move(dx)};
}

void registerLayerNormGrad(OpRegistry& r) {
  OpDef d;
  d.name = "layer_norm_grad";
  d.summary = "layer_norm backward to x from (dy, x[, scale]), mean and variance recomputed from x";
  d.minInputs = 2;
  d.maxInputs = 3;
  d.attrs = {{"axis", AttrKind::Int, Attribute(-1)}, epsilonAttr()};
  d.fusion = FusionClass::Reduction;
  d.infer = inferLayerNormGrad;
  d.reference = layerNormGradReference;
  d.rowSpec = [](const OpCall& c) -> Expected<RowSpec> {
    const TensorType& x = c.inputs[1];
    KF_ASSIGN_OR_RETURN(int64_t axis, ops::axisAttr(c, "axis", static_cast<int64_t>(x.rank())));
    RowSpec s;
    std::vector<int64_t> inner;
    for (int64_t d = axis; d < static_cast<int64_t>(x.rank()); ++d) inner.push_back(d);
    s.reduceAxes = inner;
    s.operandAxes = {everyAxis(x.rank()), everyAxis(x.rank())};
    if (c.inputs.size() > 2) s.operandAxes.push_back(inner);
    s.resultAxes = {everyAxis(x.rank())};
    s.resultScopes = {RowScope::Element};
    return s;
  };
  d.row = [](RowBuilder& b, const OpCall& c, std::span<const Scalar> in) -> std::vector<Scalar> {
    const TensorType& x = c.inputs[1];
    int64_t axis = *normalizeAxis(c.getInt("axis"), static_cast<int64_t>(x.rank()));
    double n = static_cast<double>(numElements(Shape(x.shape.begin() + axis, x.shape.end())));
    const Scalar &dy = in[0], &xv = in[1];
    Scalar mean = b.reduce(RowCombiner::Sum, xv) / n;
    Scalar var = b.reduce(RowCombiner::Sum, (xv - mean) * (xv - mean)) / n;
    Scalar rstd = 1.0 / sqrt(var + c.getFloat("epsilon"));
    Scalar xhat = (xv - mean) * rstd;
    Scalar g = in.size() > 2 ? dy * in[2] : dy;
    Scalar meanG = b.reduce(RowCombiner::Sum, g) / n;
    Scalar meanGx = b.reduce(RowCombiner::Sum, g * xhat) / n;
    return {rstd * (g - meanG - xhat * meanGx)};
  };
  r.add(std::move(d));
}

void registerLayerNorm(OpRegistry& r) {
  OpDef d;
  d.name = "layer_norm";
  d.rowSpec = [](const OpCall& c) -> Expected<RowSpec> {
    const TensorType& x = c.inputs[0];
    KF_ASSIGN_OR_RETURN(int64_t axis, ops::axisAttr(c, "axis", static_cast<int64_t>(x.rank())));
    RowSpec s;
    std::vector<int64_t> inner;
    for (int64_t d = axis; d < static_cast<int64_t>(x.rank()); ++d) inner.push_back(d);
    s.reduceAxes = inner;
    s.operandAxes = {everyAxis(x.rank())};
    for (size_t i = 1; i < c.inputs.size(); ++i) s.operandAxes.push_back(inner);
    s.resultAxes = {everyAxis(x.rank())};
    s.resultScopes = {RowScope::Element};
    return s;
  };
  d.row = [](RowBuilder& b, const OpCall& c, std::span<const Scalar> in) -> std::vector<Scalar> {
    const TensorType& x = c.inputs[0];
    int64_t axis = *normalizeAxis(c.getInt("axis"), static_cast<int64_t>(x.rank()));
    double n = static_cast<double>(numElements(Shape(x.shape.begin() + axis, x.shape.end())));
    Scalar mean = b.reduce(RowCombiner::Sum, in[0]) / n;
    Scalar var = b.reduce(RowCombiner::Sum, (in[0] - mean) * (in[0] - mean)) / n;
    Scalar y = (in[0] - mean) * (1.0 / sqrt(var + c.getFloat("epsilon")));
    if (in.size() > 1) y = y * in[1];
    if (in.size() > 2) y = y + in[2];
    return {y};
  };
  d.summary = "normalises over axes [axis, rank) with the biased variance, then * scale + bias "
              "(optional, shaped x.shape[axis:]); ONNX LayerNormalization";
  d.minInputs = 1;
  d.maxInputs = 3;
  d.attrs = {{"axis", AttrKind::Int, Attribute(-1)}, epsilonAttr()};
  d.fusion = FusionClass::Reduction;
  d.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> {
    KF_RETURN_IF_ERROR(ops::requireFloat(c, 0));
    KF_RETURN_IF_ERROR(checkEpsilon(c));
    const TensorType& x = c.inputs[0];
    KF_ASSIGN_OR_RETURN(int64_t axis, ops::axisAttr(c, "axis", static_cast<int64_t>(x.rank())));
    Shape inner(x.shape.begin() + axis, x.shape.end());
    const char* names[] = {"x", "scale", "bias"};
    for (size_t i = 1; i < c.inputs.size(); ++i) KF_RETURN_IF_ERROR(requireOperandShape(c, i, names[i], inner));
    return one(x);
  };
  d.reference = [](const OpCall& c, std::span<const Tensor* const> in,
                   std::span<const TensorType> out) -> Expected<std::vector<Tensor>> {
    const Tensor& x = *in[0];
    KF_ASSIGN_OR_RETURN(int64_t axis, ops::axisAttr(c, "axis", static_cast<int64_t>(x.shape().size())));
    int64_t inner = numElements(Shape(x.shape().begin() + axis, x.shape().end()));
    int64_t rows = inner == 0 ? 0 : x.numElements() / inner;
    double eps = c.getFloat("epsilon");
    Tensor y(out[0]);
    for (int64_t row = 0; row < rows; ++row) {
      int64_t base = row * inner;
      double sum = 0, sq = 0;
      for (int64_t j = 0; j < inner; ++j) sum += x.at(base + j);
      double mean = sum / static_cast<double>(inner);
      for (int64_t j = 0; j < inner; ++j) sq += (x.at(base + j) - mean) * (x.at(base + j) - mean);
      double invStd = 1.0 / std::sqrt(sq / static_cast<double>(inner) + eps);
      for (int64_t j = 0; j < inner; ++j) {
        double v = (x.at(base + j) - mean) * invStd;
        if (in.size() > 1) v *= in[1]->at(j);
        if (in.size() > 2) v += in[2]->at(j);
        y.set(base + j, v);
      }
    }
    return std::vector<Tensor>{std::move(y)};
  };
  r.add(std::move(d));
}

void registerDropout(OpRegistry& r) {
  OpDef d;
  d.name = "dropout";
  d.summary = "training dropout: y = keep ? x / (1 - ratio) : 0, keep drawn by Philox4x32-10 from "
              "(seed, step, element index) (see ir/philox.h); optional operand step: i64[]; mask = true adds "
              "a second result, keep itself (bool, x's shape), as ONNX's and torch's dropouts return it";
  d.minInputs = 1;
  d.maxInputs = 2;
  d.attrs = {{"ratio", AttrKind::Float, Attribute(0.5)},
             {"seed", AttrKind::Int, Attribute(0)},
             {"mask", AttrKind::Bool, Attribute(false)}};
  d.fusion = FusionClass::Elementwise;
  d.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> {
    KF_RETURN_IF_ERROR(ops::requireFloat(c, 0));
    if (c.inputs.size() > 1) {
      KF_RETURN_IF_ERROR(ops::requireDType(c, 1, DType::I64));
      KF_RETURN_IF_ERROR(ops::requireRank(c, 1, 0));
    }
    double ratio = c.getFloat("ratio");
    if (!(ratio >= 0.0 && ratio < 1.0)) return Error(str("attribute ratio = ", ratio, " must be in [0, 1)"));
    if (!c.getBool("mask")) return one(c.inputs[0]);
    return std::vector<TensorType>{c.inputs[0], TensorType(DType::Bool, c.inputs[0].shape, c.inputs[0].layout)};
  };
  // In kernels: the same bits from the element's flat index (the operand
  // the lowering appends), x scaled in f64 and rounded once, as the
  // reference does, so every backend gives the reference's values exactly.
  d.scalarReadsIndex = true;
  d.scalar = [](const OpCall& c, std::span<const Scalar> in) {
    const bool hasStep = c.inputs.size() > 1;
    const Scalar& x = in[0];
    Scalar step = hasStep ? in[1] : Scalar::constant(0, DType::I64);
    Scalar bits = philoxBits(in[hasStep ? 2 : 1], step, c.getInt("seed"));
    double ratio = c.getFloat("ratio");
    // (u >> 8) >= threshold  <=>  u >= threshold * 256 for a 32-bit u.
    Scalar keep = bits >= static_cast<double>(philox::dropoutThreshold(ratio)) * 256.0;
    Scalar scaled = cast(cast(x, DType::F64) / (1.0 - ratio), c.inputs[0].dtype);
    std::vector<Scalar> out{select(keep, scaled, Scalar::constant(0, x.type()))};
    if (c.getBool("mask")) out.push_back(keep);
    return out;
  };
  d.reference = [](const OpCall& c, std::span<const Tensor* const> in,
                   std::span<const TensorType> out) -> Expected<std::vector<Tensor>> {
    double ratio = c.getFloat("ratio");
    int64_t seed = c.getInt("seed");
    // Read the step's bits directly: Tensor::at goes through double.
    int64_t step = in.size() > 1 ? in[1]->as<int64_t>()[0] : 0;
    uint32_t threshold = philox::dropoutThreshold(ratio);
    std::vector<Tensor> results;
    for (const TensorType& t : out) results.emplace_back(t);
    Tensor& y = results[0];
    for (int64_t i = 0; i < y.numElements(); ++i) {
      bool keep = (philox::dropoutBits(seed, step, i) >> 8) >= threshold;
      y.set(i, keep ? in[0]->at(i) / (1.0 - ratio) : 0.0);
      if (results.size() > 1) results[1].set(i, keep ? 1.0 : 0.0);
    }
    return results;
  };
  r.add(std::move(d));
}

}  // namespace

void registerNormOps(OpRegistry& r) {
  registerBatchNorm(r);
  registerBatchNormTrain(r);
  registerBatchNormTrainGrad(r);
  registerLayerNorm(r);
  registerLayerNormGrad(r);
  registerDropout(r);
}

}  // namespace kfuse
