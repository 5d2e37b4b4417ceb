// layout: chooses NCHW or NHWC for each region of rank-4 images, and OIHW or
// OHWI for the filters of the convolutions in it, then rewrites the graph.
//
// Regions: rank-4 images joined through the ops that can work in either
// order, as each op's registry entry says (OpDef::layout): Native ops
// (convolution, pooling, batch norm) read the layout tag, Pointwise ops do
// not care, AxisAttrs ops get their axis attributes renumbered; a Fixed op
// (matmul, flatten, reshape, ...) ends a region.
//
// Decision per region: `nhwc` converts every region holding a Native op,
// `nchw` none, `auto` those where the target's measured cost model
// (layout_cost.h) says the convolutions gain more than the transposes at the
// region's edges cost. Without a model for the target, `auto` keeps NCHW.
//
// Rewrite, in node order, the classic insert-sink-cancel:
//   - a Native op of an NHWC region is rebuilt on NHWC operands (a
//     transpose to NHWC inserted before it, OHWI for its filter) and its
//     image results transposed back to NCHW for their users;
//   - a Pointwise or AxisAttrs op reading such a transposed-back value is
//     rebuilt on the NHWC values (the transpose sinks below it);
//   - a transpose to NHWC of a value that was just transposed back cancels
//     (the pair disappears), as does any transpose pair whose composition
//     is the identity;
//   - a transpose of a constant, or of a parameter no function updates,
//     happens now, at compile time (a new parameter `<name>.ohwi`);
//   - a transpose that only moves extent-1 axes is a reshape (a view).
// What is left are the transposes at the regions' edges; the fusion pass
// later folds those it can into neighbouring kernels' index maps.
//
//   layout{mode=auto|nchw|nhwc target=cpu}
#include <algorithm>
#include <map>
#include <set>

#include "ir/builder.h"
#include "ir/op_registry.h"
#include "ir/support/strings.h"
#include "passes/layout_cost.h"
#include "passes/pass_registry.h"

