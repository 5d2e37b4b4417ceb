// fuse: groups nodes into fused nodes, each of which the code generator turns
// into one launch. Decisions follow the ops' fusion classes from the
// registry, never hand-written op pairs:
//   - a producer joins its consumer's group when the union is one launch for
//     the target (the GroupChecker from the driver: elementwise/broadcast/
//     injective chains, a row op with its elementwise producers and
//     consumers, a GEMM with an elementwise epilogue) and no value path
//     leaves the union and comes back (that would be a cycle);
//   - values are never recomputed: a value used outside its group is stored
//     by the group, and transcendental math or a gather does not join a
//     consumer that reads each of its elements several times;
//   - groups that only produce state updates (the optimizer step of every
//     parameter, running statistics) are fused horizontally into one launch.
// Every decision carries its reason; --remarks prints them.
//   fuse{exclude=op1,op2}: keeps these ops out of every group.
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "ir/kernel_form.h"
#include "ir/op_registry.h"
#include "ir/support/strings.h"
#include "ir/topo_sort.h"
#include "passes/fuse_body.h"
#include "passes/pass_registry.h"

namespace kfuse {
namespace {

bool isSplat(const Node& n) { return isSplatConstant(n); }

bool transcendental(const ScalarNode& s) {
  switch (s.op) {
    case ScalarOp::Exp:
    case ScalarOp::Expm1:
    case ScalarOp::Log:
    case ScalarOp::Log1p:
    case ScalarOp::Tanh:
    case ScalarOp::Erf:
    case ScalarOp::Sin:
    case ScalarOp::Cos:
    case ScalarOp::Pow: return true;
    default: break;
  }
  return std::any_of(s.args.begin(), s.args.end(), [](const ScalarRef& a) { return transcendental(*a); });
}

// A gather, or an elementwise op whose scalar form (the registry's) calls
// a transcendental function: it costs more per element than the bytes it
// reads and writes (a gather's indexed loads keep a kernel from
// vectorising).
bool expensive(const Node& n) {
  const OpDef& op = n.op();
  if (op.gatherAxis) return true;
  if (!op.scalar || op.scalarReadsIndex) return false;
  std::vector<TensorType> types;
  const OpCall call = callOf(n, types);
  std::vector<Scalar> inputs;
  for (size_t i = 0; i < types.size(); ++i) inputs.push_back(Scalar::input(static_cast<int>(i), types[i].dtype));
  const std::vector<Scalar> out = op.scalar(call, inputs);
  return std::any_of(out.begin(), out.end(), [](const Scalar& s) { return transcendental(*s.node()); });
}

// Can be in a group: a kernel form, or GEMM-like (a GEMM takes an epilogue).
bool kernelForm(const Node& n) { return kernelFormIssue(n).empty() || n.op().fusion == FusionClass::GemmLike; }

class Fuser {
 public:
  Fuser(Graph& g, const PassContext& ctx, const std::set<std::string, std::less<>>& exclude)
      : g_(g), ctx_(ctx), exclude_(exclude), nodes_(g.nodes()) {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      index_[nodes_[i]] = i;
      parent_.push_back(i);
    }
  }

  bool run() {
    fuseVertically();
    fuseUpdatesHorizontally();
    return materialize();
  }

 private:
  // ------------------------------------------------------------ groups
  size_t find(size_t i) { return parent_[i] == i ? i : parent_[i] = find(parent_[i]); }
  std::vector<const Node*> members(size_t root) {
    std::vector<const Node*> out;
    for (size_t i = 0; i < nodes_.size(); ++i)
      if (find(i) == root) out.push_back(nodes_[i]);
    return out;
  }
  bool inGroup(const Node* n, size_t a, size_t b) {
    auto it = index_.find(n);
    if (it == index_.end()) return false;
    size_t r = find(it->second);
    return r == a || r == b;
  }

  bool eligible(const Node& n) const {
    if (exclude_.count(n.opName())) return false;
    if (isSplat(n)) return false;  // copied into every group that reads it
    return n.op().fusion != FusionClass::Opaque && kernelForm(n);
  }

