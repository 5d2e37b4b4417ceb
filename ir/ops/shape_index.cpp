// Data-movement ops that compute source indices: slice, pad and gather
// (which is also the embedding lookup). Like shape.cpp, the reference
// implementations copy raw element bytes so every dtype moves exactly.
#include <cstring>
#include <limits>

#include "ir/ops/op_helpers.h"

namespace kfuse {

void registerShapeIndexOps(OpRegistry& r);  // called by registerShapeOps (shape.cpp)
void registerScatterOps(OpRegistry& r);     // scatter.cpp

namespace {
using ops::one;
using ops::SliceAxis;
using ops::sliceAxes;
using Results = Expected<std::vector<TensorType>>;
using Tensors = Expected<std::vector<Tensor>>;
using Inputs = std::span<const Tensor* const>;
using Outputs = std::span<const TensorType>;

OpDef indexOp(std::string name, std::string summary, int arity, std::vector<AttrSpec> attrs, InferFn infer,
              ReferenceFn ref) {
  OpDef d;
  d.name = std::move(name);
  d.summary = std::move(summary);
  d.minInputs = d.maxInputs = arity;
  d.attrs = std::move(attrs);
  d.fusion = FusionClass::Injective;
  d.infer = std::move(infer);
  d.reference = std::move(ref);
  return d;
}

// ------------------------------------------------------------ slice


Results inferSlice(const OpCall& c) {
  KF_ASSIGN_OR_RETURN(auto axes, sliceAxes(c));
  Shape shape;
  for (const SliceAxis& a : axes) shape.push_back(a.count);
  KF_RETURN_IF_ERROR(checkShapeBounds(shape, "result shape"));
  return one(TensorType(c.inputs[0].dtype, shape));
}

Tensors referenceSlice(const OpCall& c, Inputs in, Outputs out) {
  KF_ASSIGN_OR_RETURN(auto axes, sliceAxes(c));
  const Tensor& x = *in[0];
  Tensor y(out[0]);
  std::vector<int64_t> src(axes.size());
  ops::forEachIndex(out[0].shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
    for (size_t d = 0; d < axes.size(); ++d) src[d] = axes[d].start + idx[d] * axes[d].step;
    ops::copyElement(x, ops::flatOffset(src, x.shape()), y, flat);
  });
  return std::vector<Tensor>{std::move(y)};
}

// ------------------------------------------------------------ pad

// Result coordinate o on axis d reads input coordinate o - begin[d]; outside
// the input, the mode decides. Negative pads therefore crop.
Results inferPad(const OpCall& c) {
  const TensorType& x = c.inputs[0];
  const std::vector<int64_t>& pads = c.getInts("pads");
  const std::string& mode = c.getString("mode");
  size_t rank = x.rank();
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return Error(str("attribute mode = \"", mode, "\" is not one of \"constant\", \"reflect\", \"edge\""));
  if (pads.size() != 2 * rank)
    return Error(str("attribute pads = ", ops::listText(pads), " has ", pads.size(), " entries, but ", formatType(x),
                     " needs 2 * rank = ", 2 * rank, " (all begins, then all ends)"));
  Shape shape;
  for (size_t d = 0; d < rank; ++d) {
    int64_t size = x.shape[d], begin = pads[d], end = pads[d + rank];
    // Bounded operands keep the sum below from overflowing.
    for (int64_t v : {size, begin, end})
      if (v < -kMaxElements || v > kMaxElements)
        return Error(str("attribute pads = ", ops::listText(pads), " on ", formatType(x), " exceeds 2^48 elements"));
    if (size + begin + end < 0)
      return Error(str("attribute pads = ", ops::listText(pads), " crops axis ", d, " of ", formatType(x), " below zero (",
                       size, " + ", begin, " + ", end, ")"));
    bool grows = begin > 0 || end > 0;
    if (mode == "reflect" && grows && (begin >= size || end >= size))
      return Error(str("reflect padding of axis ", d, " of ", formatType(x), " by ", begin, " and ", end,
                       " needs pads smaller than its size ", size));
    if (mode == "edge" && grows && size == 0)
      return Error(str("edge padding cannot grow axis ", d, " of ", formatType(x), ": it is empty"));
    shape.push_back(size + begin + end);
  }
  KF_RETURN_IF_ERROR(checkShapeBounds(shape, "result shape"));
  return one(TensorType(x.dtype, shape));
}

// The input coordinate that result coordinate i - begin maps to on an axis of
// the given size, or -1 for the constant value.
int64_t padSource(int64_t i, int64_t size, const std::string& mode) {
  if (i >= 0 && i < size) return i;
  if (mode == "edge") return i < 0 ? 0 : size - 1;
  if (mode == "reflect") return i < 0 ? -i : 2 * (size - 1) - i;  // mirror without repeating the edge
  return -1;
}

Tensors referencePad(const OpCall& c, Inputs in, Outputs out) {
  const Tensor& x = *in[0];
  const std::vector<int64_t>& pads = c.getInts("pads");
  const std::string& mode = c.getString("mode");
  Tensor y(out[0]);
  std::vector<int64_t> src(x.shape().size());
  ops::forEachIndex(out[0].shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
    bool inside = true;
    for (size_t d = 0; d < src.size(); ++d) {
      src[d] = padSource(idx[d] - pads[d], x.shape()[d], mode);
      inside &= src[d] >= 0;
    }
    if (inside)
      ops::copyElement(x, ops::flatOffset(src, x.shape()), y, flat);
    else
      y.set(flat, c.getFloat("value"));
  });
  return std::vector<Tensor>{std::move(y)};
}

