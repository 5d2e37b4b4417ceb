// GEMM-like ops: matmul and conv2d. The references are direct loops that
// accumulate in double (no im2col, no blocking): they define the semantics
// the cuBLASLt/BLAS lowerings and implicit-GEMM convolutions are checked
// against, so they stay obviously correct rather than fast.
#include <limits>
#include <optional>

#include "ir/ops/grad_helpers.h"
#include "ir/ops/window.h"

namespace kfuse {
namespace {

using ops::one;

// ---------------------------------------------------------------- matmul

// One matmul operand seen as a batch of matrices. NumPy promotes a rank-1
// `a` to a 1 x K row and a rank-1 `b` to a K x 1 column, and drops the
// promoted axis from the result; `vector` remembers that.
struct MatOperand {
  Shape batch;                          // leading axes, broadcast against the other operand's
  int64_t storedRows = 1, storedCols = 1;  // the last two axes as laid out in memory
  bool transposed = false;
  bool vector = false;

  int64_t rows() const { return transposed ? storedCols : storedRows; }
  int64_t cols() const { return transposed ? storedRows : storedCols; }
  // Flat offset of logical element (r, c) of the matrix at batch offset `b`.
  int64_t offset(int64_t b, int64_t r, int64_t c) const {
    if (transposed) std::swap(r, c);
    return (b * storedRows + r) * storedCols + c;
  }
};

Expected<MatOperand> matOperand(const OpCall& c, size_t i, std::string_view flag) {
  const TensorType& t = c.inputs[i];
  bool transposed = c.getBool(flag);
  if (t.rank() == 0) return Error(str("operand ", i, " must have rank >= 1, got ", formatType(t)));
  MatOperand m;
  if (t.rank() == 1) {
    if (transposed)
      return Error(str("attribute ", flag, " = true needs operand ", i, " of rank >= 2, got ", formatType(t)));
    m.vector = true;
    (i == 0 ? m.storedCols : m.storedRows) = t.shape[0];
    return m;
  }
  m.batch.assign(t.shape.begin(), t.shape.end() - 2);
  m.storedRows = t.shape[t.rank() - 2];
  m.storedCols = t.shape.back();
  m.transposed = transposed;
  return m;
}

struct MatmulPlan {
  MatOperand a, b;
  Shape batch;   // broadcast batch axes of the result
  Shape result;  // batch + [M] (unless a is a vector) + [N] (unless b is a vector)
};

Expected<MatmulPlan> planMatmul(const OpCall& c) {
  KF_RETURN_IF_ERROR(ops::requireFloat(c, 0));
  KF_RETURN_IF_ERROR(ops::requireFloat(c, 1));
  KF_RETURN_IF_ERROR(ops::requireSameDType(c, 0, 1));
  KF_ASSIGN_OR_RETURN(MatOperand a, matOperand(c, 0, "transpose_a"));
  KF_ASSIGN_OR_RETURN(MatOperand b, matOperand(c, 1, "transpose_b"));
  if (a.cols() != b.rows())
    return Error(str("contraction sizes differ: operand 0 ", formatType(c.inputs[0]),
                     a.transposed ? " (transposed)" : "", " gives K = ", a.cols(), ", operand 1 ",
                     formatType(c.inputs[1]), b.transposed ? " (transposed)" : "", " gives K = ", b.rows()));
  auto batch = broadcastShapes(a.batch, b.batch);
  if (!batch) return batch.error().context("batch dimensions");
  MatmulPlan p{a, b, *batch, *batch};
  if (!a.vector) p.result.push_back(a.rows());
  if (!b.vector) p.result.push_back(b.cols());
  return p;
}

Expected<std::vector<Tensor>> matmulReference(const OpCall& c, std::span<const Tensor* const> in,
                                              std::span<const TensorType> out) {
  KF_ASSIGN_OR_RETURN(MatmulPlan p, planMatmul(c));
  const Tensor& A = *in[0];
  const Tensor& B = *in[1];
  Tensor y(out[0]);
  int64_t m = p.a.rows(), k = p.a.cols(), n = p.b.cols();
  // Dropped vector axes have extent 1, so the result is a dense batch x m x n.
  ops::forEachIndex(p.batch, [&](const std::vector<int64_t>& idx, int64_t batchFlat) {
    int64_t ab = ops::broadcastOffset(idx, p.a.batch), bb = ops::broadcastOffset(idx, p.b.batch);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t q = 0; q < k; ++q) sum += A.at(p.a.offset(ab, i, q)) * B.at(p.b.offset(bb, q, j));
        y.set((batchFlat * m + i) * n + j, sum);
      }
  });
  return std::vector<Tensor>{std::move(y)};
}

