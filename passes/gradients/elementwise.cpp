// Gradient rules of the elementwise ops (the ops: ir/ops/elementwise.cpp).
#include "passes/gradients/rules.h"

#include <cmath>

#include "ir/ops/op_helpers.h"

namespace kfuse::gradients {
namespace {

// ---- gradient shorthands: x = operand 0, y = the result, dy = its gradient.
using Grads = std::vector<Value*>;
using Dys = std::span<Value* const>;
Value* x0(const Node& n) { return n.operand(0); }
Value* y0(const Node& n) { return n.result(); }
Value* mul(GradBuilder& b, Value* a, Value* c) { return b.op(Op::Mul, {a, c}); }
Value* div(GradBuilder& b, Value* a, Value* c) { return b.op(Op::Div, {a, c}); }
Value* neg(GradBuilder& b, Value* a) { return b.op(Op::Neg, {a}); }
Value* scaled(GradBuilder& b, Value* a, double k) { return mul(b, a, b.scalarLike(k, a)); }
Value* zero(GradBuilder& b, Value* like) { return b.scalarLike(0, like); }
Value* whereOp(GradBuilder& b, Value* c, Value* t, Value* f) { return b.op(Op::Where, {c, t, f}); }
Value* greaterThan(GradBuilder& b, Value* a, double k) { return b.op(Op::Greater, {a, b.scalarLike(k, a)}); }
Value* lessThan(GradBuilder& b, Value* a, double k) { return b.op(Op::Less, {a, b.scalarLike(k, a)}); }
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
// Ops whose derivative is zero almost everywhere (sign, floor, ceil, round): no
// gradient flows, as zero.
Grads noGrad(GradBuilder&, const Node& n, Dys) { return Grads(n.numOperands(), nullptr); }
// Gradient of maximum/minimum with respect to `self` (the other operand is
// `other`): dy where self wins, half of dy on ties (as torch does).
Value* extremumShare(GradBuilder& b, const Node& n, Value* dy, bool selfFirst, Op wins) {
  Value* self = n.operand(selfFirst ? 0 : 1);
  Value* other = n.operand(selfFirst ? 1 : 0);
  Value* z = zero(b, dy);
  Value* tie = whereOp(b, b.op(Op::Equal, {self, other}), scaled(b, dy, 0.5), z);
  return whereOp(b, b.op(wins, {self, other}), dy, tie);
}

}  // namespace

void addElementwiseRules(GradientRules& r) {
  r.add("identity", [](GradBuilder&, const Node&, Dys dy) -> Grads { return {dy[0]}; });
  r.add("neg", [](GradBuilder& b, const Node&, Dys dy) -> Grads { return {neg(b, dy[0])}; });
  r.add("abs", unaryGrad([](GradBuilder& b, const Node& n) { return b.op(Op::Sign, {x0(n)}); }));
  r.add("exp", unaryGrad([](GradBuilder&, const Node& n) { return y0(n); }));
  r.add("log", [](GradBuilder& b, const Node& n, Dys dy) -> Grads { return {div(b, dy[0], x0(n))}; });
  r.add("sqrt", [](GradBuilder& b, const Node& n, Dys dy) -> Grads { return {div(b, dy[0], scaled(b, y0(n), 2))}; });
  r.add("rsqrt", unaryGrad([](GradBuilder& b, const Node& n) {  // -y^3 / 2
        return scaled(b, mul(b, y0(n), mul(b, y0(n), y0(n))), -0.5);
      }));
  r.add("reciprocal", unaryGrad([](GradBuilder& b, const Node& n) { return neg(b, mul(b, y0(n), y0(n))); }));
  r.add("tanh", [](GradBuilder& b, const Node& n, Dys dy) -> Grads { return {b.op(Op::TanhGrad, {dy[0], y0(n)})}; });
  r.add("sigmoid", [](GradBuilder& b, const Node& n, Dys dy) -> Grads { return {b.op(Op::SigmoidGrad, {dy[0], y0(n)})}; });
  r.add("relu", [](GradBuilder& b, const Node& n, Dys dy) -> Grads { return {b.op(Op::ReluGrad, {dy[0], x0(n)})}; });
  r.add("leaky_relu", [](GradBuilder& b, const Node& n, Dys dy) -> Grads {
    return {whereOp(b, greaterThan(b, x0(n), 0), dy[0], scaled(b, dy[0], n.attr("alpha").asFloat()))};
  });
  r.add("elu", [](GradBuilder& b, const Node& n, Dys dy) -> Grads {  // for x <= 0: dy * (y + alpha)
    Value* alpha = b.scalarLike(n.attr("alpha").asFloat(), y0(n));
    return {whereOp(b, greaterThan(b, x0(n), 0), dy[0], mul(b, dy[0], b.op(Op::Add, {y0(n), alpha})))};
  });
  r.add("gelu", [](GradBuilder& b, const Node& n, Dys dy) -> Grads {
    return {b.op(Op::GeluGrad, {dy[0], x0(n)}, {{"approximate", n.attr("approximate")}})};
  });
  r.add("erf", unaryGrad([](GradBuilder& b, const Node& n) {  // 2/sqrt(pi) * exp(-x^2)
        return scaled(b, b.op(Op::Exp, {neg(b, mul(b, x0(n), x0(n)))}), 2.0 / std::sqrt(std::numbers::pi));
      }));
  r.add("softplus", [](GradBuilder& b, const Node& n, Dys dy) -> Grads {  // dy * sigmoid(beta x) below the threshold
    Value* bx = scaled(b, x0(n), n.attr("beta").asFloat());
    Value* linear = greaterThan(b, bx, n.attr("threshold").asFloat());
    return {whereOp(b, linear, dy[0], mul(b, dy[0], b.op(Op::Sigmoid, {bx})))};
  });
  r.add("sin", unaryGrad([](GradBuilder& b, const Node& n) { return b.op(Op::Cos, {x0(n)}); }));
  r.add("cos", unaryGrad([](GradBuilder& b, const Node& n) { return neg(b, b.op(Op::Sin, {x0(n)})); }));
  r.add("sign", noGrad);
  r.add("floor", noGrad);
  r.add("ceil", noGrad);
  r.add("round", noGrad);
  r.add("clip", [](GradBuilder& b, const Node& n, Dys dy) -> Grads {  // dy where min <= x <= max (torch.clamp)
    Value* z = zero(b, dy[0]);
    Value* inner = whereOp(b, greaterThan(b, x0(n), n.attr("max").asFloat()), z, dy[0]);
    return {whereOp(b, lessThan(b, x0(n), n.attr("min").asFloat()), z, inner)};
  });
  r.add("add", binaryGrad([](GradBuilder&, const Node&, Value* dy) { return dy; },
                 [](GradBuilder&, const Node&, Value* dy) { return dy; }));
  r.add("sub", binaryGrad([](GradBuilder&, const Node&, Value* dy) { return dy; },
                 [](GradBuilder& b, const Node&, Value* dy) { return neg(b, dy); }));
  r.add("mul", binaryGrad([](GradBuilder& b, const Node& n, Value* dy) { return mul(b, dy, n.operand(1)); },
                 [](GradBuilder& b, const Node& n, Value* dy) { return mul(b, dy, n.operand(0)); }));
  r.add("div", binaryGrad([](GradBuilder& b, const Node& n, Value* dy) { return div(b, dy, n.operand(1)); },
                         [](GradBuilder& b, const Node& n, Value* dy) {  // -dy * y / b
                           return neg(b, div(b, mul(b, dy, y0(n)), n.operand(1)));
                         }));
  r.add("pow", binaryGrad(
          [](GradBuilder& b, const Node& n, Value* dy) {  // dy * b * a^(b-1)
            Value* bm1 = b.op(Op::Sub, {n.operand(1), b.scalarLike(1, n.operand(1))});
            return mul(b, dy, mul(b, n.operand(1), b.op(Op::Pow, {n.operand(0), bm1})));
          },
          [](GradBuilder& b, const Node& n, Value* dy) {  // dy * y * log(a)
            return mul(b, dy, mul(b, y0(n), b.op(Op::Log, {n.operand(0)})));
          }));
  r.add("maximum", binaryGrad(
      [](GradBuilder& b, const Node& n, Value* dy) { return extremumShare(b, n, dy, true, Op::Greater); },
      [](GradBuilder& b, const Node& n, Value* dy) { return extremumShare(b, n, dy, false, Op::Greater); }));
  r.add("minimum", binaryGrad(
      [](GradBuilder& b, const Node& n, Value* dy) { return extremumShare(b, n, dy, true, Op::Less); },
      [](GradBuilder& b, const Node& n, Value* dy) { return extremumShare(b, n, dy, false, Op::Less); }));
  r.add("cast", [](GradBuilder& b, const Node& n, Dys dy) -> Grads {  // only between floating-point types
    DType from = x0(n)->type().dtype;
    if (!isFloat(from)) return {nullptr};
    return {b.op(Op::Cast, {dy[0]}, {{"to", Attribute(std::string(dtypeName(from)))}})};
  });
  r.add("where", [](GradBuilder& b, const Node& n, Dys dy) -> Grads {
    Value* z = zero(b, dy[0]);
    return {nullptr, b.sumToShape(whereOp(b, n.operand(0), dy[0], z), n.operand(1)->type().shape),
            b.sumToShape(whereOp(b, n.operand(0), z, dy[0]), n.operand(2)->type().shape)};
  });
}

}  // namespace kfuse::gradients
