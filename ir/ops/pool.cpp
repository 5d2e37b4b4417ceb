// Pooling: window reductions over the spatial axes of an NCHW or NHWC image.
// Semantics follow PyTorch (which ONNX exports reproduce): padded positions
// never win a max, ceil_mode adds a last window only if it starts inside the
// left-padded input, and avg_pool's count_include_pad counts padding but never
// positions beyond the padded input.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "ir/ops/grad_helpers.h"
#include "ir/ops/window.h"

namespace kfuse {
namespace {

using ops::one;

using ops::checkedMul;
using ops::Image;
using ops::WindowAxis;

// A pooled image of type t (named `what` in messages): a float image with
// something to pool.
Expected<Image> pooledImage(const TensorType& t, std::string_view what) {
  if (!isFloat(t.dtype)) return Error(str(what, " must be floating-point, got ", formatType(t)));
  KF_ASSIGN_OR_RETURN(Image x, ops::imageOfType(t, what));
  if (x.h < 1 || x.w < 1)
    return Error(str("input height and width must be at least 1, got ", x.h, "x", x.w, " in ", formatType(t)));
  return x;
}

// The pooled operand i.
Expected<Image> imageOf(const OpCall& c, size_t i = 0) { return pooledImage(c.inputs[i], str("operand ", i)); }

// Pads must be smaller than the window span (as PyTorch and ONNX require), so
// every window overlaps the input.
Expected<int64_t> poolExtent(const WindowAxis& a) {
  KF_ASSIGN_OR_RETURN(int64_t span, ops::windowSpan(a));
  if (a.padBegin >= span || a.padEnd >= span)
    return Error(str("pads along ", a.name, " (", a.padBegin, ", ", a.padEnd, ") must be smaller than the ",
                     a.dilation > 1 ? "dilated kernel " : "kernel ", span, ": a window could hold only padding"));
  return ops::outputExtent(a);
}

struct PoolPlan {
  Image x, y;
  std::vector<int64_t> kernel, strides, pads, dilations;
};

// Window geometry of max_pool2d / avg_pool2d over x (and of their gradient
// ops); avg_pool2d has no dilations.
Expected<PoolPlan> planPoolOf(const OpCall& c, const Image& x, bool dilated) {
  PoolPlan p;
  p.x = x;
  KF_ASSIGN_OR_RETURN(p.kernel, ops::intsAttr(c, "kernel", 2, 1));
  p.strides = p.kernel;
  if (!c.getInts("strides").empty()) {
    KF_ASSIGN_OR_RETURN(p.strides, ops::intsAttr(c, "strides", 2, 1));
  }
  KF_ASSIGN_OR_RETURN(p.pads, ops::intsAttr(c, "pads", 4, 0));
  p.dilations = {1, 1};
  if (dilated) {
    KF_ASSIGN_OR_RETURN(p.dilations, ops::intsAttr(c, "dilations", 2, 1));
  }
  bool ceilMode = c.getBool("ceil_mode");
  KF_ASSIGN_OR_RETURN(int64_t oh, poolExtent({"height", p.x.h, p.kernel[0], p.strides[0], p.pads[0], p.pads[2],
                                                p.dilations[0], ceilMode}));
  KF_ASSIGN_OR_RETURN(int64_t ow, poolExtent({"width", p.x.w, p.kernel[1], p.strides[1], p.pads[1], p.pads[3],
                                                p.dilations[1], ceilMode}));
  p.y = Image{p.x.n, p.x.c, oh, ow, p.x.channelsLast};
  std::optional<int64_t> count = checkedMul(p.x.n, p.x.c);
  if (count) count = checkedMul(*count, oh);
  if (count) count = checkedMul(*count, ow);
  if (!count) return Error(str("result ", formatDims(p.y.shape()), " has more elements than int64 can count"));
  return p;
}

Expected<PoolPlan> planPool(const OpCall& c, bool dilated) {
  KF_ASSIGN_OR_RETURN(Image x, imageOf(c));
  return planPoolOf(c, x, dilated);
}

// The result keeps the input's tag: plain stays plain, NHWC stays NHWC.
InferFn poolInfer(bool dilated) {
  return [dilated](const OpCall& c) -> Expected<std::vector<TensorType>> {
    KF_ASSIGN_OR_RETURN(PoolPlan p, planPool(c, dilated));
    return one(TensorType(c.inputs[0].dtype, p.y.shape(), c.inputs[0].layout));
  };
}

// Calls fn(n, c, oh, ow) for every window (output element) of the plan.
template <typename Fn>
void forEachWindow(const PoolPlan& p, Fn fn) {
  for (int64_t n = 0; n < p.y.n; ++n)
    for (int64_t ch = 0; ch < p.y.c; ++ch)
      for (int64_t oh = 0; oh < p.y.h; ++oh)
        for (int64_t ow = 0; ow < p.y.w; ++ow) fn(n, ch, oh, ow);
}

// Runs `at(n, c, oh, ow)` for every output element of the plan.
template <typename At>
std::vector<Tensor> poolEach(const PoolPlan& p, const TensorType& out, At at) {
  Tensor y(out);
  forEachWindow(p, [&](int64_t n, int64_t ch, int64_t oh, int64_t ow) {
    y.set(p.y.offset(n, ch, oh, ow), at(n, ch, oh, ow));
  });
  std::vector<Tensor> results;
  results.push_back(std::move(y));
  return results;
}

// The input offset a max_pool2d window picks, as PyTorch's indices do: the
// first tap inside the input, replaced by each later tap that is strictly
// greater or NaN (so the first of equal maxima wins, and the last NaN).
// Padding is never picked; -1 when every tap falls in padding. The forward
// and its gradient both use it, so dy goes exactly where the maximum came from.
int64_t maxTap(const PoolPlan& p, const Tensor& x, int64_t n, int64_t ch, int64_t oh, int64_t ow) {
  int64_t best = -1;
  double bestValue = 0;
  for (int64_t ky = 0; ky < p.kernel[0]; ++ky)
    for (int64_t kx = 0; kx < p.kernel[1]; ++kx) {
      int64_t ih = oh * p.strides[0] - p.pads[0] + ky * p.dilations[0];
      int64_t iw = ow * p.strides[1] - p.pads[1] + kx * p.dilations[1];
      if (ih < 0 || ih >= p.x.h || iw < 0 || iw >= p.x.w) continue;
      int64_t at = p.x.offset(n, ch, ih, iw);
      double v = x.at(at);
      if (best < 0 || v > bestValue || std::isnan(v)) {
        best = at;
        bestValue = v;
      }
    }
  return best;
}

// The largest input element under the window's taps. A dilated window whose
// taps all fall in padding yields -inf, the identity of max, as PyTorch does.
Expected<std::vector<Tensor>> maxPoolReference(const OpCall& c, std::span<const Tensor* const> in,
                                               std::span<const TensorType> out) {
  KF_ASSIGN_OR_RETURN(PoolPlan p, planPool(c, true));
  const Tensor& x = *in[0];
  return poolEach(p, out[0], [&](int64_t n, int64_t ch, int64_t oh, int64_t ow) {
    int64_t at = maxTap(p, x, n, ch, oh, ow);
    return at < 0 ? -std::numeric_limits<double>::infinity() : x.at(at);
  });
}

// An avg_pool2d window: the input rows and columns it covers, and its divisor.
struct AvgWindow {
  ops::ClippedWindow h, w;
  double divisor;
};
AvgWindow avgWindow(const PoolPlan& p, bool includePad, int64_t oh, int64_t ow) {
  ops::ClippedWindow sh = ops::clippedWindow(oh, p.strides[0], p.kernel[0], p.pads[0], p.pads[2], p.x.h);
  ops::ClippedWindow sw = ops::clippedWindow(ow, p.strides[1], p.kernel[1], p.pads[1], p.pads[3], p.x.w);
  // Both divisors are >= 1: pads are smaller than the kernel and ceil
  // windows start inside the left-padded input, so every window has a real element.
  int64_t divisor = includePad ? sh.paddedExtent * sw.paddedExtent
                               : (sh.realEnd - sh.realBegin) * (sw.realEnd - sw.realBegin);
  return AvgWindow{sh, sw, static_cast<double>(divisor)};
}

Expected<std::vector<Tensor>> avgPoolReference(const OpCall& c, std::span<const Tensor* const> in,
                                               std::span<const TensorType> out) {
  KF_ASSIGN_OR_RETURN(PoolPlan p, planPool(c, false));
  bool includePad = c.getBool("count_include_pad");
  const Tensor& x = *in[0];
  return poolEach(p, out[0], [&](int64_t n, int64_t ch, int64_t oh, int64_t ow) {
    AvgWindow win = avgWindow(p, includePad, oh, ow);
    double sum = 0;
    for (int64_t ih = win.h.realBegin; ih < win.h.realEnd; ++ih)
      for (int64_t iw = win.w.realBegin; iw < win.w.realEnd; ++iw) sum += x.at(p.x.offset(n, ch, ih, iw));
    return sum / win.divisor;
  });
}

// ---------------------------------------------------------------- gradients

// max_pool2d_grad(dy, x): x pooled as the forward did; dy has the result's type.
Expected<PoolPlan> planMaxPoolGrad(const OpCall& c) {
  KF_ASSIGN_OR_RETURN(Image x, imageOf(c, 1));
  KF_ASSIGN_OR_RETURN(PoolPlan p, planPoolOf(c, x, true));
  const TensorType& xt = c.inputs[1];
  KF_RETURN_IF_ERROR(ops::requireType(c, 0, "dy", TensorType(xt.dtype, p.y.shape(), xt.layout)));
  return p;
}

// Each dy goes to the element its window picked (maxTap); elements picked
// by several windows sum their shares. A window of padding only (possible
// only when dilated) read no element, so its dy goes nowhere.
Expected<std::vector<Tensor>> maxPoolGradReference(const OpCall& c, std::span<const Tensor* const> in,
                                                   std::span<const TensorType> out) {
  KF_ASSIGN_OR_RETURN(PoolPlan p, planMaxPoolGrad(c));
  std::vector<double> acc(static_cast<size_t>(out[0].numElements()), 0.0);
  forEachWindow(p, [&](int64_t n, int64_t ch, int64_t oh, int64_t ow) {
    int64_t at = maxTap(p, *in[1], n, ch, oh, ow);
    if (at >= 0) acc[static_cast<size_t>(at)] += in[0]->at(p.y.offset(n, ch, oh, ow));
  });
  return std::vector<Tensor>{Tensor::fromDoubles(out[0], acc)};
}

// avg_pool2d_grad(dy): x has shape input_shape and dy's layout tag.
Expected<PoolPlan> planAvgPoolGrad(const OpCall& c) {
  KF_RETURN_IF_ERROR(ops::requireFloat(c, 0));
  KF_RETURN_IF_ERROR(ops::imageOfType(c.inputs[0], "operand 0 (dy)").status());
  KF_ASSIGN_OR_RETURN(Shape xs, ops::shapeAttr(c, "input_shape", 4));
  TensorType xt(c.inputs[0].dtype, xs, c.inputs[0].layout);
  KF_ASSIGN_OR_RETURN(Image x, pooledImage(xt, "attribute input_shape"));
  KF_ASSIGN_OR_RETURN(PoolPlan p, planPoolOf(c, x, false));
  KF_RETURN_IF_ERROR(ops::requireType(c, 0, "dy", TensorType(xt.dtype, p.y.shape(), xt.layout)));
  return p;
}

// Each dy is spread over its window's input elements, divided by the
// forward's divisor (so padding, when counted, absorbs its share).
Expected<std::vector<Tensor>> avgPoolGradReference(const OpCall& c, std::span<const Tensor* const> in,
                                                   std::span<const TensorType> out) {
  KF_ASSIGN_OR_RETURN(PoolPlan p, planAvgPoolGrad(c));
  bool includePad = c.getBool("count_include_pad");
  std::vector<double> acc(static_cast<size_t>(out[0].numElements()), 0.0);
  forEachWindow(p, [&](int64_t n, int64_t ch, int64_t oh, int64_t ow) {
    AvgWindow win = avgWindow(p, includePad, oh, ow);
    double share = in[0]->at(p.y.offset(n, ch, oh, ow)) / win.divisor;
    for (int64_t ih = win.h.realBegin; ih < win.h.realEnd; ++ih)
      for (int64_t iw = win.w.realBegin; iw < win.w.realEnd; ++iw)
        acc[static_cast<size_t>(p.x.offset(n, ch, ih, iw))] += share;
  });
  return std::vector<Tensor>{Tensor::fromDoubles(out[0], acc)};
}

std::vector<AttrSpec> windowAttrs(bool dilated, std::string_view extraBool) {
  std::vector<AttrSpec> a = {{"kernel", AttrKind::Ints, std::nullopt},
                             {"strides", AttrKind::Ints, Attribute(std::vector<int64_t>{})},
                             {"pads", AttrKind::Ints, Attribute(std::vector<int64_t>{0, 0, 0, 0})}};
  if (dilated) a.push_back({"dilations", AttrKind::Ints, Attribute(std::vector<int64_t>{1, 1})});
  a.push_back({"ceil_mode", AttrKind::Bool, Attribute(false)});
  if (!extraBool.empty()) a.push_back({std::string(extraBool), AttrKind::Bool, Attribute(false)});
  return a;
}

OpDef poolOp(std::string name, std::string summary) {
  OpDef d;
  d.name = std::move(name);
  d.summary = std::move(summary);
  d.minInputs = d.maxInputs = 1;
  d.fusion = FusionClass::Reduction;
  return d;
}

void registerWindowPoolGrads(OpRegistry& r) {
  OpDef mg = poolOp("max_pool2d_grad",
                    "max_pool2d backward from (dy, x): each dy goes to the first maximal input element of its window "
                    "(PyTorch's index), never to padding");
  mg.minInputs = mg.maxInputs = 2;
  mg.attrs = windowAttrs(true, "");
  mg.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> {
    KF_RETURN_IF_ERROR(planMaxPoolGrad(c).status());
    return one(c.inputs[1]);
  };
  mg.reference = maxPoolGradReference;
  mg.layout = {LayoutClass::Native, {}, {0, 1}, {}, {0}, {}};
  r.add(std::move(mg));

  OpDef ag = poolOp("avg_pool2d_grad",
                    "avg_pool2d backward from dy: dy / the forward's divisor to each input element of its window; "
                    "input_shape: x's shape (x has dy's layout tag)");
  ag.attrs = windowAttrs(false, "count_include_pad");
  ag.attrs.push_back({"input_shape", AttrKind::Ints, std::nullopt});
  ag.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> {
    KF_RETURN_IF_ERROR(planAvgPoolGrad(c).status());
    return one(TensorType(c.inputs[0].dtype, c.getInts("input_shape"), c.inputs[0].layout));
  };
  ag.reference = avgPoolGradReference;
  ag.layout = {LayoutClass::Native, {}, {0}, {}, {0}, {"input_shape"}};
  r.add(std::move(ag));
}

void registerWindowPools(OpRegistry& r) {
  OpDef mp = poolOp("max_pool2d",
                    "max over kH x kW windows of an NCHW/NHWC image; strides [] = kernel, pads (top, left, bottom, "
                    "right) never win");
  mp.attrs = windowAttrs(true, "");
  mp.infer = poolInfer(true);
  mp.reference = maxPoolReference;
  mp.layout = {LayoutClass::Native, {}, {0}, {}, {0}, {}};
  r.add(std::move(mp));

  OpDef ap = poolOp("avg_pool2d",
                    "mean over kH x kW windows of an NCHW/NHWC image; count_include_pad counts padding in the divisor");
  ap.attrs = windowAttrs(false, "count_include_pad");
  ap.infer = poolInfer(false);
  ap.reference = avgPoolReference;
  ap.layout = {LayoutClass::Native, {}, {0}, {}, {0}, {}};
  r.add(std::move(ap));
}

// ------------------------------------------------------- global_avg_pool2d

Expected<std::vector<Tensor>> globalAvgPoolReference(const OpCall& c, std::span<const Tensor* const> in,
                                                     std::span<const TensorType> out) {
  KF_ASSIGN_OR_RETURN(Image x, imageOf(c));
  Image y{x.n, x.c, 1, 1, x.channelsLast};
  Tensor result(out[0]);
  for (int64_t n = 0; n < x.n; ++n)
    for (int64_t ch = 0; ch < x.c; ++ch) {
      double sum = 0;
      for (int64_t ih = 0; ih < x.h; ++ih)
        for (int64_t iw = 0; iw < x.w; ++iw) sum += in[0]->at(x.offset(n, ch, ih, iw));
      result.set(y.offset(n, ch, 0, 0), sum / static_cast<double>(x.h * x.w));
    }
  return std::vector<Tensor>{std::move(result)};
}

void registerGlobalAvgPool(OpRegistry& r) {
  OpDef d = poolOp("global_avg_pool2d", "mean over H and W of an NCHW/NHWC image, keeping them as extent-1 axes");
  d.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> {
    KF_ASSIGN_OR_RETURN(Image x, imageOf(c));
    Image y{x.n, x.c, 1, 1, x.channelsLast};
    return one(TensorType(c.inputs[0].dtype, y.shape(), c.inputs[0].layout));
  };
  d.reference = globalAvgPoolReference;
  d.layout = {LayoutClass::Native, {}, {0}, {}, {0}, {}};
  // One row per (n, c): the spatial axes, kept as extent-1 axes.
  d.rowSpec = [](const OpCall& c) -> Expected<RowSpec> {
    KF_ASSIGN_OR_RETURN(Image x, imageOf(c));
    RowSpec s;
    s.reduceAxes = x.channelsLast ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{2, 3};
    s.operandAxes = {{0, 1, 2, 3}};
    s.resultAxes = {x.channelsLast ? std::vector<int64_t>{0, -1, -1, 3} : std::vector<int64_t>{0, 1, -1, -1}};
    s.resultScopes = {RowScope::Row};
    return s;
  };
  d.row = [](RowBuilder& b, const OpCall& c, std::span<const Scalar> in) -> std::vector<Scalar> {
    Image x = *imageOf(c);
    return {b.reduce(RowCombiner::Sum, in[0]) / static_cast<double>(x.h * x.w)};
  };
  r.add(std::move(d));
}

}  // namespace

void registerPoolOps(OpRegistry& r) {
  registerWindowPools(r);
  registerWindowPoolGrads(r);
  registerGlobalAvgPool(r);
}

}  // namespace kfuse
