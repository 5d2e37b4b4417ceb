// scatter_nd: the one scatter op. ONNX ScatterND's form is the general one:
// the last axis of `indices` holds full or partial coordinates into data, so
// ScatterElements (a coordinate per element) and the scatter-add gradients
// of gathers are all expressible through it, and index range checks stay
// per coordinate, inside the op, where a run-time index is seen.
//
// The indices are run-time data, so the op has no kernel form: it is opaque
// and runs as a reference step on every target.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/ops/op_helpers.h"

namespace kfuse {

void registerScatterOps(OpRegistry& r);  // called by registerShapeIndexOps (shape_index.cpp)

namespace {

using ops::one;
using Tensors = Expected<std::vector<Tensor>>;

// How an update combines with the element it lands on; "none" replaces it.
enum class Reduction { None, Add, Mul, Max, Min };

Expected<Reduction> reductionAttr(const OpCall& c) {
  const std::string& r = c.getString("reduction");
  if (r == "none") return Reduction::None;
  if (r == "add") return Reduction::Add;
  if (r == "mul") return Reduction::Mul;
  if (r == "max") return Reduction::Max;
  if (r == "min") return Reduction::Min;
  return Error(str("attribute reduction = \"", r, "\" is not one of \"none\", \"add\", \"mul\", \"max\", \"min\""));
}

// updates must be indices.shape[:-1] + data.shape[k:], k = indices.shape[-1].
Expected<std::vector<TensorType>> inferScatterNd(const OpCall& c) {
  const TensorType &data = c.inputs[0], &indices = c.inputs[1], &updates = c.inputs[2];
  KF_RETURN_IF_ERROR(reductionAttr(c).status());
  if (indices.dtype != DType::I64 && indices.dtype != DType::I32)
    return Error(str("operand 1 (indices) must be i64 or i32, got ", formatType(indices)));
  if (indices.rank() == 0) return Error(str("operand 1 (indices) must have rank >= 1, got ", formatType(indices)));
  const int64_t k = indices.shape.back();
  if (k > static_cast<int64_t>(data.rank()))
    return Error(str("operand 1 (indices) ", formatType(indices), " has coordinates of length ", k,
                     ", more than the rank of operand 0 (data) ", formatType(data)));
  KF_RETURN_IF_ERROR(ops::requireSameDType(c, 0, 2));
  Shape want(indices.shape.begin(), indices.shape.end() - 1);
  want.insert(want.end(), data.shape.begin() + k, data.shape.end());
  if (updates.shape != want)
    return Error(str("operand 2 (updates) ", formatType(updates), " must have shape ", ops::listText(want),
                     " (indices ", formatType(indices), " into data ", formatType(data), ")"));
  if (c.getString("reduction") != "none") KF_RETURN_IF_ERROR(ops::requireNumeric(c, 0));
  return one(TensorType(data.dtype, data.shape));
}

// "[1, 0]": the multi-index of coordinate tuple i among indices.shape[:-1].
std::string tuplePosition(const Shape& indicesShape, int64_t i) {
  std::vector<int64_t> pos(indicesShape.size() - 1);
  for (size_t d = pos.size(); d-- > 0;) {
    pos[d] = i % indicesShape[d];
    i /= indicesShape[d];
  }
  return ops::listText(pos);
}

// The flat offset of the data slice each coordinate tuple addresses, in
// units of slices of data.shape[k:]; an Error naming the first bad index.
// Every index is checked before anything is written.
Expected<std::vector<int64_t>> sliceOffsets(const Tensor& data, const Tensor& indices) {
  const int64_t k = indices.shape().back();
  const int64_t n = numElements(Shape(indices.shape().begin(), indices.shape().end() - 1));
  std::vector<int64_t> offsets(static_cast<size_t>(n), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t size = data.shape()[static_cast<size_t>(j)];
      const int64_t v = ops::readIndex(indices, i * k + j);
      if (v < -size || v >= size)
        return Error(str("index ", v, " at indices", tuplePosition(indices.shape(), i), "[", j, "] (indices ",
                         formatType(indices.type()), ") is out of range for axis ", j, " of data ",
                         formatType(data.type()), " (size ", size, ")"));
      off = off * size + (v < 0 ? v + size : v);
    }
    offsets[static_cast<size_t>(i)] = off;
  }
  return offsets;
}

// max/min propagating NaN, as reduce_max/reduce_min and np.maximum do.
double combine(Reduction r, double acc, double x) {
  if ((r == Reduction::Max || r == Reduction::Min) && (std::isnan(acc) || std::isnan(x)))
    return std::numeric_limits<double>::quiet_NaN();
  switch (r) {
    case Reduction::Add: return acc + x;
    case Reduction::Mul: return acc * x;
    case Reduction::Max: return std::max(acc, x);
    case Reduction::Min: return std::min(acc, x);
    case Reduction::None: break;
  }
  return x;
}

// In the order of the indices, so a repeated index with reduction none
// keeps the last update (ONNX leaves it undefined; its reference does this).
// Reductions round on every store, as ONNX's reference does in the data's
// dtype, rather than accumulating in double.
Tensors referenceScatterNd(const OpCall& c, std::span<const Tensor* const> in, std::span<const TensorType> out) {
  const Tensor &data = *in[0], &indices = *in[1], &updates = *in[2];
  KF_ASSIGN_OR_RETURN(Reduction red, reductionAttr(c));
  KF_ASSIGN_OR_RETURN(std::vector<int64_t> offsets, sliceOffsets(data, indices));
  const int64_t k = indices.shape().back();
  const int64_t slice = numElements(Shape(data.shape().begin() + k, data.shape().end()));
  Tensor y = Tensor::copyOf(out[0], data.data());
  for (size_t i = 0; i < offsets.size(); ++i) {
    for (int64_t e = 0; e < slice; ++e) {
      const int64_t from = static_cast<int64_t>(i) * slice + e, to = offsets[i] * slice + e;
      if (red == Reduction::None)
        ops::copyElement(updates, from, y, to);  // raw bytes: exact for every dtype
      else
        y.set(to, combine(red, y.at(to), updates.at(from)));
    }
  }
  return std::vector<Tensor>{std::move(y)};
}

}  // namespace

void registerScatterOps(OpRegistry& r) {
  OpDef d;
  d.name = "scatter_nd";
  d.summary =
      "ONNX ScatterND: data with the slices at coordinates indices[..., :] (i64/i32, negative count from the end) "
      "replaced by updates (last one wins) or combined by `reduction` add, mul, max or min";
  d.minInputs = d.maxInputs = 3;
  d.attrs = {{"reduction", AttrKind::String, Attribute("none")}};
  d.fusion = FusionClass::Opaque;
  d.infer = inferScatterNd;
  d.reference = referenceScatterNd;
  r.add(std::move(d));
}

}  // namespace kfuse
