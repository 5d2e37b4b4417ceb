// Logical and comparison ops beyond the v1 set, added for the ONNX frontend
// (Not, And, Or, Xor, LessOrEqual, GreaterOrEqual). As in elementwise.cpp,
// each op's math is its scalar expression; none is differentiable.
//
// less_equal / greater_equal are ops of their own rather than not(greater)
// and not(less): with a NaN operand every comparison is false, so the
// negation would give true.
#include "ir/ops/op_helpers.h"

namespace kfuse {
namespace {

using ops::one;
using ScalarList = std::vector<Scalar>;

Expected<TensorType> broadcastBool(const OpCall& c) {
  Shape shape;
  for (const TensorType& t : c.inputs) {
    KF_ASSIGN_OR_RETURN(shape, broadcastShapes(shape, t.shape));
  }
  KF_ASSIGN_OR_RETURN(Layout layout, ops::resultLayout(c, shape.size()));
  return TensorType(DType::Bool, shape, layout);
}

OpDef logicOp(std::string name, std::string summary, int arity, ScalarFn scalar, bool boolOperands) {
  OpDef d;
  d.name = std::move(name);
  d.summary = std::move(summary);
  d.minInputs = d.maxInputs = arity;
  d.fusion = arity == 1 ? FusionClass::Elementwise : FusionClass::Broadcast;
  d.infer = [boolOperands](const OpCall& c) -> Expected<std::vector<TensorType>> {
    for (size_t i = 0; i < c.inputs.size(); ++i)
      KF_RETURN_IF_ERROR(boolOperands ? ops::requireDType(c, i, DType::Bool) : ops::requireNumeric(c, i));
    if (c.inputs.size() == 2) KF_RETURN_IF_ERROR(ops::requireSameDType(c, 0, 1));
    KF_ASSIGN_OR_RETURN(TensorType t, broadcastBool(c));
    return one(t);
  };
  d.reference = ops::referenceFromScalar;
  d.scalar = std::move(scalar);
  d.layout.kind = LayoutClass::Pointwise;
  return d;
}

ScalarFn binaryScalar(Scalar (*f)(const Scalar&, const Scalar&)) {
  return [f](const OpCall&, std::span<const Scalar> in) { return ScalarList{f(in[0], in[1])}; };
}

}  // namespace

void registerLogicOps(OpRegistry& r) {
  r.add(logicOp(
      "logical_not", "y = not x, of a bool tensor", 1,
      [](const OpCall&, std::span<const Scalar> in) { return ScalarList{!in[0]}; }, true));
  r.add(logicOp("logical_and", "a and b, of bool tensors", 2,
                binaryScalar([](const Scalar& a, const Scalar& b) { return a && b; }), true));
  r.add(logicOp("logical_or", "a or b, of bool tensors", 2,
                binaryScalar([](const Scalar& a, const Scalar& b) { return a || b; }), true));
  r.add(logicOp("logical_xor", "a xor b, of bool tensors", 2,
                binaryScalar([](const Scalar& a, const Scalar& b) { return notEqual(a, b); }), true));
  r.add(logicOp("less_equal", "a <= b (false when either is NaN)", 2,
                binaryScalar([](const Scalar& a, const Scalar& b) { return a <= b; }), false));
  r.add(logicOp("greater_equal", "a >= b (false when either is NaN)", 2,
                binaryScalar([](const Scalar& a, const Scalar& b) { return a >= b; }), false));
}

}  // namespace kfuse
