// BatchNorm2d and LayerNorm, as their torch.nn namesakes.
#pragma once

#include <optional>

#include "frontend/trace/nn/module.h"

namespace kfuse::nn {

struct BatchNormOptions {
  double eps = 1e-5;
  // Weight of the batch statistics in the running averages; nullopt gives
  // the cumulative average (torch's momentum=None).
  std::optional<double> momentum = 0.1;
  bool affine = true;             // learn weight and bias
  bool trackRunningStats = true;  // keep running_mean / running_var
};

// Per-channel normalisation of an [N, C, H, W] input. Parameters weight [C]
// (ones) and bias [C] (zeros); buffers running_mean [C] (zeros),
// running_var [C] (ones) and num_batches_tracked (i64 scalar), as torch's
// state_dict names them.
//
// Evaluation mode traces batch_norm with the running statistics. Training
// mode traces batch_norm_train (batch statistics) and, when tracking, state
// updates of the three buffers exactly as torch updates them (running_var
// from the unbiased batch variance).
class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(int64_t numFeatures, BatchNormOptions options = {});
  Tensor forward(const Tensor& x) override;

  const int64_t numFeatures;
  const BatchNormOptions options;

 protected:
  void initParameters(Generator& gen) override;

 private:
  Tensor updateRunningStats(const Tensor& x, const Tensor& batchMean, const Tensor& batchVar);
};

struct LayerNormOptions {
  double eps = 1e-5;
  bool elementwiseAffine = true;  // learn weight (ones) and bias (zeros)
};

// Normalises over the trailing axes given by normalizedShape (biased
// variance); weight and bias are shaped normalizedShape.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(Shape normalizedShape, LayerNormOptions options = {});
  Tensor forward(const Tensor& x) override;

  const Shape normalizedShape;
  const LayerNormOptions options;

 protected:
  void initParameters(Generator& gen) override;
};

}  // namespace kfuse::nn
