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

Tensor identity(const Tensor& x) { return apply1(Op::Identity, {x}); }
Tensor neg(const Tensor& x) { return apply1(Op::Neg, {x}); }
Tensor abs(const Tensor& x) { return apply1(Op::Abs, {x}); }
Tensor exp(const Tensor& x) { return apply1(Op::Exp, {x}); }
Tensor log(const Tensor& x) { return apply1(Op::Log, {x}); }
Tensor sqrt(const Tensor& x) { return apply1(Op::Sqrt, {x}); }
Tensor rsqrt(const Tensor& x) { return apply1(Op::Rsqrt, {x}); }
Tensor reciprocal(const Tensor& x) { return apply1(Op::Reciprocal, {x}); }
Tensor tanh(const Tensor& x) { return apply1(Op::Tanh, {x}); }
Tensor sigmoid(const Tensor& x) { return apply1(Op::Sigmoid, {x}); }
Tensor relu(const Tensor& x) { return apply1(Op::Relu, {x}); }
Tensor leakyRelu(const Tensor& x, double alpha) { return apply1(Op::LeakyRelu, {x}, {{"alpha", alpha}}); }
Tensor elu(const Tensor& x, double alpha) { return apply1(Op::Elu, {x}, {{"alpha", alpha}}); }
Tensor gelu(const Tensor& x, const std::string& approximate) {
  return apply1(Op::Gelu, {x}, {{"approximate", approximate}});
}
Tensor erf(const Tensor& x) { return apply1(Op::Erf, {x}); }
Tensor softplus(const Tensor& x, double beta, double threshold) {
  return apply1(Op::Softplus, {x}, {{"beta", beta}, {"threshold", threshold}});
}
Tensor sin(const Tensor& x) { return apply1(Op::Sin, {x}); }
Tensor cos(const Tensor& x) { return apply1(Op::Cos, {x}); }
Tensor sign(const Tensor& x) { return apply1(Op::Sign, {x}); }
Tensor floor(const Tensor& x) { return apply1(Op::Floor, {x}); }
Tensor ceil(const Tensor& x) { return apply1(Op::Ceil, {x}); }
Tensor round(const Tensor& x) { return apply1(Op::Round, {x}); }
Tensor clip(const Tensor& x, double min, double max) { return apply1(Op::Clip, {x}, {{"min", min}, {"max", max}}); }
Tensor cast(const Tensor& x, DType to) { return apply1(Op::Cast, {x}, {{"to", std::string(dtypeName(to))}}); }

// ------------------------------------------------ elementwise, broadcasting

Tensor add(const Tensor& a, const Tensor& b) { return apply1(Op::Add, {a, b}); }
Tensor sub(const Tensor& a, const Tensor& b) { return apply1(Op::Sub, {a, b}); }
Tensor mul(const Tensor& a, const Tensor& b) { return apply1(Op::Mul, {a, b}); }
Tensor div(const Tensor& a, const Tensor& b) { return apply1(Op::Div, {a, b}); }
Tensor pow(const Tensor& a, const Tensor& b) { return apply1(Op::Pow, {a, b}); }
Tensor pow(const Tensor& a, double exponent) { return pow(a, scalarLike(a, exponent)); }
Tensor maximum(const Tensor& a, const Tensor& b) { return apply1(Op::Maximum, {a, b}); }
Tensor minimum(const Tensor& a, const Tensor& b) { return apply1(Op::Minimum, {a, b}); }
Tensor equal(const Tensor& a, const Tensor& b) { return apply1(Op::Equal, {a, b}); }
Tensor less(const Tensor& a, const Tensor& b) { return apply1(Op::Less, {a, b}); }
Tensor greater(const Tensor& a, const Tensor& b) { return apply1(Op::Greater, {a, b}); }
Tensor lessEqual(const Tensor& a, const Tensor& b) { return apply1(Op::LessEqual, {a, b}); }
Tensor greaterEqual(const Tensor& a, const Tensor& b) { return apply1(Op::GreaterEqual, {a, b}); }
Tensor logicalNot(const Tensor& x) { return apply1(Op::LogicalNot, {x}); }
Tensor logicalAnd(const Tensor& a, const Tensor& b) { return apply1(Op::LogicalAnd, {a, b}); }
Tensor logicalOr(const Tensor& a, const Tensor& b) { return apply1(Op::LogicalOr, {a, b}); }
Tensor logicalXor(const Tensor& a, const Tensor& b) { return apply1(Op::LogicalXor, {a, b}); }
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) { return apply1(Op::Where, {cond, a, b}); }

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
Tensor reduce(Op op, const Tensor& x, Ints axes, bool keepdims) {
  return apply1(op, {x}, {{"axes", std::move(axes)}, {"keepdims", keepdims}});
}
}  // namespace

