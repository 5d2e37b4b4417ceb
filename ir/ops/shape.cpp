// Data-movement ops: constants and ops that only rearrange elements (reshape,
// transpose, expand, concat, split, squeeze, unsqueeze, flatten) and
// shape_of. Slicing, padding and gathering live in shape_index.cpp.
//
// The reference implementations copy raw element bytes instead of going
// through Tensor::at/set, so every dtype moves exactly (i64 beyond 2^53
// included).
#include <cstring>

#include "ir/ops/op_helpers.h"

namespace kfuse {

void registerShapeIndexOps(OpRegistry& r);  // shape_index.cpp

namespace {
using ops::one;
using Results = Expected<std::vector<TensorType>>;
using Tensors = Expected<std::vector<Tensor>>;
using Inputs = std::span<const Tensor* const>;
using Outputs = std::span<const TensorType>;

// Element count without intermediate overflow: checks zeros first.
int64_t elementCount(const Shape& s) {
  for (int64_t d : s)
    if (d == 0) return 0;
  return numElements(s);
}

OpDef shapeOp(std::string name, std::string summary, std::vector<AttrSpec> attrs, InferFn infer, ReferenceFn ref) {
  OpDef d;
  d.name = std::move(name);
  d.summary = std::move(summary);
  d.minInputs = d.maxInputs = 1;
  d.attrs = std::move(attrs);
  d.fusion = FusionClass::Injective;
  d.infer = std::move(infer);
  d.reference = std::move(ref);
  return d;
}

// Reference of every op that keeps the elements in row-major order and only
// renames the shape (reshape, squeeze, unsqueeze, flatten).
Tensors sameBytes(const OpCall&, Inputs in, Outputs out) { return std::vector<Tensor>{in[0]->withType(out[0])}; }

void registerConstant(OpRegistry& r) {
  OpDef d;
  d.name = "constant";
  d.summary = "a tensor given by the `value` attribute";
  d.attrs = {{"value", AttrKind::Tensor, std::nullopt}};
  d.fusion = FusionClass::Injective;
  d.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> { return one(c.attr("value").asTensor().type()); };
  d.reference = [](const OpCall& c, std::span<const Tensor* const>,
                   std::span<const TensorType>) -> Expected<std::vector<Tensor>> {
    return std::vector<Tensor>{c.attr("value").asTensor()};
  };
  r.add(std::move(d));
}

// ------------------------------------------------------------ reshape family

Results inferReshape(const OpCall& c) {
  const TensorType& x = c.inputs[0];
  const std::vector<int64_t>& want = c.getInts("shape");
  Shape shape = want;
  int64_t inferred = -1;  // position of the -1, if any
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] < -1)
      return Error(str("attribute shape = ", ops::listText(want), " contains the negative size ", want[i],
                       " (only one -1, for an inferred size, is allowed)"));
    if (want[i] != -1) continue;
    if (inferred >= 0) return Error(str("attribute shape = ", ops::listText(want), " contains more than one -1"));
    inferred = static_cast<int64_t>(i);
    shape[i] = 1;
  }
  KF_RETURN_IF_ERROR(checkShapeBounds(shape, "attribute shape ="));
  int64_t n = elementCount(x.shape);
  int64_t known = numElements(shape);  // the -1 counted as 1
  if (inferred >= 0) {
    if (known == 0)
      return Error(str("cannot infer the -1 in shape ", formatDims(want), " for ", formatType(x),
                       ": the other sizes multiply to 0"));
    if (n % known != 0)
      return Error(str("cannot reshape ", formatType(x), " (", n, " elements) to ", formatDims(want), ": ", n,
                       " is not a multiple of ", known));
    shape[static_cast<size_t>(inferred)] = n / known;
  }
  if (numElements(shape) != n)
    return Error(str("cannot reshape ", formatType(x), " (", n, " elements) to ", formatDims(shape), " (",
                     numElements(shape), " elements)"));
  // The result's layout tag is a label on the same memory order, so setting
  // it moves no data (gradients use this to give a value its operand's tag).
  auto layout = parseLayout(c.getString("layout"));
  if (!layout) return Error(str("attribute layout = \"", c.getString("layout"), "\" is not a layout"));
  if (!layoutFitsRank(*layout, shape.size()))
    return Error(str("attribute layout = \"", c.getString("layout"), "\" needs a rank-4 result, got ", formatDims(shape)));
  return one(TensorType(x.dtype, shape, *layout));
}

