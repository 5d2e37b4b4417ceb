// Gradient rules of the reductions and softmax (the ops: ir/ops/reduction.cpp).
#include "passes/gradients/rules.h"

#include "ir/ops/op_helpers.h"
#include "passes/gradients/grad_helpers.h"

namespace kfuse::gradients {
namespace {

using ops::reducedType;

// The reduced axes of a node (as reducedAxes, from the node's attributes).
std::vector<int64_t> nodeAxes(const Node& n) {
  auto rank = static_cast<int64_t>(n.operand(0)->type().rank());
  std::vector<int64_t> axes;
  for (int64_t a : n.attr("axes").asInts()) axes.push_back(*normalizeAxis(a, rank));
  if (axes.empty())
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  return axes;
}

// A reduced value (dy or y) broadcast back over the reduced axes of x.
Value* spreadBack(GradBuilder& b, const Node& n, Value* reduced) {
  const TensorType& x = n.operand(0)->type();
  Shape kept = reducedType(x, nodeAxes(n), true, x.dtype).shape;
  return b.withLayout(b.expandTo(b.reshape(reduced, kept), x.shape), x.layout);
}

std::vector<Value*> sumGrad(GradBuilder& b, const Node& n, std::span<Value* const> dy) {
  return {spreadBack(b, n, dy[0])};
}

std::vector<Value*> meanGrad(GradBuilder& b, const Node& n, std::span<Value* const> dy) {
  int64_t count = 1;
  for (int64_t a : nodeAxes(n)) count *= n.operand(0)->type().shape[a];
  Value* share = b.op(Op::Div, {dy[0], b.scalarLike(static_cast<double>(count), dy[0])});
  return {spreadBack(b, n, share)};
}

// dy flows to the elements equal to the extremum, split evenly among ties
// (as torch.amax / amin do).
std::vector<Value*> extremumGrad(GradBuilder& b, const Node& n, std::span<Value* const> dy) {
  Value* x = n.operand(0);
  Value* mask = b.op(Op::Equal, {x, spreadBack(b, n, n.result())});
  Value* ones = b.op(Op::Cast, {mask}, {{"to", Attribute(std::string(dtypeName(x->type().dtype)))}});
  Value* ties = b.op(Op::ReduceSum, {ones}, {{"axes", Attribute(nodeAxes(n))}, {"keepdims", true}});
  Value* share = b.op(Op::Div, {spreadBack(b, n, dy[0]), b.expandTo(ties, x->type().shape)});
  return {b.op(Op::Where, {mask, share, b.scalarLike(0, share)})};
}

// d prod(x) / dx_i is the product of the other elements. y / x_i would
// divide by zero, so rows are told apart by their count of zeros: none, y /
// x_i; one, the product of the nonzero elements flows to the zero alone;
// more, nothing flows.
std::vector<Value*> prodGrad(GradBuilder& b, const Node& n, std::span<Value* const> dy) {
  Value* x = n.operand(0);
  AttrMap keep{{"axes", Attribute(nodeAxes(n))}, {"keepdims", true}};
  Value* isZero = b.op(Op::Equal, {x, b.scalarLike(0, x)});
  Value* asOne = b.op(Op::Cast, {isZero}, {{"to", Attribute(std::string(dtypeName(x->type().dtype)))}});
  Value* zeros = spreadBack(b, n, b.op(Op::ReduceSum, {asOne}, keep));
  Value* nonzero = b.op(Op::Where, {isZero, b.scalarLike(1, x), x});
  Value* others = spreadBack(b, n, b.op(Op::ReduceProd, {nonzero}, keep));
  Value* oneZero = b.op(Op::LogicalAnd, {b.op(Op::Equal, {zeros, b.scalarLike(1, x)}), isZero});
  Value* withZero = b.op(Op::Where, {oneZero, others, b.scalarLike(0, x)});
  Value* noZero = b.op(Op::Equal, {zeros, b.scalarLike(0, x)});
  Value* d = b.op(Op::Where, {noZero, b.op(Op::Div, {others, x}), withZero});
  return {b.op(Op::Mul, {d, spreadBack(b, n, dy[0])})};
}

GradFn softmaxGrad(Op gradOp) {
  return [gradOp](GradBuilder& b, const Node& n, std::span<Value* const> dy) -> std::vector<Value*> {
    return {b.op(gradOp, {dy[0], n.result()}, {{"axis", n.attr("axis")}})};
  };
}

}  // namespace

void addReductionRules(GradientRules& r) {
  r.add("reduce_sum", sumGrad);
  r.add("reduce_mean", meanGrad);
  r.add("reduce_max", extremumGrad);
  r.add("reduce_min", extremumGrad);
  r.add("reduce_prod", prodGrad);
  r.add("softmax", softmaxGrad(Op::SoftmaxGrad));
  r.add("log_softmax", softmaxGrad(Op::LogSoftmaxGrad));
}

}  // namespace kfuse::gradients
