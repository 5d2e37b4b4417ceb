// Matrix products, reductions and scans: MatMul, Gemm, Reduce*,
// ArgMax/ArgMin, Hardmax, CumSum.
// Reductions without a kfuse op of their own (ReduceL2, ReduceLogSumExp, ...)
// are composed from reduce_sum/reduce_max and elementwise ops.
#include <algorithm>
#include <climits>
#include <limits>
#include <optional>
#include <map>

#include "frontend/onnx/lower_util.h"
#include "frontend/onnx/op_table.h"

namespace kfuse::onnx_import {
namespace {

Status lowerMatMul(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* a, c.input(0));
  KF_ASSIGN_OR_RETURN(Value* b, c.input(1));
  KF_RETURN_IF_ERROR(requireFloat(c, a, "operands"));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("matmul", {a, b}));
  return done(c, y);
}

// Gemm: alpha * A' B' + beta * C -> matmul (transposes as attributes)
// [+ mul by alpha] [+ add of C, first scaled by beta].
Status lowerGemm(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* a, c.input(0));
  KF_ASSIGN_OR_RETURN(Value* b, c.input(1));
  KF_RETURN_IF_ERROR(requireFloat(c, a, "operands"));
  KF_ASSIGN_OR_RETURN(double alpha, c.attrs().getFloat("alpha", 1.0));
  KF_ASSIGN_OR_RETURN(double beta, c.attrs().getFloat("beta", 1.0));
  KF_ASSIGN_OR_RETURN(int64_t transA, c.attrs().getInt("transA", 0));
  KF_ASSIGN_OR_RETURN(int64_t transB, c.attrs().getInt("transB", 0));
  // Before opset 7, `broadcast` said whether C may broadcast; NumPy-style
  // broadcasting accepts exactly the same valid models.
  c.attrs().ignore("broadcast");
  if (a->type().rank() != 2 || b->type().rank() != 2)
    return Error(str("A and B must be matrices, got ", formatType(a->type()), " and ", formatType(b->type())));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("matmul", {a, b}, {{"transpose_a", transA != 0}, {"transpose_b", transB != 0}}));
  if (alpha != 1.0) {
    KF_ASSIGN_OR_RETURN(y, c.build("mul", {y, scalarLike(c, y, alpha)}));
  }
  if (c.hasInput(2) && beta != 0.0) {
    KF_ASSIGN_OR_RETURN(Value* bias, c.input(2));
    if (beta != 1.0) {
      KF_ASSIGN_OR_RETURN(bias, c.build("mul", {bias, scalarLike(c, bias, beta)}));
    }
    Shape before = y->type().shape;
    KF_ASSIGN_OR_RETURN(y, c.build("add", {y, bias}));
    if (y->type().shape != before)
      return Error(str("C ", formatType(bias->type()), " does not broadcast to the product's shape ",
                       formatDims(before)));
  }
  return done(c, y);
}

// ---------------------------------------------------------------- reductions

// The reduced axes: the `axes` attribute, or (ReduceSum since opset 13, and
// every reduction in opset 18's style) an optional second input. Empty means
// all axes, unless noop_with_empty_axes asks for the identity.
struct Reduction {
  Value* x = nullptr;
  std::vector<int64_t> axes;  // normalised; empty: all
  bool keepdims = true;
  bool noop = false;
};

Expected<Reduction> readReduction(LoweringContext& c) {
  Reduction r;
  KF_ASSIGN_OR_RETURN(r.x, c.input(0));
  KF_ASSIGN_OR_RETURN(int64_t keep, c.attrs().getInt("keepdims", 1));
  KF_ASSIGN_OR_RETURN(int64_t noopEmpty, c.attrs().getInt("noop_with_empty_axes", 0));
  r.keepdims = keep != 0;
  std::vector<int64_t> axes;
  if (c.hasInput(1)) {
    KF_ASSIGN_OR_RETURN(axes, c.intsInput(1));
  } else {
    KF_ASSIGN_OR_RETURN(axes, c.attrs().getInts("axes", std::vector<int64_t>{}));
  }
  auto rank = static_cast<int64_t>(r.x->type().rank());
  for (int64_t a : axes) {
    KF_ASSIGN_OR_RETURN(int64_t n, normalizedAxis(a, rank, "axis"));
    r.axes.push_back(n);
  }
  r.noop = axes.empty() && noopEmpty != 0;
  if (r.axes.empty() && !r.noop)
    for (int64_t a = 0; a < rank; ++a) r.axes.push_back(a);
  return r;
}

