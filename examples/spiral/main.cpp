// The training demo: a 3-class 2-D spiral (the classic one), an MLP
// Linear(2,64)-ReLU-Linear(64,64)-ReLU-Linear(64,3) written with kfuse's nn
// modules, cross-entropy, Adam lr 0.01, 1000 full-batch epochs. kfuse
// compiles the whole training step (forward, loss, backward, Adam) once into
// fused kernels and runs it; the IR around each pass of that compilation is
// dumped for inspection.
//
//   example_spiral [--epochs N] [--target cpu|interpreter|cuda [--simulate]] [--dump-dir DIR]
//                  [--save-data FILE.npz] [--save-init FILE.safetensors] [--summary FILE.json]
//
// --save-data and --save-init write the dataset and the starting weights, so
// examples/spiral/spiral_torch.py can train the same model in PyTorch.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>

#include "frontend/io/npz.h"
#include "frontend/trace/trace.h"
#include "ir/weights.h"
#include "exec/plan.h"
#include "codegen/trainer.h"

using namespace kfuse::trace;
namespace nn = kfuse::nn;

struct SpiralMlp : nn::Module {
  SpiralMlp() : Module("SpiralMlp") {
    fc1 = registerModule("fc1", std::make_shared<nn::Linear>(2, 64));
    fc2 = registerModule("fc2", std::make_shared<nn::Linear>(64, 64));
    fc3 = registerModule("fc3", std::make_shared<nn::Linear>(64, 3));
  }
  Tensor forward(const Tensor& x) override { return fc3->forward(relu(fc2->forward(relu(fc1->forward(x))))); }
  std::shared_ptr<nn::Linear> fc1, fc2, fc3;
};

// K arms of N points: radius r in [0, 1], angle 4k + 4r plus noise, as in
// CS231n's spiral. The noise comes from SplitMix64 + Box-Muller, so the data
// are the same on every platform.
struct Spiral {
  kfuse::Tensor x, y;
};

Spiral makeSpiral(int64_t perClass, int64_t classes, uint64_t seed) {
  uint64_t state = seed;
  auto uniform = [&state] {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
  };
  auto normal = [&] { return std::sqrt(-2 * std::log(1 - uniform())) * std::cos(2 * M_PI * uniform()); };
  int64_t n = perClass * classes;
  Spiral s{kfuse::Tensor(TensorType(DType::F32, {n, 2})), kfuse::Tensor(TensorType(DType::I64, {n}))};
  for (int64_t k = 0; k < classes; ++k)
    for (int64_t i = 0; i < perClass; ++i) {
      int64_t row = k * perClass + i;
      double r = static_cast<double>(i) / static_cast<double>(perClass - 1);
      double t = 4.0 * static_cast<double>(k) + 4.0 * r + 0.2 * normal();
      s.x.set(2 * row, r * std::sin(t));
      s.x.set(2 * row + 1, r * std::cos(t));
      s.y.as<int64_t>()[row] = k;
    }
  return s;
}

struct Options {
  int64_t epochs = 1000;
  std::string target = "cpu", dumpDir = "spiral-ir-dumps", saveData, saveInit, summary;
  bool simulate = false;
};

double accuracy(kfuse::Trainer& t, const Spiral& data) {
  auto out = t.eval({data.x});
  if (!out) return -1;
  const kfuse::Tensor& logits = (*out)[0];
  int64_t n = logits.shape()[0], classes = logits.shape()[1], correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c)
      if (logits.at(i * classes + c) > logits.at(i * classes + best)) best = c;
    correct += best == data.y.as<int64_t>()[i];
  }
  return static_cast<double>(correct) / static_cast<double>(n);
}

int run(const Options& o) {
  Spiral data = makeSpiral(100, 3, 7);
  nn::manualSeed(0);
  SpiralMlp model;
  model.train();
  auto traced = nn::trace(model, data.x.type());
  if (!traced) return std::cerr << "example_spiral: " << traced.error().message() << "\n", 1;
  if (!o.saveData.empty())
    if (auto s = kfuse::io::writeNpz(o.saveData, {{"x", &data.x}, {"y", &data.y}}); !s)
      return std::cerr << "example_spiral: " << s.message() << "\n", 1;
  if (!o.saveInit.empty()) {
    std::vector<std::pair<std::string, const kfuse::Tensor*>> params;
    for (const auto& p : (*traced)->params()) params.emplace_back(p->name, p->data.get());
    if (auto s = kfuse::writeWeightsFile(o.saveInit, params); !s)
      return std::cerr << "example_spiral: " << s.message() << "\n", 1;
  }

  kfuse::TrainerOptions opts;
  opts.target = o.target;
  opts.execution.cudaSimulate = o.simulate;
  opts.training.loss = kfuse::LossKind::CrossEntropy;
  opts.training.optimizer.kind = kfuse::OptimizerKind::Adam;
  opts.instrumentation.dumpDir = o.dumpDir;
  auto compileStart = std::chrono::steady_clock::now();
  auto trainer = kfuse::Trainer::create(std::move(*traced), opts);
  if (!trainer) return std::cerr << "example_spiral: " << trainer.error().message() << "\n", 1;
  const kfuse::Plan* plan = (*trainer)->trainPlan();  // plans and compiles the kernels
  double compileSecs = std::chrono::duration<double>(std::chrono::steady_clock::now() - compileStart).count();
  std::cout << "compiled the training step for target " << o.target << " in " << std::fixed << std::setprecision(2)
            << compileSecs << " s";
  if (plan) std::cout << ": " << plan->launches() << " launches per step";
  std::cout << "\n" << std::defaultfloat;

  double loss = 0;
  auto start = std::chrono::steady_clock::now();
  for (int64_t epoch = 1; epoch <= o.epochs; ++epoch) {
    auto l = (*trainer)->step({data.x}, data.y, 0.01);
    if (!l) return std::cerr << "example_spiral: " << l.error().message() << "\n", 1;
    loss = *l;
    if (epoch % 100 == 0 || epoch == 1)
      std::cout << "epoch " << std::setw(4) << epoch << "  loss " << std::fixed << std::setprecision(6) << loss << "\n"
                << std::defaultfloat;
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double acc = accuracy(**trainer, data);
  std::cout << "final accuracy " << std::fixed << std::setprecision(2) << 100 * acc << "% (" << data.y.numElements()
            << " points), " << std::setprecision(3) << 1e3 * secs / static_cast<double>(o.epochs) << " ms per step\n"
            << "IR around each pass of the training compilation: " << o.dumpDir << "/\n";
  if (!o.summary.empty()) {
    std::ofstream(o.summary) << "{\"loss\": " << std::setprecision(9) << loss << ", \"accuracy\": " << acc
                             << ", \"epochs\": " << o.epochs << "}\n";
  }
  return 0;
}

int main(int argc, char** argv) {
  CLI::App app{"The spiral training demo"};
  Options o;
  app.add_option("--epochs", o.epochs, "Full-batch Adam steps (default 1000)");
  app.add_option("--target", o.target, "Where to train: cpu (default), interpreter or cuda (a GPU, or --simulate)");
  app.add_flag("--simulate", o.simulate, "With --target cuda: the simulated device (docs/cuda.md), no GPU needed");
  app.add_option("--dump-dir", o.dumpDir, "Where the IR around each pass is written");
  app.add_option("--save-data", o.saveData, "Write the dataset (.npz)");
  app.add_option("--save-init", o.saveInit, "Write the starting weights (.safetensors)");
  app.add_option("--summary", o.summary, "Write the final loss and accuracy as JSON");
  CLI11_PARSE(app, argc, argv);
  return run(o);
}
