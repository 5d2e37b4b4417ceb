// Index-driven ONNX ops built on kfuse's gather: GatherElements and GatherND
// become one gather from the flattened data with flat indices (run-time
// indices times constant strides, plus constant offsets: shapes are static);
// OneHot compares indices with a constant iota.
#include "frontend/onnx/lower_util.h"
#include "frontend/onnx/op_table.h"

namespace kfuse::onnx_import {
namespace {

Tensor i64Tensor(const Shape& shape, const std::vector<int64_t>& values) {
  Tensor t(TensorType(DType::I64, shape));
  for (size_t i = 0; i < values.size(); ++i) t.as<int64_t>()[i] = values[i];
  return t;
}

// Indices as i64 with negative ones counted from the end of `extent`
// (a scalar, or a constant broadcasting against the indices).
Expected<Value*> normalizedIndices(LoweringContext& c, Value* indices, Value* extent) {
  KF_ASSIGN_OR_RETURN(Value* idx, castTo(c, indices, DType::I64));
  KF_ASSIGN_OR_RETURN(Value* negative, c.build("less", {idx, c.scalar(DType::I64, 0)}));
  KF_ASSIGN_OR_RETURN(Value* wrapped, c.build("add", {idx, extent}));
  return c.build("where", {negative, wrapped, idx});
}

Expected<Value*> flatten1d(LoweringContext& c, Value* data) {
  return reshapeTo(c, data, {data->type().numElements()});
}

}  // namespace

// out[i] = data[i with i[axis] replaced by indices[i]]: flat index
// offset(i without axis) + indices[i] * stride[axis].
Expected<Value*> gatherElements(LoweringContext& c, Value* data, Value* indices, int64_t axis) {
  const Shape& ds = data->type().shape;
  const Shape& is = indices->type().shape;
  auto rank = static_cast<int64_t>(ds.size());
  if (is.size() != ds.size()) return Error("data and indices must have the same rank");
  KF_ASSIGN_OR_RETURN(axis, normalizedAxis(axis, rank, "attribute axis"));
  std::vector<int64_t> strides = stridesOf(ds), offsets;
  std::vector<int64_t> index(is.size(), 0);
  for (int64_t flat = 0; flat < numElements(is); ++flat) {
    int64_t off = 0;
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis) off += index[static_cast<size_t>(d)] * strides[static_cast<size_t>(d)];
    offsets.push_back(off);
    for (int64_t d = rank - 1; d >= 0 && ++index[static_cast<size_t>(d)] == is[static_cast<size_t>(d)]; --d)
      index[static_cast<size_t>(d)] = 0;
  }
  auto extent = static_cast<double>(ds[static_cast<size_t>(axis)]);
  KF_ASSIGN_OR_RETURN(Value* idx, normalizedIndices(c, indices, c.scalar(DType::I64, extent)));
  auto stride = static_cast<double>(strides[static_cast<size_t>(axis)]);
  KF_ASSIGN_OR_RETURN(Value* scaled, c.build("mul", {idx, c.scalar(DType::I64, stride)}));
  KF_ASSIGN_OR_RETURN(Value* flatIdx, c.build("add", {scaled, c.constant(i64Tensor(is, offsets))}));
  KF_ASSIGN_OR_RETURN(Value* flatData, flatten1d(c, data));
  return c.build("gather", {flatData, flatIdx}, {{"axis", int64_t{0}}});
}

namespace {

Status lowerGatherElements(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* data, c.input(0));
  KF_ASSIGN_OR_RETURN(Value* indices, c.input(1));
  KF_ASSIGN_OR_RETURN(int64_t axis, c.attrs().getInt("axis", 0));
  KF_ASSIGN_OR_RETURN(Value* y, gatherElements(c, data, indices, axis));
  return done(c, y);
}

