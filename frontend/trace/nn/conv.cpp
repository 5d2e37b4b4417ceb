#include "frontend/trace/nn/conv.h"

#include <cmath>

#include "frontend/trace/ops.h"
#include "ir/support/strings.h"

namespace kfuse::nn {

namespace {
kfuse::Tensor f32(Shape s) { return kfuse::Tensor(TensorType(DType::F32, std::move(s))); }
}  // namespace

Conv2d::Conv2d(int64_t in, int64_t out, Size2 k, Conv2dOptions opts)
    : Module("Conv2d"), inChannels(in), outChannels(out), kernel(k), options(opts) {
  // torch raises for these; here they are reported when the model is traced
  // or loaded, and no tensor is allocated with a bad shape.
  bool ok = false;
  if (in < 0 || out < 0 || k.h < 1 || k.w < 1)
    reportProblem(str("channels (", in, ", ", out, ") must be >= 0 and the kernel (", k.h, "x", k.w, ") >= 1x1"));
  else if (opts.groups < 1 || in % opts.groups != 0 || out % opts.groups != 0)
    reportProblem(str("groups = ", opts.groups, " must be >= 1 and divide in_channels ", in, " and out_channels ", out));
  else
    ok = true;
  Shape w = ok ? weightShape() : Shape{0, 0, 1, 1};
  registerParameter("weight", f32(w));
  if (opts.bias) registerParameter("bias", f32({w[0]}));
  if (ok) initParameters(defaultGenerator());
}

Shape Conv2d::weightShape() const { return {outChannels, inChannels / options.groups, kernel.h, kernel.w}; }

void Conv2d::initParameters(Generator& gen) {
  Shape shape = findTensor("weight")->shape();
  kfuse::Tensor w = f32(shape);
  (void)init::kaimingUniform(w, std::sqrt(5.0), gen);  // rank 4: cannot fail
  (void)setTensor("weight", std::move(w));
  if (!options.bias) return;
  kfuse::Tensor b = f32({shape[0]});
  int64_t fanIn = shape[1] * shape[2] * shape[3];
  double bound = fanIn > 0 ? 1.0 / std::sqrt(static_cast<double>(fanIn)) : 0.0;
  init::uniform(b, -bound, bound, gen);
  (void)setTensor("bias", std::move(b));
}

Tensor Conv2d::forward(const Tensor& x) {
  auto s = scope(x);
  trace::Conv2dAttrs attrs{.strides = {options.stride.h, options.stride.w},
                           .pads = {options.padding.h, options.padding.w, options.padding.h, options.padding.w},
                           .dilations = {options.dilation.h, options.dilation.w},
                           .groups = options.groups};
  Tensor w = param(x, "weight");
  if (!options.bias) return trace::conv2d(x, w, attrs);
  Tensor b = param(x, "bias");
  return trace::conv2d(x, w, b, attrs);
}

}  // namespace kfuse::nn