Expected<Value*> reduce(LoweringContext& c, std::string_view op, Value* x, const Reduction& r) {
  return c.build(op, {x}, {{"axes", Attribute(r.axes)}, {"keepdims", r.keepdims}});
}

// The shape a reduction gives.
Shape reducedShape(const Reduction& r) {
  Shape out;
  const Shape& s = r.x->type().shape;
  for (size_t d = 0; d < s.size(); ++d) {
    bool reduced = std::find(r.axes.begin(), r.axes.end(), static_cast<int64_t>(d)) != r.axes.end();
    if (!reduced) out.push_back(s[d]);
    else if (r.keepdims) out.push_back(1);
  }
  return out;
}

// ReduceMax and ReduceMin over an empty axis give the identity of the fold
// (ONNX: -inf and +inf, or the type's extremes; for bools false and true),
// which kfuse's reductions refuse to define.
std::optional<Value*> emptyExtremum(LoweringContext& c, const Reduction& r, bool isMax) {
  bool empty = false;
  for (int64_t a : r.axes) empty |= r.x->type().shape[static_cast<size_t>(a)] == 0;
  if (!empty) return std::nullopt;
  DType t = r.x->type().dtype;
  Tensor fill(TensorType(t, reducedShape(r)));
  if (t == DType::I64) {
    int64_t v = isMax ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
    std::fill(fill.as<int64_t>(), fill.as<int64_t>() + fill.numElements(), v);
    return c.constant(std::move(fill));
  }
  double inf = std::numeric_limits<double>::infinity();
  auto [lo, hi] = t == DType::I32  ? std::pair<double, double>{INT32_MIN, INT32_MAX}
                  : t == DType::I8 ? std::pair<double, double>{-128, 127}
                  : t == DType::U8 ? std::pair<double, double>{0, 255}
                  : t == DType::Bool ? std::pair<double, double>{0, 1}
                                     : std::pair<double, double>{-inf, inf};
  for (int64_t i = 0; i < fill.numElements(); ++i) fill.set(i, isMax ? lo : hi);
  return c.constant(std::move(fill));
}

// Each reduction: an optional elementwise map before, the kfuse reduction,
// an optional map after.
Status lowerReduce(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Reduction r, readReduction(c));
  if (r.noop) return done(c, r.x);
  const std::string& op = c.opType();
  Value* x = r.x;
  if (op == "ReduceProd" && x->type().dtype == DType::Bool) return Error("ReduceProd of a bool tensor");
  if (op == "ReduceMax" || op == "ReduceMin") {
    if (auto empty = emptyExtremum(c, r, op == "ReduceMax")) return done(c, *empty);
    if (x->type().dtype == DType::Bool) {  // ReduceMax-20 and ReduceMin-20: any and all
      KF_ASSIGN_OR_RETURN(Value* wide, castTo(c, x, DType::U8));
      KF_ASSIGN_OR_RETURN(Value* y, reduce(c, op == "ReduceMax" ? "reduce_max" : "reduce_min", wide, r));
      KF_ASSIGN_OR_RETURN(y, castTo(c, y, DType::Bool));
      return done(c, y);
    }
  }
  bool floatOnly = op == "ReduceMean" || op == "ReduceL2" || op == "ReduceLogSum" || op == "ReduceLogSumExp";
  if (floatOnly) KF_RETURN_IF_ERROR(requireFloat(c, x, "operand"));
  if (op == "ReduceL1") {
    KF_ASSIGN_OR_RETURN(x, c.build("abs", {x}));
  } else if (op == "ReduceL2" || op == "ReduceSumSquare") {
    KF_ASSIGN_OR_RETURN(x, c.build("mul", {x, x}));
  }
  static const std::map<std::string_view, std::string_view> kernel = {
      {"ReduceSum", "reduce_sum"}, {"ReduceMean", "reduce_mean"}, {"ReduceMax", "reduce_max"},
      {"ReduceMin", "reduce_min"}, {"ReduceL1", "reduce_sum"},    {"ReduceL2", "reduce_sum"},
      {"ReduceSumSquare", "reduce_sum"}, {"ReduceLogSum", "reduce_sum"}, {"ReduceProd", "reduce_prod"}};
  KF_ASSIGN_OR_RETURN(Value* y, reduce(c, kernel.at(op), x, r));
  if (op == "ReduceL2") {
    KF_ASSIGN_OR_RETURN(y, c.build("sqrt", {y}));
  } else if (op == "ReduceLogSum") {
    KF_ASSIGN_OR_RETURN(y, c.build("log", {y}));
  }
  return done(c, y);
}