Tensor reduceSum(const Tensor& x, Ints axes, bool keepdims) { return reduce(Op::ReduceSum, x, std::move(axes), keepdims); }
Tensor reduceMean(const Tensor& x, Ints axes, bool keepdims) {
  return reduce(Op::ReduceMean, x, std::move(axes), keepdims);
}
Tensor reduceMax(const Tensor& x, Ints axes, bool keepdims) { return reduce(Op::ReduceMax, x, std::move(axes), keepdims); }
Tensor reduceMin(const Tensor& x, Ints axes, bool keepdims) { return reduce(Op::ReduceMin, x, std::move(axes), keepdims); }
Tensor reduceProd(const Tensor& x, Ints axes, bool keepdims) { return reduce(Op::ReduceProd, x, std::move(axes), keepdims); }
Tensor argmax(const Tensor& x, int64_t axis, bool keepdims) {
  return apply1(Op::Argmax, {x}, {{"axis", axis}, {"keepdims", keepdims}});
}
Tensor softmax(const Tensor& x, int64_t axis) { return apply1(Op::Softmax, {x}, {{"axis", axis}}); }
Tensor logSoftmax(const Tensor& x, int64_t axis) { return apply1(Op::LogSoftmax, {x}, {{"axis", axis}}); }

// ------------------------------------------------ shape and data movement

Tensor reshape(const Tensor& x, Shape shape) { return apply1(Op::Reshape, {x}, {{"shape", std::move(shape)}}); }
Tensor squeeze(const Tensor& x, Ints axes) { return apply1(Op::Squeeze, {x}, {{"axes", std::move(axes)}}); }
Tensor unsqueeze(const Tensor& x, Ints axes) { return apply1(Op::Unsqueeze, {x}, {{"axes", std::move(axes)}}); }
Tensor flatten(const Tensor& x, int64_t axis) { return apply1(Op::Flatten, {x}, {{"axis", axis}}); }
Tensor transpose(const Tensor& x, Ints perm) { return apply1(Op::Transpose, {x}, {{"perm", std::move(perm)}}); }
Tensor expand(const Tensor& x, Shape shape) { return apply1(Op::Expand, {x}, {{"shape", std::move(shape)}}); }
Tensor concat(const std::vector<Tensor>& xs, int64_t axis) { return apply1(Op::Concat, xs, {{"axis", axis}}); }
std::vector<Tensor> split(const Tensor& x, Ints sizes, int64_t axis) {
  size_t n = std::max<size_t>(sizes.size(), 1);
  return apply(Op::Split, {x}, {{"sizes", std::move(sizes)}, {"axis", axis}}, n);
}
Tensor shapeOf(const Tensor& x) { return apply1(Op::ShapeOf, {x}); }
Tensor slice(const Tensor& x, Ints starts, Ints ends, Ints axes, Ints steps) {
  return apply1(Op::Slice, {x},
                {{"starts", std::move(starts)}, {"ends", std::move(ends)}, {"axes", std::move(axes)},
                 {"steps", std::move(steps)}});
}
Tensor pad(const Tensor& x, Ints pads, const std::string& mode, double value) {
  return apply1(Op::Pad, {x}, {{"pads", std::move(pads)}, {"mode", mode}, {"value", value}});
}
Tensor gather(const Tensor& x, const Tensor& indices, int64_t axis) {
  return apply1(Op::Gather, {x, indices}, {{"axis", axis}});
}
Tensor interleave(const std::vector<Tensor>& xs, Shape shape, std::vector<int64_t> steps, std::vector<int64_t> offsets) {
  return apply1(Op::Interleave, xs, {{"shape", std::move(shape)}, {"steps", std::move(steps)}, {"offsets", std::move(offsets)}});
}
Tensor scatterNd(const Tensor& x, const Tensor& indices, const Tensor& updates, const std::string& reduction) {
  return apply1(Op::ScatterNd, {x, indices, updates}, {{"reduction", reduction}});
}

