// Data movement: reshapes, transposes, concat/split, slicing, gathering,
// expand, tile, pad, depth/space rearrangements. kfuse takes shapes, axes
// and pads as attributes, so the ONNX inputs carrying them must be known at
// import time (constantInput folds the subgraphs that compute them).
#include "frontend/onnx/lower_util.h"
#include "frontend/onnx/op_table.h"

namespace kfuse::onnx_import {
namespace {

// Axes given as an attribute (before opset 13, or `since`) or as an optional
// input (from then on).
Expected<std::vector<int64_t>> axesFrom(LoweringContext& c, size_t input, int since, std::vector<int64_t> def = {}) {
  if (c.version() >= since) {
    if (!c.hasInput(input)) return def;
    return c.intsInput(input);
  }
  return c.attrs().getInts("axes", def);
}

Status lowerReshape(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(std::vector<int64_t> shape, c.intsInput(1));
  KF_ASSIGN_OR_RETURN(int64_t allowZero, c.attrs().getInt("allowzero", 0));
  // ONNX's 0 copies the input's extent (unless allowzero); kfuse's 0 is a
  // zero extent, so the copies are resolved here.
  for (size_t i = 0; i < shape.size() && !allowZero; ++i) {
    if (shape[i] != 0) continue;
    if (i >= x->type().rank())
      return Error(str("shape ", formatDims(shape), " copies dimension ", i, " (a 0), which ", formatType(x->type()),
                       " does not have"));
    shape[i] = x->type().shape[i];
  }
  KF_ASSIGN_OR_RETURN(Value* y, c.build("reshape", {x}, {{"shape", Attribute(shape)}}));
  return done(c, y);
}

Status lowerFlatten(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(int64_t axis, c.attrs().getInt("axis", 1));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("flatten", {x}, {{"axis", axis}}));
  return done(c, y);
}

Status lowerTranspose(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(auto perm, c.attrs().getInts("perm", std::vector<int64_t>{}));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("transpose", {x}, {{"perm", Attribute(perm)}}));
  return done(c, y);
}

Status lowerSqueeze(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(auto axes, axesFrom(c, 1, 13));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("squeeze", {x}, {{"axes", Attribute(axes)}}));
  return done(c, y);
}

Status lowerUnsqueeze(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(auto axes, axesFrom(c, 1, 13));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("unsqueeze", {x}, {{"axes", Attribute(axes)}}));
  return done(c, y);
}

Status lowerConcat(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(int64_t axis, c.attrs().getInt("axis"));
  std::vector<Value*> parts;
  for (size_t i = 0; i < c.numInputs(); ++i) {
    KF_ASSIGN_OR_RETURN(Value* v, c.input(i));
    parts.push_back(v);
  }
  KF_ASSIGN_OR_RETURN(Value* y, c.build("concat", parts, {{"axis", axis}}));
  return done(c, y);
}

// Split: sizes from the `split` attribute (before opset 13) or input, else
// equal parts, one per output; Split-18's `num_outputs` parts are
// ceil(extent / n) long, the last one shorter.
Status lowerSplit(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(int64_t axis, c.attrs().getInt("axis", 0));
  KF_ASSIGN_OR_RETURN(axis, normalizedAxis(axis, static_cast<int64_t>(x->type().rank()), "attribute axis"));
  std::vector<int64_t> sizes;
  if (c.version() >= 13) {
    if (c.hasInput(1)) {
      KF_ASSIGN_OR_RETURN(sizes, c.intsInput(1));
    }
  } else {
    KF_ASSIGN_OR_RETURN(sizes, c.attrs().getInts("split", std::vector<int64_t>{}));
  }
  auto parts = static_cast<int64_t>(c.numOutputs());
  if (c.version() >= 18 && c.attrs().has("num_outputs")) {
    KF_ASSIGN_OR_RETURN(int64_t n, c.attrs().getInt("num_outputs"));
    if (!sizes.empty()) return Error("Split-18 takes either the split input or num_outputs, not both");
    if (n != parts) return Error(str("num_outputs = ", n, " but the node has ", parts, " outputs"));
    int64_t extent = x->type().shape[static_cast<size_t>(axis)];
    int64_t chunk = (extent + n - 1) / n;
    if (n < 1 || chunk * (n - 1) >= extent + (extent == 0 ? 1 : 0))
      return Error(str("axis ", axis, " of ", formatType(x->type()), " does not split into ", n, " parts"));
    sizes.assign(static_cast<size_t>(n - 1), chunk);
    sizes.push_back(extent - chunk * (n - 1));
  }
  if (sizes.empty()) {
    int64_t extent = x->type().shape[static_cast<size_t>(axis)];
    if (parts == 0 || extent % parts != 0)
      return Error(str("axis ", axis, " of ", formatType(x->type()), " does not split into ", parts, " equal parts"));
    sizes.assign(static_cast<size_t>(parts), extent / parts);
  }
  if (static_cast<int64_t>(sizes.size()) != parts)
    return Error(str("split sizes ", formatDims(sizes), " do not match the node's ", parts, " outputs"));
  KF_ASSIGN_OR_RETURN(auto ys, c.buildMulti("split", {x}, {{"axis", axis}, {"sizes", Attribute(sizes)}}));
  for (size_t i = 0; i < ys.size(); ++i) c.setOutput(i, ys[i]);
  return Status::ok();
}