namespace kfuse {
namespace {

using Perm = std::vector<int64_t>;
// New axis i is old axis perm[i]: NCHW -> NHWC and OIHW -> OHWI.
const Perm kToLast = {0, 2, 3, 1};
const Perm kToFirst = {0, 3, 1, 2};

Shape permuted(const Shape& s, const Perm& p) {
  Shape out;
  for (int64_t a : p) out.push_back(s[static_cast<size_t>(a)]);
  return out;
}

// Moving the axes by p keeps every axis of extent > 1 in order: the same
// bytes, so a reshape (a view) does it.
bool onlyUnitAxesMove(const Shape& s, const Perm& p) {
  int64_t last = -1;
  for (int64_t a : p) {
    if (s[static_cast<size_t>(a)] == 1) continue;
    if (a < last) return false;
    last = a;
  }
  return true;
}

// Old axis a of a rank-4 value is new axis inverse[a] under kToLast.
int64_t newAxis(int64_t a) {
  for (size_t i = 0; i < kToLast.size(); ++i)
    if (kToLast[i] == a) return static_cast<int64_t>(i);
  return a;
}

// An AxisAttrs node's attributes renumbered for NHWC operands, or nullopt
// when they cannot be (an axis out of range, or a lower-rank result whose
// remaining axes would come out in another order).
std::optional<AttrMap> remapAxes(const Node& n) {
  AttrMap attrs = n.attrs();
  std::set<int64_t> named;
  for (const std::string& name : n.op().layout.axisAttrs) {
    auto it = attrs.find(name);
    if (it == attrs.end()) return std::nullopt;
    if (it->second.kind() == AttrKind::Int) {
      auto a = normalizeAxis(it->second.asInt(), 4);
      if (!a) return std::nullopt;
      named.insert(*a);
      it->second = Attribute(newAxis(*a));
    } else {
      std::vector<int64_t> axes;
      for (int64_t v : it->second.asInts()) {
        auto a = normalizeAxis(v, 4);
        if (!a) return std::nullopt;
        named.insert(*a);
        axes.push_back(newAxis(*a));
      }
      if (it->second.asInts().empty())  // every axis
        for (int64_t a = 0; a < 4; ++a) named.insert(a);
      std::sort(axes.begin(), axes.end());
      it->second = Attribute(axes);
    }
  }
  for (size_t i = 0; i < n.numResults(); ++i) {
    if (n.result(i)->type().rank() == 4) continue;
    int64_t last = -1;  // the axes kept, in their new order, must stay in the old order
    for (int64_t a : kToLast) {
      if (named.count(a)) continue;
      if (a < last) return std::nullopt;
      last = a;
    }
  }
  return attrs;
}

// The operands and results of n (by index) that are rank-4 images sharing
// one layout, per its registry entry; empty when n cannot change layout
// (Fixed, or operands that do not fit). Indices, not values: rewriting
// replaces the values a later node reads.
struct Links {
  std::vector<size_t> operands, results;
  bool empty() const { return operands.empty() && results.empty(); }
  bool hasOperand(size_t i) const { return std::find(operands.begin(), operands.end(), i) != operands.end(); }
  bool hasResult(size_t i) const { return std::find(results.begin(), results.end(), i) != results.end(); }
};

Links linksOf(const Node& n) {
  const LayoutSpec& s = n.op().layout;
  Links out;
  auto operand = [&](size_t i) {
    if (i >= n.numOperands() || !isChannelsFirstImage(n.operand(i)->type())) return false;
    out.operands.push_back(i);
    return true;
  };
  auto result = [&](size_t i) {
    if (i >= n.numResults() || !isChannelsFirstImage(n.result(i)->type())) return false;
    out.results.push_back(i);
    return true;
  };
  switch (s.kind) {
    case LayoutClass::Fixed: return {};
    case LayoutClass::Native:
      for (size_t i : s.imageOperands)
        if (!operand(i)) return {};
      for (size_t i : s.imageResults)
        if (!result(i)) return {};
      for (size_t i : s.filterOperands)
        if (i >= n.numOperands() || n.operand(i)->type().rank() != 4) return {};
      return out;
    case LayoutClass::Pointwise:
      if (n.numResults() != 1 || !result(0)) return {};
      for (size_t i = 0; i < n.numOperands(); ++i)
        if (n.operand(i)->type().shape == n.result()->type().shape && !operand(i)) return {};
      return out;
    case LayoutClass::AxisAttrs:
      for (size_t i = 0; i < n.numOperands(); ++i)
        if (!operand(i)) return {};
      for (size_t i = 0; i < n.numResults(); ++i)
        if (n.result(i)->type().rank() == 4 && !result(i)) return {};
      if (!remapAxes(n)) return {};
      return out;
  }
  return {};
}

std::string micros(double seconds) { return str(static_cast<int64_t>(seconds * 1e6 + 0.5), " us"); }

class LayoutRewriter {
 public:
  LayoutRewriter(Graph& g, const PassContext& ctx, LayoutMode mode, const LayoutCostModel* model)
      : g_(g), ctx_(ctx), mode_(mode), model_(model) {}

  bool run() {
    formRegions();
    if (!decide()) return false;
    bool changed = false;
    for (Node* n : g_.nodes()) changed |= rewrite(n);
    changed |= cleanUp();
    return changed;
  }

 private:
  struct Region {
    size_t ops = 0, convs = 0, natives = 0;
    double nchw = 0, nhwc = 0, edges = 0;
    bool nhwcChosen = false;
  };

  // ------------------------------------------------------------ regions
  const Value* find(const Value* v) {
    auto it = parent_.find(v);
    if (it == parent_.end()) return parent_[v] = v;
    if (it->second == v) return v;
    return it->second = find(it->second);
  }
  void unite(const Value* a, const Value* b) { parent_[find(a)] = find(b); }

  void formRegions() {
    for (Node* n : g_.nodes()) {
      Links links = linksOf(*n);
      if (links.empty()) continue;
      const Value* first = links.operands.empty() ? n->result(links.results.front()) : n->operand(links.operands.front());
      for (size_t i : links.operands) {
        unite(n->operand(i), first);
        readInside_.insert({n, n->operand(i)});
      }
      for (size_t i : links.results) {
        unite(n->result(i), first);
        producedInside_.insert(n->result(i));
      }
      links_[n] = std::move(links);
      anchor_[n] = first;
    }
  }

