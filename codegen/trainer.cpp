#include "codegen/trainer.h"

#include <cmath>

#include "codegen/backend.h"
#include "ir/clone.h"
#include "ir/support/strings.h"
#include "ir/weights.h"
#include "passes/pass_registry.h"

namespace kfuse {

Expected<TrainingFunctions> buildTrainingStep(Module& m, const TrainerOptions& opts) {
  if (m.functions().empty()) return Error("the model defines no function");
  Graph* fwd = opts.forward.empty() ? m.functions().front().get() : m.findFunction(opts.forward);
  if (!fwd) return Error(str("the model has no function @", opts.forward));
  std::string forwardName = fwd->name();
  if (!cloneFunction(*fwd, "train_step")) return Error("the model already has a function @train_step");

  // The training pipeline: autodiff (loss, backward, optimizer) on the copy,
  // then the target's passes (simplification, fusion); instrumented like
  // `kfuse opt`.
  KF_ASSIGN_OR_RETURN(Backend backend, backendFor(opts.target, {.fuse = opts.fuse, .layout = opts.layout, .cpu = opts.execution.cpu}));
  PassManager pm(opts.instrumentation);
  pm.add(createAutodiffPass(opts.training, "train_step"));
  KF_ASSIGN_OR_RETURN(auto passes, parsePipeline(backend.pipeline));
  pm.add(std::move(passes));
  PassContext ctx;
  ctx.canFormLaunch = backend.canFormLaunch;
  KF_RETURN_IF_ERROR(pm.run(m, ctx));
  return TrainingFunctions{m.findFunction(forwardName), m.findFunction("train_step")};
}

Expected<std::unique_ptr<Trainer>> Trainer::create(std::unique_ptr<Module> model, TrainerOptions opts) {
  std::unique_ptr<Trainer> t(new Trainer());
  KF_ASSIGN_OR_RETURN(TrainingFunctions fns, buildTrainingStep(*model, opts));
  KF_ASSIGN_OR_RETURN(t->exec_, createExecutor(opts.target, opts.execution));
  t->forward_ = fns.forward;
  t->train_ = fns.step;
  t->module_ = std::move(model);
  t->opts_ = std::move(opts);
  return t;
}

Expected<double> Trainer::step(const std::vector<Tensor>& inputs, const Tensor& labels, double lr) {
  std::vector<Tensor> args = inputs;
  if (opts_.training.loss != LossKind::None) args.push_back(labels);
  args.push_back(Tensor::scalar(DType::F32, lr));
  Tensor step(TensorType(DType::I64, {}));
  step.as<int64_t>()[0] = steps_ + 1;
  args.push_back(std::move(step));
  // The loss (output 0) is checked before any parameter changes.
  bool kept = false;
  KF_ASSIGN_OR_RETURN(InterpreterResult r,
                      exec_->runTrainingStep(*train_, args, opts_.stopOnNonFinite ? 0 : -1, kept));
  double loss = r.outputs[0].at(0);
  if (opts_.stopOnNonFinite && !std::isfinite(loss))
    return Error(str("the loss is ", loss, " at step ", steps_ + 1, "; the weights were not updated"));
  if (kept)
    stale_ = true;
  else
    applyUpdates(*module_, r);
  ++steps_;
  return loss;
}

void Trainer::sync() const {
  if (!stale_) return;
  exec_->syncState(*train_, *module_);
  stale_ = false;
}

Expected<std::vector<Tensor>> Trainer::eval(const std::vector<Tensor>& inputs) {
  sync();
  KF_ASSIGN_OR_RETURN(InterpreterResult r, exec_->run(*forward_, inputs));
  return r.outputs;
}

std::vector<const Param*> Trainer::parameters() const {
  sync();
  std::vector<const Param*> out;
  for (const auto& p : module_->params())
    if (p->trainable) out.push_back(p.get());
  return out;
}

Status Trainer::save(const std::string& path) const {
  sync();
  std::vector<std::pair<std::string, const Tensor*>> tensors;
  for (const auto& p : module_->params())
    if (p->data) tensors.emplace_back(p->name, p->data.get());
  return writeWeightsFile(path, tensors);
}

}  // namespace kfuse