// log(sum(exp(x))) computed as m + log(sum(exp(x - m))) with m the maximum,
// so that large inputs do not overflow.
Status lowerReduceLogSumExp(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Reduction r, readReduction(c));
  if (r.noop) return done(c, r.x);
  KF_RETURN_IF_ERROR(requireFloat(c, r.x, "operand"));
  if (auto empty = emptyExtremum(c, r, true)) return done(c, *empty);  // log of an empty sum: -inf
  Reduction keep = r;
  keep.keepdims = true;
  KF_ASSIGN_OR_RETURN(Value* m, reduce(c, "reduce_max", r.x, keep));
  KF_ASSIGN_OR_RETURN(Value* shifted, c.build("sub", {r.x, m}));
  KF_ASSIGN_OR_RETURN(Value* e, c.build("exp", {shifted}));
  KF_ASSIGN_OR_RETURN(Value* s, reduce(c, "reduce_sum", e, r));
  KF_ASSIGN_OR_RETURN(Value* l, c.build("log", {s}));
  KF_ASSIGN_OR_RETURN(Value* mr, reshapeTo(c, m, l->type().shape));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("add", {l, mr}));
  return done(c, y);
}

// ArgMin is argmax of the negation; for unsigned types negation wraps, so
// those are unsupported. select_last_index = 1 takes argmax of the input
// reversed along the axis (a slice with step -1) and maps the index back.
Status lowerArgMax(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(int64_t axis, c.attrs().getInt("axis", 0));
  KF_ASSIGN_OR_RETURN(int64_t keepdims, c.attrs().getInt("keepdims", 1));
  KF_ASSIGN_OR_RETURN(int64_t last, c.attrs().getInt("select_last_index", 0));
  auto rank = static_cast<int64_t>(x->type().rank());
  KF_ASSIGN_OR_RETURN(axis, normalizedAxis(axis, rank, "attribute axis"));
  if (c.opType() == "ArgMin") {
    if (x->type().dtype == DType::U8 || x->type().dtype == DType::Bool)
      return c.unsupported(str("ArgMin on ", dtypeName(x->type().dtype), " operands"));
    KF_ASSIGN_OR_RETURN(x, c.build("neg", {x}));
  }
  if (last) {
    KF_ASSIGN_OR_RETURN(x, c.build("slice", {x}, {{"starts", Attribute(std::vector<int64_t>{-1})},
                                                  {"ends", Attribute(std::vector<int64_t>{std::numeric_limits<int64_t>::min()})},
                                                  {"axes", Attribute(std::vector<int64_t>{axis})},
                                                  {"steps", Attribute(std::vector<int64_t>{-1})}}));
  }
  KF_ASSIGN_OR_RETURN(Value* y, c.build("argmax", {x}, {{"axis", axis}, {"keepdims", keepdims != 0}}));
  if (last) {
    double n = static_cast<double>(x->type().shape[static_cast<size_t>(axis)]);
    KF_ASSIGN_OR_RETURN(y, c.build("sub", {c.scalar(DType::I64, n - 1), y}));
  }
  return done(c, y);
}

// An i64 tensor counting 0..n-1 along `axis` of a rank-`rank` shape of ones.
Tensor iotaAlong(int64_t n, int64_t axis, int64_t rank) {
  Shape s(static_cast<size_t>(rank), 1);
  s[static_cast<size_t>(axis)] = n;
  Tensor t(TensorType(DType::I64, s));
  for (int64_t i = 0; i < n; ++i) t.as<int64_t>()[i] = i;
  return t;
}

// Hardmax: 1 where argmax (the first maximum) is, 0 elsewhere. Before
// opset 13 over all axes from `axis` on, as Softmax.
Status lowerHardmax(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  bool coerce2d = c.version() < 13;
  KF_ASSIGN_OR_RETURN(int64_t axis, c.attrs().getInt("axis", coerce2d ? 1 : -1));
  auto rank = static_cast<int64_t>(x->type().rank());
  KF_ASSIGN_OR_RETURN(axis, normalizedAxis(axis, rank, "attribute axis"));
  const Shape shape = x->type().shape;
  Value* in = x;
  if (coerce2d) {
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner) *= shape[static_cast<size_t>(i)];
    KF_ASSIGN_OR_RETURN(in, reshapeTo(c, x, {outer, inner}));
    axis = 1;
  }
  auto inRank = static_cast<int64_t>(in->type().rank());
  KF_ASSIGN_OR_RETURN(Value* idx, c.build("argmax", {in}, {{"axis", axis}, {"keepdims", true}}));
  Value* iota = c.constant(iotaAlong(in->type().shape[static_cast<size_t>(axis)], axis, inRank));
  KF_ASSIGN_OR_RETURN(Value* hit, c.build("equal", {idx, iota}));
  KF_ASSIGN_OR_RETURN(Value* y, castTo(c, hit, x->type().dtype));
  KF_ASSIGN_OR_RETURN(y, reshapeTo(c, y, shape));
  return done(c, y);
}

