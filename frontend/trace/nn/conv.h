// Conv2d, as torch.nn.Conv2d (zero padding, NCHW input).
#pragma once

#include "frontend/trace/nn/module.h"

namespace kfuse::nn {

struct Conv2dOptions {
  Size2 stride = 1;
  Size2 padding = 0;  // symmetric: the same on both sides of an axis
  Size2 dilation = 1;
  int64_t groups = 1;
  bool bias = true;
};

// Parameters: weight [out, in / groups, kH, kW] and bias [out], both
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = in / groups * kH * kW
// (torch's kaiming_uniform_ with a = sqrt(5), and its bias bound).
class Conv2d : public Module {
 public:
  Conv2d(int64_t inChannels, int64_t outChannels, Size2 kernel, Conv2dOptions options = {});
  Tensor forward(const Tensor& x) override;

  const int64_t inChannels, outChannels;
  const Size2 kernel;
  const Conv2dOptions options;

 protected:
  void initParameters(Generator& gen) override;

 private:
  Shape weightShape() const;
};

}  // namespace kfuse::nn
