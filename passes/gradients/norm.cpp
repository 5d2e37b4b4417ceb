// Gradient rules of batch norm, layer norm and dropout (the ops: ir/ops/norm.cpp).
#include "passes/gradients/rules.h"

#include "ir/ops/op_helpers.h"
#include "passes/gradients/grad_helpers.h"

namespace kfuse::gradients {
namespace {

using ops::channelAxisOf;

// Every axis of x but the channel axis: the axes batch norm reduces.
std::vector<int64_t> reducedAxes(const TensorType& x, int64_t axis) {
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < static_cast<int64_t>(x.rank()); ++d)
    if (d != axis) axes.push_back(d);
  return axes;
}

// A per-channel [C] value shaped to broadcast against x: C at the channel
// axis, 1 elsewhere ([1, C, 1, 1], or [1, 1, 1, C] for NHWC).
Value* perChannel(GradBuilder& b, Value* v, const TensorType& x, int64_t axis) {
  Shape s(x.rank(), 1);
  s[static_cast<size_t>(axis)] = x.shape[static_cast<size_t>(axis)];
  return b.reshape(v, s);
}

Value* sumOverBatch(GradBuilder& b, Value* v, const TensorType& x, int64_t axis) {
  return b.op(Op::ReduceSum, {v}, {{"axes", Attribute(reducedAxes(x, axis))}});
}

// Inference form, with k = scale * rsqrt(var + eps) per channel:
//   dx = dy * k,  dscale = sum(dy * (x - mean)) * rsqrt(var + eps),  dbias = sum(dy).
// mean and var are buffers (running statistics): no gradient.
std::vector<Value*> batchNormGrad(GradBuilder& b, const Node& n, std::span<Value* const> dys) {
  Value *dy = dys[0], *x = n.operand(0), *scale = n.operand(1), *mean = n.operand(3), *var = n.operand(4);
  const TensorType& xt = x->type();
  int64_t axis = *channelAxisOf(xt, "x");
  Value* invStd = b.op(Op::Rsqrt, {b.op(Op::Add, {var, b.scalarLike(n.attr("epsilon").asFloat(), var)})});
  Value* dx = b.op(Op::Mul, {dy, perChannel(b, b.op(Op::Mul, {scale, invStd}), xt, axis)});
  Value* centered = b.op(Op::Sub, {x, perChannel(b, mean, xt, axis)});
  Value* dscale = b.op(Op::Mul, {sumOverBatch(b, b.op(Op::Mul, {dy, centered}), xt, axis), invStd});
  return {dx, dscale, sumOverBatch(b, dy, xt, axis), nullptr, nullptr};
}

// The batch statistics are results too, so gradients may reach them (from a
// loss that reads them; running-statistics updates are not on the loss's
// path). With M elements per channel: d batch_mean / dx = 1 / M, and
// d batch_var / dx = 2 (x - batch_mean) / M (biased variance; its
// dependence on the mean drops out since sum(x - mean) = 0).
Value* statisticsGrad(GradBuilder& b, const Node& n, Value* dmean, Value* dvar, int64_t axis) {
  Value* x = n.operand(0);
  const TensorType& xt = x->type();
  double m = static_cast<double>(xt.numElements()) / static_cast<double>(xt.shape[static_cast<size_t>(axis)]);
  Value* total = nullptr;
  if (dvar) {
    Value* centered = b.op(Op::Sub, {x, perChannel(b, n.result(1), xt, axis)});
    total = b.op(Op::Mul, {centered, perChannel(b, b.op(Op::Mul, {dvar, b.scalarLike(2.0 / m, dvar)}), xt, axis)});
  }
  if (dmean) {
    Value* share = b.expandTo(perChannel(b, b.op(Op::Div, {dmean, b.scalarLike(m, dmean)}), xt, axis), xt.shape);
    total = total ? b.op(Op::Add, {total, share}) : share;
  }
  return total;
}

std::vector<Value*> batchNormTrainGrad(GradBuilder& b, const Node& n, std::span<Value* const> dys) {
  Value* x = n.operand(0);
  int64_t axis = *channelAxisOf(x->type(), "x");
  std::vector<Value*> grads(3, nullptr);
  if (dys[0]) {
    std::vector<Value*> r = b.ops(Op::BatchNormTrainGrad, {dys[0], x, n.operand(1), n.result(1), n.result(2)},
                                  {{"epsilon", n.attr("epsilon")}});
    if (r.size() == 3) grads = r;
  }
  if (dys[1] || dys[2]) {
    Value* stats = statisticsGrad(b, n, dys[1], dys[2], axis);
    grads[0] = ops::withLayout(b, grads[0] ? b.op(Op::Add, {grads[0], stats}) : stats, x->type().layout);
  }
  return grads;
}

// dx by layer_norm_grad (a row kernel); dscale and dbias sum over the rows
// (the axes before `axis`), of dy * xhat and dy, with xhat the forward
// recomputed without its scale and bias.
std::vector<Value*> layerNormGrad(GradBuilder& b, const Node& n, std::span<Value* const> dys) {
  Value* x = n.operand(0);
  AttrMap attrs{{"axis", n.attr("axis")}, {"epsilon", n.attr("epsilon")}};
  std::vector<Value*> operands = {dys[0], x};
  if (n.numOperands() > 1) operands.push_back(n.operand(1));
  std::vector<Value*> grads(n.numOperands(), nullptr);
  grads[0] = b.op(Op::LayerNormGrad, operands, attrs);
  if (n.numOperands() < 2) return grads;
  const int64_t axis = *normalizeAxis(n.attr("axis").asInt(), static_cast<int64_t>(x->type().rank()));
  std::vector<int64_t> rows;
  for (int64_t a = 0; a < axis; ++a) rows.push_back(a);
  auto sumRows = [&](Value* v) { return rows.empty() ? v : b.op(Op::ReduceSum, {v}, {{"axes", Attribute(rows)}}); };
  Value* xhat = b.op(Op::LayerNorm, {x}, attrs);
  grads[1] = sumRows(b.op(Op::Mul, {dys[0], xhat}));
  if (n.numOperands() > 2) grads[2] = sumRows(dys[0]);
  return grads;
}

// ---- dropout gradient: the same mask applied to dy. The mask is a pure
// function of (seed, step, element index), so nothing is saved: dropout of
// dy with the forward's attributes and step operand redraws it exactly.
std::vector<Value*> dropoutGrad(GradBuilder& b, const Node& n, std::span<Value* const> dys) {
  std::vector<Value*> operands = {dys[0]};
  if (n.numOperands() > 1) operands.push_back(n.operand(1));
  std::vector<Value*> grads(n.numOperands(), nullptr);
  AttrMap attrs = n.attrs();
  attrs["mask"] = false;  // the mask (a bool result, when the forward returns it) has no gradient
  grads[0] = b.op(Op::Dropout, operands, attrs);
  return grads;
}

}  // namespace

void addNormRules(GradientRules& r) {
  r.add("batch_norm", batchNormGrad);
  r.add("batch_norm_train", batchNormTrainGrad);
  r.add("layer_norm", layerNormGrad);
  r.add("dropout", dropoutGrad);
}

}  // namespace kfuse::gradients
