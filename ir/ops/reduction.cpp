// Reductions (sum, mean, max, min over a set of axes), argmax, and softmax /
// log_softmax along one axis. The references walk the input in row-major
// order and fold each element into the output element it reduces to, so the
// order of combination is fixed and the first of equal maxima wins.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/ops/op_helpers.h"

namespace kfuse {
namespace {

using ops::reducedType;

using ops::one;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

bool contains(const std::vector<int64_t>& axes, int64_t a) {
  return std::find(axes.begin(), axes.end(), a) != axes.end();
}

// max/min that return NaN if either side is NaN (torch.amax semantics);
// std::fmax would drop the NaN instead.
double maxPropagatingNaN(double a, double b) { return (std::isnan(a) || std::isnan(b)) ? kNaN : std::max(a, b); }
double minPropagatingNaN(double a, double b) { return (std::isnan(a) || std::isnan(b)) ? kNaN : std::min(a, b); }

// The axes a reduce_* call reduces: `axes` normalised, or every axis when the
// list is empty (a rank-0 operand then reduces nothing and passes through).
Expected<std::vector<int64_t>> reducedAxes(const OpCall& c) {
  int64_t rank = static_cast<int64_t>(c.inputs[0].rank());
  KF_ASSIGN_OR_RETURN(auto axes, ops::axesAttr(c, "axes", rank));
  if (axes.empty())
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  return axes;
}

// Maximum, minimum and argmax have no value over zero elements.
Status requireNonEmptyAxes(const OpCall& c, const std::vector<int64_t>& axes) {
  for (int64_t a : axes)
    if (c.inputs[0].shape[a] == 0)
      return Error(str("cannot reduce axis ", a, " of extent 0 of operand 0 (", formatType(c.inputs[0]),
                       "): the ", c.op.id == Op::ReduceMin ? "minimum" : "maximum", " of no elements is undefined"));
  return Status::ok();
}


// The single axis of argmax/softmax; rank-0 operands have none.
Expected<int64_t> singleAxis(const OpCall& c) {
  int64_t rank = static_cast<int64_t>(c.inputs[0].rank());
  if (rank == 0)
    return Error(str("operand 0 (", formatType(c.inputs[0]), ") has rank 0, so attribute axis = ", c.getInt("axis"),
                     " names no axis"));
  return ops::axisAttr(c, "axis", rank);
}

// ---- reduce_sum / reduce_mean / reduce_max / reduce_min ----

enum class Domain { Float, Numeric };

struct Fold {
  double init;                                  // value of an empty accumulator
  double (*combine)(double acc, double x);
  double (*finish)(double acc, int64_t count);  // count: elements folded into acc
};

Expected<std::vector<Tensor>> foldReference(const OpCall& c, const Tensor& in, const TensorType& outType,
                                            const Fold& fold) {
  KF_ASSIGN_OR_RETURN(auto axes, reducedAxes(c));
  // Offsets are taken in the keepdims shape, whose elements are laid out
  // exactly as those of the result with the axes dropped.
  Shape kept = reducedType(in.type(), axes, true, outType.dtype).shape;
  std::vector<double> acc(static_cast<size_t>(numElements(kept)), fold.init);
  std::vector<int64_t> outIdx(kept.size());
  ops::forEachIndex(in.shape(), [&](const std::vector<int64_t>& idx, int64_t flat) {
    for (size_t d = 0; d < idx.size(); ++d) outIdx[d] = contains(axes, static_cast<int64_t>(d)) ? 0 : idx[d];
    double& a = acc[ops::flatOffset(outIdx, kept)];
    a = fold.combine(a, in.at(flat));
  });
  int64_t count = acc.empty() ? 0 : in.numElements() / static_cast<int64_t>(acc.size());
  Tensor out(outType);
  for (size_t i = 0; i < acc.size(); ++i) out.set(static_cast<int64_t>(i), fold.finish(acc[i], count));
  return std::vector<Tensor>{std::move(out)};
}

OpDef& reduceOp(OpRegistry& r, std::string name, std::string summary, Domain dom, Fold fold) {
  OpDef d;
  d.name = std::move(name);
  d.summary = std::move(summary);
  d.minInputs = d.maxInputs = 1;
  d.attrs = {{"axes", AttrKind::Ints, Attribute(std::vector<int64_t>{})},
             {"keepdims", AttrKind::Bool, Attribute(false)}};
  d.fusion = FusionClass::Reduction;
  d.layout = {LayoutClass::AxisAttrs, {"axes"}, {}, {}, {}, {}};
  const std::optional<Op> id = findOp(d.name);
  const bool needsElements = id == Op::ReduceMax || id == Op::ReduceMin;
  d.infer = [dom, needsElements](const OpCall& c) -> Expected<std::vector<TensorType>> {
    KF_RETURN_IF_ERROR(dom == Domain::Float ? ops::requireFloat(c, 0) : ops::requireNumeric(c, 0));
    KF_ASSIGN_OR_RETURN(auto axes, reducedAxes(c));
    if (needsElements) KF_RETURN_IF_ERROR(requireNonEmptyAxes(c, axes));
    return one(reducedType(c.inputs[0], axes, c.getBool("keepdims"), c.inputs[0].dtype));
  };
  d.reference = [fold](const OpCall& c, std::span<const Tensor* const> in,
                       std::span<const TensorType> out) { return foldReference(c, *in[0], out[0], fold); };
  return r.add(std::move(d));
}

// ---- row programs (how the reductions run inside a fused kernel)

std::vector<int64_t> allAxes(size_t rank) {
  std::vector<int64_t> axes(rank);
  for (size_t d = 0; d < rank; ++d) axes[d] = static_cast<int64_t>(d);
  return axes;
}

// The primary operand spans every axis; the result keeps the outer ones (and
// -1 placeholders for reduced axes kept as 1).
Expected<RowSpec> reduceRowSpec(const OpCall& c) {
  KF_ASSIGN_OR_RETURN(auto axes, reducedAxes(c));
  RowSpec s;
  s.reduceAxes = axes;
  s.operandAxes = {allAxes(c.inputs[0].rank())};
  std::vector<int64_t> result;
  for (int64_t d = 0; d < static_cast<int64_t>(c.inputs[0].rank()); ++d) {
    if (!contains(axes, d))
      result.push_back(d);
    else if (c.getBool("keepdims"))
      result.push_back(-1);
  }
  s.resultAxes = {result};
  s.resultScopes = {RowScope::Row};
  return s;
}

RowFn reduceRow(RowCombiner comb, bool mean) {
  return [comb, mean](RowBuilder& b, const OpCall& c, std::span<const Scalar> in) -> std::vector<Scalar> {
    Scalar acc = b.reduce(comb, in[0]);
    if (!mean) return {acc};
    int64_t n = 1;
    std::vector<int64_t> axes = *reducedAxes(c);  // a local: iterating *temporary would dangle
    for (int64_t a : axes) n *= c.inputs[0].shape[static_cast<size_t>(a)];
    return {acc / static_cast<double>(n)};
  };
}

// One axis of every operand, every result per element.
RowSpecFn laneSpec(size_t operands) {
  return [operands](const OpCall& c) -> Expected<RowSpec> {
    KF_ASSIGN_OR_RETURN(int64_t axis, singleAxis(c));
    RowSpec s;
    s.reduceAxes = {axis};
    s.operandAxes.assign(operands, allAxes(c.inputs[0].rank()));
    s.resultAxes = {allAxes(c.inputs[0].rank())};
    s.resultScopes = {RowScope::Element};
    return s;
  };
}

void registerReduces(OpRegistry& r) {
  auto plus = [](double a, double x) { return a + x; };
  auto asIs = [](double a, int64_t) { return a; };
  OpDef& sum = reduceOp(r, "reduce_sum", "sum over `axes` (all axes when empty)", Domain::Numeric, {0.0, plus, asIs});
  sum.rowSpec = reduceRowSpec;
  sum.row = reduceRow(RowCombiner::Sum, false);
  // The mean of zero elements is 0/0 = NaN, as in NumPy and torch.
  OpDef& mean = reduceOp(r, "reduce_mean", "mean over `axes` (all axes when empty)", Domain::Float,
                         {0.0, plus, [](double a, int64_t n) { return a / static_cast<double>(n); }});
  mean.rowSpec = reduceRowSpec;
  mean.row = reduceRow(RowCombiner::Sum, true);
  OpDef& mx = reduceOp(r, "reduce_max", "maximum over `axes` (all axes when empty), NaN-propagating",
                       Domain::Numeric, {-kInf, maxPropagatingNaN, asIs});
  mx.rowSpec = reduceRowSpec;
  mx.row = reduceRow(RowCombiner::Max, false);
  OpDef& mn = reduceOp(r, "reduce_min", "minimum over `axes` (all axes when empty), NaN-propagating",
                       Domain::Numeric, {kInf, minPropagatingNaN, asIs});
  mn.rowSpec = reduceRowSpec;
  mn.row = reduceRow(RowCombiner::Min, false);
  // Kernels combine rows by sum, max or min only, so a product has no row
  // form: it runs as a reference step on every target (opaque).
  OpDef& prod = reduceOp(r, "reduce_prod", "product over `axes` (all axes when empty)", Domain::Numeric,
                         {1.0, [](double a, double x) { return a * x; }, asIs});
  prod.fusion = FusionClass::Opaque;
}

// ---- argmax, softmax, log_softmax: one axis ----

// A tensor seen as outer x n x inner around `axis`: element k of lane
// (o, i) is at flat offset (o * n + k) * inner + i, and lane (o, i) is
// element o * inner + i of a result that drops or keeps the axis.
struct Lanes {
  int64_t outer = 1, n = 1, inner = 1;
  Lanes(const Shape& s, int64_t axis) {
    for (int64_t d = 0; d < axis; ++d) outer *= s[d];
    n = s[axis];
    for (size_t d = static_cast<size_t>(axis) + 1; d < s.size(); ++d) inner *= s[d];
  }
  int64_t at(int64_t o, int64_t i, int64_t k) const { return (o * n + k) * inner + i; }
};

void registerArgmax(OpRegistry& r) {
  OpDef d;
  d.name = "argmax";
  d.summary = "i64 index of the maximum along `axis`; the first on ties, NaN counts as the maximum";
  d.minInputs = d.maxInputs = 1;
  d.attrs = {{"axis", AttrKind::Int, Attribute(int64_t{-1})}, {"keepdims", AttrKind::Bool, Attribute(false)}};
  d.fusion = FusionClass::Reduction;
  d.layout = {LayoutClass::AxisAttrs, {"axis"}, {}, {}, {}, {}};
  d.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> {
    KF_RETURN_IF_ERROR(ops::requireNumeric(c, 0));
    KF_ASSIGN_OR_RETURN(int64_t axis, singleAxis(c));
    KF_RETURN_IF_ERROR(requireNonEmptyAxes(c, {axis}));
    return one(reducedType(c.inputs[0], {axis}, c.getBool("keepdims"), DType::I64));
  };
  d.reference = [](const OpCall& c, std::span<const Tensor* const> in,
                   std::span<const TensorType> out) -> Expected<std::vector<Tensor>> {
    KF_ASSIGN_OR_RETURN(int64_t axis, singleAxis(c));
    const Tensor& x = *in[0];
    Lanes lanes(x.shape(), axis);
    Tensor result(out[0]);
    for (int64_t o = 0; o < lanes.outer; ++o) {
      for (int64_t i = 0; i < lanes.inner; ++i) {
        int64_t best = 0;
        double bestValue = x.at(lanes.at(o, i, 0));
        for (int64_t k = 1; k < lanes.n && !std::isnan(bestValue); ++k) {
          double v = x.at(lanes.at(o, i, k));
          // Strictly greater keeps the first of equal maxima; the first NaN wins outright.
          if (std::isnan(v) || v > bestValue) {
            best = k;
            bestValue = v;
          }
        }
        result.set(o * lanes.inner + i, static_cast<double>(best));
      }
    }
    return std::vector<Tensor>{std::move(result)};
  };
  r.add(std::move(d));
}

// softmax (log = false) or log_softmax (log = true) of every lane along the
// axis. Subtracting the lane's maximum first keeps exp() from overflowing
// and is exact in the limit: softmax(x) = softmax(x - m).
Tensor softmaxReference(const Tensor& x, const TensorType& outType, int64_t axis, bool log) {
  Lanes lanes(x.shape(), axis);
  Tensor out(outType);
  for (int64_t o = 0; o < lanes.outer; ++o) {
    for (int64_t i = 0; i < lanes.inner; ++i) {
      double m = -kInf;
      for (int64_t k = 0; k < lanes.n; ++k) m = maxPropagatingNaN(m, x.at(lanes.at(o, i, k)));
      double sum = 0;
      for (int64_t k = 0; k < lanes.n; ++k) sum += std::exp(x.at(lanes.at(o, i, k)) - m);
      for (int64_t k = 0; k < lanes.n; ++k) {
        double shifted = x.at(lanes.at(o, i, k)) - m;
        out.set(lanes.at(o, i, k), log ? shifted - std::log(sum) : std::exp(shifted) / sum);
      }
    }
  }
  return out;
}

OpDef& softmaxOp(OpRegistry& r, std::string name, std::string summary, bool log) {
  OpDef d;
  d.name = std::move(name);
  d.summary = std::move(summary);
  d.minInputs = d.maxInputs = 1;
  d.attrs = {{"axis", AttrKind::Int, Attribute(int64_t{-1})}};
  d.fusion = FusionClass::Reduction;
  d.layout = {LayoutClass::AxisAttrs, {"axis"}, {}, {}, {}, {}};
  d.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> {
    KF_RETURN_IF_ERROR(ops::requireFloat(c, 0));
    KF_RETURN_IF_ERROR(singleAxis(c).status());
    return one(c.inputs[0]);
  };
  d.reference = [log](const OpCall& c, std::span<const Tensor* const> in,
                      std::span<const TensorType> out) -> Expected<std::vector<Tensor>> {
    KF_ASSIGN_OR_RETURN(int64_t axis, singleAxis(c));
    return std::vector<Tensor>{softmaxReference(*in[0], out[0], axis, log)};
  };
  return r.add(std::move(d));
}

// Backward of softmax / log_softmax from dy and the forward result y, lane
// by lane: softmax: dx = y * (dy - sum(dy * y)); log_softmax: dx = dy -
// exp(y) * sum(dy).
Tensor softmaxGradReference(const Tensor& dy, const Tensor& y, const TensorType& outType, int64_t axis, bool log) {
  Lanes lanes(y.shape(), axis);
  Tensor out(outType);
  for (int64_t o = 0; o < lanes.outer; ++o) {
    for (int64_t i = 0; i < lanes.inner; ++i) {
      double dot = 0;
      for (int64_t k = 0; k < lanes.n; ++k) {
        int64_t at = lanes.at(o, i, k);
        dot += log ? dy.at(at) : dy.at(at) * y.at(at);
      }
      for (int64_t k = 0; k < lanes.n; ++k) {
        int64_t at = lanes.at(o, i, k);
        out.set(at, log ? dy.at(at) - std::exp(y.at(at)) * dot : y.at(at) * (dy.at(at) - dot));
      }
    }
  }
  return out;
}

OpDef& softmaxGradOp(OpRegistry& r, std::string name, std::string summary, bool log) {
  OpDef d;
  d.name = std::move(name);
  d.summary = std::move(summary);
  d.minInputs = d.maxInputs = 2;
  d.attrs = {{"axis", AttrKind::Int, Attribute(int64_t{-1})}};
  d.fusion = FusionClass::Reduction;
  d.layout = {LayoutClass::AxisAttrs, {"axis"}, {}, {}, {}, {}};
  d.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> {
    KF_RETURN_IF_ERROR(ops::requireFloat(c, 0));
    if (!(c.inputs[0] == c.inputs[1]))
      return Error(str("dy ", formatType(c.inputs[0]), " and y ", formatType(c.inputs[1]), " must have one type"));
    KF_RETURN_IF_ERROR(singleAxis(c).status());
    return one(c.inputs[0]);
  };
  d.reference = [log](const OpCall& c, std::span<const Tensor* const> in,
                      std::span<const TensorType> out) -> Expected<std::vector<Tensor>> {
    KF_ASSIGN_OR_RETURN(int64_t axis, singleAxis(c));
    return std::vector<Tensor>{softmaxGradReference(*in[0], *in[1], out[0], axis, log)};
  };
  return r.add(std::move(d));
}

}  // namespace

void registerReductionOps(OpRegistry& r) {
  registerReduces(r);
  registerArgmax(r);
  // Row programs subtract the row maximum first, as the references do.
  OpDef& softmax = softmaxOp(r, "softmax", "exp(x) / sum(exp(x)) along `axis`", false);
  softmax.rowSpec = laneSpec(1);
  softmax.row = [](RowBuilder& b, const OpCall&, std::span<const Scalar> in) -> std::vector<Scalar> {
    Scalar m = b.reduce(RowCombiner::Max, in[0]);
    Scalar s = b.reduce(RowCombiner::Sum, exp(in[0] - m));
    return {exp(in[0] - m) * (1.0 / s)};
  };
  OpDef& logSoftmax = softmaxOp(r, "log_softmax", "x - log(sum(exp(x))) along `axis`", true);
  logSoftmax.rowSpec = laneSpec(1);
  logSoftmax.row = [](RowBuilder& b, const OpCall&, std::span<const Scalar> in) -> std::vector<Scalar> {
    Scalar m = b.reduce(RowCombiner::Max, in[0]);
    Scalar s = b.reduce(RowCombiner::Sum, exp(in[0] - m));
    return {in[0] - m - log(s)};
  };
  OpDef& softmaxBack = softmaxGradOp(r, "softmax_grad",
                                     "softmax backward from dy and y = softmax(x): y * (dy - sum(dy * y))", false);
  softmaxBack.rowSpec = laneSpec(2);
  softmaxBack.row = [](RowBuilder& b, const OpCall&, std::span<const Scalar> in) -> std::vector<Scalar> {
    Scalar dot = b.reduce(RowCombiner::Sum, in[0] * in[1]);
    return {in[1] * (in[0] - dot)};
  };
  OpDef& logSoftmaxBack = softmaxGradOp(
      r, "log_softmax_grad", "log_softmax backward from dy and y = log_softmax(x): dy - exp(y) * sum(dy)", true);
  logSoftmaxBack.rowSpec = laneSpec(2);
  logSoftmaxBack.row = [](RowBuilder& b, const OpCall&, std::span<const Scalar> in) -> std::vector<Scalar> {
    Scalar s = b.reduce(RowCombiner::Sum, in[0]);
    return {in[0] - exp(in[1]) * s};
  };
}

}  // namespace kfuse
