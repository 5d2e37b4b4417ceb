// pool-expand: window pooling as data movement and elementwise math, so
// that it becomes generated kernels where it ran as a reference step.
//
//   max_pool2d(x)  -> xp = pad(x, -inf) where a window reaches outside x
//                     y  = maximum(s_00, maximum(s_01, ...)), s_ij the
//                          strided slice of xp under tap (i, j)
//   avg_pool2d(x)  -> the same over pad(x, 0) with add, then / d, d a
//                     constant of each window's divisor (count_include_pad
//                     or not)
//   max_pool2d_grad(dy, x)
//                  -> pick = the tap each window picks, a number per window
//                     (where-chains over the taps: one kernel); then for
//                     each residue class of the input's rows and columns
//                     modulo the strides, the sum over the taps that reach
//                     it of where(slice(pick) == tap, slice(dy), 0): one
//                     kernel per class, reading dy and pick (padded so that
//                     windows past the edges read 0 and -1) in place;
//                     interleave assembles the classes (block copies)
//   avg_pool2d_grad(dy)
//                  -> share = dy / d; then per residue class, the sum over
//                     the taps that reach it of slice(share): the same
//                     classes and interleave
//
// The pads are steps of block copies (ir Piece); slices are affine views, so
// each chain and its readers fuse into one kernel reading the taps in place.
// For max: -inf never wins against an element of x, and every window holds
// one (pads are smaller than the window span; a ceil-mode window starts
// inside the padded input), so the result is the op's; a dilated window of
// padding only gives -inf, as the op does; NaN propagates through maximum as
// through the op, and the backward's pick follows the op's rule (the first
// of equal maxima, the last NaN). One difference: where every real tap of a
// window is -inf, the forward is -inf as the op's, but the backward's pick
// stays on a padding tap, so that window's dy goes nowhere (the op sends it
// to the first real tap). For avg: zeros add nothing, and the divisor is
// the op's, computed here per window.
//
// The pass runs after layout selection (it reads NCHW images: plain or
// tagged nchw; NHWC ones are kept, with a remark) and after autodiff.
#include <algorithm>
#include <functional>
#include <limits>

#include "ir/builder.h"
#include "ir/ops/window.h"
#include "ir/support/strings.h"
#include "passes/node_rewrite.h"
#include "passes/pass_registry.h"

namespace kfuse {
namespace {

// A window pooling's geometry, from the op's attributes.
struct Window {
  std::vector<int64_t> kernel, strides, dilations, pads;
};

Window windowOf(const Node& n) {
  Window w;
  w.kernel = n.attr("kernel").asInts();
  w.strides = n.attr("strides").asInts();
  if (w.strides.empty()) w.strides = w.kernel;
  w.dilations = n.is(Op::AvgPool2d) || n.is(Op::AvgPool2dGrad) ? std::vector<int64_t>{} : n.attr("dilations").asInts();
  if (w.dilations.empty()) w.dilations = {1, 1};
  w.pads = n.attr("pads").asInts();
  if (w.pads.empty()) w.pads = {0, 0, 0, 0};
  return w;
}

// avg_pool2d's divisor of each window (oh, ow), as the op defines it
// (ops::clippedWindow): the window clipped to the padded input
// (count_include_pad) or to x.
Tensor avgDivisors(const Window& w, const TensorType& xt, const TensorType& yt, bool includePad) {
  auto extent = [&](int a, int64_t o) {
    ops::ClippedWindow cw = ops::clippedWindow(o, w.strides[a], w.kernel[a], w.pads[a], w.pads[2 + a], xt.shape[2 + a]);
    return includePad ? cw.paddedExtent : cw.realEnd - cw.realBegin;
  };
  const int64_t oh = yt.shape[2], ow = yt.shape[3];
  std::vector<double> d(static_cast<size_t>(oh * ow));
  for (int64_t i = 0; i < oh; ++i)
    for (int64_t j = 0; j < ow; ++j) d[static_cast<size_t>(i * ow + j)] = static_cast<double>(extent(0, i) * extent(1, j));
  return Tensor::fromDoubles(TensorType(yt.dtype, {1, 1, oh, ow}), d);
}

// An NCHW image (plain or tagged nchw) of rank 4, or why not.
std::string nchwImage(const TensorType& t) {
  if (t.layout != Layout::Plain && t.layout != Layout::NCHW) return "an NHWC image";
  if (t.rank() != 4) return "not a rank-4 image";
  return "";
}

// Where the taps of one axis of a pooling's backward come from. Input rows
// ih = s*j + c (residue class c of the stride) receive from tap k of window
// oh = j + offset whenever c + pad - k*dilation is a multiple of s.
struct PhaseTap {
  int64_t tap, offset;
};
struct AxisPhases {
  std::vector<int64_t> rows;                // per class c: how many input rows it has
  std::vector<std::vector<PhaseTap>> taps;  // per class c
  int64_t marginLo = 0, marginHi = 0;       // dy rows a class reads outside [0, OH)
};

AxisPhases axisPhases(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t dilation, int64_t pad) {
  AxisPhases a;
  for (int64_t c = 0; c < stride; ++c) {
    const int64_t rows = in > c ? (in - c + stride - 1) / stride : 0;
    a.rows.push_back(rows);
    a.taps.emplace_back();
    for (int64_t k = 0; k < kernel; ++k) {
      const int64_t num = c + pad - k * dilation;
      if (((num % stride) + stride) % stride != 0 || rows == 0) continue;
      const int64_t offset = (num - ((num % stride) + stride) % stride) / stride;
      a.taps.back().push_back({k, offset});
      a.marginLo = std::max(a.marginLo, -offset);
      a.marginHi = std::max(a.marginHi, rows - 1 + offset - (out - 1));
    }
  }
  return a;
}

// The largest window expanded (8x8): the expansion's size grows with the
// taps, and such windows are what image models use.
constexpr int64_t kMaxTaps = 64;

// Builds the expansion of one pooling node before it, erasing what it
// built if a step fails.
class Expansion : NodeRewrite {
 public:
  Expansion(Graph& g, Node* n) : NodeRewrite(g, n), w_(windowOf(*n)) {}