void registerMatmul(OpRegistry& r) {
  OpDef d;
  d.name = "matmul";
  d.summary =
      "numpy.matmul (batch axes broadcast, rank-1 operands promoted); transpose_a/b swap an operand's last two axes";
  d.minInputs = d.maxInputs = 2;
  d.attrs = {{"transpose_a", AttrKind::Bool, Attribute(false)}, {"transpose_b", AttrKind::Bool, Attribute(false)}};
  d.fusion = FusionClass::GemmLike;
  // The result is Plain: its last two axes are matrix axes, whatever the operands' tags meant.
  d.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> {
    KF_ASSIGN_OR_RETURN(MatmulPlan p, planMatmul(c));
    return one(TensorType(c.inputs[0].dtype, p.result));
  };
  d.reference = matmulReference;
  r.add(std::move(d));
}

// ---------------------------------------------------------------- conv2d

using ops::checkedAdd;
using ops::checkedMul;
using ops::Filter;
using ops::Image;
using ops::WindowAxis;

struct ConvPlan {
  Image x, y;
  Filter w;
  int64_t groups = 1;
  std::vector<int64_t> strides, pads, dilations;
};

Status checkChannels(const ConvPlan& p, const TensorType& wType) {
  if (p.x.c % p.groups != 0 || p.x.c / p.groups != p.w.i)
    return Error(str("input channels ", p.x.c, " do not match weight in-channels ", p.w.i, " x groups ", p.groups));
  if (p.w.o % p.groups != 0)
    return Error(str("weight out-channels ", p.w.o, " are not divisible by groups ", p.groups));
  if (p.w.kh < 1 || p.w.kw < 1)
    return Error(str("weight kernel must be at least 1x1, got ", p.w.kh, "x", p.w.kw, " in ", formatType(wType)));
  return Status::ok();
}

Status checkBias(const OpCall& c, const ConvPlan& p) {
  if (c.inputs.size() < 3) return Status::ok();
  KF_RETURN_IF_ERROR(ops::requireSameDType(c, 0, 2));
  if (c.inputs[2].shape != Shape{p.w.o})
    return Error(str("bias must have shape [", p.w.o, "] (the weight's out-channels), got ", formatType(c.inputs[2])));
  return Status::ok();
}

// The geometry of a convolution of an x with a w of the given types under
// c's attributes. The gradient ops share it, knowing x or w only by a shape
// attribute; `xWhat` and `wWhat` name them in messages.
Expected<ConvPlan> planConvOf(const OpCall& c, const TensorType& xType, std::string_view xWhat,
                              const TensorType& wType, std::string_view wWhat) {
  ConvPlan p;
  KF_ASSIGN_OR_RETURN(p.x, ops::imageOfType(xType, xWhat));
  KF_ASSIGN_OR_RETURN(p.w, ops::filterOfType(wType, wWhat));
  KF_ASSIGN_OR_RETURN(p.strides, ops::intsAttr(c, "strides", 2, 1));
  KF_ASSIGN_OR_RETURN(p.pads, ops::intsAttr(c, "pads", 4, 0));
  KF_ASSIGN_OR_RETURN(p.dilations, ops::intsAttr(c, "dilations", 2, 1));
  p.groups = c.getInt("groups");
  if (p.groups < 1) return Error(str("attribute groups must be >= 1, got ", p.groups));
  KF_RETURN_IF_ERROR(checkChannels(p, wType));
  KF_ASSIGN_OR_RETURN(int64_t oh, ops::outputExtent({"height", p.x.h, p.w.kh, p.strides[0], p.pads[0], p.pads[2],
                                                p.dilations[0]}));
  KF_ASSIGN_OR_RETURN(int64_t ow, ops::outputExtent({"width", p.x.w, p.w.kw, p.strides[1], p.pads[1], p.pads[3],
                                                p.dilations[1]}));
  p.y = Image{p.x.n, p.w.o, oh, ow, p.x.channelsLast};
  std::optional<int64_t> count = checkedMul(p.x.n, p.w.o);
  if (count) count = checkedMul(*count, oh);
  if (count) count = checkedMul(*count, ow);
  if (!count) return Error(str("result ", formatDims(p.y.shape()), " has more elements than int64 can count"));
  return p;
}

