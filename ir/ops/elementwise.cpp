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

// ---- gradient shorthands: x = operand 0, y = the result, dy = its gradient.
using Grads = std::vector<Value*>;
using Dys = std::span<Value* const>;
Value* x0(const Node& n) { return n.operand(0); }
Value* y0(const Node& n) { return n.result(); }
Value* mul(GradBuilder& b, Value* a, Value* c) { return b.op("mul", {a, c}); }
Value* div(GradBuilder& b, Value* a, Value* c) { return b.op("div", {a, c}); }
Value* neg(GradBuilder& b, Value* a) { return b.op("neg", {a}); }
Value* scaled(GradBuilder& b, Value* a, double k) { return mul(b, a, b.scalarLike(k, a)); }
Value* zero(GradBuilder& b, Value* like) { return b.scalarLike(0, like); }
Value* whereOp(GradBuilder& b, Value* c, Value* t, Value* f) { return b.op("where", {c, t, f}); }
Value* greaterThan(GradBuilder& b, Value* a, double k) { return b.op("greater", {a, b.scalarLike(k, a)}); }
Value* lessThan(GradBuilder& b, Value* a, double k) { return b.op("less", {a, b.scalarLike(k, a)}); }
// dy times f(x, y), for unary ops whose derivative is a product.
GradFn unaryGrad(Value* (*derivative)(GradBuilder&, const Node&)) {
  return [derivative](GradBuilder& b, const Node& n, Dys dy) -> Grads { return {mul(b, dy[0], derivative(b, n))}; };
}
// Gradient of a broadcasting binary op: each operand's share, summed back to
// its shape.
GradFn binaryGrad(Value* (*da)(GradBuilder&, const Node&, Value*), Value* (*db)(GradBuilder&, const Node&, Value*)) {
  return [da, db](GradBuilder& b, const Node& n, Dys dy) -> Grads {
    return {b.sumToShape(da(b, n, dy[0]), n.operand(0)->type().shape),
            b.sumToShape(db(b, n, dy[0]), n.operand(1)->type().shape)};
  };
}
// Ops whose derivative is zero almost everywhere (sign, floor, ceil): no
// gradient flows, as zero.
Grads noGrad(GradBuilder&, const Node& n, Dys) { return Grads(n.numOperands(), nullptr); }

