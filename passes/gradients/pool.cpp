// Gradient rules of the poolings (the ops: ir/ops/pool.cpp).
#include "passes/gradients/rules.h"

#include "ir/ops/op_helpers.h"
#include "passes/gradients/grad_helpers.h"

namespace kfuse::gradients {
namespace {

// The rules hand dy to the gradient-only ops with the forward's attributes;
// avg_pool2d_grad needs only x's shape, max_pool2d_grad x itself (to find
// each window's maximum again rather than saving indices).
std::vector<Value*> maxPoolGrad(GradBuilder& b, const Node& n, std::span<Value* const> dys) {
  return {b.op(Op::MaxPool2dGrad, {dys[0], n.operand(0)}, n.attrs())};
}

std::vector<Value*> avgPoolGrad(GradBuilder& b, const Node& n, std::span<Value* const> dys) {
  AttrMap attrs = n.attrs();
  attrs["input_shape"] = Attribute(n.operand(0)->type().shape);
  return {b.op(Op::AvgPool2dGrad, {dys[0]}, std::move(attrs))};
}

// dx = dy / (H * W), spread over H and W. expand yields a plain value, so
// the result gets x's layout tag back.
std::vector<Value*> globalAvgPoolGrad(GradBuilder& b, const Node& n, std::span<Value* const> dys) {
  const TensorType& x = n.operand(0)->type();
  bool nhwc = x.layout == Layout::NHWC;
  double area = static_cast<double>(nhwc ? x.shape[1] * x.shape[2] : x.shape[2] * x.shape[3]);
  Value* spread = b.expandTo(dys[0], x.shape);
  return {ops::withLayout(b, b.op(Op::Div, {spread, b.scalarLike(area, spread)}), x.layout)};
}

}  // namespace

void addPoolRules(GradientRules& r) {
  r.add("max_pool2d", maxPoolGrad);
  r.add("avg_pool2d", avgPoolGrad);
  r.add("global_avg_pool2d", globalAvgPoolGrad);
}

}  // namespace kfuse::gradients