Results inferSqueeze(const OpCall& c) {
  const TensorType& x = c.inputs[0];
  std::vector<bool> drop(x.rank(), false);
  if (c.getInts("axes").empty()) {
    for (size_t d = 0; d < x.rank(); ++d) drop[d] = x.shape[d] == 1;
  } else {
    KF_ASSIGN_OR_RETURN(auto axes, ops::axesAttr(c, "axes", static_cast<int64_t>(x.rank())));
    for (int64_t a : axes) {
      if (x.shape[a] != 1)
        return Error(str("cannot squeeze axis ", a, " of ", formatType(x), ": its size is ", x.shape[a], ", not 1"));
      drop[a] = true;
    }
  }
  Shape shape;
  for (size_t d = 0; d < x.rank(); ++d)
    if (!drop[d]) shape.push_back(x.shape[d]);
  KF_RETURN_IF_ERROR(checkShapeBounds(shape, "result shape"));
  return one(TensorType(x.dtype, shape));
}

// Axes name positions in the result (ONNX Unsqueeze), so they are normalised
// against the result rank.
Results inferUnsqueeze(const OpCall& c) {
  const TensorType& x = c.inputs[0];
  auto outRank = static_cast<int64_t>(x.rank() + c.getInts("axes").size());
  if (outRank > kMaxRank)
    return Error(str("inserting ", c.getInts("axes").size(), " axes into ", formatType(x), " gives rank ", outRank,
                     ", above the maximum of ", kMaxRank));
  KF_ASSIGN_OR_RETURN(auto axes, ops::axesAttr(c, "axes", outRank));
  std::vector<bool> inserted(static_cast<size_t>(outRank), false);
  for (int64_t a : axes) inserted[a] = true;
  Shape shape;
  size_t next = 0;
  for (int64_t d = 0; d < outRank; ++d) shape.push_back(inserted[d] ? 1 : x.shape[next++]);
  KF_RETURN_IF_ERROR(checkShapeBounds(shape, "result shape"));
  return one(TensorType(x.dtype, shape));
}

// ONNX Flatten: [prod(dims[:axis]), prod(dims[axis:])], axis in [-rank, rank].
Results inferFlatten(const OpCall& c) {
  const TensorType& x = c.inputs[0];
  auto rank = static_cast<int64_t>(x.rank());
  int64_t axis = c.getInt("axis");
  if (axis < -rank || axis > rank)
    return Error(str("attribute axis = ", axis, " is out of range [", -rank, ", ", rank, "] for ", formatType(x)));
  if (axis < 0) axis += rank;
  Shape outer(x.shape.begin(), x.shape.begin() + axis), inner(x.shape.begin() + axis, x.shape.end());
  KF_RETURN_IF_ERROR(checkShapeBounds(x.shape, "operand shape"));
  return one(TensorType(x.dtype, {elementCount(outer), elementCount(inner)}));
}

// A reshape that only inserts or removes extent-1 axes keeps every other
// axis, in order: the operand index is an affine (identity) map of the
// result's. Reshapes that merge or split axes are not affine.
Expected<std::vector<AxisMap>> unitAxisMap(const OpCall& c, const Shape& result) {
  const Shape& in = c.inputs[0].shape;
  std::vector<AxisMap> map(in.size(), AxisMap{-1, 0, 0});
  size_t r = 0;
  for (size_t j = 0; j < in.size(); ++j) {
    if (in[j] == 1) continue;
    while (r < result.size() && result[r] == 1) ++r;
    if (r == result.size() || result[r] != in[j])
      return Error(str("reshape of ", formatType(c.inputs[0]), " to ", formatDims(result), " regroups axes"));
    map[j] = AxisMap{static_cast<int64_t>(r++), 1, 0};
  }
  for (; r < result.size(); ++r)
    if (result[r] != 1)
      return Error(str("reshape of ", formatType(c.inputs[0]), " to ", formatDims(result), " regroups axes"));
  return map;
}

// Every reshape-like op renames the shape: the index is affine when only
// extent-1 axes change.
void addReshapeLike(OpRegistry& r, OpDef d) {
  d.affine = unitAxisMap;
  r.add(std::move(d));
}

