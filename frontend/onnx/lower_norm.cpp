// Normalisations models of today export beside LayerNormalization
// (lower_nn.cpp): GroupNormalization (18, 21) and RMSNormalization (23),
// built from kfuse's layer_norm and reductions; the fusion pass joins the
// elementwise parts into one kernel with their neighbours.
#include "frontend/onnx/lower_util.h"
#include "frontend/onnx/op_table.h"
#include "frontend/onnx/tensor_proto.h"

namespace kfuse::onnx_import {
namespace {

// The statistics' type (stash_type, float by default): inputs of a
// narrower type are normalised in it and the result cast back.
Expected<DType> stashType(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(int64_t stash, c.attrs().getInt("stash_type", 1));
  auto dtype = dtypeFromOnnx(static_cast<int>(stash));
  if (!dtype || !isFloat(*dtype)) return c.unsupported(str(c.opType(), " with stash_type ", stash));
  return *dtype;
}

// x of shape [N, C, ...] with a per-channel [C] vector v: v reshaped to
// [1, C, 1, ...] so that it broadcasts along the channel axis.
Expected<Value*> perChannel(LoweringContext& c, Value* v, const Shape& xShape) {
  Shape s(xShape.size(), 1);
  s[1] = xShape[1];
  return reshapeTo(c, v, s);
}

// GroupNormalization: the channels split into num_groups groups, each
// normalised over its channels and spatial positions (a layer norm over the
// last axis of [N, G, C/G * spatial]), then scaled and shifted: per group in
// opset 18 (scale and bias of shape [G], each value covering its group's
// channels), per channel from opset 21 ([C]).
Status lowerGroupNorm(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(Value* scale, c.input(1));
  KF_ASSIGN_OR_RETURN(Value* bias, c.input(2));
  KF_RETURN_IF_ERROR(requireFloat(c, x, "input"));
  KF_ASSIGN_OR_RETURN(double eps, c.attrs().getFloat("epsilon", 1e-5));
  KF_ASSIGN_OR_RETURN(int64_t groups, c.attrs().getInt("num_groups"));
  DType stash = x->type().dtype;
  if (c.version() >= 21) {
    KF_ASSIGN_OR_RETURN(stash, stashType(c));
  }
  const Shape& s = x->type().shape;
  if (s.size() < 2) return Error(str("input must be [N, C, ...], got ", formatType(x->type())));
  int64_t channels = s[1];
  if (groups < 1 || channels % groups != 0)
    return Error(str("num_groups = ", groups, " does not divide the ", channels, " channels"));
  int64_t expected = c.version() >= 21 ? channels : groups;
  for (Value* v : {scale, bias})
    if (v->type().numElements() != expected || v->type().rank() != 1)
      return Error(str("scale and bias must have shape [", expected, "], got ", formatType(v->type())));
  // Normalised in the stash type, or the input's own when that is wider.
  DType compute = dtypeSize(stash) > dtypeSize(x->type().dtype) ? stash : x->type().dtype;
  KF_ASSIGN_OR_RETURN(Value* xs, castTo(c, x, compute));
  int64_t perGroup = (channels / groups) * numElements(Shape(s.begin() + 2, s.end()));
  KF_ASSIGN_OR_RETURN(Value* grouped, reshapeTo(c, xs, {s[0], groups, perGroup}));
  KF_ASSIGN_OR_RETURN(Value* normed, c.build("layer_norm", {grouped}, {{"axis", int64_t{2}}, {"epsilon", eps}}));
  KF_ASSIGN_OR_RETURN(normed, reshapeTo(c, normed, s));
  KF_ASSIGN_OR_RETURN(normed, castTo(c, normed, x->type().dtype));
  if (c.version() < 21) {  // each group's value repeated over its channels
    for (Value** v : {&scale, &bias}) {
      KF_ASSIGN_OR_RETURN(Value* col, reshapeTo(c, *v, {groups, 1}));
      KF_ASSIGN_OR_RETURN(Value* wide, c.build("expand", {col}, {{"shape", Attribute(Shape{groups, channels / groups})}}));
      KF_ASSIGN_OR_RETURN(*v, reshapeTo(c, wide, {channels}));
    }
  }
  KF_ASSIGN_OR_RETURN(Value* sc, perChannel(c, scale, s));
  KF_ASSIGN_OR_RETURN(Value* bi, perChannel(c, bias, s));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("mul", {normed, sc}));
  KF_ASSIGN_OR_RETURN(y, c.build("add", {y, bi}));
  return done(c, y);
}

// RMSNormalization: x / sqrt(mean(x^2 over axes [axis, rank)) + epsilon) *
// scale, the statistics in stash_type.
Status lowerRmsNorm(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(Value* scale, c.input(1));
  KF_RETURN_IF_ERROR(requireFloat(c, x, "input"));
  KF_ASSIGN_OR_RETURN(double eps, c.attrs().getFloat("epsilon", 1e-5));
  KF_ASSIGN_OR_RETURN(int64_t axis, c.attrs().getInt("axis", -1));
  KF_ASSIGN_OR_RETURN(DType stash, stashType(c));
  auto rank = static_cast<int64_t>(x->type().rank());
  KF_ASSIGN_OR_RETURN(axis, normalizedAxis(axis, rank, "attribute axis"));
  std::vector<int64_t> axes;
  for (int64_t a = axis; a < rank; ++a) axes.push_back(a);
  KF_ASSIGN_OR_RETURN(Value* xs, castTo(c, x, stash));
  KF_ASSIGN_OR_RETURN(Value* sq, c.build("mul", {xs, xs}));
  KF_ASSIGN_OR_RETURN(Value* ms, c.build("reduce_mean", {sq}, {{"axes", Attribute(axes)}, {"keepdims", true}}));
  KF_ASSIGN_OR_RETURN(Value* shifted, c.build("add", {ms, scalarLike(c, ms, eps)}));
  KF_ASSIGN_OR_RETURN(Value* inv, c.build("rsqrt", {shifted}));
  KF_ASSIGN_OR_RETURN(Value* normed, c.build("mul", {xs, inv}));
  KF_ASSIGN_OR_RETURN(normed, castTo(c, normed, x->type().dtype));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("mul", {normed, scale}));
  return done(c, y);
}

const std::vector<OpLowering> kTable = {
    {"GroupNormalization", {18, 21}, lowerGroupNorm,
     "reshape + layer_norm + reshape + mul + add (opset 18's per-group scale and bias: expand)"},
    {"RMSNormalization", {23}, lowerRmsNorm, "mul + reduce_mean + add + rsqrt + mul + mul"},
};

}  // namespace

std::span<const OpLowering> normLowerings() { return kTable; }

}  // namespace kfuse::onnx_import
