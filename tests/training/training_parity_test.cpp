// Trains an MLP with kfuse's Trainer and with torch.optim from the same
// initial weights (data written by gen_mlp_parity.py), and compares every
// step's loss and the final parameters.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "codegen/backend.h"
#include "ir/parser.h"
#include "ir/weights.h"
#include "codegen/plan/plan_stats.h"
#include "codegen/trainer.h"
#include "tests/unit/test_util.h"

namespace kfuse {
namespace {

std::string dataDir() { return std::string(KFUSE_BINARY_DIR) + "/tests/training/mlp_parity"; }

struct Config {
  std::string name;
  nlohmann::json spec;
  std::string target;
};

// Every optimizer configuration on every target.
std::vector<Config> configs() {
  std::ifstream in(dataDir() + "/configs.json");
  if (!in) return {};
  nlohmann::json j = nlohmann::json::parse(in);
  std::vector<Config> out;
  for (const char* target : {"interpreter", "cpu"})
    for (auto& [name, spec] : j.items()) out.push_back({name, spec, target});
  return out;
}

TrainerOptions optionsFor(const nlohmann::json& spec) {
  TrainerOptions o;
  o.training.loss = LossKind::CrossEntropy;
  OptimizerOptions& opt = o.training.optimizer;
  std::string kind = spec["optimizer"];
  opt.kind = kind == "sgd" ? OptimizerKind::SGD : kind == "adam" ? OptimizerKind::Adam : OptimizerKind::AdamW;
  if (kind == "adamw") opt.weightDecay = 0.01;  // torch.optim.AdamW's default
  opt.momentum = spec.value("momentum", 0.0);
  opt.nesterov = spec.value("nesterov", false);
  opt.weightDecay = spec.value("weight_decay", opt.weightDecay);
  if (spec.contains("betas")) {
    opt.beta1 = spec["betas"][0];
    opt.beta2 = spec["betas"][1];
  }
  return o;
}

class TrainingParity : public testing::TestWithParam<Config> {};

TEST_P(TrainingParity, LossesAndWeightsMatchTorch) {
  const Config& c = GetParam();
  auto module = parseModuleFile(dataDir() + "/mlp.kir");
  ASSERT_TRUE(module) << module.error().message();
  auto data = readWeightsFile(dataDir() + "/data.safetensors");
  ASSERT_TRUE(data) << data.error().message();
  auto expected = readWeightsFile(dataDir() + "/expected_" + c.name + ".safetensors");
  ASSERT_TRUE(expected) << expected.error().message();
  TrainerOptions opts = optionsFor(c.spec);
  opts.target = c.target;
  auto trainer = Trainer::create(std::move(*module), opts);
  ASSERT_TRUE(trainer) << trainer.error().message();

  const Tensor& losses = expected->at("losses");
  double lr = c.spec["lr"];
  for (int64_t s = 0; s < losses.numElements(); ++s) {
    auto loss = (*trainer)->step({data->at("x")}, data->at("y"), lr);
    ASSERT_TRUE(loss) << loss.error().message();
    double want = losses.at(s);
    EXPECT_LE(std::fabs(*loss - want), 1e-4 * std::fabs(want)) << "step " << s + 1 << ": kfuse " << *loss
                                                               << ", torch " << want;
  }
  for (const Param* p : (*trainer)->parameters())
    EXPECT_EQ(test::compareTensors(*p->data, expected->at(p->name), 1e-5, 1e-4), "") << p->name;
  // The runtime launches exactly what the plan (and kfuse stats) reports.
  if (const Plan* plan = (*trainer)->trainPlan()) {
    EXPECT_EQ((*trainer)->launches(), static_cast<uint64_t>(losses.numElements()) * planStats(*plan).launches());
  }
}

INSTANTIATE_TEST_SUITE_P(Optimizers, TrainingParity, testing::ValuesIn(configs()),
                         [](const auto& info) { return info.param.target + "_" + info.param.name; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(TrainingParity);

// adam_update's bias corrections on every target as exact as torch's (which
// computes them in double): with p = m = v = 0 and lr = 1 the new parameter
// is the step itself, -(m'/c1) / (sqrt(v'/c2) + eps). Computed in f32,
// 1 - 0.999^step was off by ~1.3e-5 relative, making every early step ~6e-6
// too small; the ONNX transformer's loss drifted 50x further from float64
// than torch's own float32 run.
TEST(AdamUpdate, BiasCorrectionsAreExactOnEveryTarget) {
  const char* text = R"(module @adam {
  func @main(%p: f32[4], %g: f32[4], %m: f32[4], %v: f32[4], %lr: f32[], %step: i64[]) -> (f32[4], f32[4], f32[4]) {
    %r0, %r1, %r2 = adam_update %p, %g, %m, %v, %lr, %step : f32[4], f32[4], f32[4]
    return %r0, %r1, %r2
  }
})";
  const std::vector<double> g{1, -2, 0.5, 3};
  for (const char* target : {"interpreter", "cpu"}) {
    auto module = parseModule(text, "adam.kir");
    ASSERT_TRUE(module) << module.error().message();
    auto backend = backendFor(target);
    ASSERT_TRUE(backend) << backend.error().message();
    ASSERT_TRUE(prepareModule(**module, *backend));
    auto exec = createExecutor(target, {});
    ASSERT_TRUE(exec) << exec.error().message();
    TensorType t(DType::F32, {4});
    for (int64_t step : {1, 2, 3, 10}) {
      Tensor s(TensorType(DType::I64, {}));
      s.as<int64_t>()[0] = step;
      auto r = (*exec)->run(*(*module)->functions().front(),
                            {Tensor(t), Tensor::fromDoubles(t, g), Tensor(t), Tensor(t), Tensor::scalar(DType::F32, 1), s});
      ASSERT_TRUE(r) << r.error().message();
      double c1 = 1 - std::pow(0.9, static_cast<double>(step)), c2 = 1 - std::pow(0.999, static_cast<double>(step));
      for (size_t i = 0; i < g.size(); ++i) {
        double m = 0.1 * g[i], v = 0.001 * g[i] * g[i];
        double want = -(m / c1) / (std::sqrt(v) / std::sqrt(c2) + 1e-8);
        EXPECT_NEAR(r->outputs[0].at(static_cast<int64_t>(i)), want, 5e-7 * std::fabs(want))
            << target << ", step " << step << ", element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace kfuse