void registerReshapes(OpRegistry& r) {
  addReshapeLike(r, shapeOp("reshape",
                            "same elements in row-major order, new shape (one -1 is inferred; 0 is a zero size) and "
                            "layout tag",
                            {{"shape", AttrKind::Ints, std::nullopt}, {"layout", AttrKind::String, Attribute("plain")}},
                            inferReshape, sameBytes));
  addReshapeLike(r, shapeOp("squeeze", "removes the listed size-1 axes (default: every size-1 axis)",
                            {{"axes", AttrKind::Ints, Attribute(std::vector<int64_t>{})}}, inferSqueeze, sameBytes));
  addReshapeLike(r, shapeOp("unsqueeze", "inserts size-1 axes at the listed positions of the result",
                            {{"axes", AttrKind::Ints, std::nullopt}}, inferUnsqueeze, sameBytes));
  addReshapeLike(r, shapeOp("flatten", "2-D [prod(dims[:axis]), prod(dims[axis:])]",
                            {{"axis", AttrKind::Int, Attribute(int64_t{1})}}, inferFlatten, sameBytes));
}

// ------------------------------------------------------------ transpose, expand

Expected<std::vector<int64_t>> permutation(const OpCall& c) {
  return ops::resolvePermutation(c.getInts("perm"), c.inputs[0]);
}

// The result is tagged `layout`: a layout change (NCHW -> NHWC) is a
// transpose whose result says what its axes now mean.
Results inferTranspose(const OpCall& c) {
  KF_ASSIGN_OR_RETURN(auto perm, permutation(c));
  const TensorType& x = c.inputs[0];
  Shape shape;
  for (int64_t p : perm) shape.push_back(x.shape[p]);
  KF_RETURN_IF_ERROR(checkShapeBounds(shape, "result shape"));
  auto layout = parseLayout(c.getString("layout"));
  if (!layout) return Error(str("attribute layout = \"", c.getString("layout"), "\" is not a layout"));
  if (!layoutFitsRank(*layout, shape.size()))
    return Error(str("attribute layout = \"", c.getString("layout"), "\" needs a rank-4 result, got ", formatDims(shape)));
  return one(TensorType(x.dtype, shape, *layout));
}

// out[i0, ..., in] = x[j] where j[perm[i]] = idx[i].
Tensors referenceTranspose(const OpCall& c, Inputs in, Outputs out) {
  KF_ASSIGN_OR_RETURN(auto perm, permutation(c));
  const Tensor& x = *in[0];
  Tensor y(out[0]);
  std::vector<int64_t> src(perm.size());
  ops::forEachIndex(out[0].shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
    for (size_t i = 0; i < perm.size(); ++i) src[perm[i]] = idx[i];
    ops::copyElement(x, ops::flatOffset(src, x.shape()), y, flat);
  });
  return std::vector<Tensor>{std::move(y)};
}

// ONNX Expand: the result shape is the NumPy broadcast of x's shape and
// `shape`, so `shape` may also be smaller than x or contain 1s.
Results inferExpand(const OpCall& c) {
  const TensorType& x = c.inputs[0];
  const std::vector<int64_t>& want = c.getInts("shape");
  KF_RETURN_IF_ERROR(checkShapeBounds(want, "attribute shape ="));
  auto shape = broadcastShapes(x.shape, want);
  if (!shape) return Error(str("cannot expand ", formatType(x), " to ", formatDims(want), ": ", shape.error().message()));
  KF_RETURN_IF_ERROR(checkShapeBounds(*shape, "result shape"));
  return one(TensorType(x.dtype, *shape));
}

Tensors referenceExpand(const OpCall&, Inputs in, Outputs out) {
  const Tensor& x = *in[0];
  Tensor y(out[0]);
  ops::forEachIndex(out[0].shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
    ops::copyElement(x, ops::broadcastOffset(idx, x.shape()), y, flat);
  });
  return std::vector<Tensor>{std::move(y)};
}

// out[i] = in[perm[i]]: operand axis perm[i] follows result axis i.
Expected<std::vector<AxisMap>> transposeMap(const OpCall& c, const Shape&) {
  KF_ASSIGN_OR_RETURN(auto perm, permutation(c));
  std::vector<AxisMap> map(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) map[static_cast<size_t>(perm[i])] = AxisMap{static_cast<int64_t>(i), 1, 0};
  return map;
}

