// conv-phases: a strided convolution as a stride-1 convolution over the
// phases of its input (space-to-depth), where the cpu target's rules say it
// pays (passes/direct_conv.h): over few input channels (an image model's
// first layer, convPhasesPay; unless first-layers=false, which the cpu
// backend passes where CpuSubtarget::firstLayerPhases says no), and over
// many, grouped or depthwise, where the stride-1 convolution takes its
// output planes whole (convPhasesTakePlanes: a ResNet's 3x3 and 1x1
// stride-2 layers, which otherwise run as im2col + GEMM, a MobileNet's
// depthwise ones, which run in the runtime's loops; channel c's phases are
// channels c*s*s + q, so a group's stay in the group). With
// strided-packed=true (the cpu backend's choice where the CPU packs filters
// with taps: codegen/cpu/subtarget.h's ConvTiling::packedTaps) an
// ungrouped stride-2 layer whose output planes a packed filter takes
// (ops::packedFilterStrided) stays strided: its code reads the input in
// place, and no other layer's split is shared with it:
//
//   conv2d(x, w, b) {strides = [s, s], pads}
//     -> xp = x, or where its extents are not multiples of s (first layers
//             only: the others are kept), pad(x) by the op's top and left
//             pads and bottom and right ones covering every window, the
//             convolution then unpadded
//        phases = reshape(transpose(reshape(xp, [N, C, H/s, s, W/s, s]),
//                                   [0, 1, 3, 5, 2, 4]), [N, C*s*s, H/s, W/s])
//        y = conv2d(phases, w', b) {strides = [1, 1], pads', live_taps},
//            sliced to the op's extents where it has more
//
// Input row r = s*oh + t - p of tap t (pad p; p = 0 after a pad step) is
// phase q's row oh + m, where t - p = s*m + q; m runs over
// [lo, hi] = [floor(-p/s), floor((k-1-p)/s)], so the phases' kernel has
// hi - lo + 1 taps, tap i standing for m = i + lo, and pads' begin at -lo:
//
//   w'[o, (c*s + qy)*s + qx, i, j] = w[o, c, s*(i + lo) + qy + p, s*(j + lo) + qx + p]
//
// zero where that tap is outside w; live_taps marks those zeros (the same
// for every c: a period of s*s channels), so that generated code leaves
// them out and the stride-1 convolution does the op's multiplications, no
// more. w' is computed now: the filter must be fixed as the module
// compiles (a constant, or a parameter no function updates; a training
// step's filters are left alone).
//
// A 1x1 filter without padding reads one phase only: where no other layer
// splits its input, it becomes a 1x1 convolution at stride 1 over every
// s-th pixel (pointwiseSubsamplePays), a strided slice of x:
//
//   conv2d(x, w, b) {strides = [s, s]} -> conv2d(slice(x) {steps = [s, s]}, w, b)
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "ir/builder.h"
#include "ir/support/strings.h"
#include "passes/direct_conv.h"
#include "passes/node_rewrite.h"
#include "passes/pass_registry.h"

