// ConvTranspose as a direct convolution: the input dilated by the stride
// (zeros between elements: a reshape to rank 6, a zero pad, a reshape and a
// slice), padded by span - 1 - pad on each side (output_padding extends the
// end; negative amounts crop), convolved with the kernel flipped spatially
// and its in/out channels swapped within each group. 1-D nodes go through
// 2-D with a unit height, as Conv does.
#include <limits>

#include "frontend/onnx/lower_util.h"
#include "frontend/onnx/op_table.h"

namespace kfuse::onnx_import {
namespace {

// A slice end that, with step -1, runs to the start of the axis.
constexpr int64_t kToStart = std::numeric_limits<int64_t>::min();

struct TransposedGeometry {
  std::vector<int64_t> kernel, strides, dilations, outputPadding;
  std::vector<int64_t> pads;  // all begins, then all ends
};

Expected<std::vector<int64_t>> listOf(LoweringContext& c, const std::string& name, size_t n, int64_t def) {
  KF_ASSIGN_OR_RETURN(auto v, c.attrs().getInts(name, std::vector<int64_t>(n, def)));
  if (v.size() != n) return Error(str("attribute ", name, " has ", v.size(), " values, expected ", n));
  return v;
}

// Pads from the attributes, or from output_shape / auto_pad as ONNX
// specifies: total = stride (in - 1) + output_padding + span - out.
Expected<TransposedGeometry> readGeometry(LoweringContext& c, const Shape& in, const Shape& wKernel) {
  size_t n = in.size();
  TransposedGeometry g;
  KF_ASSIGN_OR_RETURN(g.kernel, c.attrs().getInts("kernel_shape", wKernel));
  if (g.kernel != wKernel)
    return Error(str("attribute kernel_shape = ", formatDims(g.kernel), " differs from the weight's ", formatDims(wKernel)));
  KF_ASSIGN_OR_RETURN(g.strides, listOf(c, "strides", n, 1));
  KF_ASSIGN_OR_RETURN(g.dilations, listOf(c, "dilations", n, 1));
  KF_ASSIGN_OR_RETURN(g.outputPadding, listOf(c, "output_padding", n, 0));
  KF_ASSIGN_OR_RETURN(g.pads, listOf(c, "pads", 2 * n, 0));
  KF_ASSIGN_OR_RETURN(std::string autoPad, c.attrs().getString("auto_pad", "NOTSET"));
  for (size_t i = 0; i < n; ++i)
    if (g.strides[i] < 1 || g.dilations[i] < 1 || g.kernel[i] < 1 || g.outputPadding[i] < 0)
      return Error("kernel, strides and dilations must be positive and output_padding non-negative");
  std::vector<int64_t> outShape;
  if (c.attrs().has("output_shape")) {
    KF_ASSIGN_OR_RETURN(outShape, c.attrs().getInts("output_shape"));
    if (outShape.size() == n + 2) outShape.erase(outShape.begin(), outShape.begin() + 2);
    if (outShape.size() != n) return Error(str("attribute output_shape has ", outShape.size(), " values"));
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) outShape.push_back(in[i] * g.strides[i]);
  } else if (autoPad == "VALID") {
    g.pads.assign(2 * n, 0);
  } else if (autoPad != "NOTSET") {
    return Error(str("attribute auto_pad = \"", autoPad, "\" is not NOTSET, VALID, SAME_UPPER or SAME_LOWER"));
  }
  for (size_t i = 0; i < outShape.size(); ++i) {
    int64_t span = (g.kernel[i] - 1) * g.dilations[i] + 1;
    int64_t total = g.strides[i] * (in[i] - 1) + g.outputPadding[i] + span - outShape[i];
    bool upper = autoPad != "SAME_LOWER";
    g.pads[i] = upper ? total / 2 : total - total / 2;
    g.pads[i + n] = upper ? total - total / 2 : total / 2;
  }
  return g;
}

// x [N, C, H, W] with s_h - 1 and s_w - 1 zeros between neighbours.
Expected<Value*> dilateByStride(LoweringContext& c, Value* x, const std::vector<int64_t>& s) {
  if (s[0] == 1 && s[1] == 1) return x;
  const Shape& xs = x->type().shape;
  KF_ASSIGN_OR_RETURN(Value* v, reshapeTo(c, x, {xs[0], xs[1], xs[2], 1, xs[3], 1}));
  std::vector<int64_t> pads{0, 0, 0, 0, 0, 0, 0, 0, 0, s[0] - 1, 0, s[1] - 1};
  KF_ASSIGN_OR_RETURN(v, c.build("pad", {v}, {{"pads", Attribute(pads)}}));
  KF_ASSIGN_OR_RETURN(v, reshapeTo(c, v, {xs[0], xs[1], xs[2] * s[0], xs[3] * s[1]}));
  return c.build("slice", {v}, {{"starts", Attribute(std::vector<int64_t>{0, 0})},
                                {"ends", Attribute(std::vector<int64_t>{(xs[2] - 1) * s[0] + 1, (xs[3] - 1) * s[1] + 1})},
                                {"axes", Attribute(std::vector<int64_t>{2, 3})}});
}

// W [Cin, Cout/g, kH, kW] -> [Cout, Cin/g, kH, kW], flipped in kH and kW.
Expected<Value*> convWeight(LoweringContext& c, Value* w, int64_t groups) {
  const Shape& s = w->type().shape;
  if (s[0] % groups != 0) return Error(str("weight in-channels ", s[0], " are not divisible by group ", groups));
  int64_t cinG = s[0] / groups, coutG = s[1];
  KF_ASSIGN_OR_RETURN(Value* v, c.build("slice", {w}, {{"starts", Attribute(std::vector<int64_t>{-1, -1})},
                                                       {"ends", Attribute(std::vector<int64_t>{kToStart, kToStart})},
                                                       {"axes", Attribute(std::vector<int64_t>{2, 3})},
                                                       {"steps", Attribute(std::vector<int64_t>{-1, -1})}}));
  KF_ASSIGN_OR_RETURN(v, reshapeTo(c, v, {groups, cinG, coutG, s[2], s[3]}));
  KF_ASSIGN_OR_RETURN(v, c.build("transpose", {v}, {{"perm", Attribute(std::vector<int64_t>{0, 2, 1, 3, 4})}}));
  return reshapeTo(c, v, {groups * coutG, cinG, s[2], s[3]});
}

Status lowerConvTranspose(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(Value* w, c.input(1));
  KF_RETURN_IF_ERROR(requireFloat(c, x, "operands"));
  size_t rank = x->type().rank();
  if (rank < 3 || w->type().rank() != rank)
    return Error(str("input ", formatType(x->type()), " and weight ", formatType(w->type()), " must be [N, C, ...] "
                     "and [C, M/group, k...] of one rank"));
  if (rank > 4) return c.unsupported(str("ConvTranspose over ", rank - 2, " spatial axes (kfuse has 1-D and 2-D)"));
  Shape spatial(x->type().shape.begin() + 2, x->type().shape.end());
  Shape wKernel(w->type().shape.begin() + 2, w->type().shape.end());
  KF_ASSIGN_OR_RETURN(TransposedGeometry g, readGeometry(c, spatial, wKernel));
  KF_ASSIGN_OR_RETURN(int64_t groups, c.attrs().getInt("group", 1));
  if (groups < 1) return Error("attribute group must be >= 1");
  if (x->type().shape[1] != w->type().shape[0])
    return Error(str("input channels ", x->type().shape[1], " differ from the weight's ", w->type().shape[0]));
  bool oneD = rank == 3;
  if (oneD) {  // 1-D: a unit height; its geometry entries are the identity
    KF_ASSIGN_OR_RETURN(x, c.build("unsqueeze", {x}, {{"axes", Attribute(std::vector<int64_t>{2})}}));
    KF_ASSIGN_OR_RETURN(w, c.build("unsqueeze", {w}, {{"axes", Attribute(std::vector<int64_t>{2})}}));
    for (auto* v : {&g.kernel, &g.strides, &g.dilations}) v->insert(v->begin(), 1);
    g.outputPadding.insert(g.outputPadding.begin(), 0);
    g.pads = {0, g.pads[0], 0, g.pads[1]};
  }
  KF_ASSIGN_OR_RETURN(Value* v, dilateByStride(c, x, g.strides));
  std::vector<int64_t> pads(8, 0);  // pad's order: begins of all 4 axes, then ends
  for (size_t i = 0; i < 2; ++i) {
    int64_t span = (g.kernel[i] - 1) * g.dilations[i] + 1;
    pads[2 + i] = span - 1 - g.pads[i];
    pads[6 + i] = span - 1 - g.pads[i + 2] + g.outputPadding[i];
  }
  KF_ASSIGN_OR_RETURN(v, c.build("pad", {v}, {{"pads", Attribute(pads)}}));
  KF_ASSIGN_OR_RETURN(Value* kernel, convWeight(c, w, groups));
  std::vector<Value*> operands{v, kernel};
  if (c.hasInput(2)) {
    KF_ASSIGN_OR_RETURN(Value* b, c.input(2));
    operands.push_back(b);
  }
  KF_ASSIGN_OR_RETURN(Value* y, c.build("conv2d", operands, {{"dilations", Attribute(g.dilations)},
                                                             {"groups", groups}}));
  if (oneD) {
    KF_ASSIGN_OR_RETURN(y, c.build("squeeze", {y}, {{"axes", Attribute(std::vector<int64_t>{2})}}));
  }
  return done(c, y);
}

const std::vector<OpLowering> kTable = {
    {"ConvTranspose", {1, 11, 22}, lowerConvTranspose,
     "reshape + pad + reshape + slice (stride dilation), pad, slice + transpose of the kernel, conv2d"},
};

}  // namespace

std::span<const OpLowering> convTransposeLowerings() { return kTable; }

}  // namespace kfuse::onnx_import
