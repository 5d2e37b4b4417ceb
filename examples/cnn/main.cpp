// A small image classifier for 3x32x32 inputs (CIFAR-10 shaped): three
// conv-bn-relu blocks with max pooling between them, global average
// pooling, and a linear head over 10 classes. Parameter names follow
// PyTorch's nn.Sequential numbering (features.0.0.weight, ...).
#include "examples/common/example_main.h"

using namespace kfuse::trace;
namespace nn = kfuse::nn;

std::shared_ptr<nn::Sequential> convBnRelu(int64_t in, int64_t out) {
  return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Conv2d>(in, out, 3, nn::Conv2dOptions{.padding = 1, .bias = false}),
      std::make_shared<nn::BatchNorm2d>(out), std::make_shared<nn::ReLU>()});
}

struct SmallCnn : nn::Module {
  SmallCnn() : Module("SmallCnn") {
    features = registerModule("features", std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
                                              convBnRelu(3, 16), std::make_shared<nn::MaxPool2d>(2), convBnRelu(16, 32),
                                              std::make_shared<nn::MaxPool2d>(2), convBnRelu(32, 64)}));
    pool = registerModule("pool", std::make_shared<nn::AdaptiveAvgPool2d>(1));
    flatten = registerModule("flatten", std::make_shared<nn::Flatten>());
    head = registerModule("head", std::make_shared<nn::Linear>(64, 10));
  }

  Tensor forward(const Tensor& x) override {
    return head->forward(flatten->forward(pool->forward(features->forward(x))));
  }

  std::shared_ptr<nn::Sequential> features;
  std::shared_ptr<nn::AdaptiveAvgPool2d> pool;
  std::shared_ptr<nn::Flatten> flatten;
  std::shared_ptr<nn::Linear> head;
};

// Two images of smooth colour gradients.
kfuse::Tensor sampleImages() {
  kfuse::Tensor x(TensorType(DType::F32, {2, 3, 32, 32}));
  for (int64_t i = 0; i < x.numElements(); ++i) x.set(i, static_cast<double>(i % 97) / 97.0 - 0.5);
  return x;
}

int main(int argc, char** argv) {
  kfuse::examples::ExampleOptions opts;
  if (int status = kfuse::examples::parseExampleArgs(argc, argv, "A conv-bn-relu image classifier traced from C++.", opts);
      status >= 0)
    return status;
  nn::manualSeed(0);
  SmallCnn model;
  model.eval();
  return kfuse::examples::runExample(model, sampleImages(), opts);
}
