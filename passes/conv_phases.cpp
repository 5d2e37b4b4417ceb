// conv-phases: a strided convolution over few input channels (an image
// model's first layer) as a stride-1 convolution over the phases of its
// input (space-to-depth), where the cpu target's rule says it pays
// (passes/direct_conv.h, convPhasesPay):
//
//   conv2d(x, w, b) {strides = [s, s], pads}
//     -> xp = pad(x): the op's top and left pads, and bottom and right ones
//             that make the extents multiples of s covering every window
//        phases = reshape(transpose(reshape(xp, [N, C, H/s, s, W/s, s]),
//                                   [0, 1, 3, 5, 2, 4]), [N, C*s*s, H/s, W/s])
//        y = conv2d(phases, w', b) {strides = [1, 1]}, sliced to the op's
//            extents where it has more
//
// with w'[o, (c*s + dy)*s + dx, i, j] = w[o, c, i*s + dy, j*s + dx] (zero
// past w's taps), computed now: the filter must be fixed as the module
// compiles (a constant, or a parameter no function updates; a training
// step's filters are left alone). Output element (oh, ow) of y reads the
// same products as the op's, at the same taps: phases channel (c, dy, dx) at
// (oh + i, ow + j) is xp[c, s*(oh + i) + dy, s*(ow + j) + dx].
#include <algorithm>

#include "ir/builder.h"
#include "ir/support/strings.h"
#include "passes/direct_conv.h"
#include "passes/node_rewrite.h"
#include "passes/pass_registry.h"

namespace kfuse {
namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// w [O, C, KH, KW] as the phases' filter [O, C*s*s, ceil(KH/s), ceil(KW/s)].
Tensor phaseFilter(const Tensor& w, int64_t s) {
  const Shape& ws = w.type().shape;
  const int64_t o = ws[0], c = ws[1], kh = ws[2], kw = ws[3], ph = ceilDiv(kh, s), pw = ceilDiv(kw, s);
  const std::vector<double> from = w.toDoubles();
  std::vector<double> to(static_cast<size_t>(o * c * s * s * ph * pw), 0.0);
  for (int64_t oo = 0; oo < o; ++oo)
    for (int64_t cc = 0; cc < c; ++cc)
      for (int64_t y = 0; y < kh; ++y)
        for (int64_t x = 0; x < kw; ++x) {
          const int64_t channel = (cc * s + y % s) * s + x % s;
          to[static_cast<size_t>(((oo * c * s * s + channel) * ph + y / s) * pw + x / s)] =
              from[static_cast<size_t>(((oo * c + cc) * kh + y) * kw + x)];
        }
  return Tensor::fromDoubles(TensorType(w.type().dtype, {o, c * s * s, ph, pw}), to);
}

class Rewrite : NodeRewrite {
 public:
  Rewrite(Graph& g, Node* n) : NodeRewrite(g, n) {}