  // A parameter no function of the module updates, with data: a transpose
  // of it can happen now.
  static bool foldableParam(const Value* v) { return v->kind() == Value::Kind::Param && fixedData(*v); }
  static bool foldable(const Value* v) { return fixedData(*v) != nullptr; }

  double transposeCost(const Value* v, const Perm& p) const {
    if (!model_ || onlyUnitAxesMove(v->type().shape, p)) return 0;
    return model_->transposeSeconds(static_cast<double>(v->type().byteSize()));
  }

  // Whether some use of v (in a node, or as a result or update) reads it in
  // its present layout: the region's edge.
  bool usedOutside(const Value* v) {
    if (v->graphUses() > 0) return true;
    for (const Use& u : v->uses())
      if (!readInside_.count({u.user, v})) return true;
    return false;
  }

  bool decide() {
    std::map<const Value*, Region> regions;
    for (const auto& [n, first] : anchor_) {
      Region& r = regions[find(first)];
      ++r.ops;
      if (n->op().layout.kind != LayoutClass::Native) continue;
      ++r.natives;
      if (!n->is(Op::Conv2d) || !model_) continue;
      const Shape &x = n->operand(0)->type().shape, &w = n->operand(1)->type().shape, &y = n->result()->type().shape;
      const auto& strides = n->attr("strides").asInts();
      ConvWork work{x[0], x[1], w[0], w[2], w[3], y[2], y[3], n->attr("groups").asInt(), strides[1]};
      work.pointwise = w[2] == 1 && w[3] == 1 && strides[0] == 1 && strides[1] == 1 && y[2] == x[2] && y[3] == x[3];
      work.wholePlanes = ops::convWholePlanes(strides[0], strides[1], y[2], y[3], x[3], work.groups, w[2] * w[3]);
      double oihw = model_->convSeconds(work, true, false);
      double ohwi = model_->convSeconds(work, true, true) + (foldable(n->operand(1)) ? 0 : transposeCost(n->operand(1), kToLast));
      ohwi_[n] = ohwi < oihw;
      r.nchw += model_->convSeconds(work, false, false);
      r.nhwc += std::min(oihw, ohwi);
      ++r.convs;
    }
    for (const auto& [v, parent] : parent_) {
      Region& r = regions[find(v)];
      bool entering = !producedInside_.count(v) && !foldable(v);
      if (entering) r.edges += transposeCost(v, kToLast);
      if (usedOutside(v)) r.edges += transposeCost(v, kToFirst);
    }
    bool any = false;
    for (auto& [root, r] : regions) {
      if (r.natives == 0) continue;
      switch (mode_) {
        case LayoutMode::NCHW: r.nhwcChosen = false; break;
        case LayoutMode::NHWC: r.nhwcChosen = true; break;
        case LayoutMode::Auto: r.nhwcChosen = model_ && r.convs > 0 && r.nhwc + r.edges < r.nchw; break;
      }
      any |= r.nhwcChosen;
      nhwc_[root] = r.nhwcChosen;
      if (ctx_.remarks && ctx_.diag) {
        std::string why = mode_ != LayoutMode::Auto ? str("--layout=", layoutModeName(mode_))
                          : !model_                 ? std::string("no measured cost model for this target")
                                                    : str("convolutions nchw ", micros(r.nchw), ", nhwc ", micros(r.nhwc),
                                                          " + edge transposes ", micros(r.edges));
        ctx_.diag->remark("layout", str("@", g_.name(), ": region of ", r.ops, " ops (", r.convs, " conv2d): ",
                                        r.nhwcChosen ? "nhwc" : "nchw", " (", why, ")"));
      }
    }
    return any;
  }

  bool inNhwcRegion(const Node* n) {
    auto it = anchor_.find(n);
    if (it == anchor_.end()) return false;
    auto r = nhwc_.find(find(it->second));
    return r != nhwc_.end() && r->second;
  }

