// The options of the commands that compile a model's plan to count or
// measure it (kfuse stats, kfuse memory, kfuse profile): the model, inference
// or a training step (loss, optimizer), the target, in-place rewriting; and
// the loading and compilation they share.
#pragma once

#include <CLI/CLI.hpp>
#include <set>
#include <string>

#include "exec/plan.h"
#include "codegen/trainer.h"

namespace kfuse::cli {

struct PlanModelArgs {
  std::string model, target = "cpu", loss = "cross_entropy", optimizer = "adam";
  bool train = false, json = false, noInplace = false;
  bool dataParallel = false;    // --data-parallel: one rank's training step
  int zeroRanks = 0;            // --zero-ranks N: with ZeRO-1 over N ranks
  std::string layout = "auto";  // --layout
  std::string cpu;              // --cpu; "": this machine
};

// Registers model, --train, --loss, --optimizer, --target, --no-inplace,
// --layout, --cpu and --json on `cmd`; `what` completes "--target: Target whose plan is ...".
void addPlanModelOptions(CLI::App* cmd, PlanModelArgs& a, const std::string& what);

// The model at `path`, its first function (the forward) re-typed for `batch`
// when that is > 0.
Expected<std::unique_ptr<Module>> loadPlanModel(const std::string& path, int64_t batch);

// The Trainer options of a training step as `a` describes it: target, layout,
// CPU, loss and optimizer (parsed; an error names a bad one).
Expected<TrainerOptions> trainerOptionsOf(const PlanModelArgs& a);

struct CompiledPlan {
  Plan plan;
  std::set<std::string> trainable;  // the module's trainable parameters
};

// The plan of the model's inference forward (its first function) or of its
// training step, after the target's pipeline (with fusion unless `fuse` is
// false); `batch` > 0 re-types the model for that batch size first.
Expected<CompiledPlan> compileModelPlan(const PlanModelArgs& a, int64_t batch, bool fuse);

}  // namespace kfuse::cli
