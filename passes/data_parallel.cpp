// data-parallel{bucket-mb=25}: makes a training step (autodiff's
// @train_step) one rank's share of a data-parallel step. Each rank runs the
// step on its own slice of the global batch; this pass inserts the
// all-reduces (the mean over the ranks, ir/ops/collective.cpp) that make
// every rank apply the same update:
//   - the gradients each optimizer update reads, in buckets of at most
//     bucket-mb MiB (PyTorch DDP's default, 25), filled in the order the
//     gradients are produced, each bucket's node right after its last
//     gradient's producer so that its exchange starts there and overlaps the
//     rest of the backward (the plan's wait comes before the first reader);
//   - the loss (result 0), alone, so that every rank sees the global batch's
//     loss, reports it and stops on a non-finite one together;
//   - the new values of float buffers the step updates that no optimizer
//     writes (batch norm's running statistics), so that every replica holds
//     the same state.
// The graph does not depend on the number of ranks (the communicator
// divides), so every rank compiles the same plan. With equal slices, the
// mean of the ranks' mean gradients is the gradient of the global batch.
//
// zero-ranks=N (ZeRO-1, optimizer state sharded over N ranks): instead of
// all-reducing a gradient, each optimizer update becomes
//   reduce_scatter of the gradient (this rank's shard of its mean, right
//   after the gradient is produced), shard of the parameter, the update on
//   the shards with the state held as shards (the module's state buffers
//   become [ceil(size / N)]), all_gather of the new parameter;
// every rank then holds 1/N of the optimizer state. The graph depends on N.
#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "ir/op_registry.h"
#include "ir/support/strings.h"
#include "ir/topo_sort.h"
#include "passes/pass_registry.h"

namespace kfuse {
namespace {

constexpr double kDefaultBucketMiB = 25;

bool isFloat(const Value* v) { return v->type().dtype == DType::F32 || v->type().dtype == DType::F64; }

class DataParallelPass : public Pass {
 public:
  DataParallelPass(uint64_t bucketBytes, int64_t zeroRanks) : bucketBytes_(bucketBytes), zeroRanks_(zeroRanks) {}
  std::string_view name() const override { return "data-parallel"; }

  PassResult run(Graph& g, const PassContext&) override {
    for (const auto& n : g.nodeList())
      if (n->is(Op::AllReduce)) return false;  // already data-parallel
    std::vector<Value*> grads = gradients(g);
    if (grads.empty()) return false;  // not a training step
    for (const auto& n : g.nodeList()) position_[n.get()] = position_.size();
    int bucket = 0;
    if (!g.results().empty() && isFloat(g.results()[0]) && g.results()[0]->type().rank() == 0)
      exchange(g, {g.results()[0]}, bucket++, Phase::Loss);
    for (const auto& b : buckets(buffers(g))) exchange(g, b, bucket++, Phase::Forward);
    if (zeroRanks_ > 0) {
      std::vector<Node*> updates;
      for (const auto& n : g.nodeList())
        if (n->op().gradientOperand >= 0) updates.push_back(n.get());
      for (Node* u : updates) shardUpdate(g, u, bucket);
    } else {
      for (const auto& b : buckets(grads)) exchange(g, b, bucket++, Phase::Backward);
    }
    // Readers of an early gradient may precede its bucket's node.
    sortTopologically(g);
    return true;
  }

 private:
  // The gradient operands of the optimizer updates, once each.
  static std::vector<Value*> gradients(const Graph& g) {
    std::vector<Value*> out;
    std::set<Value*> seen;
    for (const auto& n : g.nodeList())
      if (int o = n->op().gradientOperand; o >= 0 && seen.insert(n->operand(static_cast<size_t>(o))).second)
        out.push_back(n->operand(static_cast<size_t>(o)));
    return out;
  }

  // New values of float buffers (not trainable) that no optimizer computes.
  static std::vector<Value*> buffers(const Graph& g) {
    std::vector<Value*> out;
    std::set<Value*> seen;
    for (const StateUpdate& u : g.stateUpdates()) {
      const Param* p = g.module() ? g.module()->findParam(u.param) : nullptr;
      Node* producer = u.value->producer();
      if (!p || p->trainable || !isFloat(u.value) || !producer || producer->op().gradientOperand >= 0) continue;
      if (seen.insert(u.value).second) out.push_back(u.value);
    }
    return out;
  }

  // Where a node reading `v` may go first: just after its producer (0:
  // before every node of the function as it came).
  size_t position(const Value* v) const { return v->producer() ? position_.at(v->producer()) + 1 : 0; }

  // The node of the function as it came at `pos` (null: past the last), to
  // insert before.
  Node* nodeAt(const Graph& g, size_t pos) const {
    for (const auto& n : g.nodeList())
      if (auto it = position_.find(n.get()); it != position_.end() && it->second == pos) return n.get();
    return nullptr;
  }