// live_taps, when given: one 0/1 per (input channel modulo a period P,
// tap), P dividing the group's channels; a 0 promises that the filter is
// zero there for every output channel (conv-phases writes such filters), so
// code may leave those products out. The reference reads the zeros.
Status checkLiveTaps(const OpCall& c, const ConvPlan& p) {
  const std::vector<int64_t>& live = c.getInts("live_taps");
  if (live.empty()) return Status::ok();
  const int64_t taps = p.w.kh * p.w.kw, size = static_cast<int64_t>(live.size());
  if (size % taps != 0 || p.w.i % (size / taps) != 0)
    return Error(str("attribute live_taps has ", size, " entries, not a period of ", p.w.i,
                     " input channels times ", taps, " taps"));
  for (int64_t v : live)
    if (v != 0 && v != 1) return Error(str("attribute live_taps = ", ops::listText(live), " holds a value other than 0 and 1"));
  return Status::ok();
}

Expected<ConvPlan> planConv(const OpCall& c) {
  KF_RETURN_IF_ERROR(ops::requireFloat(c, 0));
  KF_RETURN_IF_ERROR(ops::requireSameDType(c, 0, 1));
  KF_ASSIGN_OR_RETURN(ConvPlan p, planConvOf(c, c.inputs[0], "operand 0", c.inputs[1], "operand 1"));
  KF_RETURN_IF_ERROR(checkBias(c, p));
  KF_RETURN_IF_ERROR(checkLiveTaps(c, p));
  return p;
}

// y[n, o, oh, ow] = bias[o] + sum over the group's input channels and the
// kernel taps that land inside the input (padding contributes zero).
double convAt(const ConvPlan& p, const Tensor& x, const Tensor& w, int64_t n, int64_t o, int64_t oh, int64_t ow) {
  int64_t group = o / (p.w.o / p.groups);
  double sum = 0;
  for (int64_t fi = 0; fi < p.w.i; ++fi)
    for (int64_t ky = 0; ky < p.w.kh; ++ky)
      for (int64_t kx = 0; kx < p.w.kw; ++kx) {
        int64_t ih = oh * p.strides[0] - p.pads[0] + ky * p.dilations[0];
        int64_t iw = ow * p.strides[1] - p.pads[1] + kx * p.dilations[1];
        if (ih < 0 || ih >= p.x.h || iw < 0 || iw >= p.x.w) continue;
        sum += x.at(p.x.offset(n, group * p.w.i + fi, ih, iw)) * w.at(p.w.offset(o, fi, ky, kx));
      }
  return sum;
}

Expected<std::vector<Tensor>> convReference(const OpCall& c, std::span<const Tensor* const> in,
                                            std::span<const TensorType> out) {
  KF_ASSIGN_OR_RETURN(ConvPlan p, planConv(c));
  Tensor y(out[0]);
  for (int64_t n = 0; n < p.y.n; ++n)
    for (int64_t o = 0; o < p.y.c; ++o)
      for (int64_t oh = 0; oh < p.y.h; ++oh)
        for (int64_t ow = 0; ow < p.y.w; ++ow) {
          double bias = in.size() > 2 ? in[2]->at(o) : 0.0;
          y.set(p.y.offset(n, o, oh, ow), bias + convAt(p, *in[0], *in[1], n, o, oh, ow));
        }
  return std::vector<Tensor>{std::move(y)};
}

// ---------------------------------------------------------------- conv2d gradients
//
// conv2d_grad_input(dy, w) and conv2d_grad_weight(dy, x) take the forward's
// geometry attributes plus the shape of what they compute: with stride > 1
// several input sizes give the same output size, and the rows and columns no
// window reaches get a zero gradient. Their references replay every forward
// tap (the pairs input element x weight element that conv2d multiplies) and
// accumulate dy's share into the operand being differentiated.

std::vector<AttrSpec> convAttrs() {
  return {{"strides", AttrKind::Ints, Attribute(std::vector<int64_t>{1, 1})},
          {"pads", AttrKind::Ints, Attribute(std::vector<int64_t>{0, 0, 0, 0})},
          {"dilations", AttrKind::Ints, Attribute(std::vector<int64_t>{1, 1})},
          {"groups", AttrKind::Int, Attribute(int64_t{1})}};
}

