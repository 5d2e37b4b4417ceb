#include "frontend/trace/nn/pooling.h"

#include "frontend/trace/ops.h"
#include "ir/support/strings.h"

namespace kfuse::nn {

namespace {

std::vector<int64_t> pair(Size2 s) { return {s.h, s.w}; }
std::vector<int64_t> symmetricPads(Size2 p) { return {p.h, p.w, p.h, p.w}; }

}  // namespace

MaxPool2d::MaxPool2d(Size2 k, MaxPool2dOptions opts) : Module("MaxPool2d"), kernel(k), options(opts) {}

Tensor MaxPool2d::forward(const Tensor& x) {
  auto s = scope(x);
  return trace::maxPool2d(x, {.kernel = pair(kernel),
                              .strides = pair(options.stride.value_or(kernel)),
                              .pads = symmetricPads(options.padding),
                              .dilations = pair(options.dilation),
                              .ceilMode = options.ceilMode});
}

AvgPool2d::AvgPool2d(Size2 k, AvgPool2dOptions opts) : Module("AvgPool2d"), kernel(k), options(opts) {}

Tensor AvgPool2d::forward(const Tensor& x) {
  auto s = scope(x);
  return trace::avgPool2d(x, {.kernel = pair(kernel),
                              .strides = pair(options.stride.value_or(kernel)),
                              .pads = symmetricPads(options.padding),
                              .ceilMode = options.ceilMode,
                              .countIncludePad = options.countIncludePad});
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(Size2 out) : Module("AdaptiveAvgPool2d"), outputSize(out) {
  if (out.h < 1 || out.w < 1) reportProblem(str("output size ", out.h, "x", out.w, " must be at least 1x1"));
}

Tensor AdaptiveAvgPool2d::forward(const Tensor& x) {
  auto s = scope(x);
  if (!problem().empty()) return fail(x, problem());
  if (outputSize == Size2(1)) return trace::globalAvgPool2d(x);
  if (!x.ok()) return trace::identity(x);  // passes x's problem on
  if (x.rank() != 4) return fail(x, str("expected a 4-D image input, got ", formatType(x.type())));
  bool nhwc = x.type().layout == Layout::NHWC;
  int64_t h = x.shape()[nhwc ? 1 : 2], w = x.shape()[nhwc ? 2 : 3];
  if (h % outputSize.h != 0 || w % outputSize.w != 0)
    return fail(x, str("output size ", outputSize.h, "x", outputSize.w, " does not divide the input's ", h, "x", w,
                       " (uneven adaptive windows are not supported)"));
  Size2 window(h / outputSize.h, w / outputSize.w);
  return trace::avgPool2d(x, {.kernel = pair(window), .strides = pair(window)});
}

}  // namespace kfuse::nn
