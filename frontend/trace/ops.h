// One free function per op a model uses: every op of the registry but those
// passes build, the gradient (*_grad), optimizer (*_update) and fused ops
// (docs/ops.md gives each op's exact semantics). Each builds exactly one node through buildNode: the
// registry infers shapes and dtypes and reports errors; nothing here
// re-implements an op. Function names are the op names in camelCase
// (reduce_sum -> reduceSum); attributes are parameters with the registry's
// defaults. A failed or empty operand gives a failed result (see tracer.h).
//
// Scalars in arithmetic (x * 2.0, 1.0 - x) become rank-0 constants of the
// Tensor operand's dtype.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "frontend/trace/tracer.h"

namespace kfuse::trace {

// ------------------------------------------------ elementwise, one operand
Tensor identity(const Tensor& x);
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor leakyRelu(const Tensor& x, double alpha = 0.01);
Tensor elu(const Tensor& x, double alpha = 1.0);
// approximate: "none" (erf form) or "tanh".
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
Tensor erf(const Tensor& x);
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x);  // halves to even, as torch.round
Tensor clip(const Tensor& x, double min = -std::numeric_limits<double>::infinity(),
            double max = std::numeric_limits<double>::infinity());
Tensor cast(const Tensor& x, DType to);

// ------------------------------------------------ elementwise, broadcasting
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, double exponent);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor equal(const Tensor& a, const Tensor& b);
Tensor less(const Tensor& a, const Tensor& b);
Tensor greater(const Tensor& a, const Tensor& b);
Tensor lessEqual(const Tensor& a, const Tensor& b);     // false when either is NaN
Tensor greaterEqual(const Tensor& a, const Tensor& b);  // false when either is NaN
// Logic on bool tensors.
Tensor logicalNot(const Tensor& x);
Tensor logicalAnd(const Tensor& a, const Tensor& b);
Tensor logicalOr(const Tensor& a, const Tensor& b);
Tensor logicalXor(const Tensor& a, const Tensor& b);
// cond (bool) ? a : b, all three broadcast.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);
Tensor operator-(const Tensor& x);
// Comparisons give bool Tensors (there is deliberately no operator==, whose
// meaning for handles would be ambiguous: use equal()).
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, double b);
Tensor operator>(const Tensor& a, double b);
Tensor operator<=(const Tensor& a, double b);
Tensor operator>=(const Tensor& a, double b);

// ------------------------------------------------ reductions
// axes {} reduces over every axis.
Tensor reduceSum(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdims = false);
Tensor reduceMean(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdims = false);
Tensor reduceMax(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdims = false);
Tensor reduceMin(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdims = false);
Tensor reduceProd(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdims = false);
Tensor argmax(const Tensor& x, int64_t axis = -1, bool keepdims = false);
Tensor softmax(const Tensor& x, int64_t axis = -1);
Tensor logSoftmax(const Tensor& x, int64_t axis = -1);

// ------------------------------------------------ shape and data movement
// Constants: Tracer::constant / Tracer::scalar.
Tensor reshape(const Tensor& x, Shape shape);  // one -1 is inferred
Tensor squeeze(const Tensor& x, std::vector<int64_t> axes = {});
Tensor unsqueeze(const Tensor& x, std::vector<int64_t> axes);
// ONNX Flatten: [prod(dims[:axis]), prod(dims[axis:])].
Tensor flatten(const Tensor& x, int64_t axis = 1);
Tensor transpose(const Tensor& x, std::vector<int64_t> perm = {});  // {}: reverse the axes
Tensor expand(const Tensor& x, Shape shape);
Tensor concat(const std::vector<Tensor>& xs, int64_t axis);
// One result per entry of `sizes`.
std::vector<Tensor> split(const Tensor& x, std::vector<int64_t> sizes, int64_t axis = 0);
Tensor shapeOf(const Tensor& x);
Tensor slice(const Tensor& x, std::vector<int64_t> starts, std::vector<int64_t> ends, std::vector<int64_t> axes = {},
             std::vector<int64_t> steps = {});