namespace kfuse {
namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// One axis of the phases' kernel: tap i stands for the op's tap
// s*(i + lo) + q + pad of phase q.
struct PhaseAxis {
  int64_t lo = 0, taps = 0, pad = 0;
  int64_t opTap(int64_t s, int64_t i, int64_t q) const { return s * (i + lo) + q + pad; }
};

int64_t floorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// The axis of a kernel of k taps at stride s whose input is padded by pad
// (0 where the pad step took it).
PhaseAxis phaseAxis(int64_t k, int64_t s, int64_t pad) {
  const int64_t lo = floorDiv(-pad, s), hi = floorDiv(k - 1 - pad, s);
  return {lo, hi - lo + 1, pad};
}

// w [O, C, KH, KW] as the phases' filter [O, C*s*s, ay.taps, ax.taps],
// and which of its taps are live (one period of s*s channels).
struct PhaseFilter {
  Tensor filter;
  std::vector<int64_t> live;
};

PhaseFilter phaseFilter(const Tensor& w, int64_t s, const PhaseAxis& ay, const PhaseAxis& ax) {
  const Shape& ws = w.type().shape;
  const int64_t o = ws[0], c = ws[1], kh = ws[2], kw = ws[3], ph = ay.taps, pw = ax.taps;
  const std::vector<double> from = w.toDoubles();
  std::vector<double> to(static_cast<size_t>(o * c * s * s * ph * pw), 0.0);
  std::vector<int64_t> live(static_cast<size_t>(s * s * ph * pw), 0);
  for (int64_t q = 0; q < s * s; ++q)
    for (int64_t i = 0; i < ph; ++i)
      for (int64_t j = 0; j < pw; ++j) {
        const int64_t y = ay.opTap(s, i, q / s), x = ax.opTap(s, j, q % s);
        if (y < 0 || y >= kh || x < 0 || x >= kw) continue;
        live[static_cast<size_t>((q * ph + i) * pw + j)] = 1;
        for (int64_t oo = 0; oo < o; ++oo)
          for (int64_t cc = 0; cc < c; ++cc)
            to[static_cast<size_t>(((oo * c * s * s + cc * s * s + q) * ph + i) * pw + j)] =
                from[static_cast<size_t>(((oo * c + cc) * kh + y) * kw + x)];
      }
  return {Tensor::fromDoubles(TensorType(w.type().dtype, {o, c * s * s, ph, pw}), to), std::move(live)};
}

// The phases of an input already split, by (input, stride, padding).
using PhasesKey = std::tuple<Value*, int64_t, std::vector<int64_t>>;
using KnownPhases = std::map<PhasesKey, Value*>;

struct PhasesOptions {
  // Whether first layers (convPhasesPay) go over their phases.
  bool firstLayers = true;
  // Whether the target runs strided layers whose output planes its packed
  // filters take strided (ops::packedFilterStrided): those stay.
  bool stridedPacked = false;
};

// The split above the layers that make its input. A 1x1 convolution at
// stride 1 and elementwise math do not care where in the plane a pixel is,
// so the phases of y = conv1x1(a) are conv1x1 over a's planes with each
// channel's pixels in phase order ([N, C, s*H, W/s]: its s*s phases one
// after another), and the split moves to a, which an expanding layer makes
// smaller: MobileNetV2's 144-channel 56x56 split (1.8 MB, 135 us of 6.4 ms
// at one thread) becomes one of its 24-channel input. The values the split
// passes are `inside`; those it splits are `leaves`.
struct SplitRegion {
  std::set<Value*> inside;
  std::vector<Value*> leaves;
  int64_t leafElements() const {
    int64_t n = 0;
    for (Value* v : leaves) n += v->type().numElements();
    return n;
  }
};

// Whether operand type `o` of a pointwise op broadcasts over the planes of
// its result `r` (a per-channel bias, a scalar): those stay as they are.
bool broadcastsOverPlanes(const TensorType& o, const TensorType& r) {
  const size_t rank = o.shape.size();
  if (rank > 4) return false;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t axis = static_cast<int64_t>(4 - rank + i), d = o.shape[i];
    if (axis >= 2 ? d != 1 : d != 1 && d != r.shape[static_cast<size_t>(axis)]) return false;
  }
  return true;
}

// The operands of p that the split passes through to (empty: p is not a
// layer it passes): a 1x1 stride-1 convolution's input, where it has fewer
// channels than its output, or a pointwise op's operands of its result's
// shape (the others broadcast over the planes).
std::vector<Value*> splitPasses(const Node& p) {
  const Value* r = p.result();
  if (p.numResults() != 1 || !isChannelsFirstImage(r->type())) return {};
  if (p.is(Op::Conv2d)) {
    const TensorType &xt = p.operand(0)->type(), &wt = p.operand(1)->type();
    const bool pointwise = isChannelsFirstImage(xt) && wt.rank() == 4 && wt.shape[2] * wt.shape[3] == 1 &&
                           (wt.layout == Layout::Plain || wt.layout == Layout::OIHW) &&
                           p.attr("strides").asInts() == std::vector<int64_t>{1, 1} &&
                           p.attr("pads").asInts() == std::vector<int64_t>(4, 0) && p.attr("groups").asInt() == 1 &&
                           p.attr("live_taps").asInts().empty();
    if (!pointwise || xt.shape[1] >= r->type().shape[1]) return {};
    return {p.operand(0)};
  }
  if (p.op().layout.kind != LayoutClass::Pointwise || p.op().scalarReadsIndex) return {};
  std::vector<Value*> full;
  for (Value* o : p.operands()) {
    if (o->type().shape == r->type().shape && isChannelsFirstImage(o->type()))
      full.push_back(o);
    else if (!broadcastsOverPlanes(o->type(), r->type()))
      return {};
  }
  return full;
}

