// Parameter-free activation modules: ReLU, GELU, Tanh, Sigmoid.
#pragma once

#include <string>

#include "frontend/trace/nn/module.h"

namespace kfuse::nn {

class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Tensor forward(const Tensor& x) override;
};

class GELU : public Module {
 public:
  // "none" (the erf form) or "tanh", as torch.nn.GELU(approximate=...).
  explicit GELU(std::string approximate = "none") : Module("GELU"), approximate(std::move(approximate)) {}
  Tensor forward(const Tensor& x) override;

  const std::string approximate;
};

class Tanh : public Module {
 public:
  Tanh() : Module("Tanh") {}
  Tensor forward(const Tensor& x) override;
};

class Sigmoid : public Module {
 public:
  Sigmoid() : Module("Sigmoid") {}
  Tensor forward(const Tensor& x) override;
};

}  // namespace kfuse::nn