// Constant padding as blocks: the operand's part that survives the crops,
// placed at max(begin, 0) on each axis, and the fill around it as up to
// two slabs per axis (before and after the copy along that axis, spanning
// the copy's extent on earlier axes and the whole result on later ones).
Expected<std::vector<Piece>> padPieces(const OpCall& c, const TensorType& result) {
  if (c.getString("mode") != "constant") return Error("only constant padding is made of blocks");
  const Shape& xs = c.inputs[0].shape;
  const std::vector<int64_t>& pads = c.getInts("pads");
  const size_t rank = xs.size();
  Piece copy{0, 0, Shape(rank), std::vector<int64_t>(rank), std::vector<int64_t>(rank)};
  bool empty = false;
  for (size_t d = 0; d < rank; ++d) {
    int64_t begin = pads[d], end = pads[d + rank];
    copy.resultStart[d] = std::max<int64_t>(begin, 0);
    copy.operandStart[d] = std::max<int64_t>(-begin, 0);
    copy.extent[d] = std::max<int64_t>(xs[d] - copy.operandStart[d] - std::max<int64_t>(-end, 0), 0);
    empty |= copy.extent[d] == 0;
  }
  const double value = c.getFloat("value");
  if (empty) return std::vector<Piece>{{-1, value, result.shape, std::vector<int64_t>(rank, 0), {}}};
  std::vector<Piece> out{copy};
  for (size_t d = 0; d < rank; ++d) {
    Piece slab{-1, value, Shape(rank), std::vector<int64_t>(rank, 0), {}};
    for (size_t e = 0; e < rank; ++e) {
      slab.extent[e] = e < d ? copy.extent[e] : result.shape[e];
      slab.resultStart[e] = e < d ? copy.resultStart[e] : 0;
    }
    const int64_t lo = copy.resultStart[d], hi = lo + copy.extent[d];
    if (lo > 0) {
      slab.extent[d] = lo;
      out.push_back(slab);
    }
    if (hi < result.shape[d]) {
      slab.resultStart[d] = hi;
      slab.extent[d] = result.shape[d] - hi;
      out.push_back(slab);
    }
  }
  return out;
}

// ------------------------------------------------------------ gather

