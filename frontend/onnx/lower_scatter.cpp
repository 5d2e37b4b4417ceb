// Index-driven writes: ScatterND, ScatterElements, the deprecated Scatter
// and TensorScatter, all onto kfuse's scatter_nd, whose indices hold
// coordinates and which checks each index at run time. ScatterElements'
// indices give the coordinate along `axis` only; the others are the
// element's own position, constants since shapes are static, so each index
// becomes a full coordinate tuple: constant positions plus the index on the
// axis. TensorScatter's coordinates are built the same way.
#include "frontend/onnx/lower_util.h"
#include "frontend/onnx/op_table.h"

namespace kfuse::onnx_import {
namespace {

// The `reduction` attribute, checked against what the version allows:
// none only before version 16, max and min from version 18.
Expected<std::string> readReduction(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(std::string r, c.attrs().getString("reduction", "none"));
  const bool known = r == "none" || r == "add" || r == "mul" || r == "max" || r == "min";
  if (!known) return Error(str("attribute reduction = \"", r, "\" is not one of none, add, mul, max, min"));
  const int needs = r == "none" ? 0 : (r == "add" || r == "mul") ? 16 : 18;
  if (c.version() < needs)
    return Error(str("attribute reduction = \"", r, "\" needs ", c.opType(), " version ", needs, " or later"));
  return r;
}

Status requireRunnableDType(const Value* data, const std::string& reduction) {
  if (reduction != "none" && data->type().dtype == DType::Bool)
    return Error(str("reduction \"", reduction, "\" on bool data"));
  return Status::ok();
}

Status lowerScatterND(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* data, c.input(0));
  KF_ASSIGN_OR_RETURN(Value* indices, c.input(1));
  KF_ASSIGN_OR_RETURN(Value* updates, c.input(2));
  KF_ASSIGN_OR_RETURN(std::string reduction, readReduction(c));
  KF_RETURN_IF_ERROR(requireRunnableDType(data, reduction));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("scatter_nd", {data, indices, updates}, {{"reduction", reduction}}));
  return done(c, y);
}

// Coordinates [indices.shape..., rank] for ScatterElements: element p of
// indices addresses data[p with p[axis] replaced by indices[p]]. The
// constant part holds p with 0 on the axis; the run-time index is added in
// through a one-hot row, so a negative index stays negative for the op to
// wrap and check.
Expected<Value*> elementCoordinates(LoweringContext& c, Value* indices, int64_t axis) {
  const Shape& is = indices->type().shape;
  const auto rank = static_cast<int64_t>(is.size());
  Shape coordShape = is;
  coordShape.push_back(rank);
  Tensor base(TensorType(DType::I64, coordShape));
  std::vector<int64_t> pos(is.size(), 0);
  for (int64_t flat = 0; flat < numElements(is); ++flat) {
    for (int64_t d = 0; d < rank; ++d)
      base.as<int64_t>()[flat * rank + d] = d == axis ? 0 : pos[static_cast<size_t>(d)];
    for (int64_t d = rank - 1; d >= 0 && ++pos[static_cast<size_t>(d)] == is[static_cast<size_t>(d)]; --d)
      pos[static_cast<size_t>(d)] = 0;
  }
  Tensor oneHot(TensorType(DType::I64, {rank}));
  oneHot.as<int64_t>()[axis] = 1;
  KF_ASSIGN_OR_RETURN(Value* idx, castTo(c, indices, DType::I64));
  KF_ASSIGN_OR_RETURN(idx, c.build("unsqueeze", {idx}, {{"axes", Attribute(std::vector<int64_t>{-1})}}));
  KF_ASSIGN_OR_RETURN(Value* onAxis, c.build("mul", {idx, c.constant(std::move(oneHot))}));
  return c.build("add", {onAxis, c.constant(std::move(base))});
}

// ScatterElements (and Scatter, its former name, without reduction).
Status lowerScatterElements(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* data, c.input(0));
  KF_ASSIGN_OR_RETURN(Value* indices, c.input(1));
  KF_ASSIGN_OR_RETURN(Value* updates, c.input(2));
  KF_ASSIGN_OR_RETURN(int64_t axis, c.attrs().getInt("axis", 0));
  KF_ASSIGN_OR_RETURN(std::string reduction, readReduction(c));
  KF_RETURN_IF_ERROR(requireRunnableDType(data, reduction));
  const auto rank = static_cast<int64_t>(data->type().rank());
  if (rank == 0) return Error("data must have rank >= 1");
  KF_ASSIGN_OR_RETURN(axis, normalizedAxis(axis, rank, "attribute axis"));
  const Shape& is = indices->type().shape;
  if (static_cast<int64_t>(is.size()) != rank || updates->type().shape != is)
    return Error(str("indices ", formatType(indices->type()), " and updates ", formatType(updates->type()),
                     " must have one shape, of data's rank (data ", formatType(data->type()), ")"));
  const Shape& ds = data->type().shape;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && is[static_cast<size_t>(d)] > ds[static_cast<size_t>(d)])
      return Error(str("indices ", formatType(indices->type()), " exceed data ", formatType(data->type()),
                       " on axis ", d, ", which is not the scatter axis ", axis));
  if (indices->type().dtype != DType::I64 && indices->type().dtype != DType::I32)
    return Error(str("indices must be int64 or int32, got ", formatType(indices->type())));
  KF_ASSIGN_OR_RETURN(Value* coords, elementCoordinates(c, indices, axis));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("scatter_nd", {data, coords, updates}, {{"reduction", reduction}}));
  return done(c, y);
}

