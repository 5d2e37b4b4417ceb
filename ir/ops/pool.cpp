// Pooling: window reductions over the spatial axes of an NCHW or NHWC image.
// Semantics follow PyTorch (which ONNX exports reproduce): padded positions
// never win a max, ceil_mode adds a last window only if it starts inside the
// left-padded input, and avg_pool's count_include_pad counts padding but never
// positions beyond the padded input.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "ir/ops/window.h"

namespace kfuse {
namespace {

using ops::one;

using ops::checkedMul;
using ops::Image;
using ops::WindowAxis;

// The pooled operand: a float image with something to pool.
Expected<Image> imageOf(const OpCall& c) {
  KF_RETURN_IF_ERROR(ops::requireFloat(c, 0));
  KF_ASSIGN_OR_RETURN(Image x, ops::imageOf(c, 0));
  if (x.h < 1 || x.w < 1)
    return Error(str("input height and width must be at least 1, got ", x.h, "x", x.w, " in ", formatType(c.inputs[0])));
  return x;
}

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

// Window geometry of max_pool2d / avg_pool2d; avg_pool2d has no dilations.
Expected<PoolPlan> planPool(const OpCall& c, bool dilated) {
  PoolPlan p;
  KF_ASSIGN_OR_RETURN(p.x, imageOf(c));
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

// The result keeps the input's tag: plain stays plain, NHWC stays NHWC.
InferFn poolInfer(bool dilated) {
  return [dilated](const OpCall& c) -> Expected<std::vector<TensorType>> {
    KF_ASSIGN_OR_RETURN(PoolPlan p, planPool(c, dilated));
    return one(TensorType(c.inputs[0].dtype, p.y.shape(), c.inputs[0].layout));
  };
}

// Runs `at(n, c, oh, ow)` for every output element of the plan.
template <typename At>
std::vector<Tensor> poolEach(const PoolPlan& p, const TensorType& out, At at) {
  Tensor y(out);
  for (int64_t n = 0; n < p.y.n; ++n)
    for (int64_t ch = 0; ch < p.y.c; ++ch)
      for (int64_t oh = 0; oh < p.y.h; ++oh)
        for (int64_t ow = 0; ow < p.y.w; ++ow) y.set(p.y.offset(n, ch, oh, ow), at(n, ch, oh, ow));
  std::vector<Tensor> results;
  results.push_back(std::move(y));
  return results;
}

// The largest input element under the window's taps; padding never wins and
// NaN propagates (as PyTorch). A dilated window whose taps all fall in padding
// yields -inf, the identity of max, as PyTorch does.
Expected<std::vector<Tensor>> maxPoolReference(const OpCall& c, std::span<const Tensor* const> in,
                                               std::span<const TensorType> out) {
  KF_ASSIGN_OR_RETURN(PoolPlan p, planPool(c, true));
  const Tensor& x = *in[0];
  return poolEach(p, out[0], [&](int64_t n, int64_t ch, int64_t oh, int64_t ow) {
    double best = -std::numeric_limits<double>::infinity();
    for (int64_t ky = 0; ky < p.kernel[0]; ++ky)
      for (int64_t kx = 0; kx < p.kernel[1]; ++kx) {
        int64_t ih = oh * p.strides[0] - p.pads[0] + ky * p.dilations[0];
        int64_t iw = ow * p.strides[1] - p.pads[1] + kx * p.dilations[1];
        if (ih < 0 || ih >= p.x.h || iw < 0 || iw >= p.x.w) continue;
        double v = x.at(p.x.offset(n, ch, ih, iw));
        if (v > best || std::isnan(v)) best = v;
      }
    return best;
  });
}

// Window [begin, end) along one axis: `padded` is clipped to the padded input
// (the count_include_pad divisor), `real` to the input itself.
struct Span {
  int64_t paddedExtent, realBegin, realEnd;
};
Span windowSpan(int64_t o, int64_t stride, int64_t kernel, int64_t padBegin, int64_t padEnd, int64_t in) {
  int64_t begin = o * stride - padBegin;
  int64_t end = std::min(begin + kernel, in + padEnd);
  return Span{end - begin, std::max<int64_t>(begin, 0), std::min(end, in)};
}

Expected<std::vector<Tensor>> avgPoolReference(const OpCall& c, std::span<const Tensor* const> in,
                                               std::span<const TensorType> out) {
  KF_ASSIGN_OR_RETURN(PoolPlan p, planPool(c, false));
  bool includePad = c.getBool("count_include_pad");
  const Tensor& x = *in[0];
  return poolEach(p, out[0], [&](int64_t n, int64_t ch, int64_t oh, int64_t ow) {
    Span sh = windowSpan(oh, p.strides[0], p.kernel[0], p.pads[0], p.pads[2], p.x.h);
    Span sw = windowSpan(ow, p.strides[1], p.kernel[1], p.pads[1], p.pads[3], p.x.w);
    double sum = 0;
    for (int64_t ih = sh.realBegin; ih < sh.realEnd; ++ih)
      for (int64_t iw = sw.realBegin; iw < sw.realEnd; ++iw) sum += x.at(p.x.offset(n, ch, ih, iw));
    // Both divisors are >= 1: pads are smaller than the kernel and ceil
    // windows start inside the left-padded input, so every window has a real element.
    int64_t divisor = includePad ? sh.paddedExtent * sw.paddedExtent
                                 : (sh.realEnd - sh.realBegin) * (sw.realEnd - sw.realBegin);
    return sum / static_cast<double>(divisor);
  });
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

void registerWindowPools(OpRegistry& r) {
  OpDef mp = poolOp("max_pool2d",
                    "max over kH x kW windows of an NCHW/NHWC image; strides [] = kernel, pads (top, left, bottom, "
                    "right) never win");
  mp.attrs = windowAttrs(true, "");
  mp.infer = poolInfer(true);
  mp.reference = maxPoolReference;
  r.add(std::move(mp));

  OpDef ap = poolOp("avg_pool2d",
                    "mean over kH x kW windows of an NCHW/NHWC image; count_include_pad counts padding in the divisor");
  ap.attrs = windowAttrs(false, "count_include_pad");
  ap.infer = poolInfer(false);
  ap.reference = avgPoolReference;
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
  r.add(std::move(d));
}

}  // namespace

void registerPoolOps(OpRegistry& r) {
  registerWindowPools(r);
  registerGlobalAvgPool(r);
}

}  // namespace kfuse