Results inferGather(const OpCall& c) {
  const TensorType &data = c.inputs[0], &indices = c.inputs[1];
  if (indices.dtype != DType::I64 && indices.dtype != DType::I32)
    return Error(str("operand 1 (indices) must be i64 or i32, got ", formatType(indices)));
  KF_ASSIGN_OR_RETURN(int64_t axis, ops::axisAttr(c, "axis", static_cast<int64_t>(data.rank())));
  Shape shape(data.shape.begin(), data.shape.begin() + axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  KF_RETURN_IF_ERROR(checkShapeBounds(shape, "result shape"));
  return one(TensorType(data.dtype, shape));
}

// ONNX Gather: out[pre, j, post] = data[pre, indices[j], post]. Every index
// is checked first, so a bad one is reported even when the result is empty.
Tensors referenceGather(const OpCall& c, Inputs in, Outputs out) {
  const Tensor &data = *in[0], &indices = *in[1];
  KF_ASSIGN_OR_RETURN(int64_t axis, ops::axisAttr(c, "axis", static_cast<int64_t>(data.shape().size())));
  int64_t size = data.shape()[axis];
  for (int64_t i = 0; i < indices.numElements(); ++i) {
    int64_t v = ops::readIndex(indices, i);
    if (v < -size || v >= size)
      return Error(str("index ", v, " at position ", i, " is out of range for axis ", axis, " of size ", size));
  }
  // out = [pre, j, post]: for each of the `outer` prefixes and each index j,
  // one contiguous block of `inner` elements copied bit for bit.
  const Shape& ds = data.shape();
  int64_t outer = numElements(Shape(ds.begin(), ds.begin() + axis));
  int64_t inner = numElements(Shape(ds.begin() + axis + 1, ds.end()));
  const size_t element = dtypeSize(data.dtype());
  const size_t block = static_cast<size_t>(inner) * element;
  const int64_t count = indices.numElements();
  Tensor y(out[0]);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < count; ++j) {
      int64_t v = ops::readIndex(indices, j);
      if (v < 0) v += size;
      if (block == 0) continue;
      std::memcpy(y.data() + static_cast<size_t>(o * count + j) * block,
                  data.data() + static_cast<size_t>(o * size + v) * block, block);
    }
  return std::vector<Tensor>{std::move(y)};
}

// ------------------------------------------------------------ gradients

// Operand index along each axis = start + step * result index.
Expected<std::vector<AxisMap>> sliceMap(const OpCall& c, const Shape&) {
  KF_ASSIGN_OR_RETURN(auto axes, sliceAxes(c));
  std::vector<AxisMap> map;
  for (size_t d = 0; d < axes.size(); ++d) map.push_back(AxisMap{static_cast<int64_t>(d), axes[d].step, axes[d].start});
  return map;
}

// gather_grad(dy, indices) {axis, size}: the data gradient of gather, i.e.
// dy scattered back and summed where an index repeats (an embedding row used
// twice gets both gradients).
Results inferGatherGrad(const OpCall& c) {
  const TensorType &dy = c.inputs[0], &indices = c.inputs[1];
  KF_RETURN_IF_ERROR(ops::requireFloat(c, 0));
  if (indices.dtype != DType::I64 && indices.dtype != DType::I32)
    return Error(str("operand 1 (indices) must be i64 or i32, got ", formatType(indices)));
  int64_t axis = c.getInt("axis"), size = c.getInt("size");
  auto ri = static_cast<int64_t>(indices.rank());
  if (axis < 0 || axis + ri > static_cast<int64_t>(dy.rank()))
    return Error(str("attribute axis = ", axis, " does not fit dy ", formatType(dy), " with indices of rank ", ri));
  if (size < 1) return Error(str("attribute size = ", size, " must be positive"));
  for (int64_t d = 0; d < ri; ++d)
    if (dy.shape[axis + d] != indices.shape[d])
      return Error(str("dy ", formatType(dy), " does not match indices ", formatType(indices), " at axis ", axis));
  Shape shape(dy.shape.begin(), dy.shape.begin() + axis);
  shape.push_back(size);
  shape.insert(shape.end(), dy.shape.begin() + axis + ri, dy.shape.end());
  return one(TensorType(dy.dtype, shape));
}