// CumSum along a constant axis: a matmul with a 0/1 triangular matrix over
// that axis moved last (exclusive and reverse pick the triangle). Integers
// go through f64, exact below 2^53.
Status lowerCumSum(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(std::vector<int64_t> axisList, c.intsInput(1));
  KF_ASSIGN_OR_RETURN(int64_t exclusive, c.attrs().getInt("exclusive", 0));
  KF_ASSIGN_OR_RETURN(int64_t reverse, c.attrs().getInt("reverse", 0));
  auto rank = static_cast<int64_t>(x->type().rank());
  if (axisList.size() != 1 || rank == 0) return Error("axis must be one integer and the input of rank >= 1");
  KF_ASSIGN_OR_RETURN(int64_t axis, normalizedAxis(axisList[0], rank, "axis"));
  DType dt = x->type().dtype;
  DType compute = isFloat(dt) ? dt : DType::F64;
  if (dt == DType::Bool) return c.unsupported("CumSum on bool");
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    if (i != axis) perm.push_back(i);
  perm.push_back(axis);
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  int64_t n = x->type().shape[static_cast<size_t>(axis)];
  Tensor tri(TensorType(compute, {n, n}));
  for (int64_t i = 0; i < n; ++i)  // element i feeds output j
    for (int64_t j = 0; j < n; ++j) {
      bool feeds = reverse ? (exclusive ? i > j : i >= j) : (exclusive ? i < j : i <= j);
      tri.set(i * n + j, feeds ? 1.0 : 0.0);
    }
  KF_ASSIGN_OR_RETURN(Value* v, castTo(c, x, compute));
  KF_ASSIGN_OR_RETURN(v, c.build("transpose", {v}, {{"perm", Attribute(perm)}}));
  KF_ASSIGN_OR_RETURN(v, c.build("matmul", {v, c.constant(std::move(tri))}));
  KF_ASSIGN_OR_RETURN(v, c.build("transpose", {v}, {{"perm", Attribute(inverse)}}));
  KF_ASSIGN_OR_RETURN(v, castTo(c, v, dt));
  return done(c, v);
}

const std::vector<OpLowering> kTable = {
    {"MatMul", {1, 9, 13}, lowerMatMul, "matmul"},
    {"Gemm", {6, 7, 9, 11, 13}, lowerGemm, "matmul (+ mul for alpha) (+ add of C, + mul for beta)"},
    {"ReduceSum", {1, 11, 13}, lowerReduce, "reduce_sum"},
    {"ReduceMean", {1, 11, 13, 18}, lowerReduce, "reduce_mean"},
    {"ReduceMax", {1, 11, 12, 13, 18, 20}, lowerReduce, "reduce_max"},
    {"ReduceMin", {1, 11, 12, 13, 18, 20}, lowerReduce, "reduce_min"},
    {"ReduceL1", {1, 11, 13, 18}, lowerReduce, "abs + reduce_sum"},
    {"ReduceL2", {1, 11, 13, 18}, lowerReduce, "mul + reduce_sum + sqrt"},
    {"ReduceSumSquare", {1, 11, 13, 18}, lowerReduce, "mul + reduce_sum"},
    {"ReduceLogSum", {1, 11, 13, 18, 28}, lowerReduce, "reduce_sum + log"},
    {"ReduceProd", {1, 11, 13, 18}, lowerReduce, "reduce_prod (a reference step: no kernel form)"},
    {"ReduceLogSumExp", {1, 11, 13, 18, 28}, lowerReduceLogSumExp, "reduce_max + sub + exp + reduce_sum + log + add"},
    {"ArgMax", {1, 11, 12, 13}, lowerArgMax, "argmax (last index: slice reversing the axis + argmax + sub)"},
    {"ArgMin", {1, 11, 12, 13}, lowerArgMax, "neg + argmax (last index as ArgMax)"},
    {"Hardmax", {1, 11, 13}, lowerHardmax, "argmax + equal with a constant iota + cast"},
    {"CumSum", {11, 14}, lowerCumSum, "transpose + matmul with a constant triangle + transpose"},
};

}  // namespace

std::span<const OpLowering> mathLowerings() { return kTable; }

}  // namespace kfuse::onnx_import