// GatherND (batch_dims = 0): the last axis of indices, of length k, picks a
// slice of data's first k axes; data is viewed as [prod(first k), rest...]
// and gathered with the flat index sum_j indices[..., j] * stride_j.
Status lowerGatherND(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* data, c.input(0));
  KF_ASSIGN_OR_RETURN(Value* indices, c.input(1));
  KF_ASSIGN_OR_RETURN(int64_t batchDims, c.attrs().getInt("batch_dims", 0));
  if (batchDims != 0) return c.unsupported("GatherND with batch_dims != 0");
  const Shape& ds = data->type().shape;
  const Shape& is = indices->type().shape;
  if (is.empty() || is.back() < 1 || is.back() > static_cast<int64_t>(ds.size()))
    return Error(str("indices ", formatType(indices->type()), " do not index data ", formatType(data->type())));
  auto k = static_cast<size_t>(is.back());
  Shape lead(ds.begin(), ds.begin() + static_cast<std::ptrdiff_t>(k));
  std::vector<int64_t> leadStrides = stridesOf(lead);
  KF_ASSIGN_OR_RETURN(Value* idx,
                      normalizedIndices(c, indices, c.constant(i64Tensor({static_cast<int64_t>(k)}, lead))));
  KF_ASSIGN_OR_RETURN(Value* weighted,
                      c.build("mul", {idx, c.constant(i64Tensor({static_cast<int64_t>(k)}, leadStrides))}));
  KF_ASSIGN_OR_RETURN(Value* flatIdx, c.build("reduce_sum", {weighted}, {{"axes", Attribute(std::vector<int64_t>{-1})}}));
  Shape view{numElements(lead)};
  view.insert(view.end(), ds.begin() + static_cast<std::ptrdiff_t>(k), ds.end());
  KF_ASSIGN_OR_RETURN(Value* flatData, reshapeTo(c, data, view));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("gather", {flatData, flatIdx}, {{"axis", int64_t{0}}}));
  return done(c, y);
}

// OneHot: on where the index (negative ones wrapped by depth) equals the
// position along the new axis, off elsewhere (out-of-range indices: all off).
Status lowerOneHot(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* indices, c.input(0));
  KF_ASSIGN_OR_RETURN(Tensor depthT, c.constantInput(1));
  KF_ASSIGN_OR_RETURN(Value* values, c.input(2));
  KF_ASSIGN_OR_RETURN(int64_t axis, c.attrs().getInt("axis", -1));
  if (depthT.numElements() != 1) return Error("depth must be a scalar");
  auto depth = static_cast<int64_t>(depthT.at(0));
  if (depth < 1 || depth > (int64_t{1} << 24)) return Error(str("depth ", depth, " is out of range"));
  if (values->type().numElements() != 2) return Error("values must hold [off, on]");
  auto outRank = static_cast<int64_t>(indices->type().rank()) + 1;
  KF_ASSIGN_OR_RETURN(axis, normalizedAxis(axis, outRank, "attribute axis"));
  KF_ASSIGN_OR_RETURN(Value* idx, normalizedIndices(c, indices, c.scalar(DType::I64, static_cast<double>(depth))));
  KF_ASSIGN_OR_RETURN(idx, c.build("unsqueeze", {idx}, {{"axes", Attribute(std::vector<int64_t>{axis})}}));
  Shape iotaShape(static_cast<size_t>(outRank), 1);
  iotaShape[static_cast<size_t>(axis)] = depth;
  std::vector<int64_t> iota(static_cast<size_t>(depth));
  for (int64_t i = 0; i < depth; ++i) iota[static_cast<size_t>(i)] = i;
  KF_ASSIGN_OR_RETURN(Value* hit, c.build("equal", {idx, c.constant(i64Tensor(iotaShape, iota))}));
  KF_ASSIGN_OR_RETURN(Value* flatValues, reshapeTo(c, values, {2}));
  KF_ASSIGN_OR_RETURN(auto offOn, c.buildMulti("split", {flatValues}, {{"sizes", Attribute(std::vector<int64_t>{1, 1})}}));
  KF_ASSIGN_OR_RETURN(Value* off, reshapeTo(c, offOn[0], {}));
  KF_ASSIGN_OR_RETURN(Value* on, reshapeTo(c, offOn[1], {}));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("where", {hit, on, off}));
  return done(c, y);
}

const std::vector<OpLowering> kTable = {
    {"GatherElements", {11, 13}, lowerGatherElements, "gather from the flattened data (flat indices: mul + add)"},
    {"GatherND", {11, 12, 13}, lowerGatherND, "gather from a reshaped view (flat indices: mul + reduce_sum)"},
    {"OneHot", {9, 11, 28}, lowerOneHot, "equal with a constant iota + where"},
};

}  // namespace

std::span<const OpLowering> gatherLowerings() { return kTable; }

}  // namespace kfuse::onnx_import
