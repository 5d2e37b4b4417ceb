#include "passes/autodiff.h"

#include <set>
#include <unordered_set>

#include "ir/builder.h"
#include "passes/gradients/rules.h"
#include "ir/op_registry.h"
#include "ir/support/strings.h"
#include "ir/value_names.h"
#include "ir/verifier.h"

namespace kfuse {
namespace {

// Values that depend on any of `wrt` through floating-point data.
std::unordered_set<const Value*> dependents(const Graph& g, const std::vector<Value*>& wrt) {
  std::unordered_set<const Value*> out(wrt.begin(), wrt.end());
  for (const auto& n : g.nodeList()) {
    bool reached = false;
    for (const Value* v : n->operands()) reached |= out.count(v) > 0;
    if (!reached) continue;
    for (size_t i = 0; i < n->numResults(); ++i)
      if (isFloat(n->result(i)->type().dtype)) out.insert(n->result(i));
  }
  return out;
}

// Values the loss depends on.
std::unordered_set<const Value*> contributors(const Graph& g, const Value* loss) {
  std::unordered_set<const Value*> out{loss};
  const auto& list = g.nodeList();
  for (auto it = list.rbegin(); it != list.rend(); ++it) {
    const Node& n = **it;
    bool feeds = false;
    for (size_t i = 0; i < n.numResults(); ++i) feeds |= out.count(n.result(i)) > 0;
    if (!feeds) continue;
    for (const Value* v : n.operands()) out.insert(v);
  }
  return out;
}

class Differentiator {
 public:
  Differentiator(Graph& g, const std::vector<Value*>& wrt, Value* loss)
      : g_(g), names_(g), forward_(dependents(g, wrt)), backward_(contributors(g, loss)) {}

  Status run(Value* loss, Value* seed) {
    GradBuilder b(g_);
    grads_[loss] = seed ? seed : b.constant(1.0, loss->type().dtype);
    if (b.failed()) return Error(b.error());
    std::vector<Node*> order = g_.nodes();  // the forward, before the backward is appended
    for (auto it = order.rbegin(); it != order.rend(); ++it) KF_RETURN_IF_ERROR(visit(**it));
    return Status::ok();
  }

  GradientMap result(const std::vector<Value*>& wrt) const {
    GradientMap out;
    for (Value* v : wrt) {
      auto it = grads_.find(v);
      if (it != grads_.end()) out[v] = it->second;
    }
    return out;
  }

 private:
  bool active(const Node& n) const {
    bool fromWrt = false, toLoss = false;
    for (const Value* v : n.operands()) fromWrt |= forward_.count(v) > 0;
    for (size_t i = 0; i < n.numResults(); ++i) toLoss |= backward_.count(n.result(i)) > 0;
    return fromWrt && toLoss;
  }

  Error failAt(const Node& n, const std::string& msg) const {
    return Error(str(locPrefix(n), "autodiff: ", describeNode(n, names_), ": ", msg));
  }

  Status visit(const Node& n) {
    if (!active(n)) return Status::ok();
    std::vector<Value*> dys;
    bool any = false;
    for (size_t i = 0; i < n.numResults(); ++i) {
      auto it = grads_.find(n.result(i));
      dys.push_back(it == grads_.end() ? nullptr : it->second);
      any |= dys.back() != nullptr;
    }
    if (!any) return Status::ok();
    const GradFn* rule = GradientRules::global().find(n.op());
    if (!rule) return failAt(n, str("op '", n.opName(), "' has no gradient rule, but it lies between the "
                                    "differentiated values and the loss"));
    GradBuilder b(g_);
    b.setProvenance(n);
    std::vector<Value*> dxs = (*rule)(b, n, dys);
    if (b.failed()) return failAt(n, str("gradient rule failed: ", b.error()));
    if (dxs.size() != n.numOperands())
      return failAt(n, str("internal error: gradient rule returned ", dxs.size(), " gradients for ", n.numOperands(),
                           " operands"));
    for (size_t i = 0; i < dxs.size(); ++i) {
      Value* x = n.operand(i);
      if (!dxs[i] || !forward_.count(x) || !isFloat(x->type().dtype)) continue;
      if (!(dxs[i]->type() == x->type()))
        return failAt(n, str("internal error: gradient rule gives ", formatType(dxs[i]->type()), " for operand ", i,
                             " of type ", formatType(x->type())));
      KF_RETURN_IF_ERROR(accumulate(n, x, dxs[i]));
    }
    return Status::ok();
  }

  // Fan-out: gradients arriving along several uses are summed.
  Status accumulate(const Node& n, Value* x, Value* g) {
    auto [it, inserted] = grads_.emplace(x, g);
    if (inserted) return Status::ok();
    GradBuilder b(g_);
    b.setProvenance(n);
    it->second = b.op(Op::Add, {it->second, g});
    if (b.failed()) return failAt(n, b.error());
    return Status::ok();
  }

  Graph& g_;
  ValueNames names_;
  std::unordered_set<const Value*> forward_, backward_;
  std::map<const Value*, Value*> grads_;
};

}  // namespace

Expected<GradientMap> buildBackward(Graph& g, Value* loss, const std::vector<Value*>& wrt, Value* seed) {
  if (loss->type().rank() != 0 || !isFloat(loss->type().dtype))
    return Error(str("autodiff: the loss must be a floating-point scalar, got ", formatType(loss->type())));
  Differentiator d(g, wrt, loss);
  KF_RETURN_IF_ERROR(d.run(loss, seed));
  return d.result(wrt);
}

}  // namespace kfuse
