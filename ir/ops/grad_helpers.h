// Helpers of the gradient-only ops of the nn families (linalg, pool, norm,
// loss): operand checks. (The rules that emit these ops:
// passes/gradients/.)
#pragma once

#include "ir/ops/op_helpers.h"

namespace kfuse::ops {

// Operand i (called `name`, e.g. "dy") must have exactly the type `want`
// (layout included): a gradient has the type of the value it belongs to.
inline Status requireType(const OpCall& c, size_t i, std::string_view name, const TensorType& want) {
  if (c.inputs[i] == want) return Status::ok();
  return Error(str("operand ", i, " (", name, ") must be ", formatType(want), ", got ", formatType(c.inputs[i])));
}

// A shape attribute (input_shape, weight_shape): `rank` non-negative sizes.
inline Expected<Shape> shapeAttr(const OpCall& c, std::string_view name, size_t rank) {
  const std::vector<int64_t>& v = c.getInts(name);
  if (v.size() != rank) return Error(str("attribute ", name, " must have ", rank, " sizes, got ", listText(v)));
  KF_RETURN_IF_ERROR(checkShapeBounds(v, str("attribute ", name, " =")));
  return v;
}

}  // namespace kfuse::ops
