#include "tools/kfuse/train_flags.h"

#include "ir/support/strings.h"

namespace kfuse::cli {

void addOptimizerFlags(CLI::App* cmd, OptimizerFlags& f) {
  cmd->add_option("--loss", f.loss,
                  "cross_entropy (class labels; token logits [B, S, V] take labels [B, S]) or mse (targets)");
  cmd->add_option("--ignore-index", f.ignoreIndex, "cross_entropy: labels equal to it are left out (default -100)");
  cmd->add_option("--optimizer", f.optimizer, "sgd, adam or adamw");
  cmd->add_option("--momentum", f.momentum, "SGD momentum");
  cmd->add_option("--dampening", f.dampening, "SGD dampening");
  cmd->add_flag("--nesterov", f.nesterov, "SGD with Nesterov momentum");
  cmd->add_option("--weight-decay", f.weightDecay, "Weight decay (AdamW: decoupled, default 0.01)");
  cmd->add_option("--betas", f.betas, "Adam betas, e.g. 0.9,0.999")->delimiter(',')->expected(2);
  cmd->add_option("--eps", f.eps, "Adam epsilon");
}

Expected<TrainingOptions> trainingOptions(const OptimizerFlags& a) {
  TrainingOptions o;
  // "none" is meaningful to the autodiff pass, not to a training run.
  if (a.loss != "cross_entropy" && a.loss != "mse")
    return Error(str("unknown loss '", a.loss, "' (expected cross_entropy or mse)"));
  if (a.optimizer != "sgd" && a.optimizer != "adam" && a.optimizer != "adamw")
    return Error(str("unknown optimizer '", a.optimizer, "' (expected sgd, adam or adamw)"));
  KF_ASSIGN_OR_RETURN(o.loss, parseLossKind(a.loss));
  if (a.ignoreIndex != -100 && o.loss != LossKind::CrossEntropy)
    return Error(str("--ignore-index is a cross_entropy option, not ", a.loss, "'s"));
  o.ignoreIndex = a.ignoreIndex;
  OptimizerOptions& opt = o.optimizer;
  KF_ASSIGN_OR_RETURN(opt.kind, parseOptimizerKind(a.optimizer));
  if (a.betas.size() != 2) return Error("--betas takes two values, e.g. --betas 0.9,0.999");
  bool sgd = opt.kind == OptimizerKind::SGD;
  if (!sgd && (a.momentum != 0 || a.nesterov || a.dampening != 0))
    return Error(str("--momentum, --dampening and --nesterov are SGD options, not ", a.optimizer, "'s"));
  opt.momentum = a.momentum;
  opt.dampening = a.dampening;
  opt.nesterov = a.nesterov;
  // AdamW's default weight decay is 0.01, as in torch.optim.AdamW.
  opt.weightDecay = a.weightDecay != 0 || opt.kind != OptimizerKind::AdamW ? a.weightDecay : 0.01;
  opt.beta1 = a.betas[0];
  opt.beta2 = a.betas[1];
  opt.eps = a.eps;
  return o;
}

}  // namespace kfuse::cli