// Slice: starts/ends/axes as attributes before opset 10, inputs after.
Status lowerSlice(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.version() < 10) {
    KF_ASSIGN_OR_RETURN(starts, c.attrs().getInts("starts"));
    KF_ASSIGN_OR_RETURN(ends, c.attrs().getInts("ends"));
    KF_ASSIGN_OR_RETURN(axes, c.attrs().getInts("axes", std::vector<int64_t>{}));
  } else {
    KF_ASSIGN_OR_RETURN(starts, c.intsInput(1));
    KF_ASSIGN_OR_RETURN(ends, c.intsInput(2));
    if (c.hasInput(3)) {
      KF_ASSIGN_OR_RETURN(axes, c.intsInput(3));
    }
    if (c.hasInput(4)) {
      KF_ASSIGN_OR_RETURN(steps, c.intsInput(4));
    }
  }
  KF_ASSIGN_OR_RETURN(Value* y, c.build("slice", {x}, {{"starts", Attribute(starts)}, {"ends", Attribute(ends)},
                                                       {"axes", Attribute(axes)}, {"steps", Attribute(steps)}}));
  return done(c, y);
}

Status lowerGather(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* data, c.input(0));
  KF_ASSIGN_OR_RETURN(Value* indices, c.input(1));
  KF_ASSIGN_OR_RETURN(int64_t axis, c.attrs().getInt("axis", 0));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("gather", {data, indices}, {{"axis", axis}}));
  return done(c, y);
}

Status lowerExpand(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(auto shape, c.intsInput(1));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("expand", {x}, {{"shape", Attribute(shape)}}));
  return done(c, y);
}

// Tile: each axis repeated r times is a concat of r copies along it (any
// rank, no extra op); r = 0 empties the axis.
Status lowerTile(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* y, c.input(0));
  KF_ASSIGN_OR_RETURN(auto repeats, c.intsInput(1));
  if (repeats.size() != y->type().rank())
    return Error(str("repeats ", formatDims(repeats), " must have one entry per axis of ", formatType(y->type())));
  for (size_t a = 0; a < repeats.size(); ++a) {
    auto axis = static_cast<int64_t>(a);
    if (repeats[a] < 0) return Error(str("repeats ", formatDims(repeats), " contains a negative count"));
    if (repeats[a] == 0) {
      KF_ASSIGN_OR_RETURN(y, c.build("slice", {y}, {{"starts", Attribute(std::vector<int64_t>{0})},
                                                    {"ends", Attribute(std::vector<int64_t>{0})},
                                                    {"axes", Attribute(std::vector<int64_t>{axis})}}));
    } else if (repeats[a] > 1) {
      if (repeats[a] > (int64_t{1} << 20)) return Error(str("repeat count ", repeats[a], " is absurdly large"));
      KF_ASSIGN_OR_RETURN(y, c.build("concat", std::vector<Value*>(static_cast<size_t>(repeats[a]), y),
                                     {{"axis", axis}}));
    }
  }
  return done(c, y);
}