  // ------------------------------------------------------------ values
  Value* built(Expected<Node*> n) { return n ? (*n)->result() : nullptr; }

  // The compile-time transpose of a constant's or a parameter's data.
  Expected<Tensor> transposeData(const Tensor& t, Layout tag) {
    const OpDef& op = OpRegistry::global().get(Op::Transpose);
    KF_ASSIGN_OR_RETURN(AttrMap attrs,
                        completeAttrs(op, {{"perm", Attribute(kToLast)}, {"layout", std::string(layoutName(tag))}}));
    std::vector<TensorType> in{t.type()};
    OpCall call{op, attrs, in};
    KF_ASSIGN_OR_RETURN(std::vector<TensorType> types, op.infer(call));
    const Tensor* inputs[] = {&t};
    KF_ASSIGN_OR_RETURN(std::vector<Tensor> out, op.reference(call, inputs, types));
    return std::move(out[0]);
  }

  // v in channels-last order tagged `tag` (NHWC, OHWI, or plain for a
  // broadcast operand), inserted before `before`; null if it cannot be built.
  Value* toLast(Value* v, Layout tag, Node* before) {
    if (auto it = origin_.find(v); it != origin_.end() && tag == Layout::NHWC) {
      ++cancelled_;  // the transpose back and this one cancel
      return it->second;
    }
    auto key = std::make_pair(v, tag);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    Value* in = v;
    if (in->type().rank() < 4) {  // a broadcast operand: align it with the rank-4 image first
      Shape padded(4 - in->type().rank(), 1);
      padded.insert(padded.end(), in->type().shape.begin(), in->type().shape.end());
      in = built(buildNode(g_, Op::Reshape, {in}, {{"shape", Attribute(padded)}}, before));
      if (!in) return nullptr;
      created_.insert(in->producer());
    }
    Shape shape = permuted(in->type().shape, kToLast);
    std::string tagName(layoutName(tag));
    Value* out = nullptr;
    if (onlyUnitAxesMove(in->type().shape, kToLast)) {
      out = built(buildNode(g_, Op::Reshape, {in}, {{"shape", Attribute(shape)}, {"layout", tagName}}, before));
    } else if (in->producer() && in->producer()->is(Op::Constant)) {
      auto data = transposeData(in->producer()->attr("value").asTensor(), tag);
      if (data) out = built(buildNode(g_, Op::Constant, {}, {{"value", Attribute(std::move(*data))}}, before));
    } else if (foldableParam(in)) {
      out = foldedParam(in, tag);
    }
    if (!out)
      out = built(buildNode(g_, Op::Transpose, {in}, {{"perm", Attribute(kToLast)}, {"layout", tagName}}, before));
    if (out && out->producer()) created_.insert(out->producer());
    return memo_[key] = out;
  }

  // Parameter `<name>.<tag>` holding the transposed data (made once, shared
  // by every function), or null when the name is taken by something else.
  Value* foldedParam(Value* p, Layout tag) {
    Module& m = *g_.module();
    std::string name = str(p->name(), ".", layoutName(tag));
    TensorType type(p->type().dtype, permuted(p->type().shape, kToLast), tag);
    if (const Param* existing = m.findParam(name)) return existing->type == type ? g_.paramValue(name) : nullptr;
    auto data = transposeData(*m.findParam(p->name())->data, tag);
    if (!data) return nullptr;
    // A derived copy: frozen (not trainable), like the constant it is.
    m.addParam(name, type, /*trainable=*/false);
    m.setParamData(name, std::move(*data));
    ++foldedParams_;
    return g_.paramValue(name);
  }

  // vLast (channels-last) back in `old`'s order and tag, before `before`.
  Value* toFirst(Value* vLast, const TensorType& old, Node* before) {
    Value* out =
        onlyUnitAxesMove(vLast->type().shape, kToFirst)
            ? built(buildNode(g_, Op::Reshape, {vLast},
                              {{"shape", Attribute(old.shape)}, {"layout", std::string(layoutName(old.layout))}}, before))
            : built(buildNode(g_, Op::Transpose, {vLast},
                              {{"perm", Attribute(kToFirst)}, {"layout", std::string(layoutName(old.layout))}}, before));
    if (!out) return nullptr;
    created_.insert(out->producer());
    origin_[out] = vLast;
    return out;
  }