// Coordinates [update.shape[:axis + 1]..., axis + 1] for TensorScatter: each
// position of update up to the sequence axis, with the sequence coordinate
// moved by the batch's write index (added in through a one-hot row).
Expected<Value*> cacheCoordinates(LoweringContext& c, const Shape& lead, Value* writeIndices) {
  const auto n = static_cast<int64_t>(lead.size());  // axis + 1
  Shape coordShape = lead;
  coordShape.push_back(n);
  Tensor base(TensorType(DType::I64, coordShape));
  std::vector<int64_t> pos(lead.size(), 0);
  for (int64_t flat = 0; flat < numElements(lead); ++flat) {
    for (int64_t d = 0; d < n; ++d) base.as<int64_t>()[flat * n + d] = pos[static_cast<size_t>(d)];
    for (int64_t d = n - 1; d >= 0 && ++pos[static_cast<size_t>(d)] == lead[static_cast<size_t>(d)]; --d)
      pos[static_cast<size_t>(d)] = 0;
  }
  Value* coords = c.constant(std::move(base));
  if (!writeIndices) return coords;
  Tensor oneHot(TensorType(DType::I64, {n}));
  oneHot.as<int64_t>()[n - 1] = 1;
  Shape perBatch(static_cast<size_t>(n) + 1, 1);  // [batch, 1, ..., 1]
  perBatch[0] = lead[0];
  KF_ASSIGN_OR_RETURN(Value* w, castTo(c, writeIndices, DType::I64));
  KF_ASSIGN_OR_RETURN(w, reshapeTo(c, w, perBatch));
  KF_ASSIGN_OR_RETURN(Value* shift, c.build("mul", {w, c.constant(std::move(oneHot))}));
  return c.build("add", {coords, shift});
}

// TensorScatter-24 (KV-cache updates): update written into past_cache along
// `axis` from each batch's write index; circular mode wraps the sequence
// coordinate modulo the cache length. Every other coordinate is below its
// extent, so reducing them all modulo the cache's extents changes only the
// sequence one; integer div truncates, and a negative result is wrapped
// by scatter_nd as Python's % would.
Status lowerTensorScatter(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* past, c.input(0));
  KF_ASSIGN_OR_RETURN(Value* update, c.input(1));
  KF_ASSIGN_OR_RETURN(std::string mode, c.attrs().getString("mode", "linear"));
  KF_ASSIGN_OR_RETURN(int64_t axis, c.attrs().getInt("axis", -2));
  if (mode != "linear" && mode != "circular") return Error(str("mode = \"", mode, "\" is not linear or circular"));
  const Shape &ps = past->type().shape, &us = update->type().shape;
  KF_ASSIGN_OR_RETURN(axis, normalizedAxis(axis, static_cast<int64_t>(ps.size()), "attribute axis"));
  if (axis == 0) return Error("attribute axis must not be the batch axis 0");
  bool fits = us.size() == ps.size();
  for (size_t d = 0; fits && d < ps.size(); ++d)
    fits = static_cast<int64_t>(d) == axis ? us[d] <= ps[d] : us[d] == ps[d];
  if (!fits)
    return Error(str("update ", formatType(update->type()), " does not fit past_cache ", formatType(past->type()),
                     " (equal shapes but for axis ", axis, ", where it may be shorter)"));
  Value* writeIndices = nullptr;
  if (c.hasInput(2)) {
    KF_ASSIGN_OR_RETURN(writeIndices, c.input(2));
    if (writeIndices->type().shape != Shape{ps[0]})
      return Error(str("write_indices ", formatType(writeIndices->type()), " must hold one index per batch (", ps[0],
                       ")"));
  }
  const Shape lead(us.begin(), us.begin() + axis + 1);
  KF_ASSIGN_OR_RETURN(Value* coords, cacheCoordinates(c, lead, writeIndices));
  if (mode == "circular") {
    Tensor extents(TensorType(DType::I64, {axis + 1}));
    for (int64_t d = 0; d <= axis; ++d) extents.as<int64_t>()[d] = ps[static_cast<size_t>(d)];
    Value* m = c.constant(std::move(extents));
    KF_ASSIGN_OR_RETURN(Value* q, c.build("div", {coords, m}));
    KF_ASSIGN_OR_RETURN(Value* qm, c.build("mul", {q, m}));
    KF_ASSIGN_OR_RETURN(coords, c.build("sub", {coords, qm}));
  }
  KF_ASSIGN_OR_RETURN(Value* y, c.build("scatter_nd", {past, coords, update}));
  return done(c, y);
}

const std::vector<OpLowering> kTable = {
    {"Scatter", {9}, lowerScatterElements, "scatter_nd (coordinates: constant positions + the index on the axis)"},
    {"ScatterElements", {11, 13, 16, 18}, lowerScatterElements,
     "scatter_nd (coordinates: constant positions + the index on the axis)"},
    {"ScatterND", {11, 13, 16, 18}, lowerScatterND, "scatter_nd"},
    {"TensorScatter", {24}, lowerTensorScatter,
     "scatter_nd (coordinates: constant positions + the write index on the axis; circular: div + mul + sub)"},
};

}  // namespace

std::span<const OpLowering> scatterLowerings() { return kTable; }

}  // namespace kfuse::onnx_import