// The region of x's producers the split of x (read by `reader` alone)
// passes, grown one producer at a time while a leaf's producer is a layer
// it passes and every use of the leaf is inside; of the regions it grows
// through, the first that splits the fewest elements. Grown all the way,
// an EfficientNet block's split passed its residual add and split both of
// its operands, and the add no longer fused into the layer before.
SplitRegion splitRegion(Value* x, const Node* reader) {
  SplitRegion region{{}, {x}}, best = region;
  auto usedInside = [&](Value* v) {
    if (v->graphUses() > 0) return false;
    for (const Use& u : v->uses())
      if (v == x ? u.user != reader : u.user->numResults() != 1 || !region.inside.count(u.user->result()))
        return false;
    return true;
  };
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t i = 0; i < region.leaves.size() && !grew; ++i) {
      Value* v = region.leaves[i];
      if (!v->producer() || !usedInside(v)) continue;
      std::vector<Value*> passes = splitPasses(*v->producer());
      if (passes.empty()) continue;
      region.leaves.erase(region.leaves.begin() + static_cast<std::ptrdiff_t>(i));
      region.inside.insert(v);
      for (Value* o : passes)
        if (std::find(region.leaves.begin(), region.leaves.end(), o) == region.leaves.end()) region.leaves.push_back(o);
      if (region.leafElements() < best.leafElements()) best = region;
      grew = true;
    }
  }
  return best;
}

class Rewrite : NodeRewrite {
 public:
  Rewrite(Graph& g, Node* n, KnownPhases& phases, const PhasesOptions& options)
      : NodeRewrite(g, n), phases_(phases), options_(options) {}

