#include "frontend/trace/nn/activation.h"

#include "frontend/trace/ops.h"

namespace kfuse::nn {

Tensor ReLU::forward(const Tensor& x) {
  auto s = scope(x);
  return trace::relu(x);
}

Tensor GELU::forward(const Tensor& x) {
  auto s = scope(x);
  return trace::gelu(x, approximate);
}

Tensor Tanh::forward(const Tensor& x) {
  auto s = scope(x);
  return trace::tanh(x);
}

Tensor Sigmoid::forward(const Tensor& x) {
  auto s = scope(x);
  return trace::sigmoid(x);
}

}  // namespace kfuse::nn