void registerUnary(OpRegistry& r) {
  unary(r, "identity", "y = x", Domain::Any, [](const OpCall&, const Scalar& x) { return x; }).grad =
      [](GradBuilder&, const Node&, Dys dy) -> Grads { return {dy[0]}; };
  unary(r, "neg", "y = -x", Domain::Numeric, [](const OpCall&, const Scalar& x) { return -x; }).grad =
      [](GradBuilder& b, const Node&, Dys dy) -> Grads { return {neg(b, dy[0])}; };
  unary(r, "abs", "y = |x|", Domain::Numeric, [](const OpCall&, const Scalar& x) { return abs(x); }).grad =
      unaryGrad([](GradBuilder& b, const Node& n) { return b.op("sign", {x0(n)}); });
  unary(r, "exp", "y = e^x", Domain::Float, [](const OpCall&, const Scalar& x) { return exp(x); }).grad =
      unaryGrad([](GradBuilder&, const Node& n) { return y0(n); });
  unary(r, "log", "natural logarithm", Domain::Float, [](const OpCall&, const Scalar& x) { return log(x); }).grad =
      [](GradBuilder& b, const Node& n, Dys dy) -> Grads { return {div(b, dy[0], x0(n))}; };
  unary(r, "sqrt", "square root", Domain::Float, [](const OpCall&, const Scalar& x) { return sqrt(x); }).grad =
      [](GradBuilder& b, const Node& n, Dys dy) -> Grads { return {div(b, dy[0], scaled(b, y0(n), 2))}; };
  unary(r, "rsqrt", "y = 1 / sqrt(x)", Domain::Float, [](const OpCall&, const Scalar& x) { return rsqrt(x); }).grad =
      unaryGrad([](GradBuilder& b, const Node& n) {  // -y^3 / 2
        return scaled(b, mul(b, y0(n), mul(b, y0(n), y0(n))), -0.5);
      });
  unary(r, "reciprocal", "y = 1 / x", Domain::Float, [](const OpCall&, const Scalar& x) { return 1.0 / x; }).grad =
      unaryGrad([](GradBuilder& b, const Node& n) { return neg(b, mul(b, y0(n), y0(n))); });
  unary(r, "tanh", "hyperbolic tangent", Domain::Float, [](const OpCall&, const Scalar& x) { return tanh(x); }).grad =
      [](GradBuilder& b, const Node& n, Dys dy) -> Grads { return {b.op("tanh_grad", {dy[0], y0(n)})}; };
  unary(r, "sigmoid", "y = 1 / (1 + e^-x)", Domain::Float,
        [](const OpCall&, const Scalar& x) { return 1.0 / (1.0 + exp(-x)); })
      .grad = [](GradBuilder& b, const Node& n, Dys dy) -> Grads { return {b.op("sigmoid_grad", {dy[0], y0(n)})}; };
  unary(r, "relu", "y = max(x, 0)", Domain::Numeric, [](const OpCall&, const Scalar& x) { return max(x, 0.0); })
      .grad = [](GradBuilder& b, const Node& n, Dys dy) -> Grads { return {b.op("relu_grad", {dy[0], x0(n)})}; };
  unary(
      r, "leaky_relu", "y = x if x > 0 else alpha * x", Domain::Float,
      [](const OpCall& c, const Scalar& x) { return select(x > 0.0, x, c.getFloat("alpha") * x); },
      {{"alpha", AttrKind::Float, Attribute(0.01)}})
      .grad = [](GradBuilder& b, const Node& n, Dys dy) -> Grads {
    return {whereOp(b, greaterThan(b, x0(n), 0), dy[0], scaled(b, dy[0], n.attr("alpha").asFloat()))};
  };
  unary(
      r, "elu", "y = x if x > 0 else alpha * (e^x - 1)", Domain::Float,
      [](const OpCall& c, const Scalar& x) { return select(x > 0.0, x, c.getFloat("alpha") * expm1(x)); },
      {{"alpha", AttrKind::Float, Attribute(1.0)}})
      .grad = [](GradBuilder& b, const Node& n, Dys dy) -> Grads {  // for x <= 0: dy * (y + alpha)
    Value* alpha = b.scalarLike(n.attr("alpha").asFloat(), y0(n));
    return {whereOp(b, greaterThan(b, x0(n), 0), dy[0], mul(b, dy[0], b.op("add", {y0(n), alpha})))};
  };
  unary(
      r, "gelu", "Gaussian error linear unit; approximate = \"none\" (erf form) or \"tanh\"", Domain::Float,
      [](const OpCall& c, const Scalar& x) {
        if (c.getString("approximate") == "tanh") {
          double k = std::sqrt(2.0 / std::numbers::pi);
          return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
        }
        return 0.5 * x * (1.0 + erf(x * std::numbers::sqrt2 / 2.0));
      },
      {{"approximate", AttrKind::String, Attribute("none")}})
      .grad = [](GradBuilder& b, const Node& n, Dys dy) -> Grads {
    return {b.op("gelu_grad", {dy[0], x0(n)}, {{"approximate", n.attr("approximate")}})};
  };
  unary(r, "erf", "Gauss error function", Domain::Float, [](const OpCall&, const Scalar& x) { return erf(x); }).grad =
      unaryGrad([](GradBuilder& b, const Node& n) {  // 2/sqrt(pi) * exp(-x^2)
        return scaled(b, b.op("exp", {neg(b, mul(b, x0(n), x0(n)))}), 2.0 / std::sqrt(std::numbers::pi));
      });
  unary(
      r, "softplus", "y = log(1 + e^(beta x)) / beta, or x where beta x > threshold", Domain::Float,
      [](const OpCall& c, const Scalar& x) {
        double beta = c.getFloat("beta");
        Scalar bx = beta * x;
        return select(bx > c.getFloat("threshold"), x, log1p(exp(bx)) / beta);
      },
      {{"beta", AttrKind::Float, Attribute(1.0)}, {"threshold", AttrKind::Float, Attribute(20.0)}})
      .grad = [](GradBuilder& b, const Node& n, Dys dy) -> Grads {  // dy * sigmoid(beta x) below the threshold
    Value* bx = scaled(b, x0(n), n.attr("beta").asFloat());
    Value* linear = greaterThan(b, bx, n.attr("threshold").asFloat());
    return {whereOp(b, linear, dy[0], mul(b, dy[0], b.op("sigmoid", {bx})))};
  };
  unary(r, "sin", "sine", Domain::Float, [](const OpCall&, const Scalar& x) { return sin(x); }).grad =
      unaryGrad([](GradBuilder& b, const Node& n) { return b.op("cos", {x0(n)}); });
  unary(r, "cos", "cosine", Domain::Float, [](const OpCall&, const Scalar& x) { return cos(x); }).grad =
      unaryGrad([](GradBuilder& b, const Node& n) { return neg(b, b.op("sin", {x0(n)})); });
  unary(r, "sign", "-1, 0 or 1 by the sign of x", Domain::Numeric, [](const OpCall&, const Scalar& x) {
    return select(x > 0.0, constLike(1, x), select(x < 0.0, constLike(-1, x), constLike(0, x)));
  }).grad = noGrad;
  unary(r, "floor", "round toward -inf", Domain::Float, [](const OpCall&, const Scalar& x) { return floor(x); }).grad =
      noGrad;
  unary(r, "ceil", "round toward +inf", Domain::Float, [](const OpCall&, const Scalar& x) { return ceil(x); }).grad =
      noGrad;
  unary(
      r, "clip", "y = min(max(x, min), max)", Domain::Numeric,
      [](const OpCall& c, const Scalar& x) {
        return min(max(x, clipBound(c.getFloat("min"), x)), clipBound(c.getFloat("max"), x));
      },
      {{"min", AttrKind::Float, Attribute(-std::numeric_limits<double>::infinity())},
       {"max", AttrKind::Float, Attribute(std::numeric_limits<double>::infinity())}})
      .grad = [](GradBuilder& b, const Node& n, Dys dy) -> Grads {  // dy where min <= x <= max (torch.clamp)
    Value* z = zero(b, dy[0]);
    Value* inner = whereOp(b, greaterThan(b, x0(n), n.attr("max").asFloat()), z, dy[0]);
    return {whereOp(b, lessThan(b, x0(n), n.attr("min").asFloat()), z, inner)};
  };
}