  // Rewrites n_, or says why not (nothing built then).
  std::string run() {
    Value* x = n_->operand(0);
    Value* w = n_->operand(1);
    const TensorType& xt = x->type();
    const TensorType& yt = n_->result()->type();
    if (!isChannelsFirstImage(xt)) return "not an NCHW image";
    if (w->type().layout != Layout::Plain && w->type().layout != Layout::OIHW) return "not an OIHW filter";
    const std::vector<int64_t> strides = n_->attr("strides").asInts(), pads = n_->attr("pads").asInts();
    const int64_t s = strides[0], kh = w->type().shape[2], kw = w->type().shape[3];
    const int64_t groups = n_->attr("groups").asInt();
    if (strides[1] != s || n_->attr("dilations").asInts() != std::vector<int64_t>{1, 1})
      return "not equal strides and no dilation";
    if (!n_->attr("live_taps").asInts().empty()) return "its taps are already phases";
    // The op's pads stay in the convolution over the phases; first layers
    // whose extents the stride does not divide take them in a pad step
    // instead (the others are kept: convPhasesTakePlanes).
    const bool fewChannels = groups == 1 && convPhasesPay(xt.shape[1], s);
    const bool firstLayer = fewChannels && options_.firstLayers;
    if (!firstLayer && kh * kw == 1 && pads == std::vector<int64_t>(4, 0) && fixedData(*w) && !sharesSplit(x, s) &&
        pointwiseSubsamplePays(s, yt.shape[2], yt.shape[3]))
      return subsample(x, s);
    // After the subsample: a strided 1x1 layer over a 28x28 input read it
    // from L3 once per block of output channels (ResNet-50's 512 -> 1024
    // channels: 2069 us strided, 1933 + 22 over a slice).
    if (staysStrided(*n_)) return "this cpu runs it strided with a packed filter (strided-packed)";
    if (!firstLayer && !takesPlanes(*n_))
      return fewChannels ? "a first layer, which this cpu runs directly (first-layers=false)"
                         : "the phases do not pay (passes/direct_conv.h)";
    // A 1x1 filter reads one phase in s*s: a split of its own writes s*s
    // times what it reads (ResNet-50's downsamples: 3.0 ms with a 0.23 ms
    // split against 3.1 as im2col + GEMM over 56x56, 3.3 against 2.9 over
    // 28x28), so it takes phases another layer splits (a ResNet-18 block's
    // 3x3 and 1x1 layers read one x).
    if (!firstLayer && kh * kw == 1 && !sharesSplit(x, s)) return "a 1x1 filter over phases no other layer splits";
    const Tensor* data = fixedData(*w);
    if (!data) return "its filter changes as the module runs";
    std::vector<int64_t> padding(8, 0), convPads(4, 0);
    Shape phaseShape = {xt.shape[0], xt.shape[1] * s * s, 0, 0};
    PhaseAxis axes[2];
    const bool padStep = firstLayer && (xt.shape[2] % s != 0 || xt.shape[3] % s != 0);
    for (int a = 0; a < 2; ++a) {
      const int64_t k = a == 0 ? kh : kw;
      const int64_t lead = padStep ? pads[a] : 0;
      const int64_t extent = std::max(padStep ? (yt.shape[2 + a] - 1) * s + k : 0, xt.shape[2 + a] + lead);
      const int64_t padded = ceilDiv(extent, s) * s;
      padding[2 + a] = lead;
      padding[6 + a] = padded - xt.shape[2 + a] - lead;
      phaseShape[2 + a] = padded / s;
      axes[a] = phaseAxis(k, s, padStep ? 0 : pads[a]);
      if (!padStep) {
        convPads[a] = -axes[a].lo;
        convPads[2 + a] = std::max<int64_t>(0, yt.shape[2 + a] - phaseShape[2 + a] + axes[a].lo + axes[a].taps - 1);
      }
    }
    // A ResNet block's 3x3 and 1x1 stride-2 convolutions read one x: one
    // split serves both.
    const PhasesKey key{x, s, padding};
    auto known = phases_.find(key);
    Value* phases = known != phases_.end() ? known->second : split(x, s, padding, phaseShape);
    PhaseFilter pf = phaseFilter(*data, s, axes[0], axes[1]);
    // The name says how the taps were regrouped: a filter shared by two
    // convolutions of different pads gives two phase filters.
    const std::string suffix = padStep ? str(s) : str(s, "p", pads[0], "x", pads[1]);
    Value* filter = phaseFilterOf(w, std::move(pf.filter), suffix);
    std::vector<Value*> operands = {phases, filter};
    if (n_->numOperands() > 2) operands.push_back(n_->operand(2));
    AttrMap attrs;
    if (convPads != std::vector<int64_t>(4, 0)) attrs.emplace("pads", Attribute(convPads));
    if (groups != 1) attrs.emplace("groups", Attribute(groups));
    if (std::count(pf.live.begin(), pf.live.end(), 0) > 0) attrs.emplace("live_taps", Attribute(pf.live));
    Value* y = add(Op::Conv2d, operands, attrs);
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
    // A split moved above x's layers is x's only reader's (splitRegion).
    if (region_.inside.empty())
      phases_.emplace(key, phases);
    else
      eraseRegion();
    return "";
  }

  // What the rewrite made of the convolution, once run() succeeded.
  const std::string& done() const { return done_; }

 private:
  // The 1x1 convolution at stride 1 over every s-th pixel of x
  // (pointwiseSubsamplePays).
  std::string subsample(Value* x, int64_t s) {
    const Shape& xs = x->type().shape;
    Value* picked = add(Op::Slice, {x},
                        {{"starts", Attribute(std::vector<int64_t>{0, 0})},
                         {"ends", Attribute(std::vector<int64_t>{xs[2], xs[3]})},
                         {"axes", Attribute(std::vector<int64_t>{2, 3})},
                         {"steps", Attribute(std::vector<int64_t>{s, s})}});
    if (!picked) return fail("the input's pixels could not be picked");
    std::vector<Value*> operands = {picked, n_->operand(1)};
    if (n_->numOperands() > 2) operands.push_back(n_->operand(2));
    AttrMap attrs;
    if (const int64_t groups = n_->attr("groups").asInt(); groups != 1) attrs.emplace("groups", Attribute(groups));
    Value* y = add(Op::Conv2d, operands, attrs);
    if (!y || !(y->type() == n_->result()->type())) return fail("the stride-1 convolution's type differs from the result's");
    replaceWith(y);
    done_ = str("1x1 conv2d at stride 1 over a slice of its input (steps ", s, ")");
    return "";
  }

