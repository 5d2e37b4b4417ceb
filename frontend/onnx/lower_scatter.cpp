// Index-driven writes: ScatterND, ScatterElements and the deprecated Scatter,
// all onto kfuse's scatter_nd, whose indices hold coordinates and which
// checks each index at run time. ScatterElements' indices give the
// coordinate along `axis` only; the others are the element's own position,
// constants since shapes are static, so each index becomes a full
// coordinate tuple: constant positions plus the index on the axis.
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

const std::vector<OpLowering> kTable = {
    {"Scatter", {9}, lowerScatterElements, "scatter_nd (coordinates: constant positions + the index on the axis)"},
    {"ScatterElements", {11, 13, 16, 18}, lowerScatterElements,
     "scatter_nd (coordinates: constant positions + the index on the axis)"},
    {"ScatterND", {11, 13, 16, 18}, lowerScatterND, "scatter_nd"},
};

}  // namespace

std::span<const OpLowering> scatterLowerings() { return kTable; }

}  // namespace kfuse::onnx_import