// NumPy broadcasting: operand axes align with the result's trailing axes;
// an extent-1 axis that broadcasts reads index 0.
Expected<std::vector<AxisMap>> broadcastMap(const OpCall& c, const Shape& result) {
  const Shape& in = c.inputs[0].shape;
  std::vector<AxisMap> map(in.size());
  size_t lead = result.size() - in.size();
  for (size_t j = 0; j < in.size(); ++j)
    map[j] = in[j] == 1 && result[lead + j] != 1 ? AxisMap{-1, 0, 0} : AxisMap{static_cast<int64_t>(lead + j), 1, 0};
  return map;
}

void registerPermutes(OpRegistry& r) {
  OpDef& transpose =
      r.add(shapeOp("transpose",
                    "permutes axes: out.shape[i] = in.shape[perm[i]] (default: reverse them); the result is tagged "
                    "`layout`",
                    {{"perm", AttrKind::Ints, Attribute(std::vector<int64_t>{})},
                     {"layout", AttrKind::String, Attribute("plain")}},
                    inferTranspose, referenceTranspose));
  transpose.affine = transposeMap;
  OpDef& expand = r.add(shapeOp("expand", "broadcasts to the NumPy broadcast of the input shape and `shape` (ONNX Expand)",
                                {{"shape", AttrKind::Ints, std::nullopt}}, inferExpand, referenceExpand));
  expand.affine = broadcastMap;
}

// ------------------------------------------------------------ concat, split

Results inferConcat(const OpCall& c) {
  const TensorType& first = c.inputs[0];
  KF_ASSIGN_OR_RETURN(int64_t axis, ops::axisAttr(c, "axis", static_cast<int64_t>(first.rank())));
  Shape shape = first.shape;
  shape[axis] = 0;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const TensorType& t = c.inputs[i];
    KF_RETURN_IF_ERROR(ops::requireSameDType(c, 0, i));
    if (t.rank() != first.rank())
      return Error(str("operand ", i, " (", formatType(t), ") and operand 0 (", formatType(first),
                       ") have different ranks"));
    for (size_t d = 0; d < t.rank(); ++d) {
      if (static_cast<int64_t>(d) == axis || t.shape[d] == first.shape[d]) continue;
      return Error(str("operand ", i, " (", formatType(t), ") and operand 0 (", formatType(first),
                       ") differ in dimension ", d, ", which is not the concat axis ", axis));
    }
    if (t.shape[axis] > kMaxElements - shape[axis])
      return Error(str("concatenated axis ", axis, " has more than 2^48 elements"));
    shape[axis] += t.shape[axis];
  }
  KF_RETURN_IF_ERROR(checkShapeBounds(shape, "result shape"));
  return one(TensorType(first.dtype, shape));
}

// Each operand is copied to its block of the result, shifted along the axis.
Tensors referenceConcat(const OpCall& c, Inputs in, Outputs out) {
  KF_ASSIGN_OR_RETURN(int64_t axis, ops::axisAttr(c, "axis", static_cast<int64_t>(out[0].rank())));
  Tensor y(out[0]);
  int64_t offset = 0;
  for (const Tensor* x : in) {
    ops::forEachIndex(x->shape(), [&](const std::vector<int64_t>& idx, int64_t flat) {
      std::vector<int64_t> dst = idx;
      dst[axis] += offset;
      ops::copyElement(*x, flat, y, ops::flatOffset(dst, y.shape()));
    });
    offset += x->shape()[axis];
  }
  return std::vector<Tensor>{std::move(y)};
}

Results inferSplit(const OpCall& c) {
  const TensorType& x = c.inputs[0];
  KF_ASSIGN_OR_RETURN(int64_t axis, ops::axisAttr(c, "axis", static_cast<int64_t>(x.rank())));
  const std::vector<int64_t>& sizes = c.getInts("sizes");
  if (sizes.empty()) return Error("attribute sizes is empty; split needs at least one result");
  for (int64_t s : sizes)
    if (s < 0) return Error(str("attribute sizes = ", ops::listText(sizes), " contains the negative size ", s));
  std::vector<TensorType> results;
  int64_t sum = 0;
  for (int64_t s : sizes) {
    if (s > x.shape[axis] - sum) break;  // too large; stopping keeps the sum from overflowing
    sum += s;
    TensorType t(x.dtype, x.shape);
    t.shape[axis] = s;
    results.push_back(std::move(t));
  }
  if (results.size() != sizes.size() || sum != x.shape[axis])
    return Error(str("attribute sizes = ", ops::listText(sizes), " must sum to ", x.shape[axis], ", the size of axis ", axis,
                     " of ", formatType(x)));
  for (const TensorType& t : results) KF_RETURN_IF_ERROR(checkShapeBounds(t.shape, "result shape"));
  return results;
}

