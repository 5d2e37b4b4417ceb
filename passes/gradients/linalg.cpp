// Gradient rules of matmul and conv2d (the ops: ir/ops/linalg.cpp).
#include "passes/gradients/rules.h"

#include "ir/ops/op_helpers.h"
#include "passes/gradients/grad_helpers.h"

namespace kfuse::gradients {
namespace {

// ---- matmul
//
// With op(A) = A^T under transpose_a (likewise B), Y = op(A) op(B) gives
// d op(A) = dY op(B)^T and d op(B) = op(A)^T dY; undoing the transposes:
//   dA = ta ? op(B) dY^T = matmul(B, dY, transpose_a = tb, transpose_b = true)
//           : dY op(B)^T = matmul(dY, B, transpose_b = !tb)
//   dB = tb ? dY^T op(A) = matmul(dY, A, transpose_a = true, transpose_b = ta)
//           : op(A)^T dY = matmul(A, dY, transpose_a = !ta)
// Rank-1 operands first become the matrices numpy.matmul makes of them
// ([1, K] for a, [K, 1] for b) and dY gets back the axes the result dropped,
// so the formulas hold unchanged; the products carry the broadcast batch
// axes, which sumToShape folds back onto each operand's own batch.

// A rank-1 operand as the matrix numpy.matmul treats it as.
Value* asMatrix(GradBuilder& b, Value* v, bool isA) {
  const Shape& s = v->type().shape;
  if (s.size() != 1) return v;
  return b.reshape(v, isA ? Shape{1, s[0]} : Shape{s[0], 1});
}

// dy reshaped to batch + [M, N], M = 1 for a rank-1 a and N = 1 for a rank-1 b.
Value* dyAsMatrix(GradBuilder& b, const Node& n, Value* dy) {
  bool aVec = n.operand(0)->type().rank() == 1, bVec = n.operand(1)->type().rank() == 1;
  const Shape& y = n.result()->type().shape;
  size_t kept = (aVec ? 0 : 1) + (bVec ? 0 : 1);  // matrix axes present in y
  Shape m(y.begin(), y.end() - static_cast<std::ptrdiff_t>(kept));
  m.push_back(aVec ? 1 : y[y.size() - kept]);
  m.push_back(bVec ? 1 : y.back());
  return b.reshape(dy, m);
}

// A product over the broadcast batch folded back to `operand`'s type.
Value* foldTo(GradBuilder& b, Value* product, Value* matrix, Value* operand) {
  Value* summed = b.sumToShape(product, matrix->type().shape);
  return ops::withLayout(b, b.reshape(summed, operand->type().shape), operand->type().layout);
}

std::vector<Value*> matmulGrad(GradBuilder& b, const Node& n, std::span<Value* const> dys) {
  bool ta = n.attr("transpose_a").asBool(), tb = n.attr("transpose_b").asBool();
  Value* a = asMatrix(b, n.operand(0), true);
  Value* bm = asMatrix(b, n.operand(1), false);
  Value* dy = dyAsMatrix(b, n, dys[0]);
  Value* da = ta ? b.op(Op::Matmul, {bm, dy}, {{"transpose_a", tb}, {"transpose_b", true}})
                 : b.op(Op::Matmul, {dy, bm}, {{"transpose_b", !tb}});
  Value* db = tb ? b.op(Op::Matmul, {dy, a}, {{"transpose_a", true}, {"transpose_b", ta}})
                 : b.op(Op::Matmul, {a, dy}, {{"transpose_a", !ta}});
  return {foldTo(b, da, a, n.operand(0)), foldTo(b, db, bm, n.operand(1))};
}

// dx and dw by the ops above; dbias sums dy over every axis but channels.
std::vector<Value*> convGrad(GradBuilder& b, const Node& n, std::span<Value* const> dys) {
  Value* x = n.operand(0);
  Value* w = n.operand(1);
  AttrMap geometry;
  for (const char* a : {"strides", "pads", "dilations", "groups"}) geometry[a] = n.attr(a);
  AttrMap inputAttrs = geometry, weightAttrs = geometry;
  inputAttrs["input_shape"] = Attribute(x->type().shape);
  weightAttrs["weight_shape"] = Attribute(w->type().shape);
  weightAttrs["weight_layout"] = Attribute(std::string(layoutName(w->type().layout)));
  std::vector<Value*> grads = {b.op(Op::Conv2dGradInput, {dys[0], w}, inputAttrs),
                               b.op(Op::Conv2dGradWeight, {dys[0], x}, weightAttrs)};
  if (n.numOperands() > 2) {
    bool nhwc = x->type().layout == Layout::NHWC;
    std::vector<int64_t> axes = nhwc ? std::vector<int64_t>{0, 1, 2} : std::vector<int64_t>{0, 2, 3};
    grads.push_back(b.op(Op::ReduceSum, {dys[0]}, {{"axes", Attribute(axes)}}));
  }
  return grads;
}

}  // namespace

void addLinalgRules(GradientRules& r) {
  r.add("matmul", matmulGrad);
  r.add("conv2d", convGrad);
}

}  // namespace kfuse::gradients
