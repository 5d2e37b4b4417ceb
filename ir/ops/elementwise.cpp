// Elementwise and broadcasting ops. Each op's math is its scalar expression;
// the reference implementation, the CUDA and the LLVM emitters all read it.
#include <cmath>
#include <limits>
#include <numbers>

#include "ir/ops/op_helpers.h"

namespace kfuse {
namespace {

using ops::one;
using ScalarList = std::vector<Scalar>;

enum class Domain { Float, Numeric, Any };

Status checkDomain(const OpCall& c, size_t i, Domain d) {
  if (d == Domain::Float) return ops::requireFloat(c, i);
  if (d == Domain::Numeric) return ops::requireNumeric(c, i);
  return Status::ok();
}

// Result type of an elementwise op over broadcast operands.
Expected<TensorType> broadcastResult(const OpCall& c, DType dtype) {
  Shape shape;
  for (const TensorType& t : c.inputs) {
    auto b = broadcastShapes(shape, t.shape);
    if (!b) return b.error();
    shape = *b;
  }
  KF_ASSIGN_OR_RETURN(Layout layout, ops::resultLayout(c, shape.size()));
  return TensorType(dtype, shape, layout);
}

OpDef elementwise(std::string name, std::string summary, int arity, FusionClass fc, std::vector<AttrSpec> attrs,
                  InferFn infer, ScalarFn scalar) {
  OpDef d;
  d.name = std::move(name);
  d.summary = std::move(summary);
  d.minInputs = d.maxInputs = arity;
  d.attrs = std::move(attrs);
  d.fusion = fc;
  d.infer = std::move(infer);
  d.reference = ops::referenceFromScalar;
  d.scalar = std::move(scalar);
  d.layout.kind = LayoutClass::Pointwise;  // a scalar expression reads only its own element
  return d;
}

// f(x) over one operand of the given domain; the result has the operand's type.
OpDef& unary(OpRegistry& r, std::string name, std::string summary, Domain dom,
             std::function<Scalar(const OpCall&, const Scalar&)> f, std::vector<AttrSpec> attrs = {}) {
  return r.add(elementwise(
      std::move(name), std::move(summary), 1, FusionClass::Elementwise, std::move(attrs),
      [dom](const OpCall& c) -> Expected<std::vector<TensorType>> {
        KF_RETURN_IF_ERROR(checkDomain(c, 0, dom));
        return one(c.inputs[0]);
      },
      [f](const OpCall& c, std::span<const Scalar> in) { return ScalarList{f(c, in[0])}; }));
}

// f(a, b) with NumPy broadcasting over operands of one dtype. `predicate`
// ops yield bool.
OpDef& binary(OpRegistry& r, std::string name, std::string summary, Domain dom, bool predicate,
              std::function<Scalar(const Scalar&, const Scalar&)> f) {
  return r.add(elementwise(
      std::move(name), std::move(summary), 2, FusionClass::Broadcast, {},
      [dom, predicate](const OpCall& c) -> Expected<std::vector<TensorType>> {
        KF_RETURN_IF_ERROR(checkDomain(c, 0, dom));
        KF_RETURN_IF_ERROR(checkDomain(c, 1, dom));
        KF_RETURN_IF_ERROR(ops::requireSameDType(c, 0, 1));
        KF_ASSIGN_OR_RETURN(auto t, broadcastResult(c, predicate ? DType::Bool : c.inputs[0].dtype));
        return one(t);
      },
      [f](const OpCall&, std::span<const Scalar> in) { return ScalarList{f(in[0], in[1])}; }));
}

Scalar constLike(double v, const Scalar& like) { return Scalar::constant(v, like.type()); }

// Bounds of clip as constants of x's compute type (integers saturate).
Scalar clipBound(double v, const Scalar& x) {
  if (!isFloat(x.type())) {
    double lim = static_cast<double>(std::numeric_limits<int64_t>::max());
    v = std::isinf(v) ? (v > 0 ? lim : -lim) : std::trunc(v);
  }
  return constLike(v, x);
}

// Exact in the compute type: x - floor(x) is exact, so the tie test is; x
// beyond 2^24 (f32) is an integer already and takes the d == 0 branch, where
// floor(x + 0.5) would round x + 0.5. A zero result keeps x's sign (-0.4 ->
// -0.0, as NumPy). NaN and infinities pass through.
Scalar roundHalfToEven(const Scalar& x) {
  Scalar fl = floor(x), d = x - fl, half = fl * 0.5;
  Scalar up = fl + 1.0;
  Scalar tie = select(equal(floor(half), half), fl, up);
  Scalar r = select(d > 0.5, up, select(d < 0.5, fl, tie));
  return select(equal(r, constLike(0, r)), x * 0.0, r);
}

void registerUnary(OpRegistry& r) {
  unary(r, "identity", "y = x", Domain::Any, [](const OpCall&, const Scalar& x) { return x; });
  unary(r, "neg", "y = -x", Domain::Numeric, [](const OpCall&, const Scalar& x) { return -x; });
  unary(r, "abs", "y = |x|", Domain::Numeric, [](const OpCall&, const Scalar& x) { return abs(x); });
  unary(r, "exp", "y = e^x", Domain::Float, [](const OpCall&, const Scalar& x) { return exp(x); });
  unary(r, "log", "natural logarithm", Domain::Float, [](const OpCall&, const Scalar& x) { return log(x); });
  unary(r, "sqrt", "square root", Domain::Float, [](const OpCall&, const Scalar& x) { return sqrt(x); });
  unary(r, "rsqrt", "y = 1 / sqrt(x)", Domain::Float, [](const OpCall&, const Scalar& x) { return rsqrt(x); });
  unary(r, "reciprocal", "y = 1 / x", Domain::Float, [](const OpCall&, const Scalar& x) { return 1.0 / x; });
  unary(r, "tanh", "hyperbolic tangent", Domain::Float, [](const OpCall&, const Scalar& x) { return tanh(x); });
  unary(r, "sigmoid", "y = 1 / (1 + e^-x)", Domain::Float,
        [](const OpCall&, const Scalar& x) { return 1.0 / (1.0 + exp(-x)); });
  unary(r, "relu", "y = max(x, 0)", Domain::Numeric, [](const OpCall&, const Scalar& x) { return max(x, 0.0); });
  unary(
      r, "leaky_relu", "y = x if x > 0 else alpha * x", Domain::Float,
      [](const OpCall& c, const Scalar& x) { return select(x > 0.0, x, c.getFloat("alpha") * x); },
      {{"alpha", AttrKind::Float, Attribute(0.01)}});
  unary(
      r, "elu", "y = x if x > 0 else alpha * (e^x - 1)", Domain::Float,
      [](const OpCall& c, const Scalar& x) { return select(x > 0.0, x, c.getFloat("alpha") * expm1(x)); },
      {{"alpha", AttrKind::Float, Attribute(1.0)}});
  unary(
      r, "gelu", "Gaussian error linear unit; approximate = \"none\" (erf form) or \"tanh\"", Domain::Float,
      [](const OpCall& c, const Scalar& x) {
        if (c.getString("approximate") == "tanh") {
          double k = std::sqrt(2.0 / std::numbers::pi);
          return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
        }
        return 0.5 * x * (1.0 + erf(x * std::numbers::sqrt2 / 2.0));
      },
      {{"approximate", AttrKind::String, Attribute("none")}});
  unary(r, "erf", "Gauss error function", Domain::Float, [](const OpCall&, const Scalar& x) { return erf(x); });
  unary(
      r, "softplus", "y = log(1 + e^(beta x)) / beta, or x where beta x > threshold", Domain::Float,
      [](const OpCall& c, const Scalar& x) {
        double beta = c.getFloat("beta");
        Scalar bx = beta * x;
        return select(bx > c.getFloat("threshold"), x, log1p(exp(bx)) / beta);
      },
      {{"beta", AttrKind::Float, Attribute(1.0)}, {"threshold", AttrKind::Float, Attribute(20.0)}});
  unary(r, "sin", "sine", Domain::Float, [](const OpCall&, const Scalar& x) { return sin(x); });
  unary(r, "cos", "cosine", Domain::Float, [](const OpCall&, const Scalar& x) { return cos(x); });
  unary(r, "sign", "-1, 0 or 1 by the sign of x", Domain::Numeric, [](const OpCall&, const Scalar& x) {
    return select(x > 0.0, constLike(1, x), select(x < 0.0, constLike(-1, x), constLike(0, x)));
  });
  unary(r, "floor", "round toward -inf", Domain::Float, [](const OpCall&, const Scalar& x) { return floor(x); });
  unary(r, "ceil", "round toward +inf", Domain::Float, [](const OpCall&, const Scalar& x) { return ceil(x); });
  unary(r, "round", "round to the nearest integer, halves to even (ONNX Round, torch.round)", Domain::Float,
        [](const OpCall&, const Scalar& x) { return roundHalfToEven(x); });
  unary(
      r, "clip", "y = min(max(x, min), max)", Domain::Numeric,
      [](const OpCall& c, const Scalar& x) {
        return min(max(x, clipBound(c.getFloat("min"), x)), clipBound(c.getFloat("max"), x));
      },
      {{"min", AttrKind::Float, Attribute(-std::numeric_limits<double>::infinity())},
       {"max", AttrKind::Float, Attribute(std::numeric_limits<double>::infinity())}});
}

void registerBinary(OpRegistry& r) {
  binary(r, "add", "a + b", Domain::Numeric, false, [](const Scalar& a, const Scalar& b) { return a + b; });
  binary(r, "sub", "a - b", Domain::Numeric, false, [](const Scalar& a, const Scalar& b) { return a - b; });
  binary(r, "mul", "a * b", Domain::Numeric, false, [](const Scalar& a, const Scalar& b) { return a * b; });
  binary(r, "div", "a / b (integers truncate toward zero)", Domain::Numeric, false,
         [](const Scalar& a, const Scalar& b) { return a / b; });
  binary(r, "pow", "a ^ b", Domain::Float, false, [](const Scalar& a, const Scalar& b) { return pow(a, b); });
  binary(r, "maximum", "max(a, b), NaN-propagating", Domain::Numeric, false,
         [](const Scalar& a, const Scalar& b) { return max(a, b); });
  binary(r, "minimum", "min(a, b), NaN-propagating", Domain::Numeric, false,
         [](const Scalar& a, const Scalar& b) { return min(a, b); });
  binary(r, "equal", "a == b", Domain::Any, true, [](const Scalar& a, const Scalar& b) { return equal(a, b); });
  binary(r, "less", "a < b", Domain::Numeric, true, [](const Scalar& a, const Scalar& b) { return a < b; });
  binary(r, "greater", "a > b", Domain::Numeric, true, [](const Scalar& a, const Scalar& b) { return a > b; });
}

void registerOthers(OpRegistry& r) {
  r.add(elementwise(
           "cast", "converts to dtype `to` (floats to integers truncate toward zero)", 1, FusionClass::Elementwise,
           {{"to", AttrKind::String, std::nullopt}},
           [](const OpCall& c) -> Expected<std::vector<TensorType>> {
             auto to = parseDType(c.getString("to"));
             if (!to) return Error(str("attribute to = \"", c.getString("to"), "\" is not a dtype"));
             TensorType t = c.inputs[0];
             t.dtype = *to;
             return one(t);
           },
           [](const OpCall& c, std::span<const Scalar> in) {
             return ScalarList{cast(in[0], *parseDType(c.getString("to")))};
           }));
  r.add(elementwise(
           "where", "cond ? a : b, broadcasting all three", 3, FusionClass::Broadcast, {},
           [](const OpCall& c) -> Expected<std::vector<TensorType>> {
             KF_RETURN_IF_ERROR(ops::requireDType(c, 0, DType::Bool));
             KF_RETURN_IF_ERROR(ops::requireSameDType(c, 1, 2));
             KF_ASSIGN_OR_RETURN(auto t, broadcastResult(c, c.inputs[1].dtype));
             return one(t);
           },
           [](const OpCall&, std::span<const Scalar> in) { return ScalarList{select(in[0], in[1], in[2])}; }));
}

// Gradient-only ops: the backward of an activation as one elementwise op
// (dy, then the forward operand or result), which reads better in dumps than
// its decomposition and fuses the same way.
void gradOnly(OpRegistry& r, std::string name, std::string summary,
              std::function<Scalar(const OpCall&, const Scalar& dy, const Scalar& v)> f,
              std::vector<AttrSpec> attrs = {}) {
  r.add(elementwise(
      std::move(name), std::move(summary), 2, FusionClass::Broadcast, std::move(attrs),
      [](const OpCall& c) -> Expected<std::vector<TensorType>> {
        KF_RETURN_IF_ERROR(ops::requireFloat(c, 0));
        KF_RETURN_IF_ERROR(ops::requireSameDType(c, 0, 1));
        KF_ASSIGN_OR_RETURN(auto t, broadcastResult(c, c.inputs[0].dtype));
        return one(t);
      },
      [f](const OpCall& c, std::span<const Scalar> in) { return ScalarList{f(c, in[0], in[1])}; }));
}

void registerGradOnly(OpRegistry& r) {
  gradOnly(r, "relu_grad", "relu backward: dy where x > 0, else 0 (operands dy, x)",
           [](const OpCall&, const Scalar& dy, const Scalar& x) { return select(x > 0.0, dy, constLike(0, dy)); });
  gradOnly(r, "sigmoid_grad", "sigmoid backward: dy * y * (1 - y) (operands dy, y)",
           [](const OpCall&, const Scalar& dy, const Scalar& y) { return dy * y * (1.0 - y); });
  gradOnly(r, "tanh_grad", "tanh backward: dy * (1 - y^2) (operands dy, y)",
           [](const OpCall&, const Scalar& dy, const Scalar& y) { return dy * (1.0 - y * y); });
  gradOnly(
      r, "gelu_grad", "gelu backward: dy * gelu'(x) (operands dy, x)",
      [](const OpCall& c, const Scalar& dy, const Scalar& x) {
        if (c.getString("approximate") == "tanh") {
          double k = std::sqrt(2.0 / std::numbers::pi);
          Scalar t = tanh(k * (x + 0.044715 * x * x * x));
          Scalar du = k * (1.0 + 3.0 * 0.044715 * x * x);
          return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du);
        }
        Scalar cdf = 0.5 * (1.0 + erf(x * std::numbers::sqrt2 / 2.0));
        Scalar pdf = exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
        return dy * (cdf + x * pdf);
      },
      {{"approximate", AttrKind::String, Attribute("none")}});
}

}  // namespace

void registerElementwiseOps(OpRegistry& r) {
  registerUnary(r);
  registerBinary(r);
  registerOthers(r);
  registerGradOnly(r);
}

}  // namespace kfuse