  // A value path from group a that leaves a ∪ b and reaches b (or the other
  // way) would make the union depend on itself. Nodes are in topological
  // order, so such a path only passes nodes before the target's last
  // member: the search stops there (it walked every node downstream of a
  // group, 130 of the 250 ms this pass took on MobileNetV2's training step).
  bool wouldCycle(size_t a, size_t b) {
    auto leavesAndReturns = [&](size_t from, size_t to) {
      const size_t last = index_.at(members(to).back());
      // Whether a path may go on through n: outside both groups, before `to`'s last node.
      auto onward = [&](const Node* n) {
        auto it = index_.find(n);
        if (it == index_.end()) return true;
        const size_t r = find(it->second);
        return r != from && r != to && it->second < last;
      };
      std::vector<const Node*> stack;
      std::set<const Node*> seen;
      for (const Node* m : members(from))
        for (size_t r = 0; r < m->numResults(); ++r)
          for (const Use& u : m->result(r)->uses())
            if (onward(u.user)) stack.push_back(u.user);
      while (!stack.empty()) {
        const Node* x = stack.back();
        stack.pop_back();
        if (!seen.insert(x).second) continue;
        for (size_t r = 0; r < x->numResults(); ++r)
          for (const Use& u : x->result(r)->uses()) {
            auto it = index_.find(u.user);
            if (it != index_.end() && find(it->second) == to) return true;
            if (onward(u.user)) stack.push_back(u.user);
          }
      }
      return false;
    };
    return leavesAndReturns(a, b) || leavesAndReturns(b, a);
  }

  // "" when groups a and b together form one launch, else why not.
  std::string tryUnion(size_t a, size_t b) {
    if (wouldCycle(a, b)) return "a value path leaves the group and comes back";
    std::vector<const Node*> nodes = members(a);
    for (const Node* n : members(b)) nodes.push_back(n);
    std::sort(nodes.begin(), nodes.end(), [&](const Node* x, const Node* y) { return index_[x] < index_[y]; });
    std::unique_ptr<Graph> body = buildFusedBody(g_, nodes, "candidate");
    return ctx_.canFormLaunch(*body);
  }

  void remark(const std::string& msg) {
    if (ctx_.remarks) ctx_.diag->remark("fuse", msg);
  }

  // ------------------------------------------------------------ vertical
  void fuseVertically() {
    for (const Node* c : nodes_) {
      for (const Value* v : c->operands()) {
        const Node* p = v->producer();
        if (!p || !index_.count(p) || p->is(Op::Constant)) continue;
        if (!eligible(*p) || !eligible(*c)) {
          noteRejected(*p, *c, whyIneligible(eligible(*p) ? *c : *p));
          continue;
        }
        size_t a = find(index_[p]), b = find(index_[c]);
        if (a == b) continue;
        std::string why = recomputes(a, *v, *c);
        if (why.empty()) why = tryUnion(a, b);
        if (!why.empty()) {
          noteRejected(*p, *c, why);
          continue;
        }
        parent_[a] = b;
      }
    }
  }

  // Why group a, whose value v consumer c reads, would do expensive work
  // once per read rather than once per element: c has more elements than v
  // (v is broadcast), and a's members are elementwise or gathers, one of
  // them expensive. A group with a reduction or a GEMM keeps its
  // own loops and is left alone; the emitter hoists what is invariant along
  // a kernel's inner loops, not its outer ones (T5's relative position
  // buckets, a log per element, were computed again for each of 2 images,
  // 4 heads and softmax's 3 passes: 1.9 ms of a 19 ms encoder).
  std::string recomputes(size_t a, const Value& v, const Node& c) {
    const int64_t elements = v.type().numElements();
    int64_t reads = 0;
    for (size_t r = 0; r < c.numResults(); ++r) reads = std::max(reads, c.result(r)->type().numElements());
    if (elements <= 0 || reads <= elements) return "";
    const Node* costly = nullptr;
    for (const Node* m : members(a)) {
      const FusionClass f = m->op().fusion;
      if (f == FusionClass::Reduction || f == FusionClass::GemmLike) return "";
      if (!costly && expensive(*m)) costly = m;
    }
    if (!costly) return "";
    return str("its ", costly->opName(), " would run ", reads / elements, " times per element (", formatType(v.type()),
               " read as ", reads, " elements)");
  }

  std::string whyIneligible(const Node& n) const {
    if (exclude_.count(n.opName())) return "excluded by the fuse pass's exclude option";
    if (n.op().fusion == FusionClass::Opaque) return str("'", n.opName(), "' is opaque");
    return str("'", n.opName(), "' has no kernel form");
  }