Tensors referenceGatherGrad(const OpCall& c, Inputs in, Outputs out) {
  const Tensor &dy = *in[0], &indices = *in[1];
  int64_t axis = c.getInt("axis"), size = c.getInt("size");
  auto ri = static_cast<int64_t>(indices.shape().size());
  std::vector<double> acc(static_cast<size_t>(out[0].numElements()), 0.0);
  for (int64_t i = 0; i < indices.numElements(); ++i) {
    int64_t v = ops::readIndex(indices, i);
    if (v < -size || v >= size)
      return Error(str("index ", v, " at position ", i, " is out of range for axis ", axis, " of size ", size));
  }
  // dy = [pre, j, post]: row j of each prefix is added to row indices[j]
  // of the result, in dy's row-major order (the order the sums are made in
  // fixes their rounding), one contiguous row of `inner` at a time.
  const Shape& ds = dy.shape();
  const int64_t outer = numElements(Shape(ds.begin(), ds.begin() + axis));
  const int64_t inner = numElements(Shape(ds.begin() + axis + ri, ds.end()));
  const int64_t count = indices.numElements();
  auto scatter = [&](const auto* src) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < count; ++j) {
        int64_t v = ops::readIndex(indices, j);
        if (v < 0) v += size;
        const auto* from = src + (o * count + j) * inner;
        double* to = acc.data() + (o * size + v) * inner;
        for (int64_t t = 0; t < inner; ++t) to[t] += static_cast<double>(from[t]);
      }
  };
  if (dy.dtype() != DType::F32) {  // f32, the common case, is read and written directly
    const std::vector<double> src = dy.toDoubles();
    scatter(src.data());
    return std::vector<Tensor>{Tensor::fromDoubles(out[0], acc)};
  }
  scatter(dy.as<float>());
  Tensor y(out[0]);
  float* to = y.as<float>();
  for (size_t i = 0; i < acc.size(); ++i) to[i] = static_cast<float>(acc[i]);
  return std::vector<Tensor>{std::move(y)};
}

// ------------------------------------------------------------ interleave
// The inverse of strided slicing: operand i fills the lattice of result
// positions offsets[i] + steps * j. The operands cover every residue class
// of the steps exactly once (offsets in [0, step) per dim, all distinct), so
// each result element comes from one operand: the gradient of a strided
// slicing, and how a pooling's backward assembles its phases
// (passes/pool_expand.cpp).

// Operand i's offsets, checked against the steps and the result's shape.
Expected<std::vector<std::vector<int64_t>>> interleaveOffsets(const OpCall& c) {
  const std::vector<int64_t>& shape = c.getInts("shape");
  const std::vector<int64_t>& steps = c.getInts("steps");
  const std::vector<int64_t>& flat = c.getInts("offsets");
  const size_t rank = shape.size();
  if (steps.size() != rank) return Error(str("steps ", ops::listText(steps), " must have one entry per dim of shape ", ops::listText(shape)));
  if (flat.size() != rank * c.inputs.size())
    return Error(str("offsets must hold ", rank, " entries per operand (", rank * c.inputs.size(), "), got ", flat.size()));
  int64_t classes = 1;
  for (size_t d = 0; d < rank; ++d) {
    if (shape[d] < 0) return Error(str("shape ", ops::listText(shape), " has a negative size"));
    if (steps[d] < 1) return Error(str("steps ", ops::listText(steps), " must be at least 1"));
    if (steps[d] > 64) return Error(str("steps ", ops::listText(steps), " above 64 interleave too many operands"));
    classes *= steps[d];
  }
  if (static_cast<int64_t>(c.inputs.size()) != classes)
    return Error(str("steps ", ops::listText(steps), " make ", classes, " residue classes, one operand each; got ", c.inputs.size(), " operands"));
  std::vector<std::vector<int64_t>> offsets;
  std::vector<bool> seen(static_cast<size_t>(classes), false);
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    std::vector<int64_t> o(flat.begin() + static_cast<std::ptrdiff_t>(i * rank), flat.begin() + static_cast<std::ptrdiff_t>((i + 1) * rank));
    int64_t cls = 0;
    for (size_t d = 0; d < rank; ++d) {
      if (o[d] < 0 || o[d] >= steps[d])
        return Error(str("operand ", i, "'s offsets ", ops::listText(o), " must lie in [0, step) per dim"));
      cls = cls * steps[d] + o[d];
      const int64_t want = shape[d] > o[d] ? (shape[d] - o[d] + steps[d] - 1) / steps[d] : 0;
      if (c.inputs[i].rank() != rank || c.inputs[i].shape[d] != want)
        return Error(str("operand ", i, " (", formatType(c.inputs[i]), ") must have ", want, " elements along dim ", d,
                         ": the positions ", o[d], ", ", o[d], " + ", steps[d], ", ... below ", shape[d]));
    }
    if (seen[static_cast<size_t>(cls)]) return Error(str("operand ", i, "'s offsets ", ops::listText(o), " repeat another operand's"));
    seen[static_cast<size_t>(cls)] = true;
    offsets.push_back(std::move(o));
  }
  return offsets;
}

