#include "tools/kfuse/plan_args.h"

#include "codegen/backend.h"
#include "codegen/plan/plan_builder.h"
#include "ir/specialize.h"
#include "ir/support/strings.h"
#include "codegen/trainer.h"
#include "tools/kfuse/commands.h"
#include "tools/kfuse/model_loader.h"

namespace kfuse::cli {

void addPlanModelOptions(CLI::App* cmd, PlanModelArgs& a, const std::string& what) {
  cmd->add_option("model", a.model, "Model (.kir or .onnx)")->required();
  auto* train = cmd->add_flag("--train", a.train, "A whole training step (forward, loss, backward, optimizer)");
  cmd->add_option("--loss", a.loss, "Loss of the training step: cross_entropy or mse");
  cmd->add_option("--optimizer", a.optimizer, "Optimizer of the training step: sgd, adam or adamw");
  cmd->add_flag("--data-parallel", a.dataParallel,
                "The training step of one rank of a data-parallel run: with its all-reduce buckets (kfuse train --ranks)")
      ->needs(train);
  cmd->add_option("--zero-ranks", a.zeroRanks,
                  "One rank's training step of an N-rank data-parallel run with ZeRO-1: its shard of the optimizer "
                  "state")
      ->needs(train);
  cmd->add_option("--target", a.target, "Target whose plan " + what + ": cpu or cuda (no GPU needed)");
  cmd->add_flag("--no-inplace", a.noInplace, "Plan without in-place rewriting");
  cmd->add_option("--layout", a.layout, "Image layout: auto (the target's cost model chooses per region), nchw or nhwc");
  addCpuFlag(cmd, a.cpu);
  cmd->add_flag("--json", a.json, "Print JSON instead of a table");
}

Expected<std::unique_ptr<Module>> loadPlanModel(const std::string& path, int64_t batch) {
  KF_ASSIGN_OR_RETURN(auto model, loadModel(path));
  if (model->functions().empty()) return Error(str("'", path, "' defines no function"));
  if (batch > 0) KF_RETURN_IF_ERROR(specializeBatch(*model->functions().front(), batch));
  return model;
}

Expected<TrainerOptions> trainerOptionsOf(const PlanModelArgs& a) {
  TrainerOptions o;
  o.target = a.target;
  o.layout = a.layout;
  o.execution.cpu = a.cpu;
  o.dataParallel = a.dataParallel;
  if (a.zeroRanks < 0) return Error(str("--zero-ranks must be at least 1, got ", a.zeroRanks));
  o.zeroRanks = a.zeroRanks;
  KF_ASSIGN_OR_RETURN(o.training.loss, parseLossKind(a.loss));
  KF_ASSIGN_OR_RETURN(o.training.optimizer.kind, parseOptimizerKind(a.optimizer));
  return o;
}

Expected<CompiledPlan> compileModelPlan(const PlanModelArgs& a, int64_t batch, bool fuse) {
  KF_ASSIGN_OR_RETURN(auto model, loadPlanModel(a.model, batch));
  Graph& forward = *model->functions().front();
  KF_ASSIGN_OR_RETURN(Backend backend, backendFor(a.target, {.fuse = fuse, .layout = a.layout, .cpu = a.cpu}));
  PlanOptions po = backend.planOptions(!a.noInplace);
  CompiledPlan out;
  auto trainable = [&](const Module& m) {
    for (const auto& p : m.params())
      if (p->trainable) out.trainable.insert(p->name);
  };
  if (!a.train) {
    KF_RETURN_IF_ERROR(prepareModule(*model, backend));
    KF_ASSIGN_OR_RETURN(out.plan, buildPlan(forward, po));
    trainable(*model);
    return out;
  }
  KF_ASSIGN_OR_RETURN(TrainerOptions o, trainerOptionsOf(a));
  o.fuse = fuse;
  KF_ASSIGN_OR_RETURN(auto trainer, Trainer::create(std::move(model), o));
  if (a.target == "interpreter") return Error(str("target '", a.target, "' runs no plan (use cpu)"));
  // Planned directly: the executor would also compile the kernels.
  KF_ASSIGN_OR_RETURN(out.plan, buildPlan(trainer->trainStep(), po));
  trainable(trainer->module());
  return out;
}

}  // namespace kfuse::cli