  // Expands n_, or says why not (nothing built then).
  std::string run() {
    if (w_.kernel.size() != 2 || w_.strides.size() != 2 || w_.dilations.size() != 2 || w_.pads.size() != 4)
      return "window attributes of unexpected rank";
    // A node per tap and more: a 60x80 window (ONNX's dilated MaxPool test)
    // would be ten thousand nodes, minutes of fusion and compilation.
    if (w_.kernel[0] * w_.kernel[1] > kMaxTaps) return str("a window of ", w_.kernel[0] * w_.kernel[1], " taps (more than ", kMaxTaps, ")");
    Value* y = nullptr;
    std::string why = n_->is(Op::MaxPool2dGrad) ? maxGrad(y) : n_->is(Op::AvgPool2dGrad) ? avgGrad(y) : forward(y);
    if (!why.empty()) return fail(why);
    const TensorType& want = n_->result()->type();
    if (y->type().shape != want.shape || y->type().dtype != want.dtype) return fail("the expansion's type differs from the result's");
    if (y->type().layout != want.layout) {
      y = add(Op::Reshape, {y}, {{"shape", Attribute(want.shape)}, {"layout", std::string(layoutName(want.layout))}});
      if (!y) return fail("the result's layout tag could not be restored");
    }
    replaceWith(y);
    return "";
  }

 private:
  // max_pool2d, avg_pool2d: the taps combined, for avg divided by each
  // window's divisor.
  std::string forward(Value*& y) {
    Value* x = n_->operand(0);
    const TensorType& yt = n_->result()->type();
    if (std::string why = nchwImage(x->type()); !why.empty()) return why;
    const bool max = n_->is(Op::MaxPool2d);
    std::vector<Value*> taps;
    if (std::string why = tapsOf(x, yt.shape, max ? -std::numeric_limits<double>::infinity() : 0.0, taps); !why.empty())
      return why;
    for (Value* tap : taps) {
      y = y ? add(max ? Op::Maximum : Op::Add, {y, tap}, {}) : tap;
      if (!y) return "the taps could not be combined";
    }
    if (!max) {
      Value* d = add(Op::Constant, {},
                     {{"value", Attribute(avgDivisors(w_, x->type(), yt, n_->attr("count_include_pad").asBool()))}});
      y = d ? add(Op::Div, {y, d}, {}) : nullptr;
      if (!y) return "the division by the windows' divisors could not be built";
    }
    return "";
  }

