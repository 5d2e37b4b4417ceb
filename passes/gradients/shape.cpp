// Gradient rules of the shape ops (the ops: ir/ops/shape.cpp).
#include "passes/gradients/rules.h"

#include "ir/ops/op_helpers.h"
#include "passes/gradients/grad_helpers.h"

namespace kfuse::gradients {
namespace {

int64_t nodeAxis(const Node& n) {
  return *normalizeAxis(n.attr("axis").asInt(), static_cast<int64_t>(n.operand(0)->type().rank()));
}

// Ops that only rename the shape: the gradient is dy renamed back.
std::vector<Value*> reshapeBack(GradBuilder& b, const Node& n, std::span<Value* const> dy) {
  return {b.reshape(dy[0], n.operand(0)->type().shape)};
}

// dy transposed by the inverse permutation.
std::vector<Value*> transposeGrad(GradBuilder& b, const Node& n, std::span<Value* const> dy) {
  auto perm = ops::resolvePermutation(n.attr("perm").asInts(), n.operand(0)->type());
  if (!perm) {
    b.fail(perm.error().message());
    return {nullptr};
  }
  std::vector<int64_t> inverse(perm->size());
  for (size_t i = 0; i < perm->size(); ++i) inverse[static_cast<size_t>((*perm)[i])] = static_cast<int64_t>(i);
  return {b.op(Op::Transpose, {dy[0]},
               {{"perm", Attribute(inverse)}, {"layout", std::string(layoutName(n.operand(0)->type().layout))}})};
}

// Each operand's gradient is its slice of dy.
std::vector<Value*> concatGrad(GradBuilder& b, const Node& n, std::span<Value* const> dy) {
  int64_t axis = nodeAxis(n), offset = 0;
  std::vector<Value*> out;
  for (Value* x : n.operands()) {
    int64_t size = x->type().shape[axis];
    out.push_back(b.op(Op::Slice, {dy[0]},
                       {{"starts", std::vector<int64_t>{offset}},
                        {"ends", std::vector<int64_t>{offset + size}},
                        {"axes", std::vector<int64_t>{axis}}}));
    offset += size;
  }
  return out;
}

// The pieces' gradients joined again; a piece without one contributes zeros.
std::vector<Value*> splitGrad(GradBuilder& b, const Node& n, std::span<Value* const> dy) {
  std::vector<Value*> pieces;
  for (size_t i = 0; i < n.numResults(); ++i) {
    const TensorType& t = n.result(i)->type();
    pieces.push_back(dy[i] ? dy[i] : b.constant(0, t.dtype, t.shape));
  }
  return {b.op(Op::Concat, pieces, {{"axis", n.attr("axis")}})};
}

// dy summed back over the broadcast axes.
std::vector<Value*> expandGrad(GradBuilder& b, const Node& n, std::span<Value* const> dy) {
  return {b.sumToShape(dy[0], n.operand(0)->type().shape)};
}

}  // namespace

void addShapeRules(GradientRules& r) {
  for (const char* op : {"reshape", "squeeze", "unsqueeze", "flatten"}) r.add(op, reshapeBack);
  r.add("expand", expandGrad);
  r.add("transpose", transposeGrad);
  r.add("concat", concatGrad);
  r.add("split", splitGrad);
}

}  // namespace kfuse::gradients
