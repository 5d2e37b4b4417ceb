#include "passes/training.h"

#include <set>

#include "ir/builder.h"
#include "passes/gradients/grad_builder.h"
#include "ir/support/strings.h"
#include "ir/value_names.h"
#include "passes/autodiff.h"

namespace kfuse {

Expected<LossKind> parseLossKind(std::string_view s) {
  if (s == "cross_entropy") return LossKind::CrossEntropy;
  if (s == "mse") return LossKind::MSE;
  if (s == "none") return LossKind::None;
  return Error(str("unknown loss '", s, "' (expected cross_entropy, mse or none)"));
}

Expected<OptimizerKind> parseOptimizerKind(std::string_view s) {
  if (s == "sgd") return OptimizerKind::SGD;
  if (s == "adam") return OptimizerKind::Adam;
  if (s == "adamw") return OptimizerKind::AdamW;
  if (s == "none") return OptimizerKind::None;
  return Error(str("unknown optimizer '", s, "' (expected sgd, adam, adamw or none)"));
}

namespace {

// The builder's error, or success.
Status check(const GradBuilder& b, std::string_view what) {
  if (!b.failed()) return Status::ok();
  return Error(str(what, ": ", b.error()));
}

Expected<Value*> addLoss(Graph& g, const TrainingOptions& opts) {
  Value* out = g.results()[0];
  const TensorType& t = out->type();
  GradBuilder b(g);
  switch (opts.loss) {
    case LossKind::None:
      if (t.rank() != 0 || !isFloat(t.dtype))
        return Error(str("--loss=none needs a function whose first result is a floating-point scalar, got ",
                         formatType(t)));
      return out;
    case LossKind::CrossEntropy: {
      if (t.rank() < 2 || !isFloat(t.dtype))
        return Error(str("cross_entropy needs logits [batch, classes] (or [batch, ..., classes]) as the first result, "
                         "got ",
                         formatType(t), " (mse fits other outputs)"));
      // Token logits [B, S, ..., V]: one row per position, as torch users
      // write cross_entropy(logits.view(-1, V), labels.view(-1)).
      Shape labelShape(t.shape.begin(), t.shape.end() - 1);
      Value* labels = g.addArgument("labels", TensorType(DType::I64, labelShape));
      Value* logits = out;
      Value* rows = labels;
      if (t.rank() > 2) {
        int64_t positions = 1;
        for (int64_t d : labelShape) positions *= d;
        logits = b.op(Op::Reshape, {out}, {{"shape", Attribute(std::vector<int64_t>{positions, t.shape.back()})}});
        rows = b.op(Op::Reshape, {labels}, {{"shape", Attribute(std::vector<int64_t>{positions})}});
      }
      Value* loss = b.op(Op::CrossEntropy, {logits, rows}, {{"ignore_index", opts.ignoreIndex}});
      KF_RETURN_IF_ERROR(check(b, "cross_entropy"));
      return loss;
    }
    case LossKind::MSE: {
      if (!isFloat(t.dtype)) return Error(str("mse needs a floating-point output, got ", formatType(t)));
      Value* targets = g.addArgument("labels", TensorType(t.dtype, t.shape));
      Value* loss = b.op(Op::MseLoss, {out, targets});
      KF_RETURN_IF_ERROR(check(b, "mse_loss"));
      return loss;
    }
  }
  return Error("unknown loss");
}

// A module parameter holding optimizer or batch-norm state: created
// zero-filled (or reused when the module already has it, e.g. on resume).
Value* stateBuffer(Graph& g, const std::string& name, const TensorType& type) {
  Module& m = *g.module();
  if (!m.findParam(name)) {
    m.addParam(name, type, /*trainable=*/false);
    m.setParamData(name, Tensor(type));
  }
  return g.paramValue(name);
}

std::string prefixOf(const std::string& name, std::string_view suffix) {
  if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    return name.substr(0, name.size() - suffix.size());
  return "";
}

// Batch norms whose statistics are buffers switch to batch statistics and
// update the running ones (torch: unbiased variance for the running value).
Status trainBatchNorms(Graph& g, double momentum) {
  for (Node* n : g.nodes()) {
    if (!n->is(Op::BatchNorm)) continue;
    Value *mean = n->operand(3), *var = n->operand(4);
    const Param* pm = mean->kind() == Value::Kind::Param ? g.module()->findParam(mean->name()) : nullptr;
    const Param* pv = var->kind() == Value::Kind::Param ? g.module()->findParam(var->name()) : nullptr;
    if (!pm || !pv || pm->trainable || pv->trainable) continue;  // statistics computed in the graph: keep
    GradBuilder b(g, n);
    std::vector<Value*> r = b.ops(Op::BatchNormTrain, {n->operand(0), n->operand(1), n->operand(2)},
                                  {{"epsilon", n->attr("epsilon")}});
    KF_RETURN_IF_ERROR(check(b, "batch_norm in training mode"));
    const TensorType& x = n->operand(0)->type();
    double count = static_cast<double>(x.numElements()) / static_cast<double>(mean->type().numElements());
    auto blend = [&](Value* running, Value* batch) {
      Value* keep = b.op(Op::Mul, {running, b.scalarLike(1 - momentum, running)});
      return b.op(Op::Add, {keep, b.op(Op::Mul, {batch, b.scalarLike(momentum, batch)})});
    };
    Value* newMean = blend(mean, r[1]);
    Value* unbiased = b.op(Op::Mul, {r[2], b.scalarLike(count > 1 ? count / (count - 1) : 1.0, r[2])});
    Value* newVar = blend(var, unbiased);
    KF_RETURN_IF_ERROR(check(b, "batch_norm running statistics"));
    r[0]->setName(n->result()->name());
    g.replaceAllUsesWith(n->result(), r[0]);
    g.eraseNode(n);
    g.addStateUpdate(mean->name(), newMean);
    g.addStateUpdate(var->name(), newVar);
    std::string prefix = prefixOf(mean->name(), "running_mean");
    if (const Param* counter = g.module()->findParam(prefix + "num_batches_tracked");
        counter && !counter->trainable && counter->type == TensorType(DType::I64, {})) {
      GradBuilder end(g);
      Value* cur = g.paramValue(counter->name);
      g.addStateUpdate(counter->name, end.op(Op::Add, {cur, end.constant(1, DType::I64)}));
      KF_RETURN_IF_ERROR(check(end, "num_batches_tracked"));
    }
  }
  return Status::ok();
}

// Dropouts without a step operand draw their masks from the training step,
// with their seed mixed with `dropoutSeed` (a Weyl step: 0 changes nothing).
Status stepDropouts(Graph& g, Value* step, uint64_t dropoutSeed) {
  for (Node* n : g.nodes()) {
    if (!n->is(Op::Dropout) || n->numOperands() != 1) continue;
    AttrMap attrs = n->attrs();
    auto seed = static_cast<uint64_t>(n->attr("seed").asInt()) + dropoutSeed * 0x9E3779B97F4A7C15ull;
    attrs["seed"] = static_cast<int64_t>(seed);
    auto replaced = buildNode(g, Op::Dropout, {n->operand(0), step}, attrs, n);
    if (!replaced) return replaced.error();
    (*replaced)->copyProvenance(*n);
    for (size_t i = 0; i < n->numResults(); ++i) {
      (*replaced)->result(i)->setName(n->result(i)->name());
      g.replaceAllUsesWith(n->result(i), (*replaced)->result(i));
    }
    g.eraseNode(n);
  }
  return Status::ok();
}

// One optimizer update for parameter p with gradient dp.
Status addUpdate(Graph& g, Value* p, Value* dp, Value* lr, Value* step, const OptimizerOptions& o) {
  GradBuilder b(g);
  const std::string& name = p->name();
  const TensorType& t = p->type();
  Value* plr = t.dtype == DType::F32 ? lr : b.op(Op::Cast, {lr}, {{"to", std::string(dtypeName(t.dtype))}});
  switch (o.kind) {
    case OptimizerKind::None: return Status::ok();
    case OptimizerKind::SGD: {
      AttrMap attrs{{"momentum", o.momentum},
                    {"dampening", o.dampening},
                    {"nesterov", o.nesterov},
                    {"weight_decay", o.weightDecay}};
      if (o.momentum == 0) {
        Value* np = b.op(Op::SgdUpdate, {p, dp, plr}, attrs);
        KF_RETURN_IF_ERROR(check(b, "sgd_update of @" + name));
        g.addStateUpdate(name, np);
        return Status::ok();
      }
      Value* buf = stateBuffer(g, name + ".momentum_buffer", t);
      std::vector<Value*> r = b.ops(Op::SgdUpdate, {p, dp, buf, plr, step}, attrs);
      KF_RETURN_IF_ERROR(check(b, "sgd_update of @" + name));
      g.addStateUpdate(name, r[0]);
      g.addStateUpdate(buf->name(), r[1]);
      return Status::ok();
    }
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW: {
      Value* m = stateBuffer(g, name + ".exp_avg", t);
      Value* v = stateBuffer(g, name + ".exp_avg_sq", t);
      std::vector<Value*> r = b.ops(Op::AdamUpdate, {p, dp, m, v, plr, step},
                                    {{"beta1", o.beta1},
                                     {"beta2", o.beta2},
                                     {"eps", o.eps},
                                     {"weight_decay", o.weightDecay},
                                     {"decoupled", o.kind == OptimizerKind::AdamW}});
      KF_RETURN_IF_ERROR(check(b, "adam_update of @" + name));
      g.addStateUpdate(name, r[0]);
      g.addStateUpdate(m->name(), r[1]);
      g.addStateUpdate(v->name(), r[2]);
      return Status::ok();
    }
  }
  return Status::ok();
}

}  // namespace

namespace {
// Gives every node created since `before` was taken the phase `p`.
void tagNewNodes(Graph& g, const std::set<const Node*>& before, Phase p) {
  for (Node* n : g.nodes())
    if (!before.count(n)) n->phase = p;
}
std::set<const Node*> nodeSet(const Graph& g) {
  std::vector<Node*> v = g.nodes();
  return {v.begin(), v.end()};
}
}  // namespace

Status makeTrainingStep(Graph& g, const TrainingOptions& opts) {
  if (g.results().empty()) return Error(str("function @", g.name(), " returns nothing to train"));
  // A forward may update buffers (batch norm traced in training mode keeps
  // its running statistics); updating a trainable parameter means it is a
  // training step already.
  for (const StateUpdate& u : g.stateUpdates()) {
    const Param* p = g.module()->findParam(u.param);
    if (p && p->trainable)
      return Error(str("function @", g.name(), " already updates trainable parameter @", u.param,
                       " (is it a training step already?)"));
  }
  std::set<const Node*> forward = nodeSet(g);
  KF_ASSIGN_OR_RETURN(Value * loss, addLoss(g, opts));
  tagNewNodes(g, forward, Phase::Loss);
  loss->setName("loss");
  Value* lr = g.addArgument("lr", TensorType(DType::F32, {}));
  Value* step = g.addArgument("step", TensorType(DType::I64, {}));
  KF_RETURN_IF_ERROR(trainBatchNorms(g, opts.bnMomentum));
  KF_RETURN_IF_ERROR(stepDropouts(g, step, opts.dropoutSeed));

  std::vector<Value*> trainable;
  for (Value* p : g.paramValues()) {
    const Param* param = g.module()->findParam(p->name());
    if (param && param->trainable && isFloat(p->type().dtype)) trainable.push_back(p);
  }
  std::set<const Node*> beforeBackward = nodeSet(g);
  KF_ASSIGN_OR_RETURN(GradientMap grads, buildBackward(g, loss, trainable));
  tagNewNodes(g, beforeBackward, Phase::Backward);
  std::set<const Node*> beforeUpdates = nodeSet(g);
  for (Value* p : trainable) {
    auto it = grads.find(p);
    if (it == grads.end()) continue;  // the loss does not depend on it (torch: grad is None, no update)
    if (it->second->name().empty()) it->second->setName(p->name() + ".grad");
    KF_RETURN_IF_ERROR(addUpdate(g, p, it->second, lr, step, opts.optimizer));
  }
  tagNewNodes(g, beforeUpdates, Phase::Optimizer);
  // The forward's results, as rewritten (a dropout or batch norm returned
  // by the forward is a new node's result now).
  std::vector<Value*> outputs = g.results();
  std::vector<Value*> results{loss};
  if (opts.keepOutputs) results.insert(results.end(), outputs.begin(), outputs.end());
  g.setResults(results);
  return Status::ok();
}

}  // namespace kfuse
