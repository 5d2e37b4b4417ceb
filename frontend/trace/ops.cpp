// Each function names its registry op and passes its attributes; buildNode
// (through detail::apply) does the rest. Keep it that way: any check or
// shape computation added here would be a second definition of the op.
#include "frontend/trace/ops.h"

#include "frontend/trace/trace_state.h"

namespace kfuse::trace {

using detail::apply;
using detail::apply1;
using Ints = std::vector<int64_t>;

namespace {

// A rank-0 constant of x's dtype, in x's trace (or x itself when x cannot
// take one, so that the op reports x's problem).
Tensor scalarLike(const Tensor& x, double v) {
  if (!x.ok()) return x;
  return x.tracer().scalar(v, x.dtype());
}

}  // namespace

// ------------------------------------------------ elementwise, one operand

Tensor identity(const Tensor& x) { return apply1("identity", {x}); }
Tensor neg(const Tensor& x) { return apply1("neg", {x}); }
Tensor abs(const Tensor& x) { return apply1("abs", {x}); }
Tensor exp(const Tensor& x) { return apply1("exp", {x}); }
Tensor log(const Tensor& x) { return apply1("log", {x}); }
Tensor sqrt(const Tensor& x) { return apply1("sqrt", {x}); }
Tensor rsqrt(const Tensor& x) { return apply1("rsqrt", {x}); }
Tensor reciprocal(const Tensor& x) { return apply1("reciprocal", {x}); }
Tensor tanh(const Tensor& x) { return apply1("tanh", {x}); }
Tensor sigmoid(const Tensor& x) { return apply1("sigmoid", {x}); }
Tensor relu(const Tensor& x) { return apply1("relu", {x}); }
Tensor leakyRelu(const Tensor& x, double alpha) { return apply1("leaky_relu", {x}, {{"alpha", alpha}}); }
Tensor elu(const Tensor& x, double alpha) { return apply1("elu", {x}, {{"alpha", alpha}}); }
Tensor gelu(const Tensor& x, const std::string& approximate) {
  return apply1("gelu", {x}, {{"approximate", approximate}});
}
Tensor erf(const Tensor& x) { return apply1("erf", {x}); }
Tensor softplus(const Tensor& x, double beta, double threshold) {
  return apply1("softplus", {x}, {{"beta", beta}, {"threshold", threshold}});
}
Tensor sin(const Tensor& x) { return apply1("sin", {x}); }
Tensor cos(const Tensor& x) { return apply1("cos", {x}); }
Tensor sign(const Tensor& x) { return apply1("sign", {x}); }
Tensor floor(const Tensor& x) { return apply1("floor", {x}); }
Tensor ceil(const Tensor& x) { return apply1("ceil", {x}); }
Tensor clip(const Tensor& x, double min, double max) { return apply1("clip", {x}, {{"min", min}, {"max", max}}); }
Tensor cast(const Tensor& x, DType to) { return apply1("cast", {x}, {{"to", std::string(dtypeName(to))}}); }

// ------------------------------------------------ elementwise, broadcasting

Tensor add(const Tensor& a, const Tensor& b) { return apply1("add", {a, b}); }
Tensor sub(const Tensor& a, const Tensor& b) { return apply1("sub", {a, b}); }
Tensor mul(const Tensor& a, const Tensor& b) { return apply1("mul", {a, b}); }
Tensor div(const Tensor& a, const Tensor& b) { return apply1("div", {a, b}); }
Tensor pow(const Tensor& a, const Tensor& b) { return apply1("pow", {a, b}); }
Tensor pow(const Tensor& a, double exponent) { return pow(a, scalarLike(a, exponent)); }
Tensor maximum(const Tensor& a, const Tensor& b) { return apply1("maximum", {a, b}); }
Tensor minimum(const Tensor& a, const Tensor& b) { return apply1("minimum", {a, b}); }
Tensor equal(const Tensor& a, const Tensor& b) { return apply1("equal", {a, b}); }
Tensor less(const Tensor& a, const Tensor& b) { return apply1("less", {a, b}); }
Tensor greater(const Tensor& a, const Tensor& b) { return apply1("greater", {a, b}); }
Tensor lessEqual(const Tensor& a, const Tensor& b) { return apply1("less_equal", {a, b}); }
Tensor greaterEqual(const Tensor& a, const Tensor& b) { return apply1("greater_equal", {a, b}); }
Tensor logicalNot(const Tensor& x) { return apply1("logical_not", {x}); }
Tensor logicalAnd(const Tensor& a, const Tensor& b) { return apply1("logical_and", {a, b}); }
Tensor logicalOr(const Tensor& a, const Tensor& b) { return apply1("logical_or", {a, b}); }
Tensor logicalXor(const Tensor& a, const Tensor& b) { return apply1("logical_xor", {a, b}); }
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) { return apply1("where", {cond, a, b}); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, double b) { return add(a, scalarLike(a, b)); }
Tensor operator-(const Tensor& a, double b) { return sub(a, scalarLike(a, b)); }
Tensor operator*(const Tensor& a, double b) { return mul(a, scalarLike(a, b)); }
Tensor operator/(const Tensor& a, double b) { return div(a, scalarLike(a, b)); }
Tensor operator+(double a, const Tensor& b) { return add(scalarLike(b, a), b); }
Tensor operator-(double a, const Tensor& b) { return sub(scalarLike(b, a), b); }
Tensor operator*(double a, const Tensor& b) { return mul(scalarLike(b, a), b); }
Tensor operator/(double a, const Tensor& b) { return div(scalarLike(b, a), b); }
Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator<(const Tensor& a, const Tensor& b) { return less(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return greater(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return lessEqual(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return greaterEqual(a, b); }
Tensor operator<(const Tensor& a, double b) { return less(a, scalarLike(a, b)); }
Tensor operator>(const Tensor& a, double b) { return greater(a, scalarLike(a, b)); }
Tensor operator<=(const Tensor& a, double b) { return lessEqual(a, scalarLike(a, b)); }
Tensor operator>=(const Tensor& a, double b) { return greaterEqual(a, scalarLike(a, b)); }

// ------------------------------------------------ reductions

namespace {
Tensor reduce(std::string_view op, const Tensor& x, Ints axes, bool keepdims) {
  return apply1(op, {x}, {{"axes", std::move(axes)}, {"keepdims", keepdims}});
}
}  // namespace

Tensor reduceSum(const Tensor& x, Ints axes, bool keepdims) { return reduce("reduce_sum", x, std::move(axes), keepdims); }
Tensor reduceMean(const Tensor& x, Ints axes, bool keepdims) {
  return reduce("reduce_mean", x, std::move(axes), keepdims);
}
Tensor reduceMax(const Tensor& x, Ints axes, bool keepdims) { return reduce("reduce_max", x, std::move(axes), keepdims); }
Tensor reduceMin(const Tensor& x, Ints axes, bool keepdims) { return reduce("reduce_min", x, std::move(axes), keepdims); }
Tensor argmax(const Tensor& x, int64_t axis, bool keepdims) {
  return apply1("argmax", {x}, {{"axis", axis}, {"keepdims", keepdims}});
}
Tensor softmax(const Tensor& x, int64_t axis) { return apply1("softmax", {x}, {{"axis", axis}}); }
Tensor logSoftmax(const Tensor& x, int64_t axis) { return apply1("log_softmax", {x}, {{"axis", axis}}); }

// ------------------------------------------------ shape and data movement

Tensor reshape(const Tensor& x, Shape shape) { return apply1("reshape", {x}, {{"shape", std::move(shape)}}); }
Tensor squeeze(const Tensor& x, Ints axes) { return apply1("squeeze", {x}, {{"axes", std::move(axes)}}); }
Tensor unsqueeze(const Tensor& x, Ints axes) { return apply1("unsqueeze", {x}, {{"axes", std::move(axes)}}); }
Tensor flatten(const Tensor& x, int64_t axis) { return apply1("flatten", {x}, {{"axis", axis}}); }
Tensor transpose(const Tensor& x, Ints perm) { return apply1("transpose", {x}, {{"perm", std::move(perm)}}); }
Tensor expand(const Tensor& x, Shape shape) { return apply1("expand", {x}, {{"shape", std::move(shape)}}); }
Tensor concat(const std::vector<Tensor>& xs, int64_t axis) { return apply1("concat", xs, {{"axis", axis}}); }
std::vector<Tensor> split(const Tensor& x, Ints sizes, int64_t axis) {
  size_t n = std::max<size_t>(sizes.size(), 1);
  return apply("split", {x}, {{"sizes", std::move(sizes)}, {"axis", axis}}, n);
}
Tensor shapeOf(const Tensor& x) { return apply1("shape_of", {x}); }
Tensor slice(const Tensor& x, Ints starts, Ints ends, Ints axes, Ints steps) {
  return apply1("slice", {x},
                {{"starts", std::move(starts)}, {"ends", std::move(ends)}, {"axes", std::move(axes)},
                 {"steps", std::move(steps)}});
}
Tensor pad(const Tensor& x, Ints pads, const std::string& mode, double value) {
  return apply1("pad", {x}, {{"pads", std::move(pads)}, {"mode", mode}, {"value", value}});
}
Tensor gather(const Tensor& x, const Tensor& indices, int64_t axis) {
  return apply1("gather", {x, indices}, {{"axis", axis}});
}

// ------------------------------------------------ GEMM-like

Tensor matmul(const Tensor& a, const Tensor& b, bool transposeA, bool transposeB) {
  return apply1("matmul", {a, b}, {{"transpose_a", transposeA}, {"transpose_b", transposeB}});
}

namespace {
AttrMap convAttrs(const Conv2dAttrs& o) {
  return {{"strides", o.strides}, {"pads", o.pads}, {"dilations", o.dilations}, {"groups", o.groups}};
}
}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& w, const Conv2dAttrs& opts) {
  return apply1("conv2d", {x, w}, convAttrs(opts));
}
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dAttrs& opts) {
  return apply1("conv2d", {x, w, bias}, convAttrs(opts));
}

// ------------------------------------------------ pooling

Tensor maxPool2d(const Tensor& x, const MaxPool2dAttrs& o) {
  return apply1("max_pool2d", {x},
                {{"kernel", o.kernel}, {"strides", o.strides}, {"pads", o.pads}, {"dilations", o.dilations},
                 {"ceil_mode", o.ceilMode}});
}
Tensor avgPool2d(const Tensor& x, const AvgPool2dAttrs& o) {
  return apply1("avg_pool2d", {x},
                {{"kernel", o.kernel}, {"strides", o.strides}, {"pads", o.pads}, {"ceil_mode", o.ceilMode},
                 {"count_include_pad", o.countIncludePad}});
}
Tensor globalAvgPool2d(const Tensor& x) { return apply1("global_avg_pool2d", {x}); }

// ------------------------------------------------ normalisation, dropout

Tensor batchNorm(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& mean, const Tensor& var,
                 double epsilon) {
  return apply1("batch_norm", {x, scale, bias, mean, var}, {{"epsilon", epsilon}});
}
BatchNormTrainResult batchNormTrain(const Tensor& x, const Tensor& scale, const Tensor& bias, double epsilon) {
  auto r = apply("batch_norm_train", {x, scale, bias}, {{"epsilon", epsilon}}, 3);
  return {r[0], r[1], r[2]};
}
Tensor layerNorm(const Tensor& x, int64_t axis, double epsilon) {
  return apply1("layer_norm", {x}, {{"axis", axis}, {"epsilon", epsilon}});
}
Tensor layerNorm(const Tensor& x, const Tensor& scale, int64_t axis, double epsilon) {
  return apply1("layer_norm", {x, scale}, {{"axis", axis}, {"epsilon", epsilon}});
}
Tensor layerNorm(const Tensor& x, const Tensor& scale, const Tensor& bias, int64_t axis, double epsilon) {
  return apply1("layer_norm", {x, scale, bias}, {{"axis", axis}, {"epsilon", epsilon}});
}
Tensor dropout(const Tensor& x, double ratio, int64_t seed) {
  return apply1("dropout", {x}, {{"ratio", ratio}, {"seed", seed}});
}
Tensor dropout(const Tensor& x, const Tensor& step, double ratio, int64_t seed) {
  return apply1("dropout", {x, step}, {{"ratio", ratio}, {"seed", seed}});
}

// ------------------------------------------------ losses

Tensor crossEntropy(const Tensor& logits, const Tensor& labels, const std::string& reduction, int64_t ignoreIndex) {
  return apply1("cross_entropy", {logits, labels}, {{"reduction", reduction}, {"ignore_index", ignoreIndex}});
}
Tensor mseLoss(const Tensor& a, const Tensor& b, const std::string& reduction) {
  return apply1("mse_loss", {a, b}, {{"reduction", reduction}});
}

}  // namespace kfuse::trace
