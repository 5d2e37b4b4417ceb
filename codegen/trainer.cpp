#include "codegen/trainer.h"

#include <cmath>
#include <map>
#include <sstream>

#include "codegen/backend.h"
#include "ir/clone.h"
#include "ir/op_registry.h"
#include "ir/printer.h"
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
  if (dataParallel(opts))
    pm.add(createDataParallelPass(static_cast<uint64_t>(opts.bucketMiB * 1024 * 1024), opts.zeroRanks));
  KF_ASSIGN_OR_RETURN(auto passes, parsePipeline(backend.pipeline));
  pm.add(std::move(passes));
  PassContext ctx;
  ctx.canFormLaunch = backend.canFormLaunch;
  KF_RETURN_IF_ERROR(pm.run(m, ctx));
  return TrainingFunctions{m.findFunction(forwardName), m.findFunction("train_step")};
}

bool dataParallel(const TrainerOptions& opts) {
  return opts.dataParallel || opts.zeroRanks > 0 ||
         (opts.execution.communicator && opts.execution.communicator->size() > 1);
}

namespace {

// FNV-1a: equal texts give equal hashes on every rank and platform.
uint64_t textHash(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}

// Every rank's hashes of its training step's IR and plan, compared with
// rank 0's: a rank that compiled something else (another model, batch
// size or optimizer) would otherwise exchange mismatched buckets or hang.
Status checkSamePlan(Communicator& comm, const Graph& step, const Plan* plan) {
  std::ostringstream ir;
  printGraph(ir, step, PrintOptions{.inlineUnbackedParams = false, .printLocs = false});
  const uint64_t mine[2] = {textHash(ir.str()), textHash(plan ? printPlan(*plan) : std::string())};
  KF_ASSIGN_OR_RETURN(std::vector<std::string> all,
                      comm.allGather(std::string_view(reinterpret_cast<const char*>(mine), sizeof mine)));
  std::vector<std::string> differ;
  for (size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0]) differ.push_back(str(r));
  if (differ.empty()) return Status::ok();
  return Error(str("rank ", comm.rank(), ": rank", differ.size() > 1 ? "s " : " ", join(differ),
                   " compiled another training step than rank 0 (every rank must train the same model with the same "
                   "options and per-rank batch size)"));
}

}  // namespace

std::map<std::string, TensorType> shardedState(const Graph& step) {
  std::map<std::string, TensorType> out;
  for (const auto& n : step.nodeList()) {
    if (!n->is(Op::Shard)) continue;
    for (const Use& use : n->result()->uses())
      if (use.user->op().gradientOperand >= 0)
        for (size_t i = 1; i < use.user->numOperands(); ++i) {
          const Value* v = use.user->operand(i);
          if (v->kind() == Value::Kind::Param && v->type() == n->result()->type() &&
              static_cast<int>(i) != use.user->op().gradientOperand)
            out.emplace(v->name(), n->operand(0)->type());
        }
  }
  return out;
}

namespace {

// Rank 0's parameters and buffers into every rank's module (ZeRO-1's state
// shards are each rank's own).
Status takeRankZeroState(Communicator& comm, Module& m, const std::map<std::string, TensorType>& sharded) {
  for (const auto& p : m.params()) {
    if (!p->data || sharded.count(p->name)) continue;
    Tensor t = *p->data;
    KF_RETURN_IF_ERROR(comm.broadcast(t.data(), t.byteSize(), 0));
    if (comm.rank() != 0) m.setParamData(p->name, std::move(t));
  }
  return Status::ok();
}

}  // namespace

Expected<std::unique_ptr<Trainer>> Trainer::create(std::unique_ptr<Module> model, TrainerOptions opts) {
  std::unique_ptr<Trainer> t(new Trainer());
  if (dataParallel(opts) && opts.target != "cpu" && opts.target != "cuda")
    return Error(str("data-parallel training runs on the cpu and cuda targets, not ", opts.target));
  KF_ASSIGN_OR_RETURN(TrainingFunctions fns, buildTrainingStep(*model, opts));
  KF_ASSIGN_OR_RETURN(t->exec_, createExecutor(opts.target, opts.execution));
  t->forward_ = fns.forward;
  t->train_ = fns.step;
  if (opts.execution.communicator && opts.execution.communicator->size() > 1) {
    Communicator& comm = *opts.execution.communicator;
    KF_RETURN_IF_ERROR(checkSamePlan(comm, *t->train_, t->exec_->planFor(*t->train_)));
    if (opts.zeroRanks > 0 && opts.zeroRanks != comm.size())
      return Error(str("ZeRO-1 over ", opts.zeroRanks, " ranks needs a communicator of as many, not ", comm.size()));
    KF_RETURN_IF_ERROR(takeRankZeroState(comm, *model, shardedState(*t->train_)));
  }
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
  const std::shared_ptr<Communicator>& comm = opts_.execution.communicator;
  // ZeRO-1: each state tensor from every rank's shard, in rank order.
  std::map<std::string, Tensor> whole;
  for (const auto& [name, type] : shardedState(*train_)) {
    const Tensor& mine = *module_->findParam(name)->data;
    if (!comm) return Error(str("@", name, " is a shard of optimizer state: saving needs the other ranks"));
    Tensor t(type);
    KF_RETURN_IF_ERROR(comm->allGatherWhole(mine.data(), mine.byteSize(), t.data(), t.byteSize()));
    whole.emplace(name, std::move(t));
  }
  if (comm && comm->rank() != 0) return Status::ok();  // rank 0 writes
  std::vector<std::pair<std::string, const Tensor*>> tensors;
  for (const auto& p : module_->params()) {
    auto it = whole.find(p->name);
    if (it != whole.end())
      tensors.emplace_back(p->name, &it->second);
    else if (p->data)
      tensors.emplace_back(p->name, p->data.get());
  }
  return writeWeightsFile(path, tensors);
}

}  // namespace kfuse