  // ------------------------------------------------------------ rewriting
  // Rebuilds n on channels-last operands: every Native op of an NHWC region,
  // and the Pointwise / AxisAttrs ops that read a value transposed back
  // (the transpose sinks below them). Returns whether n was replaced.
  bool rewrite(Node* n) {
    if (!inNhwcRegion(n)) return false;
    const LayoutSpec& spec = n->op().layout;
    const Links& links = links_.at(n);
    bool native = spec.kind == LayoutClass::Native;
    if (!native) {
      bool readsTransposed = false;
      for (size_t i : links.operands) readsTransposed |= origin_.count(n->operand(i)) > 0;
      if (!readsTransposed) return false;
    }
    AttrMap attrs = n->attrs();
    if (spec.kind == LayoutClass::AxisAttrs) attrs = *remapAxes(*n);
    for (const std::string& a : spec.imageShapeAttrs)
      if (auto it = attrs.find(a); it != attrs.end() && it->second.asInts().size() == 4)
        it->second = Attribute(permuted(it->second.asInts(), kToLast));
    std::vector<Value*> operands;
    for (size_t i = 0; i < n->numOperands(); ++i) {
      Value* v = n->operand(i);
      Value* w = v;
      bool filter = native && std::find(spec.filterOperands.begin(), spec.filterOperands.end(), i) != spec.filterOperands.end();
      if (links.hasOperand(i)) {
        w = toLast(v, Layout::NHWC, n);
      } else if (filter) {
        auto it = ohwi_.find(n);
        bool wantOhwi = it != ohwi_.end() ? it->second : !model_;  // OHWI pairs with NHWC unless measured otherwise
        const TensorType& t = v->type();
        if (wantOhwi && (t.layout == Layout::Plain || t.layout == Layout::OIHW)) w = toLast(v, Layout::OHWI, n);
      } else if (!native && v->type().rank() > 0) {
        Shape padded(4 - std::min<size_t>(4, v->type().rank()), 1);
        padded.insert(padded.end(), v->type().shape.begin(), v->type().shape.end());
        if (padded.size() != 4) return false;
        // A broadcast operand: an [N,C,1,1] image becomes an NHWC one; a
        // plain [1,C,1,1] or [C,1,1] becomes plain [1,1,1,C].
        bool image = v->type().layout == Layout::NCHW || origin_.count(v);
        if (permuted(padded, kToLast) != padded) w = toLast(v, image ? Layout::NHWC : Layout::Plain, n);
      }
      if (!w) return false;
      operands.push_back(w);
    }
    auto replacement = buildNode(g_, n->opName(), operands, attrs, n);
    if (!replacement) {
      if (ctx_.diag) ctx_.diag->remark("layout", str("@", g_.name(), ": kept ", n->opName(), " in nchw: ", replacement.error().message()));
      return false;
    }
    Node* r = *replacement;
    // Check every result before touching any use.
    for (size_t i = 0; i < n->numResults(); ++i) {
      const TensorType &old = n->result(i)->type(), &now = r->result(i)->type();
      bool ok = links.hasResult(i) ? now == TensorType(old.dtype, permuted(old.shape, kToLast), Layout::NHWC) : now == old;
      if (!ok) {
        g_.eraseNode(r);
        return false;
      }
    }
    r->copyProvenance(*n);
    for (size_t i = 0; i < n->numResults(); ++i) {
      Value* old = n->result(i);
      Value* now = r->result(i);
      if (links.hasResult(i)) {
        Value* back = toFirst(now, old->type(), n);
        if (!back) return false;  // unreachable: the types were checked above
        back->setName(old->name());
        g_.replaceAllUsesWith(old, back);
      } else {
        now->setName(old->name());
        g_.replaceAllUsesWith(old, now);
      }
    }
    g_.eraseNode(n);
    ++rewritten_;
    return true;
  }