// Pad-18's `axes` input: pads for those axes only (begins, then ends), the
// others unpadded; spread to ONNX's full-rank order.
Expected<std::vector<int64_t>> fullRankPads(LoweringContext& c, std::vector<int64_t> pads, size_t rank) {
  if (c.version() < 18 || !c.hasInput(3)) return pads;
  KF_ASSIGN_OR_RETURN(auto axes, c.intsInput(3));
  if (pads.size() != 2 * axes.size())
    return Error(str("pads has ", pads.size(), " values for ", axes.size(), " axes (2 per axis)"));
  std::vector<int64_t> full(2 * rank, 0);
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    KF_ASSIGN_OR_RETURN(int64_t a, normalizedAxis(axes[i], static_cast<int64_t>(rank), "axes"));
    if (seen[static_cast<size_t>(a)]) return Error(str("axes repeats axis ", a));
    seen[static_cast<size_t>(a)] = true;
    full[static_cast<size_t>(a)] = pads[i];
    full[rank + static_cast<size_t>(a)] = pads[axes.size() + i];
  }
  return full;
}

// Pad-19's "wrap" (circular) mode: along each padded axis, a gather of
// positions (i - begin) mod n; negative pads crop the same way.
Expected<Value*> wrapPad(LoweringContext& c, Value* x, const std::vector<int64_t>& pads) {
  size_t rank = x->type().rank();
  if (pads.size() != 2 * rank) return Error(str("pads has ", pads.size(), " values for rank ", rank));
  for (size_t a = 0; a < rank; ++a) {
    int64_t n = x->type().shape[a], begin = pads[a], end = pads[a + rank], out = n + begin + end;
    if (begin == 0 && end == 0) continue;
    if (n == 0 || out < 0) return Error(str("cannot wrap-pad axis ", a, " of ", formatType(x->type()), " by ", begin,
                                            " and ", end));
    Tensor idx(TensorType(DType::I64, {out}));
    for (int64_t i = 0; i < out; ++i) idx.as<int64_t>()[i] = (((i - begin) % n) + n) % n;
    KF_ASSIGN_OR_RETURN(x, c.build("gather", {x, c.constant(std::move(idx))}, {{"axis", static_cast<int64_t>(a)}}));
  }
  return x;
}

Status lowerPad(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(std::string mode, c.attrs().getString("mode", "constant"));
  std::vector<int64_t> pads;
  double value = 0;
  if (c.version() < 11) {
    KF_ASSIGN_OR_RETURN(pads, c.attrs().getInts("pads"));
    KF_ASSIGN_OR_RETURN(value, c.attrs().getFloat("value", 0.0));
  } else {
    KF_ASSIGN_OR_RETURN(pads, c.intsInput(1));
    KF_ASSIGN_OR_RETURN(pads, fullRankPads(c, std::move(pads), x->type().rank()));
    if (c.hasInput(2)) {
      KF_ASSIGN_OR_RETURN(Tensor v, c.constantInput(2));
      if (v.numElements() != 1) return Error(str("constant_value must be a scalar, got ", formatType(v.type())));
      value = v.at(0);
    }
  }
  if (mode == "wrap" && c.version() >= 19) {
    KF_ASSIGN_OR_RETURN(Value* y, wrapPad(c, x, pads));
    return done(c, y);
  }
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return c.unsupported(str("Pad with mode \"", mode, "\""));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("pad", {x}, {{"pads", Attribute(pads)}, {"mode", mode}, {"value", value}}));
  return done(c, y);
}

