// Trains an MLP with kfuse's Trainer and with torch.optim from the same
// initial weights (data written by gen_mlp_parity.py), and compares every
// step's loss and the final parameters.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "ir/parser.h"
#include "ir/weights.h"
#include "codegen/plan/plan_stats.h"
#include "runtime/trainer.h"
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

}  // namespace
}  // namespace kfuse
