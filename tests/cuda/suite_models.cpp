#include "tests/cuda/suite_models.h"

#include <cmath>

#include "codegen/backend.h"
#include "frontend/trace/trace.h"
#include "ir/support/strings.h"

namespace kfuse::test {
namespace {

using trace::Tensor;
using SeqList = std::initializer_list<std::shared_ptr<nn::Module>>;

struct Mlp : nn::Module {
  // `gelu`: GELU's tanh form between the layers (cuBLASLt's GELU epilogues)
  // instead of ReLU.
  explicit Mlp(std::vector<int64_t> widths, bool gelu = false) : Module("Mlp"), gelu(gelu) {
    for (size_t i = 0; i + 1 < widths.size(); ++i)
      layers.push_back(registerModule(str("fc", i + 1), std::make_shared<nn::Linear>(widths[i], widths[i + 1])));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = x;
    for (size_t i = 0; i < layers.size(); ++i) {
      h = layers[i]->forward(h);
      if (i + 1 < layers.size()) h = gelu ? trace::gelu(h, "tanh") : trace::relu(h);
    }
    return h;
  }
  std::vector<std::shared_ptr<nn::Linear>> layers;
  bool gelu = false;
};

std::shared_ptr<nn::Sequential> convBnRelu(int64_t in, int64_t out) {
  return std::make_shared<nn::Sequential>(SeqList{
      std::make_shared<nn::Conv2d>(in, out, 3, nn::Conv2dOptions{.padding = 1, .bias = false}),
      std::make_shared<nn::BatchNorm2d>(out), std::make_shared<nn::ReLU>()});
}

struct SmallCnn : nn::Module {
  SmallCnn() : Module("SmallCnn") {
    features = registerModule("features", std::make_shared<nn::Sequential>(SeqList{
                                              convBnRelu(3, 8), std::make_shared<nn::MaxPool2d>(2), convBnRelu(8, 16),
                                              std::make_shared<nn::MaxPool2d>(2)}));
    pool = registerModule("pool", std::make_shared<nn::AdaptiveAvgPool2d>(1));
    flatten = registerModule("flatten", std::make_shared<nn::Flatten>());
    head = registerModule("head", std::make_shared<nn::Linear>(16, 10));
  }
  Tensor forward(const Tensor& x) override { return head->forward(flatten->forward(pool->forward(features->forward(x)))); }
  std::shared_ptr<nn::Sequential> features;
  std::shared_ptr<nn::AdaptiveAvgPool2d> pool;
  std::shared_ptr<nn::Flatten> flatten;
  std::shared_ptr<nn::Linear> head;
};

// torchvision's BasicBlock.
struct BasicBlock : nn::Module {
  BasicBlock(int64_t in, int64_t out, int64_t stride) : Module("BasicBlock") {
    conv1 = registerModule("conv1", std::make_shared<nn::Conv2d>(
                                        in, out, 3, nn::Conv2dOptions{.stride = stride, .padding = 1, .bias = false}));
    bn1 = registerModule("bn1", std::make_shared<nn::BatchNorm2d>(out));
    conv2 = registerModule("conv2", std::make_shared<nn::Conv2d>(out, out, 3, nn::Conv2dOptions{.padding = 1, .bias = false}));
    bn2 = registerModule("bn2", std::make_shared<nn::BatchNorm2d>(out));
    if (stride != 1 || in != out)
      downsample = registerModule(
          "downsample", std::make_shared<nn::Sequential>(SeqList{
                            std::make_shared<nn::Conv2d>(in, out, 1, nn::Conv2dOptions{.stride = stride, .bias = false}),
                            std::make_shared<nn::BatchNorm2d>(out)}));
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = trace::relu(bn1->forward(conv1->forward(x)));
    y = bn2->forward(conv2->forward(y));
    return trace::relu(y + (downsample ? downsample->forward(x) : x));
  }
  std::shared_ptr<nn::Conv2d> conv1, conv2;
  std::shared_ptr<nn::BatchNorm2d> bn1, bn2;
  std::shared_ptr<nn::Sequential> downsample;
};

// torchvision's resnet18 (parameter names as its state_dict).
struct ResNet18 : nn::Module {
  ResNet18() : Module("ResNet18") {
    conv1 = registerModule("conv1", std::make_shared<nn::Conv2d>(
                                        3, 64, 7, nn::Conv2dOptions{.stride = 2, .padding = 3, .bias = false}));
    bn1 = registerModule("bn1", std::make_shared<nn::BatchNorm2d>(64));
    maxpool = registerModule("maxpool", std::make_shared<nn::MaxPool2d>(3, nn::MaxPool2dOptions{.stride = 2, .padding = 1}));
    int64_t in = 64;
    for (int64_t l = 0; l < 4; ++l) {
      int64_t out = 64 << l;
      layers.push_back(registerModule(
          str("layer", l + 1), std::make_shared<nn::Sequential>(SeqList{
                                   std::make_shared<BasicBlock>(in, out, l == 0 ? 1 : 2),
                                   std::make_shared<BasicBlock>(out, out, 1)})));
      in = out;
    }
    avgpool = registerModule("avgpool", std::make_shared<nn::AdaptiveAvgPool2d>(1));
    fc = registerModule("fc", std::make_shared<nn::Linear>(512, 1000));
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = maxpool->forward(trace::relu(bn1->forward(conv1->forward(x))));
    for (auto& l : layers) y = l->forward(y);
    return fc->forward(trace::flatten(avgpool->forward(y), 1));
  }
  std::shared_ptr<nn::Conv2d> conv1;
  std::shared_ptr<nn::BatchNorm2d> bn1;
  std::shared_ptr<nn::MaxPool2d> maxpool;
  std::vector<std::shared_ptr<nn::Sequential>> layers;
  std::shared_ptr<nn::AdaptiveAvgPool2d> avgpool;
  std::shared_ptr<nn::Linear> fc;
};

struct EncoderBlock : nn::Module {
  EncoderBlock() : Module("EncoderBlock") {
    encoder = registerModule("encoder", std::make_shared<nn::TransformerEncoderLayer>(
                                            64, 4, nn::TransformerEncoderLayerOptions{.dimFeedforward = 128, .activation = "gelu"}));
  }
  Tensor forward(const Tensor& x) override { return encoder->forward(x); }
  std::shared_ptr<nn::TransformerEncoderLayer> encoder;
};

kfuse::Tensor ramp(const TensorType& t, double scale) {
  kfuse::Tensor x(t);
  for (int64_t i = 0; i < x.numElements(); ++i) x.set(i, scale * (static_cast<double>(i % 97) / 97.0 - 0.5));
  return x;
}

kfuse::Tensor labels(int64_t n, int64_t classes) {
  kfuse::Tensor y(TensorType(DType::I64, {n}));
  for (int64_t i = 0; i < n; ++i) y.as<int64_t>()[i] = i % classes;
  return y;
}

Expected<SuiteModel> inference(const std::string& name, nn::Module& model, const TensorType& input,
                               const std::string& target) {
  model.eval();
  KF_ASSIGN_OR_RETURN(auto m, nn::trace(model, input));
  KF_ASSIGN_OR_RETURN(Backend backend, backendFor(target));
  KF_RETURN_IF_ERROR(prepareModule(*m, backend));
  SuiteModel s;
  s.name = name;
  s.function = m->functions().front().get();
  s.module = std::move(m);
  s.sampleInputs = {ramp(input, 2.0)};
  return s;
}

Expected<SuiteModel> training(const std::string& name, nn::Module& model, const TensorType& input, int64_t classes,
                              const std::string& target, const ExecutionOptions& execution) {
  model.train();
  KF_ASSIGN_OR_RETURN(auto m, nn::trace(model, input));
  TrainerOptions opts;
  opts.target = target;
  opts.execution = execution;
  opts.training.loss = LossKind::CrossEntropy;
  opts.training.optimizer.kind = OptimizerKind::Adam;
  KF_ASSIGN_OR_RETURN(auto trainer, Trainer::create(std::move(m), opts));
  SuiteModel s;
  s.name = name;
  s.training = true;
  s.function = &trainer->trainStep();
  s.trainer = std::move(trainer);
  s.sampleInputs = {ramp(input, 2.0)};
  s.sampleLabels = labels(input.shape[0], classes);
  return s;
}

}  // namespace

std::vector<std::string> suiteModelNames() {
  return {"spiral_mlp_train", "mlp784_train", "gelu_mlp_train", "cnn_train", "cnn_infer", "resnet18_infer",
          "transformer_infer"};
}

Expected<SuiteModel> buildSuiteModel(const std::string& name, const std::string& target,
                                     const ExecutionOptions& execution) {
  nn::manualSeed(0);
  if (name == "spiral_mlp_train") {
    Mlp model({2, 64, 64, 3});
    return training(name, model, TensorType(DType::F32, {300, 2}), 3, target, execution);
  }
  if (name == "mlp784_train") {
    Mlp model({784, 512, 512, 10});
    return training(name, model, TensorType(DType::F32, {64, 784}), 10, target, execution);
  }
  if (name == "gelu_mlp_train") {
    Mlp model({32, 64, 64, 10}, /*gelu=*/true);
    return training(name, model, TensorType(DType::F32, {48, 32}), 10, target, execution);
  }
  if (name == "cnn_train" || name == "cnn_infer") {
    SmallCnn model;
    TensorType input(DType::F32, {4, 3, 16, 16});
    return name == "cnn_train" ? training(name, model, input, 10, target, execution)
                                : inference(name, model, input, target);
  }
  if (name == "resnet18_infer") {
    ResNet18 model;
    return inference(name, model, TensorType(DType::F32, {1, 3, 64, 64}), target);
  }
  if (name == "transformer_infer") {
    EncoderBlock model;
    return inference(name, model, TensorType(DType::F32, {2, 16, 64}), target);
  }
  return Error(str("no suite model '", name, "' (have: ", join(suiteModelNames()), ")"));
}

std::string compareTrainingUpdates(const InterpreterResult& got, const InterpreterResult& want, double atol,
                                   double rtol) {
  if (got.updates.size() != want.updates.size())
    return str(got.updates.size(), " updates, expected ", want.updates.size());
  for (const auto& [name, w] : want.updates) {
    auto it = got.updates.find(name);
    if (it == got.updates.end()) return str("no update of @", name);
    const kfuse::Tensor& g = *it->second;
    if (g.type() != w->type()) return str("@", name, ": ", formatType(g.type()), ", expected ", formatType(w->type()));
    auto moment = want.updates.find(name + ".exp_avg");
    double scale = 0;
    if (moment != want.updates.end())
      for (int64_t i = 0; i < moment->second->numElements(); ++i) scale = std::max(scale, std::fabs(moment->second->at(i)));
    for (int64_t i = 0; i < w->numElements(); ++i) {
      const double a = g.at(i), b = w->at(i);
      if (std::isnan(a) && std::isnan(b)) continue;
      if (moment != want.updates.end() && std::fabs(moment->second->at(i)) < 1e-4 * scale) continue;
      if (!(std::fabs(a - b) <= atol + rtol * std::fabs(b)))
        return str("@", name, " element ", i, ": got ", a, ", expected ", b);
    }
  }
  return "";
}

}  // namespace kfuse::test