  // Whether conv2d m is a strided layer the phases take whole planes of
  // (convPhasesTakePlanes), its filter fixed.
  static bool takesPlanes(const Node& m) {
    const TensorType &xt = m.operand(0)->type(), &wt = m.operand(1)->type(), &yt = m.result()->type();
    const std::vector<int64_t> strides = m.attr("strides").asInts();
    return strides[0] == strides[1] && xt.rank() == 4 && wt.rank() == 4 &&
           m.attr("dilations").asInts() == std::vector<int64_t>{1, 1} && fixedData(*m.operand(1)) &&
           convPhasesTakePlanes(strides[0], xt.shape[2], xt.shape[3], yt.shape[2], yt.shape[3], wt.shape[2] * wt.shape[3]);
  }

  // Whether conv2d m stays strided on this target: an ungrouped NCHW layer
  // strided by 2 whose output planes a packed filter takes
  // (ops::packedFilterStrided, ops::packedFilterPlanes), its filter fixed.
  bool staysStrided(const Node& m) const {
    const TensorType &xt = m.operand(0)->type(), &wt = m.operand(1)->type(), &yt = m.result()->type();
    if (!options_.stridedPacked || !isChannelsFirstImage(xt) || wt.rank() != 4 || m.attr("groups").asInt() != 1)
      return false;
    if (wt.layout != Layout::Plain && wt.layout != Layout::OIHW) return false;
    const std::vector<int64_t> strides = m.attr("strides").asInts(), dilations = m.attr("dilations").asInts();
    return ops::packedFilterStrided(strides[0], strides[1], dilations[0], dilations[1]) &&
           ops::packedFilterPlanes(wt.shape[0], wt.shape[1] * wt.shape[2] * wt.shape[3], yt.shape[2], yt.shape[3]) &&
           fixedData(*m.operand(1));
  }

  // Whether another layer over x at stride s splits it (one done, or one
  // of more than one tap to come).
  bool sharesSplit(Value* x, int64_t s) const {
    for (const auto& [key, phases] : phases_)
      if (std::get<0>(key) == x && std::get<1>(key) == s) return true;
    for (const Use& u : x->uses()) {
      const Node& m = *u.user;
      if (&m == n_ || !m.is(Op::Conv2d) || u.operandIndex != 0 || m.attr("strides").asInts()[0] != s) continue;
      if (m.operand(1)->type().shape[2] * m.operand(1)->type().shape[3] > 1 && takesPlanes(m) && !staysStrided(m))
        return true;
    }
    return false;
  }

  // x padded by `padding` and split into its phases, of shape phaseShape.
  // Unpadded, the split moves above the layers that make x where that
  // splits fewer elements (splitRegion).
  Value* split(Value* x, int64_t s, const std::vector<int64_t>& padding, const Shape& phaseShape) {
    if (padding != std::vector<int64_t>(8, 0))
      return phasesOf(add(Op::Pad, {x}, {{"pads", Attribute(padding)}}), s, phaseShape);
    region_ = splitRegion(x, n_);
    if (region_.inside.empty()) return phasesOf(x, s, phaseShape);
    std::map<Value*, Value*> built;
    done_ = str(done_, ", split above ", region_.inside.size(), " layer(s) that make it (", region_.leafElements(),
                " elements split, not ", x->type().numElements(), ")");
    return add(Op::Reshape, {permutedThrough(x, s, region_, built)}, {{"shape", Attribute(phaseShape)}});
  }

  // The layers the split passed, once the convolution is replaced: no
  // longer used.
  void eraseRegion() {
    for (bool erased = true; erased;) {
      erased = false;
      for (Value* v : region_.inside)
        if (Node* p = v->producer(); p && !v->hasUses()) {
          region_.inside.erase(v);
          g_.eraseNode(p);
          erased = true;
          break;
        }
    }
  }