  // max_pool2d_grad(dy, x): the tap each window picks (the op's rule: the
  // first tap inside x, replaced by each later one that is greater or NaN;
  // -inf padding never replaces), as a number per window; then each
  // residue class of the input's rows and columns modulo the strides sums,
  // over the taps that can reach it, dy of the window where that window
  // picked that tap (dy and the picks padded so that windows past the
  // edges read zeros and -1); interleave assembles the classes.
  std::string maxGrad(Value*& dx) {
    Value* dy = n_->operand(0);
    Value* x = n_->operand(1);
    const TensorType& xt = x->type();
    const TensorType& dyt = dy->type();
    for (const TensorType* t : {&xt, &dyt})
      if (std::string why = nchwImage(*t); !why.empty()) return why;
    const int64_t tapCount = w_.kernel[0] * w_.kernel[1];
    if (tapCount < 2) return "a window of one tap";
    std::vector<Value*> taps;
    if (std::string why = tapsOf(x, dyt.shape, -std::numeric_limits<double>::infinity(), taps); !why.empty()) return why;
    Value *best = taps[0], *pick = nullptr;
    for (size_t t = 1; t < taps.size(); ++t) {
      Value* nan = add(Op::LogicalNot, {add(Op::Equal, {taps[t], taps[t]}, {})}, {});
      Value* take = add(Op::LogicalOr, {add(Op::Greater, {taps[t], best}, {}), nan}, {});
      pick = add(Op::Where, {take, scalar(static_cast<double>(t), xt.dtype), pick ? pick : scalar(0, xt.dtype)}, {});
      if (t + 1 < taps.size()) best = add(Op::Where, {take, taps[t], best}, {});
      if (!pick || !best) return "the picked taps could not be built";
    }
    const Phases ph = phasesOf(xt, dyt);
    Value *dyp = dy, *pickp = pick;
    if (ph.padded()) {
      dyp = add(Op::Pad, {dy}, {{"pads", Attribute(ph.margins)}});
      pickp = add(Op::Pad, {pick}, {{"pads", Attribute(ph.margins)}, {"value", Attribute(-1.0)}});
      if (!dyp || !pickp) return "the padded dy and picks could not be built";
    }
    return gather(xt, ph, [&](int64_t tap, const AttrMap& at) {
      Value* mine = add(Op::Equal, {add(Op::Slice, {pickp}, at), scalar(static_cast<double>(tap), xt.dtype)}, {});
      return add(Op::Where, {mine, add(Op::Slice, {dyp}, at), scalar(0, xt.dtype)}, {});
    }, dx);
  }

  // avg_pool2d_grad(dy): dy divided by each window's divisor, then each
  // residue class of the input's rows and columns sums, over the taps that
  // reach it, that share of the tap's window (padded with zeros where a
  // class reads past the windows); interleave assembles the classes. The
  // classes hold x's rows and columns only, so shares falling on padding
  // go nowhere, as in the op.
  std::string avgGrad(Value*& dx) {
    Value* dy = n_->operand(0);
    const TensorType& dyt = dy->type();
    if (std::string why = nchwImage(dyt); !why.empty()) return why;
    const TensorType xt(dyt.dtype, n_->attr("input_shape").asInts(), dyt.layout);
    Value* d = add(Op::Constant, {},
                   {{"value", Attribute(avgDivisors(w_, xt, dyt, n_->attr("count_include_pad").asBool()))}});
    Value* share = d ? add(Op::Div, {dy, d}, {}) : nullptr;
    if (!share) return "the division by the windows' divisors could not be built";
    const Phases ph = phasesOf(xt, dyt);
    if (ph.padded() && !(share = add(Op::Pad, {share}, {{"pads", Attribute(ph.margins)}})))
      return "the padded shares could not be built";
    return gather(xt, ph, [&](int64_t, const AttrMap& at) { return add(Op::Slice, {share}, at); }, dx);
  }

  // Where each residue class of x's rows and columns (modulo the strides)
  // reads the windows, and the margins (an ONNX pads list) by which the
  // per-window maps it reads are padded.
  struct Phases {
    AxisPhases axes[2];
    std::vector<int64_t> margins;
    bool padded() const { return margins != std::vector<int64_t>(8, 0); }
  };
  Phases phasesOf(const TensorType& xt, const TensorType& dyt) const {
    Phases p{{axisPhases(xt.shape[2], dyt.shape[2], w_.kernel[0], w_.strides[0], w_.dilations[0], w_.pads[0]),
              axisPhases(xt.shape[3], dyt.shape[3], w_.kernel[1], w_.strides[1], w_.dilations[1], w_.pads[1])},
             {}};
    p.margins = {0, 0, p.axes[0].marginLo, p.axes[1].marginLo, 0, 0, p.axes[0].marginHi, p.axes[1].marginHi};
    return p;
  }

