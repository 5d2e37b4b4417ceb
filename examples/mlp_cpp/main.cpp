// The spiral classifier of examples/mlp/mlp.kir, written in C++:
// Linear(2, 64) - ReLU - Linear(64, 64) - ReLU - Linear(64, 3) - Softmax.
// Its parameters are named fc1.weight ... fc3.bias, as in PyTorch, so
//   example_mlp_cpp --weights examples/mlp/mlp.safetensors
// runs it with the weights PyTorch made for mlp.kir.
#include <cmath>

#include "examples/common/example_main.h"

using namespace kfuse::trace;
namespace nn = kfuse::nn;

struct SpiralMlp : nn::Module {
  SpiralMlp() : Module("SpiralMlp") {
    fc1 = registerModule("fc1", std::make_shared<nn::Linear>(2, 64));
    fc2 = registerModule("fc2", std::make_shared<nn::Linear>(64, 64));
    fc3 = registerModule("fc3", std::make_shared<nn::Linear>(64, 3));
  }

  Tensor forward(const Tensor& x) override {
    Tensor h = relu(fc1->forward(x));
    h = relu(fc2->forward(h));
    return softmax(fc3->forward(h), 1);
  }

  std::shared_ptr<nn::Linear> fc1, fc2, fc3;
};

// Eight points along one arm of a spiral.
kfuse::Tensor spiralPoints() {
  kfuse::Tensor x(TensorType(DType::F32, {8, 2}));
  for (int64_t i = 0; i < 8; ++i) {
    double r = 0.1 + 0.1 * static_cast<double>(i), angle = 4.0 * r;
    x.set(2 * i, r * std::cos(angle));
    x.set(2 * i + 1, r * std::sin(angle));
  }
  return x;
}

int main(int argc, char** argv) {
  kfuse::examples::ExampleOptions opts;
  if (int status = kfuse::examples::parseExampleArgs(argc, argv, "A spiral classifier (MLP) traced from C++.", opts);
      status >= 0)
    return status;
  nn::manualSeed(0);
  SpiralMlp model;
  model.eval();
  return kfuse::examples::runExample(model, spiralPoints(), opts);
}
