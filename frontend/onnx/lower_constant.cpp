// Ops whose results are known at import time: Constant, Shape and Size (kfuse
// shapes are static), ConstantOfShape, Range and EyeLike with constant
// inputs; and Identity, which only renames a value. They become kfuse
// `constant` nodes (or nothing), which is how the shape-computation
// subgraphs of exported models fold away.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "frontend/onnx/lower_util.h"
#include "frontend/onnx/op_table.h"
#include "frontend/onnx/tensor_proto.h"

namespace kfuse::onnx_import {
namespace {

// Results up to this size are constants; larger ConstantOfShape results are
// an expand of a scalar, which costs nothing to store.
constexpr int64_t kMaxConstantElements = int64_t{1} << 16;

Tensor vectorOf(DType dtype, const std::vector<double>& values) {
  return Tensor::fromDoubles(TensorType(dtype, {static_cast<int64_t>(values.size())}), values);
}

Tensor i64Vector(const std::vector<int64_t>& values) {
  Tensor t(TensorType(DType::I64, {static_cast<int64_t>(values.size())}));
  for (size_t i = 0; i < values.size(); ++i) t.as<int64_t>()[i] = values[i];
  return t;
}

// Constant: exactly one of value, value_float(s), value_int(s) is set.
Status lowerConstant(LoweringContext& c) {
  const NodeAttributes& a = c.attrs();
  for (const char* unsupported : {"sparse_value", "value_string", "value_strings"})
    if (a.has(unsupported)) return c.unsupported(str("Constant with attribute ", unsupported));
  int given = 0;
  for (const char* n : {"value", "value_float", "value_floats", "value_int", "value_ints"}) given += a.has(n);
  if (given != 1) return Error(str("a Constant needs exactly one value attribute, got ", given));
  Tensor t;
  if (a.has("value")) {
    KF_ASSIGN_OR_RETURN(t, a.getTensor("value"));
  } else if (a.has("value_float")) {
    KF_ASSIGN_OR_RETURN(double v, a.getFloat("value_float"));
    t = Tensor::scalar(DType::F32, v);
  } else if (a.has("value_floats")) {
    KF_ASSIGN_OR_RETURN(auto v, a.getFloats("value_floats"));
    t = vectorOf(DType::F32, v);
  } else if (a.has("value_int")) {
    KF_ASSIGN_OR_RETURN(int64_t v, a.getInt("value_int"));
    t = i64Vector({v}).withType(TensorType(DType::I64, {}));
  } else {
    KF_ASSIGN_OR_RETURN(auto v, a.getInts("value_ints"));
    t = i64Vector(v);
  }
  return done(c, c.constant(std::move(t)));
}

Status lowerIdentity(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  return done(c, x);
}

// Shape: the static shape, optionally sliced by start/end (opset 15).
Status lowerShape(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  const Shape& s = x->type().shape;
  auto rank = static_cast<int64_t>(s.size());
  KF_ASSIGN_OR_RETURN(int64_t start, c.attrs().getInt("start", 0));
  KF_ASSIGN_OR_RETURN(int64_t end, c.attrs().getInt("end", rank));
  auto clampIndex = [rank](int64_t i) { return std::clamp(i < 0 ? i + rank : i, int64_t{0}, rank); };
  start = clampIndex(start);
  end = clampIndex(end);
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(s[static_cast<size_t>(i)]);
  return done(c, c.constant(i64Vector(dims)));
}

Status lowerSize(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  return done(c, c.scalar(DType::I64, static_cast<double>(x->type().numElements())));
}

Status lowerConstantOfShape(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(auto shape, c.intsInput(0));
  KF_RETURN_IF_ERROR(checkShapeBounds(shape, "shape"));
  Tensor fill = Tensor::scalar(DType::F32, 0.0);
  if (c.attrs().has("value")) {
    KF_ASSIGN_OR_RETURN(fill, c.attrs().getTensor("value"));
    if (fill.numElements() != 1) return Error(str("attribute value must hold one element, got ", formatType(fill.type())));
    fill = fill.withType(TensorType(fill.dtype(), {}));
  }
  if (numElements(shape) > kMaxConstantElements) {
    KF_ASSIGN_OR_RETURN(Value* y, c.build("expand", {c.constant(fill)}, {{"shape", Attribute(shape)}}));
    return done(c, y);
  }
  Tensor t(TensorType(fill.dtype(), shape));
  size_t elem = dtypeSize(fill.dtype());
  for (int64_t i = 0; i < t.numElements(); ++i)
    std::memcpy(t.data() + static_cast<size_t>(i) * elem, fill.data(), elem);
  return done(c, c.constant(std::move(t)));
}

// Range over constant scalars: max(ceil((limit - start) / delta), 0) values.
Status lowerRange(LoweringContext& c) {
  Tensor in[3];
  for (size_t i = 0; i < 3; ++i) {
    KF_ASSIGN_OR_RETURN(in[i], c.constantInput(i));
    if (in[i].numElements() != 1) return Error(str("input ", i, " must be a scalar, got ", formatType(in[i].type())));
  }
  DType dtype = in[0].dtype();
  // Range-27's stash_type chooses how float16 and bfloat16 ranges
  // accumulate (in their own type, or in float); kfuse computes each element
  // as start + i * delta in double, which matches neither for long ranges.
  if (c.version() >= 27) {
    KF_ASSIGN_OR_RETURN(int64_t stash, c.attrs().getInt("stash_type", 0));
    (void)stash;
    if (dtype == DType::F16 || dtype == DType::BF16)
      return c.unsupported(str("Range-27 of ", dtypeName(dtype), " (its stash_type accumulation)"));
  }
  double start = in[0].at(0), limit = in[1].at(0), delta = in[2].at(0);
  if (delta == 0) return Error("delta is 0");
  double count = std::max(std::ceil((limit - start) / delta), 0.0);
  if (!(count <= static_cast<double>(kMaxConstantElements) * 256))
    return Error(str("Range of ", count, " elements is too large"));
  std::vector<double> values;
  for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) values.push_back(start + static_cast<double>(i) * delta);
  return done(c, c.constant(vectorOf(dtype, values)));
}

Status lowerEyeLike(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(int64_t k, c.attrs().getInt("k", 0));
  DType dtype = x->type().dtype;
  if (c.attrs().has("dtype")) {
    KF_ASSIGN_OR_RETURN(int64_t code, c.attrs().getInt("dtype"));
    auto d = dtypeFromOnnx(static_cast<int>(code));
    if (!d) return c.unsupported(str("EyeLike of ", d.error().message()));
    dtype = *d;
  }
  const Shape& s = x->type().shape;
  if (s.size() != 2) return Error(str("input must be 2-D, got ", formatType(x->type())));
  Tensor t(TensorType(dtype, s));
  for (int64_t i = 0; i < s[0]; ++i)
    if (i + k >= 0 && i + k < s[1]) t.set(i * s[1] + i + k, 1.0);
  return done(c, c.constant(std::move(t)));
}

const std::vector<OpLowering> kTable = {
    {"Constant", {1, 9, 11, 12, 13, 19, 21, 23, 24, 25}, lowerConstant, "constant (large ones: a parameter)"},
    {"Identity", {1, 13, 14, 16, 19, 21, 23, 24, 25}, lowerIdentity, "nothing (the value itself)"},
    {"Shape", {1, 13, 15, 19, 21, 23, 24, 25}, lowerShape, "constant"},
    {"Size", {1, 13, 19, 21, 23, 24, 25}, lowerSize, "constant"},
    {"ConstantOfShape", {9, 20, 21, 23, 24, 25}, lowerConstantOfShape, "constant (or expand of a scalar when large)"},
    {"Range", {11, 27}, lowerRange, "constant (inputs known at import)"},
    {"EyeLike", {9, 22}, lowerEyeLike, "constant"},
};

}  // namespace

std::span<const OpLowering> constantLowerings() { return kTable; }

}  // namespace kfuse::onnx_import
