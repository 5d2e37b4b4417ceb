// Gradient rules of the losses (the ops: ir/ops/loss.cpp).
#include "passes/gradients/rules.h"

#include "ir/ops/op_helpers.h"
#include "passes/gradients/grad_helpers.h"

namespace kfuse::gradients {
namespace {

std::vector<Value*> crossEntropyGrad(GradBuilder& b, const Node& n, std::span<Value* const> dys) {
  return {b.op(Op::CrossEntropyGrad, {dys[0], n.operand(0), n.operand(1)}, n.attrs()), nullptr};
}

// d loss / da = dloss * 2 (a - b) / count (count = 1 for "sum"), and
// d loss / db = -d loss / da. a and b may differ in layout tag (one plain),
// so each gradient gets its operand's tag.
std::vector<Value*> mseGrad(GradBuilder& b, const Node& n, std::span<Value* const> dys) {
  Value *a = n.operand(0), *bv = n.operand(1);
  double count = n.attr("reduction").asString() == "mean" ? static_cast<double>(a->type().numElements()) : 1.0;
  Value* scale = b.op(Op::Mul, {dys[0], b.scalarLike(2.0 / count, dys[0])});
  Value* da = b.op(Op::Mul, {b.op(Op::Sub, {a, bv}), scale});
  return {ops::withLayout(b, da, a->type().layout), ops::withLayout(b, b.op(Op::Neg, {da}), bv->type().layout)};
}

}  // namespace

void addLossRules(GradientRules& r) {
  r.add("cross_entropy", crossEntropyGrad);
  r.add("mse_loss", mseGrad);
}

}  // namespace kfuse::gradients
