// Normalisation ops (batch norm in its inference and training forms, layer
// norm) and dropout. The norms reduce over axes, so they are Reduction ops;
// dropout maps each element on its own (its mask is a pure function of the
// element's flat index, see ir/philox.h), so it is Elementwise.
#include <cmath>

#include "ir/ops/op_helpers.h"
#include "ir/philox.h"

namespace kfuse {
namespace {

using ops::one;

AttrSpec epsilonAttr() { return {"epsilon", AttrKind::Float, Attribute(1e-5)}; }

// A negative or non-finite epsilon would turn a zero variance into NaN or a
// silent zero; reject it at build time rather than at run time.
Status checkEpsilon(const OpCall& c) {
  double eps = c.getFloat("epsilon");
  if (std::isfinite(eps) && eps >= 0) return Status::ok();
  return Error(str("attribute epsilon = ", eps, " must be finite and non-negative"));
}

// x's channel axis: the last axis when x is tagged NHWC, axis 1 otherwise
// (plain and NCHW: [N, C, ...]).
Expected<int64_t> channelAxis(const OpCall& c) {
  const TensorType& x = c.inputs[0];
  if (x.rank() < 2) return Error(str("operand 0 (x) must have rank >= 2 (batch and channel axes), got ", formatType(x)));
  switch (x.layout) {
    case Layout::Plain:
    case Layout::NCHW: return 1;
    case Layout::NHWC: return static_cast<int64_t>(x.rank()) - 1;
    default:
      return Error(str("operand 0 (x) has layout ", layoutName(x.layout),
                       ", but batch norm needs an activation layout (plain, nchw or nhwc)"));
  }
}

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

void registerBatchNorm(OpRegistry& r) {
  OpDef d;
  d.name = "batch_norm";
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
  r.add(std::move(d));
}

void registerBatchNormTrain(OpRegistry& r) {
  OpDef d;
  d.name = "batch_norm_train";
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
  r.add(std::move(d));
}

void registerLayerNorm(OpRegistry& r) {
  OpDef d;
  d.name = "layer_norm";
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
              "(seed, step, element index) (see ir/philox.h); optional operand step: i64[]";
  d.minInputs = 1;
  d.maxInputs = 2;
  d.attrs = {{"ratio", AttrKind::Float, Attribute(0.5)}, {"seed", AttrKind::Int, Attribute(0)}};
  d.fusion = FusionClass::Elementwise;
  d.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> {
    KF_RETURN_IF_ERROR(ops::requireFloat(c, 0));
    if (c.inputs.size() > 1) {
      KF_RETURN_IF_ERROR(ops::requireDType(c, 1, DType::I64));
      KF_RETURN_IF_ERROR(ops::requireRank(c, 1, 0));
    }
    double ratio = c.getFloat("ratio");
    if (!(ratio >= 0.0 && ratio < 1.0)) return Error(str("attribute ratio = ", ratio, " must be in [0, 1)"));
    return one(c.inputs[0]);
  };
  d.reference = [](const OpCall& c, std::span<const Tensor* const> in,
                   std::span<const TensorType> out) -> Expected<std::vector<Tensor>> {
    double ratio = c.getFloat("ratio");
    int64_t seed = c.getInt("seed");
    // Read the step's bits directly: Tensor::at goes through double.
    int64_t step = in.size() > 1 ? in[1]->as<int64_t>()[0] : 0;
    uint32_t threshold = philox::dropoutThreshold(ratio);
    Tensor y(out[0]);
    for (int64_t i = 0; i < y.numElements(); ++i) {
      bool keep = (philox::dropoutBits(seed, step, i) >> 8) >= threshold;
      y.set(i, keep ? in[0]->at(i) / (1.0 - ratio) : 0.0);
    }
    return std::vector<Tensor>{std::move(y)};
  };
  r.add(std::move(d));
}

}  // namespace

void registerNormOps(OpRegistry& r) {
  registerBatchNorm(r);
  registerBatchNormTrain(r);
  registerLayerNorm(r);
  registerDropout(r);
}

}  // namespace kfuse