// ------------------------------------------------ GEMM-like

Tensor matmul(const Tensor& a, const Tensor& b, bool transposeA, bool transposeB) {
  return apply1(Op::Matmul, {a, b}, {{"transpose_a", transposeA}, {"transpose_b", transposeB}});
}

namespace {
AttrMap convAttrs(const Conv2dAttrs& o) {
  return {{"strides", o.strides}, {"pads", o.pads}, {"dilations", o.dilations}, {"groups", o.groups}};
}
}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& w, const Conv2dAttrs& opts) {
  return apply1(Op::Conv2d, {x, w}, convAttrs(opts));
}
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dAttrs& opts) {
  return apply1(Op::Conv2d, {x, w, bias}, convAttrs(opts));
}

// ------------------------------------------------ pooling

Tensor maxPool2d(const Tensor& x, const MaxPool2dAttrs& o) {
  return apply1(Op::MaxPool2d, {x},
                {{"kernel", o.kernel}, {"strides", o.strides}, {"pads", o.pads}, {"dilations", o.dilations},
                 {"ceil_mode", o.ceilMode}});
}
Tensor avgPool2d(const Tensor& x, const AvgPool2dAttrs& o) {
  return apply1(Op::AvgPool2d, {x},
                {{"kernel", o.kernel}, {"strides", o.strides}, {"pads", o.pads}, {"ceil_mode", o.ceilMode},
                 {"count_include_pad", o.countIncludePad}});
}
Tensor globalAvgPool2d(const Tensor& x) { return apply1(Op::GlobalAvgPool2d, {x}); }

// ------------------------------------------------ normalisation, dropout

Tensor batchNorm(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& mean, const Tensor& var,
                 double epsilon) {
  return apply1(Op::BatchNorm, {x, scale, bias, mean, var}, {{"epsilon", epsilon}});
}
BatchNormTrainResult batchNormTrain(const Tensor& x, const Tensor& scale, const Tensor& bias, double epsilon) {
  auto r = apply(Op::BatchNormTrain, {x, scale, bias}, {{"epsilon", epsilon}}, 3);
  return {r[0], r[1], r[2]};
}
Tensor layerNorm(const Tensor& x, int64_t axis, double epsilon) {
  return apply1(Op::LayerNorm, {x}, {{"axis", axis}, {"epsilon", epsilon}});
}
Tensor layerNorm(const Tensor& x, const Tensor& scale, int64_t axis, double epsilon) {
  return apply1(Op::LayerNorm, {x, scale}, {{"axis", axis}, {"epsilon", epsilon}});
}
Tensor layerNorm(const Tensor& x, const Tensor& scale, const Tensor& bias, int64_t axis, double epsilon) {
  return apply1(Op::LayerNorm, {x, scale, bias}, {{"axis", axis}, {"epsilon", epsilon}});
}
Tensor dropout(const Tensor& x, double ratio, int64_t seed) {
  return apply1(Op::Dropout, {x}, {{"ratio", ratio}, {"seed", seed}});
}
Tensor dropout(const Tensor& x, const Tensor& step, double ratio, int64_t seed) {
  return apply1(Op::Dropout, {x, step}, {{"ratio", ratio}, {"seed", seed}});
}

// ------------------------------------------------ losses

Tensor crossEntropy(const Tensor& logits, const Tensor& labels, const std::string& reduction, int64_t ignoreIndex) {
  return apply1(Op::CrossEntropy, {logits, labels}, {{"reduction", reduction}, {"ignore_index", ignoreIndex}});
}
Tensor mseLoss(const Tensor& a, const Tensor& b, const std::string& reduction) {
  return apply1(Op::MseLoss, {a, b}, {{"reduction", reduction}});
}

}  // namespace kfuse::trace