// DepthToSpace / SpaceToDepth: a reshape to rank 6, a transpose, a reshape.
Status lowerDepthSpace(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(int64_t b, c.attrs().getInt("blocksize"));
  const Shape& s = x->type().shape;
  if (s.size() != 4 || b < 1) return Error(str("input must be [N, C, H, W] and blocksize >= 1"));
  int64_t n = s[0], ch = s[1], h = s[2], w = s[3];
  Shape split, out;
  std::vector<int64_t> perm;
  if (c.opType() == "DepthToSpace") {
    KF_ASSIGN_OR_RETURN(std::string mode, c.attrs().getString("mode", "DCR"));
    if (ch % (b * b) != 0) return Error(str("channels ", ch, " are not a multiple of blocksize^2 = ", b * b));
    bool dcr = mode == "DCR";
    if (!dcr && mode != "CRD") return Error(str("attribute mode = \"", mode, "\" is not DCR or CRD"));
    split = dcr ? Shape{n, b, b, ch / (b * b), h, w} : Shape{n, ch / (b * b), b, b, h, w};
    perm = dcr ? std::vector<int64_t>{0, 3, 4, 1, 5, 2} : std::vector<int64_t>{0, 1, 4, 2, 5, 3};
    out = {n, ch / (b * b), h * b, w * b};
  } else {
    // SpaceToDepth-28's mode: the block offset outermost in the output
    // channel (DCR, as before) or innermost (CRD).
    KF_ASSIGN_OR_RETURN(std::string mode, c.attrs().getString("mode", "DCR"));
    if (mode != "DCR" && mode != "CRD") return Error(str("attribute mode = \"", mode, "\" is not DCR or CRD"));
    if (h % b != 0 || w % b != 0) return Error(str("height and width must be multiples of blocksize ", b));
    split = {n, ch, h / b, b, w / b, b};
    perm = mode == "DCR" ? std::vector<int64_t>{0, 3, 5, 1, 2, 4} : std::vector<int64_t>{0, 1, 3, 5, 2, 4};
    out = {n, ch * b * b, h / b, w / b};
  }
  KF_ASSIGN_OR_RETURN(Value* y, reshapeTo(c, x, split));
  KF_ASSIGN_OR_RETURN(y, c.build("transpose", {y}, {{"perm", Attribute(perm)}}));
  KF_ASSIGN_OR_RETURN(y, reshapeTo(c, y, out));
  return done(c, y);
}

// Trilu: keep x where the column-minus-row offset is >= k (upper) or <= k
// (lower), else 0. The offsets are a constant; a constant k makes the whole
// mask one, a k given at run time is compared against it.
Status lowerTrilu(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(int64_t upper, c.attrs().getInt("upper", 1));
  const Shape& s = x->type().shape;
  if (s.size() < 2) return Error(str("input must have rank >= 2, got ", formatType(x->type())));
  int64_t rows = s[s.size() - 2], cols = s[s.size() - 1];
  Tensor offsets(TensorType(DType::I64, {rows, cols}));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) offsets.as<int64_t>()[i * cols + j] = j - i;
  Value* k = c.scalar(DType::I64, 0);
  if (c.hasInput(1)) {
    KF_ASSIGN_OR_RETURN(k, c.input(1));
    if (k->type().dtype != DType::I64 || k->type().numElements() != 1)
      return Error(str("k must be an int64 scalar, got ", formatType(k->type())));
    KF_ASSIGN_OR_RETURN(k, reshapeTo(c, k, {}));
  }
  KF_ASSIGN_OR_RETURN(Value* keep, c.build(upper ? "greater_equal" : "less_equal", {c.constant(offsets), k}));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("where", {keep, x, scalarLike(c, x, 0.0)}));
  return done(c, y);
}

const std::vector<OpLowering> kTable = {
    {"Reshape", {5, 13, 14, 19, 21, 23, 24, 25}, lowerReshape, "reshape (shape known at import)"},
    {"Flatten", {1, 9, 11, 13, 21, 23, 24, 25}, lowerFlatten, "flatten"},
    {"Transpose", {1, 13, 21, 23, 24, 25}, lowerTranspose, "transpose"},
    {"Squeeze", {1, 11, 13, 21, 23, 24, 25}, lowerSqueeze, "squeeze"},
    {"Unsqueeze", {1, 11, 13, 21, 23, 24, 25}, lowerUnsqueeze, "unsqueeze"},
    {"Concat", {4, 11, 13}, lowerConcat, "concat"},
    {"Split", {2, 11, 13, 18}, lowerSplit, "split"},
    {"Slice", {1, 10, 11, 13}, lowerSlice, "slice (starts/ends/axes/steps known at import)"},
    {"Gather", {1, 11, 13}, lowerGather, "gather"},
    {"Expand", {8, 13}, lowerExpand, "expand (shape known at import)"},
    {"Tile", {6, 13}, lowerTile, "concat of copies per axis"},
    {"Pad", {2, 11, 13, 18, 19, 21, 23, 24, 25}, lowerPad, "pad (pads known at import)"},
    {"DepthToSpace", {1, 11, 13, 28}, lowerDepthSpace, "reshape + transpose + reshape"},
    {"SpaceToDepth", {1, 13, 28}, lowerDepthSpace, "reshape + transpose + reshape"},
    {"Trilu", {14}, lowerTrilu, "greater_equal/less_equal of constant offsets and k + where"},
};

}  // namespace

std::span<const OpLowering> shapeLowerings() { return kTable; }

}  // namespace kfuse::onnx_import
