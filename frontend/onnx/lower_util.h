// Helpers shared by the lowering files (lower_*.cpp).
#pragma once

#include <string>

#include "frontend/onnx/import_context.h"
#include "ir/support/strings.h"

namespace kfuse::onnx_import {

// A rank-0 constant of `like`'s dtype.
inline Value* scalarLike(LoweringContext& c, const Value* like, double v) {
  return c.scalar(like->type().dtype, v);
}

inline Attribute dtypeAttr(DType t) { return Attribute(std::string(dtypeName(t))); }

// The value cast to `to` (itself when it already has that dtype).
inline Expected<Value*> castTo(LoweringContext& c, Value* v, DType to) {
  if (v->type().dtype == to) return v;
  return c.build("cast", {v}, {{"to", dtypeAttr(to)}});
}

inline Expected<Value*> reshapeTo(LoweringContext& c, Value* v, const Shape& shape) {
  if (v->type().shape == shape) return v;
  return c.build("reshape", {v}, {{"shape", Attribute(shape)}});
}

// kfuse ops such as exp and matmul take floating-point operands only; ONNX
// allows integers for some. Such a node is unsupported, not invalid.
inline Status requireFloat(LoweringContext& c, const Value* v, const std::string& role) {
  if (isFloat(v->type().dtype)) return Status::ok();
  return c.unsupported(str(c.opType(), " on ", dtypeName(v->type().dtype), " ", role,
                           " (kfuse implements it for floating-point types only)"));
}

// An axis attribute or input in [-rank, rank), normalised.
inline Expected<int64_t> normalizedAxis(int64_t axis, int64_t rank, const std::string& what) {
  if (axis < -rank || axis >= rank)
    return Error(str(what, " = ", axis, " is out of range for rank ", rank, " (valid: ", -rank, " to ", rank - 1, ")"));
  return axis < 0 ? axis + rank : axis;
}

// ONNX GatherElements: out[i] = data[i with i[axis] replaced by
// indices[i]], negative indices counted from the end (lower_gather.cpp).
Expected<Value*> gatherElements(LoweringContext& c, Value* data, Value* indices, int64_t axis);

inline Status done(LoweringContext& c, Value* y) {
  c.setOutput(0, y);
  return Status::ok();
}

}  // namespace kfuse::onnx_import
