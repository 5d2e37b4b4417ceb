// docs/tracing.md's complete model (a test keeps the two identical).
#include <iostream>

#include "frontend/trace/trace.h"
#include "ir/interpreter.h"
#include "ir/printer.h"

using namespace kfuse::trace;
namespace nn = kfuse::nn;

struct Mlp : nn::Module {
  std::shared_ptr<nn::Linear> fc1 = registerModule("fc1", std::make_shared<nn::Linear>(2, 16));
  std::shared_ptr<nn::Linear> fc2 = registerModule("fc2", std::make_shared<nn::Linear>(16, 3));
  Mlp() : Module("Mlp") {}
  Tensor forward(const Tensor& x) override { return softmax(fc2->forward(relu(fc1->forward(x))), 1); }
};

int main() {
  Mlp model;
  model.eval();
  auto traced = nn::trace(model, TensorType(DType::F32, {4, 2}));  // fails with the first error, if any
  if (!traced) return std::cerr << traced.error().message() << "\n", 1;
  kfuse::printModule(std::cout, **traced, {.inlineUnbackedParams = false});
  kfuse::Tensor x(TensorType(DType::F32, {4, 2}));  // zeros
  auto result = kfuse::interpret(*(*traced)->functions()[0], {x});
  if (!result) return std::cerr << result.error().message() << "\n", 1;
  std::cout << kfuse::formatType(result->outputs[0].type()) << "\n";
}
