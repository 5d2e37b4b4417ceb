// constant-fold: evaluates, with the op's reference implementation, every
// node whose operands are all constants, and every node whose result depends
// only on operand types (shape_of), replacing it by constants. This folds the
// shape-computation subgraphs exporters emit (shape_of -> gather -> concat ->
// ...) down to single constants. Results much larger than their inputs (an
// expand of a scalar) are left alone: folding them would only bloat the IR.
#include <algorithm>

#include "ir/builder.h"
#include "ir/interpreter.h"
#include "ir/support/strings.h"
#include "passes/pass_registry.h"

namespace kfuse {
namespace {

constexpr int64_t kMinFoldLimit = 1 << 16;  // elements a fold may always produce

const Tensor* constantValue(const Value* v) {
  const Node* p = v->producer();
  if (!p || !p->is(Op::Constant)) return nullptr;
  return &p->attr("value").asTensor();
}

class ConstantFoldPass : public Pass {
 public:
  std::string_view name() const override { return "constant-fold"; }
  PassResult run(Graph& g, const PassContext& ctx) override {
    bool changed = false;
    for (Node* n : g.nodes()) {
      if (n->is(Op::Constant)) continue;
      std::vector<const Tensor*> inputs;
      std::vector<Tensor> placeholders;  // type-only operands of shape_of-like ops
      placeholders.reserve(n->numOperands());
      int64_t inputElems = 0;
      bool foldable = true;
      for (Value* v : n->operands()) {
        const Tensor* t = constantValue(v);
        if (!t && n->op().dependsOnlyOnTypes) {
          placeholders.emplace_back(TensorType(v->type().dtype, {}, Layout::Plain));
          t = &placeholders.back();
        }
        if (!t) {
          foldable = false;
          break;
        }
        inputs.push_back(t);
        inputElems += t->numElements();
      }
      if (!foldable) continue;
      int64_t outElems = 0;
      for (size_t i = 0; i < n->numResults(); ++i) outElems += n->result(i)->type().numElements();
      if (outElems > std::max(kMinFoldLimit, inputElems)) continue;
      auto outs = evaluateNode(*n, inputs);
      if (!outs) {
        // A node that fails on constant inputs (an index out of range) will
        // fail at run time too; say so now.
        return Error(str(n->opName(), ": cannot be evaluated on its constant operands: ", outs.error().message()));
      }
      const OpDef* constant = &OpRegistry::global().get(Op::Constant);
      for (size_t i = 0; i < n->numResults(); ++i) {
        Tensor& t = (*outs)[i];
        TensorType type = t.type();
        Node* c = g.createNode(*constant, {}, {type}, AttrMap{{"value", Attribute(std::move(t))}}, n);
        c->result()->setName(n->result(i)->name());
        c->copyProvenance(*n);
        g.replaceAllUsesWith(n->result(i), c->result());
      }
      g.eraseNode(n);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> createConstantFoldPass() { return std::make_unique<ConstantFoldPass>(); }

}  // namespace kfuse
