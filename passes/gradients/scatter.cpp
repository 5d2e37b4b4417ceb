// Gradient rule of scatter_nd (the op: ir/ops/scatter.cpp), for reduction
// none and add. Reading dy back at the scattered coordinates is a gather
// from dy viewed as [prod(data.shape[:k]), data.shape[k:]...] with flat
// row indices; the forward node already checked every index, so the flat
// arithmetic here cannot hide one out of range.
#include <numeric>

#include "passes/gradients/rules.h"

#include "ir/ops/op_helpers.h"

namespace kfuse::gradients {
namespace {

Shape prefix(const Shape& s, size_t k) { return Shape(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(k)); }
Shape suffix(const Shape& s, size_t k) { return Shape(s.begin() + static_cast<std::ptrdiff_t>(k), s.end()); }

Value* i64Constant(GradBuilder& b, const Shape& shape, const std::vector<int64_t>& values) {
  Tensor t(TensorType(DType::I64, shape));
  for (size_t i = 0; i < values.size(); ++i) t.as<int64_t>()[i] = values[i];
  return b.op(Op::Constant, {}, {{"value", Attribute(t)}});
}

// v[indices[..., :]] for every coordinate tuple: indices.shape[:-1] +
// v.shape[k:]. Negative indices count from the end, as in scatter_nd.
Value* gatherAt(GradBuilder& b, Value* v, Value* indices) {
  const Shape& vs = v->type().shape;
  const Shape& is = indices->type().shape;
  const size_t k = static_cast<size_t>(is.back());
  Shape lead = prefix(is, is.size() - 1), out = lead;
  for (int64_t d : suffix(vs, k)) out.push_back(d);
  if (k == 0) return b.expandTo(v, out);  // every tuple addresses all of v
  Shape box = prefix(vs, k);
  std::vector<int64_t> strides(k, 1);
  for (size_t j = k - 1; j > 0; --j) strides[j - 1] = strides[j] * box[j];
  const Shape kShape{static_cast<int64_t>(k)};
  Value* idx = indices->type().dtype == DType::I64
                   ? indices
                   : b.op(Op::Cast, {indices}, {{"to", Attribute(std::string("i64"))}});
  Value* negative = b.op(Op::Less, {idx, b.constant(0, DType::I64)});
  Value* wrapped = b.op(Op::Add, {idx, i64Constant(b, kShape, box)});
  idx = b.op(Op::Where, {negative, wrapped, idx});
  Value* weighted = b.op(Op::Mul, {idx, i64Constant(b, kShape, strides)});
  Value* flat = b.op(Op::ReduceSum, {weighted}, {{"axes", Attribute(std::vector<int64_t>{-1})}});
  Shape view{numElements(box)};
  for (int64_t d : suffix(vs, k)) view.push_back(d);
  return b.op(Op::Gather, {b.reshape(v, view), flat}, {{"axis", int64_t{0}}});
}

// With reduction none only the last update to a coordinate survives (the
// reference's order): scattering each update's position shows which won.
Value* survivorMask(GradBuilder& b, const Node& n) {
  Value* indices = n.operand(1);
  const Shape& is = indices->type().shape;
  const Shape& us = n.operand(2)->type().shape;
  Shape lead = prefix(is, is.size() - 1);
  std::vector<int64_t> positions(static_cast<size_t>(numElements(lead)));
  std::iota(positions.begin(), positions.end(), int64_t{0});
  Value* iota = i64Constant(b, lead, positions);
  Shape box = prefix(n.operand(0)->type().shape, static_cast<size_t>(is.back()));
  Value* unset = b.expandTo(b.constant(-1, DType::I64), box);
  Value* winners = b.op(Op::ScatterNd, {unset, indices, iota});
  Value* won = b.op(Op::Equal, {gatherAt(b, winners, indices), iota});
  Shape padded = lead;
  padded.resize(us.size(), 1);
  return b.expandTo(b.reshape(won, padded), us);
}

std::vector<Value*> scatterNdGrad(GradBuilder& b, const Node& n, std::span<Value* const> dy) {
  const std::string& reduction = n.attr("reduction").asString();
  Value* indices = n.operand(1);
  Value* updates = n.operand(2);
  Value* picked = gatherAt(b, dy[0], indices);
  if (reduction == "add") return {dy[0], nullptr, picked};
  if (reduction != "none") {
    b.fail(str("scatter_nd with reduction \"", reduction, "\" has no gradient rule yet (only \"none\" and \"add\")"));
    return {nullptr, nullptr, nullptr};
  }
  // Overwritten elements of data get no gradient: scatter zeros into dy.
  Value* zeros = b.expandTo(b.constant(0, updates->type().dtype), updates->type().shape);
  Value* dData = b.op(Op::ScatterNd, {dy[0], indices, zeros});
  Value* dUpdates = picked;
  if (numElements(prefix(indices->type().shape, indices->type().rank() - 1)) > 1)
    dUpdates = b.op(Op::Where, {survivorMask(b, n), picked, b.scalarLike(0, picked)});
  return {dData, nullptr, dUpdates};
}

}  // namespace

void addScatterRules(GradientRules& r) { r.add("scatter_nd", scatterNdGrad); }

}  // namespace kfuse::gradients
