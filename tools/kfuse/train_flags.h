// The loss and optimizer flags shared by `kfuse train` and `kfuse compile
// --train`: both build the same @train_step from them.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "passes/training.h"

namespace kfuse::cli {

struct OptimizerFlags {
  std::string loss = "cross_entropy", optimizer = "sgd";
  double momentum = 0, dampening = 0, weightDecay = 0, eps = 1e-8;
  int64_t ignoreIndex = -100;
  bool nesterov = false;
  std::vector<double> betas{0.9, 0.999};
};

void addOptimizerFlags(CLI::App* cmd, OptimizerFlags& f);
Expected<TrainingOptions> trainingOptions(const OptimizerFlags& f);

}  // namespace kfuse::cli