// Gradient of maximum/minimum with respect to `self` (the other operand is
// `other`): dy where self wins, half of dy on ties (as torch does).
Value* extremumShare(GradBuilder& b, const Node& n, Value* dy, bool selfFirst, const char* wins) {
  Value* self = n.operand(selfFirst ? 0 : 1);
  Value* other = n.operand(selfFirst ? 1 : 0);
  Value* z = zero(b, dy);
  Value* tie = whereOp(b, b.op("equal", {self, other}), scaled(b, dy, 0.5), z);
  return whereOp(b, b.op(wins, {self, other}), dy, tie);
}

void registerBinary(OpRegistry& r) {
  binary(r, "add", "a + b", Domain::Numeric, false, [](const Scalar& a, const Scalar& b) { return a + b; }).grad =
      binaryGrad([](GradBuilder&, const Node&, Value* dy) { return dy; },
                 [](GradBuilder&, const Node&, Value* dy) { return dy; });
  binary(r, "sub", "a - b", Domain::Numeric, false, [](const Scalar& a, const Scalar& b) { return a - b; }).grad =
      binaryGrad([](GradBuilder&, const Node&, Value* dy) { return dy; },
                 [](GradBuilder& b, const Node&, Value* dy) { return neg(b, dy); });
  binary(r, "mul", "a * b", Domain::Numeric, false, [](const Scalar& a, const Scalar& b) { return a * b; }).grad =
      binaryGrad([](GradBuilder& b, const Node& n, Value* dy) { return mul(b, dy, n.operand(1)); },
                 [](GradBuilder& b, const Node& n, Value* dy) { return mul(b, dy, n.operand(0)); });
  binary(r, "div", "a / b (integers truncate toward zero)", Domain::Numeric, false,
         [](const Scalar& a, const Scalar& b) { return a / b; })
      .grad = binaryGrad([](GradBuilder& b, const Node& n, Value* dy) { return div(b, dy, n.operand(1)); },
                         [](GradBuilder& b, const Node& n, Value* dy) {  // -dy * y / b
                           return neg(b, div(b, mul(b, dy, y0(n)), n.operand(1)));
                         });
  binary(r, "pow", "a ^ b", Domain::Float, false, [](const Scalar& a, const Scalar& b) { return pow(a, b); }).grad =
      binaryGrad(
          [](GradBuilder& b, const Node& n, Value* dy) {  // dy * b * a^(b-1)
            Value* bm1 = b.op("sub", {n.operand(1), b.scalarLike(1, n.operand(1))});
            return mul(b, dy, mul(b, n.operand(1), b.op("pow", {n.operand(0), bm1})));
          },
          [](GradBuilder& b, const Node& n, Value* dy) {  // dy * y * log(a)
            return mul(b, dy, mul(b, y0(n), b.op("log", {n.operand(0)})));
          });
  binary(r, "maximum", "max(a, b), NaN-propagating", Domain::Numeric, false,
         [](const Scalar& a, const Scalar& b) { return max(a, b); })
      .grad = binaryGrad(
      [](GradBuilder& b, const Node& n, Value* dy) { return extremumShare(b, n, dy, true, "greater"); },
      [](GradBuilder& b, const Node& n, Value* dy) { return extremumShare(b, n, dy, false, "greater"); });
  binary(r, "minimum", "min(a, b), NaN-propagating", Domain::Numeric, false,
         [](const Scalar& a, const Scalar& b) { return min(a, b); })
      .grad = binaryGrad(
      [](GradBuilder& b, const Node& n, Value* dy) { return extremumShare(b, n, dy, true, "less"); },
      [](GradBuilder& b, const Node& n, Value* dy) { return extremumShare(b, n, dy, false, "less"); });
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
           }))
      .grad = [](GradBuilder& b, const Node& n, Dys dy) -> Grads {  // only between floating-point types
    DType from = x0(n)->type().dtype;
    if (!isFloat(from)) return {nullptr};
    return {b.op("cast", {dy[0]}, {{"to", Attribute(std::string(dtypeName(from)))}})};
  };
  r.add(elementwise(
           "where", "cond ? a : b, broadcasting all three", 3, FusionClass::Broadcast, {},
           [](const OpCall& c) -> Expected<std::vector<TensorType>> {
             KF_RETURN_IF_ERROR(ops::requireDType(c, 0, DType::Bool));
             KF_RETURN_IF_ERROR(ops::requireSameDType(c, 1, 2));
             KF_ASSIGN_OR_RETURN(auto t, broadcastResult(c, c.inputs[1].dtype));
             return one(t);
           },
           [](const OpCall&, std::span<const Scalar> in) { return ScalarList{select(in[0], in[1], in[2])}; }))
      .grad = [](GradBuilder& b, const Node& n, Dys dy) -> Grads {
    Value* z = zero(b, dy[0]);
    return {nullptr, b.sumToShape(whereOp(b, n.operand(0), dy[0], z), n.operand(1)->type().shape),
            b.sumToShape(whereOp(b, n.operand(0), z, dy[0]), n.operand(2)->type().shape)};
  };
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