  // Rewrites n_, or says why not (nothing built then).
  std::string run() {
    Value* x = n_->operand(0);
    Value* w = n_->operand(1);
    const TensorType& xt = x->type();
    const TensorType& yt = n_->result()->type();
    if (xt.rank() != 4 || (xt.layout != Layout::Plain && xt.layout != Layout::NCHW)) return "not an NCHW image";
    if (w->type().layout != Layout::Plain && w->type().layout != Layout::OIHW) return "not an OIHW filter";
    const std::vector<int64_t> strides = n_->attr("strides").asInts(), pads = n_->attr("pads").asInts();
    const int64_t s = strides[0], kh = w->type().shape[2], kw = w->type().shape[3];
    if (strides[1] != s || n_->attr("groups").asInt() != 1 || n_->attr("dilations").asInts() != std::vector<int64_t>{1, 1})
      return "not equal strides, one group and no dilation";
    if (!convPhasesPay(xt.shape[1], s, kh, kw)) return "the phases do not pay (passes/direct_conv.h)";
    const Tensor* data = fixedData(*w);
    if (!data) return "its filter changes as the module runs";
    // Padded extents: multiples of s reaching past the last window.
    std::vector<int64_t> padding(8, 0);
    Shape phaseShape = {xt.shape[0], xt.shape[1] * s * s, 0, 0};
    for (int a = 0; a < 2; ++a) {
      const int64_t k = a == 0 ? kh : kw;
      const int64_t extent = std::max((yt.shape[2 + a] - 1) * s + k, xt.shape[2 + a] + pads[a]);
      const int64_t padded = ceilDiv(extent, s) * s;
      padding[2 + a] = pads[a];
      padding[6 + a] = padded - xt.shape[2 + a] - pads[a];
      phaseShape[2 + a] = padded / s;
    }
    Value* xp = padding == std::vector<int64_t>(8, 0) ? x : add(Op::Pad, {x}, {{"pads", Attribute(padding)}});
    Value* split = add(Op::Reshape, {xp},
                       {{"shape", Attribute(Shape{xt.shape[0], xt.shape[1], phaseShape[2], s, phaseShape[3], s})}});
    Value* moved = add(Op::Transpose, {split}, {{"perm", Attribute(std::vector<int64_t>{0, 1, 3, 5, 2, 4})}});
    Value* phases = add(Op::Reshape, {moved}, {{"shape", Attribute(phaseShape)}});
    Value* filter = phaseFilterOf(w, *data, s);
    std::vector<Value*> operands = {phases, filter};
    if (n_->numOperands() > 2) operands.push_back(n_->operand(2));
    Value* y = add(Op::Conv2d, operands, {});
    if (!y) return fail("the stride-1 convolution could not be built");
    if (y->type().shape != yt.shape) {
      const Shape& got = y->type().shape;
      if (got[2] < yt.shape[2] || got[3] < yt.shape[3]) return fail("the phases' convolution is too small");
      y = add(Op::Slice, {y},
              {{"starts", Attribute(std::vector<int64_t>{0, 0})},
               {"ends", Attribute(std::vector<int64_t>{yt.shape[2], yt.shape[3]})},
               {"axes", Attribute(std::vector<int64_t>{2, 3})}});
      if (!y) return fail("the phases' convolution could not be sliced");
    }
    if (!(y->type() == yt)) return fail("the rewrite's type differs from the result's");
    replaceWith(y);
    return "";
  }

 private:
  // The phases' filter: a constant for a constant filter, else a frozen
  // parameter `<name>.phases<s>` shared by every function of the module.
  Value* phaseFilterOf(Value* w, const Tensor& data, int64_t s) {
    Tensor filter = phaseFilter(data, s);
    if (w->kind() != Value::Kind::Param) return add(Op::Constant, {}, {{"value", Attribute(std::move(filter))}});
    Module& m = *g_.module();
    const std::string name = str(w->name(), ".phases", s);
    if (const Param* existing = m.findParam(name))
      return existing->type == filter.type() ? g_.paramValue(name) : nullptr;
    m.addParam(name, filter.type(), /*trainable=*/false);
    m.setParamData(name, std::move(filter));
    return g_.paramValue(name);
  }
};

class ConvPhasesPass : public Pass {
 public:
  std::string_view name() const override { return "conv-phases"; }
  PassResult run(Graph& g, const PassContext& ctx) override {
    bool changed = false;
    for (Node* n : g.nodes()) {
      if (!n->is(Op::Conv2d)) continue;
      const std::string result = n->result()->name();
      const std::vector<int64_t> strides = n->attr("strides").asInts();
      if (strides[0] == 1 && strides[1] == 1) continue;  // nothing to say about most convolutions
      std::string why = Rewrite(g, n).run();
      if (why.empty()) {
        changed = true;
        if (ctx.remarks) ctx.diag->remark(std::string(name()), str(result, ": conv2d over its input's phases"));
      } else if (ctx.remarks) {
        ctx.diag->remark(std::string(name()), str(result, ": conv2d kept: ", why));
      }
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> createConvPhasesPass() { return std::make_unique<ConvPhasesPass>(); }

}  // namespace kfuse