  // Cancels transpose pairs whose composition is the identity, then erases
  // the helper nodes nothing reads any more.
  bool cleanUp() {
    bool changed = false;
    for (Node* n : g_.nodes()) {
      if (!n->is(Op::Transpose)) continue;
      Node* inner = n->operand(0)->producer();
      if (!inner || !inner->is(Op::Transpose)) continue;
      const Perm &p = inner->attr("perm").asInts(), &q = n->attr("perm").asInts();
      if (p.size() != q.size() || p.empty()) continue;
      bool identity = true;
      for (size_t i = 0; i < q.size(); ++i) identity &= p[static_cast<size_t>(q[i])] == static_cast<int64_t>(i);
      Value* x = inner->operand(0);
      if (!identity || !(x->type() == n->result()->type())) continue;
      g_.replaceAllUsesWith(n->result(), x);
      created_.insert(n);
      created_.insert(inner);
      ++cancelled_;
      changed = true;
    }
    std::vector<Node*> nodes = g_.nodes();
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      Node* n = *it;
      if (!created_.count(n) && !(n->is(Op::Transpose) && origin_.count(n->result()))) continue;
      bool used = false;
      for (size_t i = 0; i < n->numResults(); ++i) used |= n->result(i)->hasUses();
      if (!used) g_.eraseNode(n);
    }
    if (ctx_.remarks && ctx_.diag && (rewritten_ || cancelled_))
      ctx_.diag->remark("layout", str("@", g_.name(), ": ", rewritten_, " ops rebuilt in nhwc, ", cancelled_,
                                      " transpose pairs cancelled, ", foldedParams_, " parameters transposed at compile time"));
    return changed;
  }

  Graph& g_;
  const PassContext& ctx_;
  LayoutMode mode_;
  const LayoutCostModel* model_;
  std::map<const Value*, const Value*> parent_;
  std::map<const Node*, Links> links_;
  std::map<const Node*, const Value*> anchor_;  // a value of the node's region
  std::set<std::pair<const Node*, const Value*>> readInside_;  // (node, image it reads in the region's layout)
  std::set<const Value*> producedInside_;
  std::map<const Value*, bool> nhwc_;        // region root -> NHWC chosen
  std::map<const Node*, bool> ohwi_;         // conv2d -> filter OHWI chosen
  std::map<const Value*, Value*> origin_;    // a value transposed back -> its channels-last source
  std::map<std::pair<const Value*, Layout>, Value*> memo_;
  std::set<Node*> created_;
  size_t rewritten_ = 0, cancelled_ = 0, foldedParams_ = 0;
};

class LayoutPass : public Pass {
 public:
  // An explicit `mode=` wins over the driver's --layout (PassContext::layoutMode).
  LayoutPass(LayoutMode mode, bool explicitMode, std::string target)
      : mode_(mode), explicitMode_(explicitMode), target_(std::move(target)) {}
  std::string_view name() const override { return "layout"; }
  PassResult run(Graph& g, const PassContext& ctx) override {
    LayoutMode mode = mode_;
    if (!ctx.layoutMode.empty() && !explicitMode_) {
      auto m = parseLayoutMode(ctx.layoutMode);
      if (!m) return m.error();
      mode = *m;
    }
    if (mode == LayoutMode::NCHW) return false;
    return LayoutRewriter(g, ctx, mode, layoutCostModelFor(target_)).run();
  }

 private:
  LayoutMode mode_;
  bool explicitMode_;
  std::string target_;
};

}  // namespace

Expected<std::unique_ptr<Pass>> createLayoutPass(const PassOptions& options) {
  LayoutMode mode = LayoutMode::Auto;
  std::string target = "cpu";
  bool explicitMode = false;
  for (const auto& [key, value] : options) {
    if (key == "mode") {
      KF_ASSIGN_OR_RETURN(mode, parseLayoutMode(value));
      explicitMode = true;
    } else if (key == "target") {
      target = value;
    } else {
      PassOptions one{{key, value}};
      return unknownPassOption("layout", one);
    }
  }
  return std::unique_ptr<Pass>(std::make_unique<LayoutPass>(mode, explicitMode, target));
}

}  // namespace kfuse