  // In production order, cut where a bucket would pass bucketBytes_ (a
  // value larger than that is a bucket of its own).
  std::vector<std::vector<Value*>> buckets(std::vector<Value*> values) const {
    std::stable_sort(values.begin(), values.end(),
                     [&](const Value* a, const Value* b) { return position(a) < position(b); });
    std::vector<std::vector<Value*>> out;
    uint64_t bytes = 0;
    for (Value* v : values) {
      uint64_t size = v->type().byteSize();
      if (out.empty() || (bytes > 0 && bytes + size > bucketBytes_)) {
        out.emplace_back();
        bytes = 0;
      }
      out.back().push_back(v);
      bytes += size;
    }
    return out;
  }

  // One all_reduce of `values`, just after the last of them is produced;
  // every reader of a value reads the mean instead.
  void exchange(Graph& g, const std::vector<Value*>& values, int bucket, Phase phase) {
    size_t last = 0;
    for (const Value* v : values) last = std::max(last, position(v));
    Node* before = nodeAt(g, last);
    std::vector<TensorType> types;
    for (const Value* v : values) types.push_back(v->type());
    const OpDef& op = OpRegistry::global().get(Op::AllReduce);
    Node* ar = g.createNode(op, values, types, {{"bucket", Attribute(int64_t{bucket})}, {"reduce", Attribute("mean")}},
                            before);
    ar->phase = phase;
    for (size_t i = 0; i < values.size(); ++i) {
      g.replaceAllUsesWith(values[i], ar->result(i));
      ar->setOperand(i, values[i]);
    }
  }

  // ZeRO-1: update `u` on this rank's shards (see the file comment).
  void shardUpdate(Graph& g, Node* u, int& bucket) {
    const auto gi = static_cast<size_t>(u->op().gradientOperand);
    Value* param = u->operand(0);
    Value* grad = u->operand(gi);
    const TensorType whole = param->type();
    const TensorType part(whole.dtype, {(whole.numElements() + zeroRanks_ - 1) / zeroRanks_});
    const OpRegistry& ops = OpRegistry::global();
    const Attribute ranks(zeroRanks_);
    Node* rs = g.createNode(ops.get(Op::ReduceScatter), {grad}, {part},
                            {{"ranks", ranks}, {"bucket", Attribute(int64_t{bucket++})}}, nodeAt(g, position(grad)));
    rs->phase = Phase::Backward;
    Node* sh = g.createNode(ops.get(Op::Shard), {param}, {part}, {{"ranks", ranks}}, u);
    sh->phase = Phase::Optimizer;
    std::vector<Value*> operands = u->operands();
    operands[0] = sh->result();
    operands[gi] = rs->result();
    for (size_t i = 1; i < operands.size(); ++i) {
      Value* v = operands[i];
      if (i == gi || v->kind() != Value::Kind::Param || !(v->type() == whole)) continue;
      // Optimizer state: this rank's shard only, zero like the whole.
      Param* state = g.module()->findParam(v->name());
      state->type = part;
      g.module()->setParamData(v->name(), Tensor(part));
      v->setType(part);
    }
    std::vector<TensorType> types;
    for (size_t r = 0; r < u->numResults(); ++r) types.push_back(u->result(r)->type() == whole ? part : u->result(r)->type());
    Node* sharded = g.createNode(u->op(), operands, types, u->attrs(), u);
    sharded->copyProvenance(*u);
    Node* gather = g.createNode(ops.get(Op::AllGather), {sharded->result(0)}, {whole},
                                {{"ranks", ranks},
                                 {"shape", Attribute(std::vector<int64_t>(whole.shape.begin(), whole.shape.end()))},
                                 {"bucket", Attribute(int64_t{bucket++})}},
                                u);
    gather->phase = Phase::Optimizer;
    g.replaceAllUsesWith(u->result(0), gather->result());
    for (size_t r = 1; r < u->numResults(); ++r) g.replaceAllUsesWith(u->result(r), sharded->result(r));
    g.eraseNode(u);
  }

  uint64_t bucketBytes_;
  int64_t zeroRanks_;
  std::map<const Node*, size_t> position_;
};

}  // namespace

Expected<std::unique_ptr<Pass>> createDataParallelPass(const PassOptions& options) {
  double mib = kDefaultBucketMiB;
  int64_t zero = 0;
  for (const auto& [key, v] : options) {
    if (key == "bucket-mb") {
      auto res = std::from_chars(v.data(), v.data() + v.size(), mib);
      if (res.ec != std::errc() || res.ptr != v.data() + v.size() || !(mib > 0))
        return Error(str("data-parallel option bucket-mb=", v, " must be a positive number of MiB"));
    } else if (key == "zero-ranks") {
      auto res = std::from_chars(v.data(), v.data() + v.size(), zero);
      if (res.ec != std::errc() || res.ptr != v.data() + v.size() || zero < 1)
        return Error(str("data-parallel option zero-ranks=", v, " must be a number of ranks, at least 1"));
    } else {
      return Error(str("pass 'data-parallel' has no option '", key, "' (options: bucket-mb, zero-ranks)"));
    }
  }
  return createDataParallelPass(static_cast<uint64_t>(mib * 1024 * 1024), zero);
}

std::unique_ptr<Pass> createDataParallelPass(uint64_t bucketBytes, int64_t zeroRanks) {
  return std::make_unique<DataParallelPass>(std::max<uint64_t>(bucketBytes, 1), zeroRanks);
}

}  // namespace kfuse
