#include "frontend/trace/nn/normalization.h"

#include <algorithm>

#include "frontend/trace/ops.h"
#include "ir/support/strings.h"

namespace kfuse::nn {

namespace {

kfuse::Tensor filled(Shape s, double v) {
  kfuse::Tensor t(TensorType(DType::F32, std::move(s)));
  init::fill(t, v);
  return t;
}

}  // namespace

// ---------------------------------------------------------------- BatchNorm2d

BatchNorm2d::BatchNorm2d(int64_t n, BatchNormOptions opts)
    : Module("BatchNorm2d"), numFeatures(std::max<int64_t>(n, 0)), options(opts) {
  if (n < 0) reportProblem(str("num_features = ", n, " must be >= 0"));
  if (options.affine) {
    registerParameter("weight", filled({numFeatures}, 1));
    registerParameter("bias", filled({numFeatures}, 0));
  }
  if (options.trackRunningStats) {
    registerBuffer("running_mean", filled({numFeatures}, 0));
    registerBuffer("running_var", filled({numFeatures}, 1));
    registerBuffer("num_batches_tracked", kfuse::Tensor::scalar(DType::I64, 0));
  }
}

// Deterministic (ones and zeros); resetting also clears the running statistics.
void BatchNorm2d::initParameters(Generator&) {
  if (options.affine) {
    (void)setTensor("weight", filled({numFeatures}, 1));
    (void)setTensor("bias", filled({numFeatures}, 0));
  }
  if (options.trackRunningStats) {
    (void)setTensor("running_mean", filled({numFeatures}, 0));
    (void)setTensor("running_var", filled({numFeatures}, 1));
    (void)setTensor("num_batches_tracked", kfuse::Tensor::scalar(DType::I64, 0));
  }
}

Tensor BatchNorm2d::forward(const Tensor& x) {
  auto s = scope(x);
  if (x.ok() && x.rank() != 4) return fail(x, str("expected a 4-D input [N, C, H, W], got ", formatType(x.type())));
  trace::Tracer t = x.tracer();
  // Without affine parameters the op still takes scale and bias: ones and zeros.
  Tensor scale = options.affine ? param(x, "weight") : t.constant(filled({numFeatures}, 1));
  Tensor bias = options.affine ? param(x, "bias") : t.constant(filled({numFeatures}, 0));
  if (!isTraining() && options.trackRunningStats) {
    Tensor mean = param(x, "running_mean");
    Tensor var = param(x, "running_var");
    return trace::batchNorm(x, scale, bias, mean, var, options.eps);
  }
  trace::BatchNormTrainResult r = trace::batchNormTrain(x, scale, bias, options.eps);
  if (isTraining() && options.trackRunningStats) {
    Tensor updated = updateRunningStats(x, r.mean, r.var);
    if (!updated.ok()) return updated;
  }
  return r.y;
}

// running = (1 - m) * running + m * batch, with the unbiased batch variance
// n / (n - 1) * var, and m = momentum (or 1 / num_batches_tracked for the
// cumulative average). Returns a failed Tensor on a problem, else x.
Tensor BatchNorm2d::updateRunningStats(const Tensor& x, const Tensor& batchMean, const Tensor& batchVar) {
  if (!batchMean.ok()) return batchMean;
  int64_t n = x.shape()[0] * x.shape()[2] * x.shape()[3];
  if (n <= 1)
    return fail(x, str("training needs more than one value per channel, got input ", formatType(x.type())));
  trace::Tracer t = x.tracer();
  Tensor count = param(x, "num_batches_tracked") + 1.0;
  t.update(fullName("num_batches_tracked"), count);
  Tensor m = options.momentum ? t.scalar(*options.momentum, x.dtype()) : 1.0 / trace::cast(count, x.dtype());
  Tensor unbiased = batchVar * (static_cast<double>(n) / static_cast<double>(n - 1));
  // One node per statement: the printed IR does not depend on the order a
  // compiler evaluates call arguments in.
  Tensor keep = 1.0 - m;
  Tensor oldMean = keep * param(x, "running_mean");
  t.update(fullName("running_mean"), oldMean + m * batchMean);
  Tensor oldVar = keep * param(x, "running_var");
  t.update(fullName("running_var"), oldVar + m * unbiased);
  return x;
}

// ---------------------------------------------------------------- LayerNorm

LayerNorm::LayerNorm(Shape shape, LayerNormOptions opts)
    : Module("LayerNorm"), normalizedShape(std::move(shape)), options(opts) {
  bool valid = !normalizedShape.empty() && normalizedShape.size() <= static_cast<size_t>(kMaxRank) &&
               std::all_of(normalizedShape.begin(), normalizedShape.end(), [](int64_t d) { return d >= 0; });
  if (!valid) reportProblem(str("normalized shape ", formatDims(normalizedShape), " must be non-empty and non-negative"));
  Shape s = valid ? normalizedShape : Shape{0};
  if (options.elementwiseAffine) {
    registerParameter("weight", filled(s, 1));
    registerParameter("bias", filled(s, 0));
  }
}

void LayerNorm::initParameters(Generator&) {
  if (!options.elementwiseAffine || !problem().empty()) return;
  (void)setTensor("weight", filled(normalizedShape, 1));
  (void)setTensor("bias", filled(normalizedShape, 0));
}

Tensor LayerNorm::forward(const Tensor& x) {
  auto s = scope(x);
  if (!problem().empty()) return fail(x, problem());
  auto k = static_cast<int64_t>(normalizedShape.size());
  if (x.ok() && (x.rank() < k || !std::equal(normalizedShape.begin(), normalizedShape.end(), x.shape().end() - k)))
    return fail(x, str("input ", formatType(x.type()), " does not end in the normalized shape ",
                       formatDims(normalizedShape)));
  if (!options.elementwiseAffine) return trace::layerNorm(x, -k, options.eps);
  Tensor w = param(x, "weight");
  Tensor b = param(x, "bias");
  return trace::layerNorm(x, w, b, -k, options.eps);
}

}  // namespace kfuse::nn