  void noteRejected(const Node& p, const Node& c, const std::string& why) {
    std::string msg = str("not fused: ", p.opName(), " -> ", c.opName(), ": ", why);
    if (rejected_.insert(msg).second) remark(msg);
  }

  // ------------------------------------------------------------ horizontal
  // A group that only feeds state updates (no node reads its values, and
  // nothing it returns is a function result).
  bool onlyUpdates(size_t root) {
    bool feedsUpdate = false;
    for (const Node* m : members(root))
      for (size_t r = 0; r < m->numResults(); ++r) {
        const Value* v = m->result(r);
        for (const Use& u : v->uses())
          if (!inGroup(u.user, root, root)) return false;
        for (const Value* res : g_.results())
          if (res == v) return false;
        feedsUpdate |= v->graphUses() > 0;
      }
    return feedsUpdate;
  }

  void fuseUpdatesHorizontally() {
    std::vector<size_t> roots;
    for (size_t i = 0; i < nodes_.size(); ++i)
      if (find(i) == i && eligible(*nodes_[i]) && onlyUpdates(i)) roots.push_back(i);
    for (size_t k = 1; k < roots.size(); ++k) {
      size_t a = find(roots[0]), b = find(roots[k]);
      std::string why = tryUnion(a, b);
      if (why.empty())
        parent_[b] = a;
      else
        remark(str("not fused horizontally: ", nodes_[roots[k]]->opName(), ": ", why));
    }
  }

  // ------------------------------------------------------------ rewrite
  bool materialize() {
    std::map<size_t, std::vector<const Node*>> groups;
    for (size_t i = 0; i < nodes_.size(); ++i) groups[find(i)].push_back(nodes_[i]);
    std::map<std::string, int> taken;
    bool changed = false;
    for (auto& [root, nodes] : groups) {
      if (nodes.size() < 2) continue;
      std::string name = kernelName(nodes);
      if (int n = taken[name]++; n > 0) name = str(name, "_", n);
      remark(str("@", name, ": ", describeGroup(nodes)));
      replaceWithFused(g_, nodes, name);
      changed = true;
    }
    if (changed) sortTopologically(g_);
    return changed;
  }

  static std::string kernelName(const std::vector<const Node*>& nodes) {
    std::vector<std::string> ops;
    for (const Node* n : nodes)
      if (!n->is(Op::Constant) && (ops.empty() || ops.back() != n->opName())) ops.emplace_back(n->opName());
    constexpr size_t kMaxNamed = 5;
    std::string name = "fused";
    for (size_t i = 0; i < std::min(ops.size(), kMaxNamed); ++i) name += "_" + ops[i];
    if (ops.size() > kMaxNamed) name += str("_and_", ops.size() - kMaxNamed, "_more");
    return name;
  }

  static std::string describeGroup(const std::vector<const Node*>& nodes) {
    std::vector<std::string> ops;
    for (const Node* n : nodes) ops.emplace_back(n->opName());
    return str(join(ops), " (", nodes.size(), " ops, 1 launch)");
  }

  Graph& g_;
  const PassContext& ctx_;
  const std::set<std::string, std::less<>>& exclude_;
  std::vector<Node*> nodes_;
  std::map<const Node*, size_t> index_;
  std::vector<size_t> parent_;
  std::set<std::string> rejected_;
};

class FusePass : public Pass {
 public:
  explicit FusePass(std::set<std::string, std::less<>> exclude) : exclude_(std::move(exclude)) {}
  std::string_view name() const override { return "fuse"; }
  PassResult run(Graph& g, const PassContext& ctx) override {
    if (!ctx.canFormLaunch) {
      if (ctx.remarks) ctx.diag->remark("fuse", "no code generator to ask what one launch can hold: nothing fused");
      return false;
    }
    return Fuser(g, ctx, exclude_).run();
  }

 private:
  std::set<std::string, std::less<>> exclude_;
};

}  // namespace

Expected<std::unique_ptr<Pass>> createFusePass(const PassOptions& options) {
  std::set<std::string, std::less<>> exclude;
  for (const auto& [key, value] : options) {
    if (key != "exclude") return unknownPassOption("fuse", options);
    std::stringstream ss(value);
    for (std::string op; std::getline(ss, op, ',');)
      if (!op.empty()) exclude.insert(op);
  }
  return std::unique_ptr<Pass>(new FusePass(std::move(exclude)));
}

}  // namespace kfuse
