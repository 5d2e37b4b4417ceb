// Dropout and Flatten, as their torch.nn namesakes.
#pragma once

#include "frontend/trace/nn/module.h"

namespace kfuse::nn {

// Training mode: the dropout op (y = x / (1 - p) where kept, 0 elsewhere),
// its mask drawn by Philox from a seed the module takes from the generator
// when constructed (each further use in one trace gets a fresh seed). The
// masks differ from torch's (another generator), their distribution does not.
// p = 1 gives x * 0, as torch. Evaluation mode (or p = 0): the identity,
// tracing nothing. A step counter input that varies the mask between
// training steps comes with the training driver.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override;

  const double p;
  int64_t seed() const { return seed_; }

 protected:
  void initParameters(Generator& gen) override;

 private:
  int64_t seed_ = 0;
};

// Flattens axes [startDim, endDim] into one, as torch.nn.Flatten (default:
// every axis but the batch axis).
class Flatten : public Module {
 public:
  explicit Flatten(int64_t startDim = 1, int64_t endDim = -1)
      : Module("Flatten"), startDim(startDim), endDim(endDim) {}
  Tensor forward(const Tensor& x) override;

  const int64_t startDim, endDim;
};

}  // namespace kfuse::nn