// dy (operand 0) and operand 1 share a float dtype; dy is an image.
Status checkOperands(const OpCall& c) {
  KF_RETURN_IF_ERROR(ops::requireFloat(c, 0));
  KF_RETURN_IF_ERROR(ops::requireSameDType(c, 0, 1));
  return ops::imageOfType(c.inputs[0], "operand 0 (dy)").status();
}

// dy must have the type conv2d gives for the plan (x's dtype and layout tag).
Status checkDy(const OpCall& c, const ConvPlan& p, Layout xLayout) {
  return ops::requireType(c, 0, "dy", TensorType(c.inputs[0].dtype, p.y.shape(), xLayout));
}

// conv2d_grad_input(dy, w): x has shape input_shape and dy's layout tag.
Expected<ConvPlan> planGradInput(const OpCall& c) {
  KF_RETURN_IF_ERROR(checkOperands(c));
  KF_ASSIGN_OR_RETURN(Shape xs, ops::shapeAttr(c, "input_shape", 4));
  TensorType x(c.inputs[0].dtype, xs, c.inputs[0].layout);
  KF_ASSIGN_OR_RETURN(ConvPlan p, planConvOf(c, x, "attribute input_shape", c.inputs[1], "operand 1 (w)"));
  KF_RETURN_IF_ERROR(checkDy(c, p, x.layout));
  return p;
}

// The weight type conv2d_grad_weight computes: weight_shape, tagged weight_layout.
Expected<TensorType> gradWeightType(const OpCall& c) {
  KF_ASSIGN_OR_RETURN(Shape ws, ops::shapeAttr(c, "weight_shape", 4));
  auto layout = parseLayout(c.getString("weight_layout"));
  if (!layout || !(*layout == Layout::Plain || *layout == Layout::OIHW || *layout == Layout::OHWI))
    return Error(str("attribute weight_layout = ", quoteString(c.getString("weight_layout")),
                     " must be \"plain\", \"oihw\" or \"ohwi\""));
  return TensorType(c.inputs[0].dtype, ws, *layout);
}

Expected<ConvPlan> planGradWeight(const OpCall& c) {
  KF_RETURN_IF_ERROR(checkOperands(c));
  KF_ASSIGN_OR_RETURN(TensorType w, gradWeightType(c));
  KF_ASSIGN_OR_RETURN(ConvPlan p, planConvOf(c, c.inputs[1], "operand 1 (x)", w, "attribute weight_shape"));
  KF_RETURN_IF_ERROR(checkDy(c, p, c.inputs[1].layout));
  return p;
}

// One forward tap: y[n, o, oh, ow] += x[n, ci, ih, iw] * w[o, fi, ky, kx].
struct Tap {
  int64_t y, x, w;  // flat offsets into dy, x and w
};

// Calls fn for every tap that lands inside the input (padding contributes
// nothing, so it receives nothing).
template <typename Fn>
void forEachTap(const ConvPlan& p, Fn fn) {
  int64_t perGroup = p.w.o / p.groups;
  for (int64_t n = 0; n < p.y.n; ++n)
    for (int64_t o = 0; o < p.y.c; ++o)
      for (int64_t oh = 0; oh < p.y.h; ++oh)
        for (int64_t ow = 0; ow < p.y.w; ++ow)
          for (int64_t fi = 0; fi < p.w.i; ++fi)
            for (int64_t ky = 0; ky < p.w.kh; ++ky)
              for (int64_t kx = 0; kx < p.w.kw; ++kx) {
                int64_t ih = oh * p.strides[0] - p.pads[0] + ky * p.dilations[0];
                int64_t iw = ow * p.strides[1] - p.pads[1] + kx * p.dilations[1];
                if (ih < 0 || ih >= p.x.h || iw < 0 || iw >= p.x.w) continue;
                int64_t ci = (o / perGroup) * p.w.i + fi;
                fn(Tap{p.y.offset(n, o, oh, ow), p.x.offset(n, ci, ih, iw), p.w.offset(o, fi, ky, kx)});
              }
}

