#include "passes/gradients/grad_builder.h"

#include "ir/builder.h"
#include "ir/support/strings.h"

namespace kfuse {

void GradBuilder::setProvenance(const Node& fwd) {
  sourceName_ = fwd.sourceName;
  sourceOp_ = fwd.sourceOp.empty() ? std::string() : fwd.sourceOp + ".grad";
}

std::vector<Value*> GradBuilder::ops(Op op, const std::vector<Value*>& operands, AttrMap attrs) {
  if (failed()) return {};
  for (Value* v : operands)
    if (!v) {
      fail(str("gradient rule passed a missing value to '", opName(op), "'"));
      return {};
    }
  auto n = buildNode(g_, op, operands, std::move(attrs), before_);
  if (!n) {
    fail(n.error().message());
    return {};
  }
  (*n)->sourceName = sourceName_;
  (*n)->sourceOp = sourceOp_;
  return (*n)->results();
}

Value* GradBuilder::op(Op op, const std::vector<Value*>& operands, AttrMap attrs) {
  std::vector<Value*> rs = ops(op, operands, std::move(attrs));
  if (rs.empty()) return nullptr;
  if (rs.size() != 1) {
    fail(str("'", opName(op), "' has ", rs.size(), " results where one was expected"));
    return nullptr;
  }
  return rs[0];
}

Value* GradBuilder::constant(double v, DType dtype, const Shape& shape) {
  TensorType t(dtype, shape);
  std::vector<double> values(static_cast<size_t>(t.numElements()), v);
  return op(Op::Constant, {}, {{"value", Attribute(Tensor::fromDoubles(t, values))}});
}

Value* GradBuilder::reshape(Value* v, const Shape& shape) {
  if (!v) return nullptr;
  if (v->type().shape == shape && v->type().layout == Layout::Plain) return v;
  return op(Op::Reshape, {v}, {{"shape", Attribute(shape)}});
}

Value* GradBuilder::sumToShape(Value* grad, const Shape& target) {
  if (!grad) return nullptr;
  const Shape& s = grad->type().shape;
  if (s == target) return grad;
  size_t lead = s.size() - target.size();
  std::vector<int64_t> axes;
  for (size_t d = 0; d < s.size(); ++d)
    if (d < lead || (target[d - lead] == 1 && s[d] != 1)) axes.push_back(static_cast<int64_t>(d));
  Value* summed = axes.empty() ? grad : op(Op::ReduceSum, {grad}, {{"axes", Attribute(axes)}, {"keepdims", true}});
  return reshape(summed, target);
}

Value* GradBuilder::withLayout(Value* v, Layout layout) {
  if (!v || v->type().layout == layout) return v;
  return op(Op::Reshape, {v}, {{"shape", Attribute(v->type().shape)}, {"layout", std::string(layoutName(layout))}});
}

Value* GradBuilder::expandTo(Value* v, const Shape& shape) {
  if (!v) return nullptr;
  if (v->type().shape == shape) return v;
  return op(Op::Expand, {v}, {{"shape", Attribute(shape)}});
}

}  // namespace kfuse