Results inferInterleave(const OpCall& c) {
  for (size_t i = 1; i < c.inputs.size(); ++i) KF_RETURN_IF_ERROR(ops::requireSameDType(c, 0, i));
  KF_RETURN_IF_ERROR(interleaveOffsets(c).status());
  KF_RETURN_IF_ERROR(checkShapeBounds(c.getInts("shape"), "result shape"));
  return one(TensorType(c.inputs[0].dtype, c.getInts("shape")));
}

Tensors referenceInterleave(const OpCall& c, Inputs in, Outputs out) {
  KF_ASSIGN_OR_RETURN(auto offsets, interleaveOffsets(c));
  const std::vector<int64_t>& steps = c.getInts("steps");
  Tensor y(out[0]);
  for (size_t i = 0; i < in.size(); ++i)
    ops::forEachIndex(in[i]->shape(), [&](const std::vector<int64_t>& idx, int64_t flat) {
      std::vector<int64_t> dst = idx;
      for (size_t d = 0; d < dst.size(); ++d) dst[d] = offsets[i][d] + steps[d] * idx[d];
      ops::copyElement(*in[i], flat, y, ops::flatOffset(dst, y.shape()));
    });
  return std::vector<Tensor>{std::move(y)};
}

// Each operand whole, on its lattice.
Expected<std::vector<Piece>> interleavePieces(const OpCall& c, const TensorType&) {
  KF_ASSIGN_OR_RETURN(auto offsets, interleaveOffsets(c));
  std::vector<Piece> out;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    Piece p{static_cast<int>(i), 0, c.inputs[i].shape, offsets[i], std::vector<int64_t>(offsets[i].size(), 0)};
    p.resultStep = c.getInts("steps");
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

void registerShapeIndexOps(OpRegistry& r) {
  OpDef& slice = r.add(indexOp("slice", "ONNX Slice: starts/ends/axes/steps, negative and out-of-range values allowed", 1,
                {{"starts", AttrKind::Ints, std::nullopt},
                 {"ends", AttrKind::Ints, std::nullopt},
                 {"axes", AttrKind::Ints, Attribute(std::vector<int64_t>{})},
                 {"steps", AttrKind::Ints, Attribute(std::vector<int64_t>{})}},
                inferSlice, referenceSlice));
  slice.affine = sliceMap;
  OpDef& pad = r.add(indexOp("pad", "pads (all begins, then all ends; negative crops) by mode constant, reflect or edge", 1,
                {{"pads", AttrKind::Ints, std::nullopt},
                 {"mode", AttrKind::String, Attribute("constant")},
                 {"value", AttrKind::Float, Attribute(0.0)}},
                inferPad, referencePad));
  pad.pieces = padPieces;
  OpDef& gather = r.add(indexOp("gather", "ONNX Gather along `axis` with i64/i32 indices (negative count from the end)", 2,
                {{"axis", AttrKind::Int, Attribute(int64_t{0})}}, inferGather, referenceGather));
  gather.gatherAxis = [](const OpCall& c) {
    return ops::axisAttr(c, "axis", static_cast<int64_t>(c.inputs[0].rank()));
  };
  OpDef gatherGradOp = indexOp("gather_grad",
                               "gather backward: dy scattered to `size` rows along `axis`, summed where indices repeat",
                               2, {{"axis", AttrKind::Int, std::nullopt}, {"size", AttrKind::Int, std::nullopt}},
                               inferGatherGrad, referenceGatherGrad);
  gatherGradOp.fusion = FusionClass::Opaque;
  gatherGradOp.scatterAxis = [](const OpCall& c) -> Expected<int64_t> { return c.getInt("axis"); };
  r.add(std::move(gatherGradOp));
  OpDef inter = indexOp("interleave",
                        "the inverse of strided slicing: operand i fills the result positions offsets[i] + steps * j; "
                        "one operand per residue class of the steps",
                        1,
                        {{"shape", AttrKind::Ints, std::nullopt},
                         {"steps", AttrKind::Ints, std::nullopt},
                         {"offsets", AttrKind::Ints, std::nullopt}},
                        inferInterleave, referenceInterleave);
  inter.maxInputs = -1;
  inter.pieces = interleavePieces;
  r.add(std::move(inter));
  registerScatterOps(r);
}

}  // namespace kfuse