// Result r is the block of x starting at the sum of the earlier sizes.
Tensors referenceSplit(const OpCall& c, Inputs in, Outputs out) {
  KF_ASSIGN_OR_RETURN(int64_t axis, ops::axisAttr(c, "axis", static_cast<int64_t>(in[0]->shape().size())));
  const Tensor& x = *in[0];
  std::vector<Tensor> results;
  int64_t offset = 0;
  for (const TensorType& t : out) {
    Tensor y(t);
    ops::forEachIndex(t.shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
      std::vector<int64_t> src = idx;
      src[axis] += offset;
      ops::copyElement(x, ops::flatOffset(src, x.shape()), y, flat);
    });
    offset += t.shape[axis];
    results.push_back(std::move(y));
  }
  return results;
}

void registerConcatSplit(OpRegistry& r) {
  OpDef concat = shapeOp("concat", "joins operands of one dtype and rank along `axis`",
                         {{"axis", AttrKind::Int, std::nullopt}}, inferConcat, referenceConcat);
  concat.maxInputs = -1;
  concat.layout = {LayoutClass::AxisAttrs, {"axis"}, {}, {}, {}, {}};
  // Each operand whole, one after another along the axis.
  concat.pieces = [](const OpCall& c, const TensorType& result) -> Expected<std::vector<Piece>> {
    KF_ASSIGN_OR_RETURN(int64_t axis, ops::axisAttr(c, "axis", static_cast<int64_t>(result.rank())));
    std::vector<Piece> out;
    int64_t at = 0;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      Piece p{static_cast<int>(i), 0, c.inputs[i].shape, std::vector<int64_t>(result.rank(), 0),
              std::vector<int64_t>(result.rank(), 0)};
      p.resultStart[static_cast<size_t>(axis)] = at;
      at += c.inputs[i].shape[static_cast<size_t>(axis)];
      out.push_back(std::move(p));
    }
    return out;
  };
  r.add(std::move(concat));
  OpDef& split = r.add(shapeOp("split", "cuts `axis` into consecutive pieces of the given sizes, one result each",
                               {{"axis", AttrKind::Int, Attribute(int64_t{0})}, {"sizes", AttrKind::Ints, std::nullopt}},
                               inferSplit, referenceSplit));
  split.layout = {LayoutClass::AxisAttrs, {"axis"}, {}, {}, {}, {}};
}

// ------------------------------------------------------------ shape_of

// Reads the shape from the operand's type, never from its data: constant
// folding evaluates shape_of on a placeholder tensor.
Tensors referenceShapeOf(const OpCall& c, Inputs, Outputs out) {
  Tensor y(out[0]);
  const Shape& shape = c.inputs[0].shape;
  for (size_t i = 0; i < shape.size(); ++i) std::memcpy(y.data() + i * sizeof(int64_t), &shape[i], sizeof(int64_t));
  return std::vector<Tensor>{std::move(y)};
}

void registerShapeOf(OpRegistry& r) {
  OpDef d = shapeOp(
      "shape_of", "the operand's shape as i64[rank]", {},
      [](const OpCall& c) -> Results {
        return one(TensorType(DType::I64, {static_cast<int64_t>(c.inputs[0].rank())}));
      },
      referenceShapeOf);
  d.fusion = FusionClass::Opaque;
  d.dependsOnlyOnTypes = true;
  r.add(std::move(d));
}

}  // namespace

void registerShapeOps(OpRegistry& r) {
  registerConstant(r);
  registerReshapes(r);
  registerPermutes(r);
  registerConcatSplit(r);
  registerShapeOf(r);
  registerShapeIndexOps(r);
}

}  // namespace kfuse