// pads: all begins, then all ends; mode "constant", "reflect" or "edge".
Tensor pad(const Tensor& x, std::vector<int64_t> pads, const std::string& mode = "constant", double value = 0.0);
Tensor gather(const Tensor& x, const Tensor& indices, int64_t axis = 0);
// The inverse of strided slicing: xs[i] fills the positions offsets[i] +
// steps * j of a result of `shape` (offsets flattened, rank entries per
// operand; one operand per residue class of the steps).
Tensor interleave(const std::vector<Tensor>& xs, Shape shape, std::vector<int64_t> steps, std::vector<int64_t> offsets);
// ONNX ScatterND: x with the slices at the coordinates in indices' last axis
// replaced by updates, or combined by reduction "add", "mul", "max", "min".
Tensor scatterNd(const Tensor& x, const Tensor& indices, const Tensor& updates, const std::string& reduction = "none");

// ------------------------------------------------ GEMM-like
Tensor matmul(const Tensor& a, const Tensor& b, bool transposeA = false, bool transposeB = false);

// The conv2d attributes; pads are (top, left, bottom, right).
struct Conv2dAttrs {
  std::vector<int64_t> strides = {1, 1};
  std::vector<int64_t> pads = {0, 0, 0, 0};
  std::vector<int64_t> dilations = {1, 1};
  int64_t groups = 1;
};
Tensor conv2d(const Tensor& x, const Tensor& w, const Conv2dAttrs& opts = {});
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dAttrs& opts = {});

// ------------------------------------------------ pooling
// strides {} means strides = kernel; pads are (top, left, bottom, right).
struct MaxPool2dAttrs {
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides = {};
  std::vector<int64_t> pads = {0, 0, 0, 0};
  std::vector<int64_t> dilations = {1, 1};
  bool ceilMode = false;
};
struct AvgPool2dAttrs {
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides = {};
  std::vector<int64_t> pads = {0, 0, 0, 0};
  bool ceilMode = false;
  bool countIncludePad = false;
};
Tensor maxPool2d(const Tensor& x, const MaxPool2dAttrs& opts);
Tensor avgPool2d(const Tensor& x, const AvgPool2dAttrs& opts);
Tensor globalAvgPool2d(const Tensor& x);

// ------------------------------------------------ normalisation, dropout
Tensor batchNorm(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& mean, const Tensor& var,
                 double epsilon = 1e-5);
struct BatchNormTrainResult {
  Tensor y, mean, var;  // var is the biased batch variance
};
BatchNormTrainResult batchNormTrain(const Tensor& x, const Tensor& scale, const Tensor& bias, double epsilon = 1e-5);
// Normalises over axes [axis, rank); scale and bias are shaped x.shape[axis:].
Tensor layerNorm(const Tensor& x, int64_t axis = -1, double epsilon = 1e-5);
Tensor layerNorm(const Tensor& x, const Tensor& scale, int64_t axis = -1, double epsilon = 1e-5);
Tensor layerNorm(const Tensor& x, const Tensor& scale, const Tensor& bias, int64_t axis = -1, double epsilon = 1e-5);
// Training dropout; the mask is a function of (seed, step, element index).
Tensor dropout(const Tensor& x, double ratio = 0.5, int64_t seed = 0);
Tensor dropout(const Tensor& x, const Tensor& step, double ratio = 0.5, int64_t seed = 0);

// ------------------------------------------------ losses (rank-0 results)
// reduction: "mean" or "sum".
Tensor crossEntropy(const Tensor& logits, const Tensor& labels, const std::string& reduction = "mean",
                    int64_t ignoreIndex = -100);
Tensor mseLoss(const Tensor& a, const Tensor& b, const std::string& reduction = "mean");

}  // namespace kfuse::trace