  // dx of shape xt: each class the sum over the taps that reach it of
  // term(tap number, the slice of a padded per-window map under that tap),
  // zeros for a class no tap reaches; the classes interleaved.
  std::string gather(const TensorType& xt, const Phases& ph,
                     const std::function<Value*(int64_t tap, const AttrMap& slice)>& term, Value*& dx) {
    std::vector<Value*> classes;
    std::vector<int64_t> offsets;
    for (int64_t ch = 0; ch < w_.strides[0]; ++ch)
      for (int64_t cw = 0; cw < w_.strides[1]; ++cw) {
        const Shape shape = {xt.shape[0], xt.shape[1], ph.axes[0].rows[static_cast<size_t>(ch)],
                             ph.axes[1].rows[static_cast<size_t>(cw)]};
        Value* sum = nullptr;
        for (const PhaseTap& th : ph.axes[0].taps[static_cast<size_t>(ch)])
          for (const PhaseTap& tw : ph.axes[1].taps[static_cast<size_t>(cw)]) {
            std::vector<int64_t> starts = {th.offset + ph.axes[0].marginLo, tw.offset + ph.axes[1].marginLo};
            std::vector<int64_t> ends = {starts[0] + shape[2], starts[1] + shape[3]};
            AttrMap at = {{"starts", Attribute(starts)}, {"ends", Attribute(ends)}, {"axes", Attribute(std::vector<int64_t>{2, 3})}};
            Value* t = term(th.tap * w_.kernel[1] + tw.tap, at);
            sum = sum && t ? add(Op::Add, {sum, t}, {}) : t;
            if (!sum) return "a class's sum could not be built";
          }
        if (!sum) sum = add(Op::Constant, {}, {{"value", Attribute(Tensor::fromDoubles(TensorType(xt.dtype, shape), std::vector<double>(static_cast<size_t>(numElements(shape)), 0.0)))}});
        if (!sum) return "a class no tap reaches could not be filled with zeros";
        classes.push_back(sum);
        offsets.insert(offsets.end(), {0, 0, ch, cw});
      }
    dx = add(Op::Interleave, classes,
             {{"shape", Attribute(xt.shape)},
              {"steps", Attribute(std::vector<int64_t>{1, 1, w_.strides[0], w_.strides[1]})},
              {"offsets", Attribute(offsets)}});
    return dx ? "" : "the classes could not be interleaved";
  }

  // The strided slices of x (padded with `fill` where a window reaches
  // outside it) under each tap, in window order, for windows of `out`.
  std::string tapsOf(Value* x, const Shape& out, double fill, std::vector<Value*>& taps) {
    const TensorType& xt = x->type();
    // Begin by the op's pads, end by what the last window needs (ceil mode
    // may need more than the pads, floor mode less).
    std::vector<int64_t> padding(8, 0);
    for (int a = 0; a < 2; ++a) {
      int64_t reach = (out[2 + a] - 1) * w_.strides[a] + (w_.kernel[a] - 1) * w_.dilations[a] + 1;
      padding[2 + a] = w_.pads[a];
      padding[6 + a] = std::max<int64_t>(0, reach - w_.pads[a] - xt.shape[2 + a]);
    }
    Value* xp = x;
    if (padding != std::vector<int64_t>(8, 0)) {
      xp = add(Op::Pad, {x}, {{"pads", Attribute(padding)}, {"value", Attribute(fill)}});
      if (!xp) return "the padded input could not be built";
    }
    for (int64_t i = 0; i < w_.kernel[0]; ++i)
      for (int64_t j = 0; j < w_.kernel[1]; ++j) {
        std::vector<int64_t> starts = {i * w_.dilations[0], j * w_.dilations[1]};
        std::vector<int64_t> ends = {starts[0] + (out[2] - 1) * w_.strides[0] + 1,
                                     starts[1] + (out[3] - 1) * w_.strides[1] + 1};
        Value* tap = add(Op::Slice, {xp},
                         {{"starts", Attribute(starts)},
                          {"ends", Attribute(ends)},
                          {"axes", Attribute(std::vector<int64_t>{2, 3})},
                          {"steps", Attribute(w_.strides)}});
        if (!tap) return "a strided slice of the input could not be built";
        taps.push_back(tap);
      }
    return "";
  }

  Value* scalar(double v, DType t) {
    return add(Op::Constant, {}, {{"value", Attribute(Tensor::fromDoubles(TensorType(t, {}), {v}))}});
  }
  Window w_;
};

class PoolExpandPass : public Pass {
 public:
  std::string_view name() const override { return "pool-expand"; }
  PassResult run(Graph& g, const PassContext& ctx) override {
    bool changed = false;
    for (Node* n : g.nodes()) {
      if (!n->is(Op::MaxPool2d) && !n->is(Op::AvgPool2d) && !n->is(Op::MaxPool2dGrad) && !n->is(Op::AvgPool2dGrad))
        continue;
      std::string op(n->opName()), result = n->result()->name();
      std::string why = Expansion(g, n).run();
      if (why.empty()) changed = true;
      else if (ctx.remarks) ctx.diag->remark(std::string(name()), str(result, ": ", op, " kept: ", why));
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> createPoolExpandPass() { return std::make_unique<PoolExpandPass>(); }

}  // namespace kfuse