  // v's phases, of `shape`: [N, C*s*s, H/s, W/s], or with each channel's
  // pixels in phase order, [N, C, s*H, W/s].
  Value* phasesOf(Value* v, int64_t s, const Shape& shape) {
    if (!v) return nullptr;
    const Shape& vs = v->type().shape;
    Value* rows = add(Op::Reshape, {v}, {{"shape", Attribute(Shape{vs[0], vs[1], vs[2] / s, s, vs[3] / s, s})}});
    Value* moved = add(Op::Transpose, {rows}, {{"perm", Attribute(std::vector<int64_t>{0, 1, 3, 5, 2, 4})}});
    return add(Op::Reshape, {moved}, {{"shape", Attribute(shape)}});
  }

  // v with each channel's pixels in phase order, [N, C, s*H, W/s]: built
  // from its producer over such operands inside the region, split outside.
  Value* permutedThrough(Value* v, int64_t s, const SplitRegion& region, std::map<Value*, Value*>& built) {
    if (auto it = built.find(v); it != built.end()) return it->second;
    Value* out = nullptr;
    if (!region.inside.count(v)) {
      const Shape& vs = v->type().shape;
      out = phasesOf(v, s, {vs[0], vs[1], vs[2] * s, vs[3] / s});
    } else {
      const Node& p = *v->producer();
      const std::vector<Value*> passes = splitPasses(p);
      std::vector<Value*> operands;
      for (Value* o : p.operands())
        operands.push_back(std::count(passes.begin(), passes.end(), o) ? permutedThrough(o, s, region, built) : o);
      out = add(p.op().id, operands, p.attrs());
      if (out) {
        out->producer()->copyProvenance(p);
        out->setName(v->name());  // v goes (eraseRegion)
      }
    }
    built[v] = out;
    return out;
  }

  // The phases' filter: a constant for a constant filter, else a frozen
  // parameter `<name>.phases<suffix>` shared by every function of the module.
  Value* phaseFilterOf(Value* w, Tensor filter, const std::string& suffix) {
    if (w->kind() != Value::Kind::Param) return add(Op::Constant, {}, {{"value", Attribute(std::move(filter))}});
    Module& m = *g_.module();
    const std::string name = str(w->name(), ".phases", suffix);
    if (const Param* existing = m.findParam(name))
      return existing->type == filter.type() ? g_.paramValue(name) : nullptr;
    m.addParam(name, filter.type(), /*trainable=*/false);
    m.setParamData(name, std::move(filter));
    return g_.paramValue(name);
  }

  KnownPhases& phases_;
  const PhasesOptions& options_;
  SplitRegion region_;
  std::string done_ = "conv2d over its input's phases";
};

class ConvPhasesPass : public Pass {
 public:
  explicit ConvPhasesPass(PhasesOptions options) : options_(options) {}
  std::string_view name() const override { return "conv-phases"; }
  PassResult run(Graph& g, const PassContext& ctx) override {
    bool changed = false;
    KnownPhases phases;
    for (Node* n : g.nodes()) {
      if (!n->is(Op::Conv2d)) continue;
      const std::string result = n->result()->name();
      const std::vector<int64_t> strides = n->attr("strides").asInts();
      if (strides[0] == 1 && strides[1] == 1) continue;  // nothing to say about most convolutions
      Rewrite rewrite(g, n, phases, options_);
      std::string why = rewrite.run();
      if (why.empty()) {
        changed = true;
        if (ctx.remarks) ctx.diag->remark(std::string(name()), str(result, ": ", rewrite.done()));
      } else if (ctx.remarks) {
        ctx.diag->remark(std::string(name()), str(result, ": conv2d kept: ", why));
      }
    }
    return changed;
  }

 private:
  PhasesOptions options_;
};

}  // namespace

Expected<std::unique_ptr<Pass>> createConvPhasesPass(const PassOptions& options) {
  PhasesOptions o;
  for (const auto& [key, value] : options) {
    bool* flag = key == "first-layers" ? &o.firstLayers : key == "strided-packed" ? &o.stridedPacked : nullptr;
    if (!flag) return unknownPassOption("conv-phases", PassOptions{{key, value}});
    if (value != "true" && value != "false")
      return Error(str("pass 'conv-phases': ", key, " takes true or false, not '", value, "'"));
    *flag = value == "true";
  }
  return std::unique_ptr<Pass>(std::make_unique<ConvPhasesPass>(o));
}

}  // namespace kfuse