// dx[tap.x] += dy[tap.y] * w[tap.w]
Expected<std::vector<Tensor>> convGradInputReference(const OpCall& c, std::span<const Tensor* const> in,
                                                     std::span<const TensorType> out) {
  KF_ASSIGN_OR_RETURN(ConvPlan p, planGradInput(c));
  std::vector<double> acc(static_cast<size_t>(out[0].numElements()), 0.0);
  forEachTap(p, [&](const Tap& t) { acc[static_cast<size_t>(t.x)] += in[0]->at(t.y) * in[1]->at(t.w); });
  return std::vector<Tensor>{Tensor::fromDoubles(out[0], acc)};
}

// dw[tap.w] += dy[tap.y] * x[tap.x]
Expected<std::vector<Tensor>> convGradWeightReference(const OpCall& c, std::span<const Tensor* const> in,
                                                      std::span<const TensorType> out) {
  KF_ASSIGN_OR_RETURN(ConvPlan p, planGradWeight(c));
  std::vector<double> acc(static_cast<size_t>(out[0].numElements()), 0.0);
  forEachTap(p, [&](const Tap& t) { acc[static_cast<size_t>(t.w)] += in[0]->at(t.y) * in[1]->at(t.x); });
  return std::vector<Tensor>{Tensor::fromDoubles(out[0], acc)};
}

void registerConvGrads(OpRegistry& r) {
  OpDef gi;
  gi.name = "conv2d_grad_input";
  gi.summary = "conv2d backward to x from (dy, w) under the forward's attributes; input_shape: x's shape "
               "(x has dy's layout tag)";
  gi.minInputs = gi.maxInputs = 2;
  gi.attrs = convAttrs();
  gi.attrs.push_back({"input_shape", AttrKind::Ints, std::nullopt});
  gi.fusion = FusionClass::GemmLike;
  gi.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> {
    KF_RETURN_IF_ERROR(planGradInput(c).status());
    return one(TensorType(c.inputs[0].dtype, c.getInts("input_shape"), c.inputs[0].layout));
  };
  gi.reference = convGradInputReference;
  gi.layout = {LayoutClass::Native, {}, {0}, {1}, {0}, {"input_shape"}};
  r.add(std::move(gi));

  OpDef gw;
  gw.name = "conv2d_grad_weight";
  gw.summary = "conv2d backward to w from (dy, x) under the forward's attributes; weight_shape and weight_layout "
               "(plain, oihw or ohwi): w's type";
  gw.minInputs = gw.maxInputs = 2;
  gw.attrs = convAttrs();
  gw.attrs.push_back({"weight_shape", AttrKind::Ints, std::nullopt});
  gw.attrs.push_back({"weight_layout", AttrKind::String, Attribute("plain")});
  gw.fusion = FusionClass::GemmLike;
  gw.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> {
    KF_RETURN_IF_ERROR(planGradWeight(c).status());
    return one(*gradWeightType(c));
  };
  gw.reference = convGradWeightReference;
  // dw keeps the layout weight_layout names, whatever dy's and x's.
  gw.layout = {LayoutClass::Native, {}, {0, 1}, {}, {}, {}};
  r.add(std::move(gw));
}

void registerConv2d(OpRegistry& r) {
  OpDef d;
  d.name = "conv2d";
  d.summary =
      "2-D convolution (cross-correlation) of x NCHW/NHWC with w OIHW/OHWI [O, C/groups, kH, kW] plus optional "
      "bias [O]; pads are (top, left, bottom, right); live_taps: 0 where w is zero for every output channel, per "
      "(input channel modulo a period, tap), so code may skip it";
  d.minInputs = 2;
  d.maxInputs = 3;
  d.attrs = convAttrs();
  d.attrs.push_back({"live_taps", AttrKind::Ints, Attribute(std::vector<int64_t>{})});
  d.fusion = FusionClass::GemmLike;
  // The result keeps the input's tag: plain stays plain, NHWC stays NHWC.
  d.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> {
    KF_ASSIGN_OR_RETURN(ConvPlan p, planConv(c));
    return one(TensorType(c.inputs[0].dtype, p.y.shape(), c.inputs[0].layout));
  };
  d.reference = convReference;
  d.layout = {LayoutClass::Native, {}, {0}, {1}, {0}, {}};
  r.add(std::move(d));
}

}  // namespace

void registerLinalgOps(OpRegistry& r) {
  registerMatmul(r);
  registerConv2d(r);
  registerConvGrads(r);
}

}  // namespace kfuse
