// Elementwise ONNX ops: unary math and activations, broadcasting arithmetic,
// comparisons and logic, Where, Clip, Cast. Activations kfuse has no op for
// (Selu, HardSigmoid, Softsign, ...) become short chains of elementwise ops.
#include <cmath>
#include <limits>
#include <map>

#include "frontend/onnx/lower_util.h"
#include "frontend/onnx/op_table.h"
#include "frontend/onnx/tensor_proto.h"

namespace kfuse::onnx_import {
namespace {

struct UnaryOp {
  std::string_view kfuseOp;
  bool floatOnly;
};

const std::map<std::string_view, UnaryOp>& unaryOps() {
  static const std::map<std::string_view, UnaryOp> ops = {
      {"Abs", {"abs", false}},         {"Neg", {"neg", false}},      {"Exp", {"exp", true}},
      {"Log", {"log", true}},          {"Sqrt", {"sqrt", true}},     {"Reciprocal", {"reciprocal", true}},
      {"Tanh", {"tanh", true}},        {"Sigmoid", {"sigmoid", true}}, {"Relu", {"relu", false}},
      {"Erf", {"erf", true}},          {"Sin", {"sin", true}},       {"Cos", {"cos", true}},
      {"Sign", {"sign", false}},       {"Floor", {"floor", true}},   {"Ceil", {"ceil", true}},
      {"Softplus", {"softplus", true}}, {"Not", {"logical_not", false}},
  };
  return ops;
}

Status lowerUnary(LoweringContext& c) {
  const UnaryOp& op = unaryOps().at(c.opType());
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  if (op.floatOnly) KF_RETURN_IF_ERROR(requireFloat(c, x, "operand"));
  KF_ASSIGN_OR_RETURN(Value* y, c.build(op.kfuseOp, {x}));
  return done(c, y);
}

// ---------------------------------------------------------------- activations

Status lowerElu(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(double alpha, c.attrs().getFloat("alpha", 1.0));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("elu", {x}, {{"alpha", alpha}}));
  return done(c, y);
}

Status lowerLeakyRelu(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(double alpha, c.attrs().getFloat("alpha", 0.01));
  KF_RETURN_IF_ERROR(requireFloat(c, x, "operand"));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("leaky_relu", {x}, {{"alpha", alpha}}));
  return done(c, y);
}

// Selu: gamma * elu(x, alpha).
Status lowerSelu(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(double alpha, c.attrs().getFloat("alpha", 1.67326319217681884765625));
  KF_ASSIGN_OR_RETURN(double gamma, c.attrs().getFloat("gamma", 1.05070102214813232421875));
  KF_ASSIGN_OR_RETURN(Value* e, c.build("elu", {x}, {{"alpha", alpha}}));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("mul", {e, scalarLike(c, x, gamma)}));
  return done(c, y);
}

// Gelu-20: kfuse's gelu, erf form or (approximate = "tanh") tanh form.
Status lowerGelu(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_RETURN_IF_ERROR(requireFloat(c, x, "operand"));
  KF_ASSIGN_OR_RETURN(std::string approximate, c.attrs().getString("approximate", "none"));
  if (approximate != "none" && approximate != "tanh")
    return Error(str("attribute approximate = \"", approximate, "\" is not none or tanh"));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("gelu", {x}, {{"approximate", approximate}}));
  return done(c, y);
}

// Mish: x * tanh(softplus(x)), one fused kernel on the cpu and cuda targets.
Status lowerMish(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_RETURN_IF_ERROR(requireFloat(c, x, "operand"));
  KF_ASSIGN_OR_RETURN(Value* sp, c.build("softplus", {x}));
  KF_ASSIGN_OR_RETURN(Value* t, c.build("tanh", {sp}));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("mul", {x, t}));
  return done(c, y);
}

// clip(alpha * x + beta, 0, 1), and x times it for HardSwish.
Expected<Value*> hardSigmoid(LoweringContext& c, Value* x, double alpha, double beta) {
  KF_RETURN_IF_ERROR(requireFloat(c, x, "operand"));
  KF_ASSIGN_OR_RETURN(Value* ax, c.build("mul", {x, scalarLike(c, x, alpha)}));
  KF_ASSIGN_OR_RETURN(Value* axb, c.build("add", {ax, scalarLike(c, x, beta)}));
  return c.build("clip", {axb}, {{"min", 0.0}, {"max", 1.0}});
}

Status lowerHardSigmoid(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(double alpha, c.attrs().getFloat("alpha", 0.2));
  KF_ASSIGN_OR_RETURN(double beta, c.attrs().getFloat("beta", 0.5));
  KF_ASSIGN_OR_RETURN(Value* y, hardSigmoid(c, x, alpha, beta));
  return done(c, y);
}

Status lowerHardSwish(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(Value* hs, hardSigmoid(c, x, 1.0 / 6.0, 0.5));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("mul", {x, hs}));
  return done(c, y);
}

// x / (1 + |x|).
Status lowerSoftsign(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_RETURN_IF_ERROR(requireFloat(c, x, "operand"));
  KF_ASSIGN_OR_RETURN(Value* a, c.build("abs", {x}));
  KF_ASSIGN_OR_RETURN(Value* d, c.build("add", {a, scalarLike(c, x, 1.0)}));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("div", {x, d}));
  return done(c, y);
}

// Celu: alpha * elu(x / alpha, 1).
Status lowerCelu(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(double alpha, c.attrs().getFloat("alpha", 1.0));
  KF_ASSIGN_OR_RETURN(Value* s, c.build("div", {x, scalarLike(c, x, alpha)}));
  KF_ASSIGN_OR_RETURN(Value* e, c.build("elu", {s}, {{"alpha", 1.0}}));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("mul", {e, scalarLike(c, x, alpha)}));
  return done(c, y);
}

Status lowerThresholdedRelu(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(double alpha, c.attrs().getFloat("alpha", 1.0));
  KF_ASSIGN_OR_RETURN(Value* keep, c.build("greater", {x, scalarLike(c, x, alpha)}));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("where", {keep, x, scalarLike(c, x, 0.0)}));
  return done(c, y);
}

// PRelu: x < 0 ? slope * x : x, slope broadcasting to x. PRelu-6's slope
// is one value or one per channel (axis 1).
Status lowerPRelu(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(Value* slope, c.input(1));
  c.attrs().ignore("consumed_inputs");
  const Shape& xs = x->type().shape;
  if (c.version() < 7 && slope->type().numElements() > 1 && xs.size() > 2 && slope->type().shape == Shape{xs[1]}) {
    Shape perChannel(xs.size() - 1, 1);
    perChannel[0] = xs[1];
    KF_ASSIGN_OR_RETURN(slope, reshapeTo(c, slope, perChannel));
  }
  KF_ASSIGN_OR_RETURN(Value* neg, c.build("less", {x, scalarLike(c, x, 0.0)}));
  KF_ASSIGN_OR_RETURN(Value* scaled, c.build("mul", {x, slope}));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("where", {neg, scaled, x}));
  if (y->type().shape != x->type().shape)
    return Error(str("slope ", formatType(slope->type()), " does not broadcast to x ", formatType(x->type())));
  return done(c, y);
}

// ---------------------------------------------------------------- binary ops

// Before opset 7, binary ops broadcast only when `broadcast` = 1, aligning b
// with a at `axis` (default: trailing axes, which NumPy broadcasting matches).
Expected<Value*> legacyBroadcast(LoweringContext& c, Value* a, Value* b) {
  KF_ASSIGN_OR_RETURN(int64_t broadcast, c.attrs().getInt("broadcast", 0));
  c.attrs().ignore("consumed_inputs");
  if (!c.attrs().has("axis")) {
    c.attrs().ignore("axis");
    if (!broadcast && a->type().shape != b->type().shape)
      return Error(str("operands ", formatType(a->type()), " and ", formatType(b->type()),
                       " differ in shape and broadcast = 0"));
    return b;
  }
  auto rankA = static_cast<int64_t>(a->type().rank()), rankB = static_cast<int64_t>(b->type().rank());
  KF_ASSIGN_OR_RETURN(int64_t axis, c.attrs().getInt("axis"));
  KF_ASSIGN_OR_RETURN(axis, normalizedAxis(axis, rankA, "attribute axis"));
  if (axis + rankB > rankA)
    return Error(str("b ", formatType(b->type()), " does not fit into a ", formatType(a->type()), " at axis ", axis));
  Shape s = b->type().shape;
  s.resize(static_cast<size_t>(rankA - axis), 1);
  return reshapeTo(c, b, s);
}

const std::map<std::string_view, std::string_view>& binaryOps() {
  static const std::map<std::string_view, std::string_view> ops = {
      {"Add", "add"},     {"Sub", "sub"},         {"Mul", "mul"},         {"Div", "div"},
      {"Equal", "equal"}, {"Less", "less"},       {"Greater", "greater"}, {"LessOrEqual", "less_equal"},
      {"And", "logical_and"}, {"Or", "logical_or"}, {"Xor", "logical_xor"}, {"GreaterOrEqual", "greater_equal"},
  };
  return ops;
}

Status lowerBinary(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* a, c.input(0));
  KF_ASSIGN_OR_RETURN(Value* b, c.input(1));
  if (c.version() < 7) {
    KF_ASSIGN_OR_RETURN(b, legacyBroadcast(c, a, b));
  }
  KF_ASSIGN_OR_RETURN(Value* y, c.build(binaryOps().at(c.opType()), {a, b}));
  return done(c, y);
}

// Pow: kfuse's pow is floating-point; since opset 12 the exponent may have
// another type than the base, so it is cast to the base's. Integer bases
// are computed in double, where integer powers are exact, and cast back.
Status lowerPow(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* a, c.input(0));
  KF_ASSIGN_OR_RETURN(Value* b, c.input(1));
  if (c.version() < 7) {
    KF_ASSIGN_OR_RETURN(b, legacyBroadcast(c, a, b));
  }
  DType dt = a->type().dtype;
  DType compute = isFloat(dt) ? dt : DType::F64;
  KF_ASSIGN_OR_RETURN(a, castTo(c, a, compute));
  KF_ASSIGN_OR_RETURN(b, castTo(c, b, compute));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("pow", {a, b}));
  KF_ASSIGN_OR_RETURN(y, castTo(c, y, dt));
  return done(c, y);
}

// Max, Min, Sum, Mean: a left fold of the binary op over every input.
Status lowerVariadic(LoweringContext& c) {
  static const std::map<std::string_view, std::string_view> ops = {
      {"Max", "maximum"}, {"Min", "minimum"}, {"Sum", "add"}, {"Mean", "add"}};
  c.attrs().ignore("consumed_inputs");
  KF_ASSIGN_OR_RETURN(Value* acc, c.input(0));
  for (size_t i = 1; i < c.numInputs(); ++i) {
    KF_ASSIGN_OR_RETURN(Value* v, c.input(i));
    KF_ASSIGN_OR_RETURN(acc, c.build(ops.at(c.opType()), {acc, v}));
  }
  if (c.opType() == "Mean" && c.numInputs() > 1) {
    KF_RETURN_IF_ERROR(requireFloat(c, acc, "operands"));
    KF_ASSIGN_OR_RETURN(acc, c.build("div", {acc, scalarLike(c, acc, static_cast<double>(c.numInputs()))}));
  }
  return done(c, acc);
}

Status lowerWhere(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* cond, c.input(0));
  KF_ASSIGN_OR_RETURN(Value* a, c.input(1));
  KF_ASSIGN_OR_RETURN(Value* b, c.input(2));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("where", {cond, a, b}));
  return done(c, y);
}

// ---------------------------------------------------------------- clip, cast, tests

// Clip's bounds: attributes before opset 11, optional scalar inputs after.
// Constant bounds become clip's attributes; bounds computed at run time
// become maximum/minimum ops.
Status lowerClip(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  if (c.version() < 11) {
    KF_ASSIGN_OR_RETURN(double lo, c.attrs().getFloat("min", std::numeric_limits<float>::lowest()));
    KF_ASSIGN_OR_RETURN(double hi, c.attrs().getFloat("max", std::numeric_limits<float>::max()));
    KF_ASSIGN_OR_RETURN(Value* y, c.build("clip", {x}, {{"min", lo}, {"max", hi}}));
    return done(c, y);
  }
  AttrMap bounds;
  Value* y = x;
  const char* names[] = {"", "min", "max"};
  for (size_t i = 1; i <= 2; ++i) {
    if (!c.hasInput(i)) continue;
    if (auto t = c.constantInputIfKnown(i)) {
      if (t->numElements() != 1) return Error(str("the ", names[i], " bound must be a scalar, got ", formatType(t->type())));
      bounds[names[i]] = t->at(0);
      continue;
    }
    KF_ASSIGN_OR_RETURN(Value* bound, c.input(i));
    KF_ASSIGN_OR_RETURN(y, c.build(i == 1 ? "maximum" : "minimum", {y, bound}));
  }
  if (!bounds.empty() || y == x) {
    KF_ASSIGN_OR_RETURN(y, c.build("clip", {y}, bounds));
  }
  return done(c, y);
}

// Cast-19's `saturate` and Cast-24's `round_mode` apply to casts into the
// float8 types only, none of which kfuse has (such a cast is unsupported for
// its type): for every cast kfuse does they change nothing.
void ignoreFloat8Modes(LoweringContext& c) {
  c.attrs().ignore("saturate");
  c.attrs().ignore("round_mode");
}

Status lowerCast(LoweringContext& c) {
  ignoreFloat8Modes(c);
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(int64_t to, c.attrs().getInt("to"));
  auto dtype = dtypeFromOnnx(static_cast<int>(to));
  if (!dtype) return c.unsupported(str("Cast to ", onnxTypeName(static_cast<int>(to)), ": ", dtype.error().message()));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("cast", {x}, {{"to", dtypeAttr(*dtype)}}));
  return done(c, y);
}

Status lowerCastLike(LoweringContext& c) {
  ignoreFloat8Modes(c);
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(Value* like, c.input(1));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("cast", {x}, {{"to", dtypeAttr(like->type().dtype)}}));
  return done(c, y);
}

// Shrink: x + bias below -lambd, x - bias above lambd, 0 between.
Status lowerShrink(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(double lambd, c.attrs().getFloat("lambd", 0.5));
  KF_ASSIGN_OR_RETURN(double bias, c.attrs().getFloat("bias", 0.0));
  KF_ASSIGN_OR_RETURN(Value* low, c.build("less", {x, scalarLike(c, x, -lambd)}));
  KF_ASSIGN_OR_RETURN(Value* high, c.build("greater", {x, scalarLike(c, x, lambd)}));
  KF_ASSIGN_OR_RETURN(Value* up, c.build("add", {x, scalarLike(c, x, bias)}));
  KF_ASSIGN_OR_RETURN(Value* down, c.build("sub", {x, scalarLike(c, x, bias)}));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("where", {high, down, scalarLike(c, x, 0.0)}));
  KF_ASSIGN_OR_RETURN(y, c.build("where", {low, up, y}));
  return done(c, y);
}

// NaN is the only value not equal to itself.
Status lowerIsNaN(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_RETURN_IF_ERROR(requireFloat(c, x, "operand"));
  KF_ASSIGN_OR_RETURN(Value* same, c.build("equal", {x, x}));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("logical_not", {same}));
  return done(c, y);
}

Status lowerIsInf(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_RETURN_IF_ERROR(requireFloat(c, x, "operand"));
  KF_ASSIGN_OR_RETURN(int64_t negative, c.attrs().getInt("detect_negative", 1));
  KF_ASSIGN_OR_RETURN(int64_t positive, c.attrs().getInt("detect_positive", 1));
  if (!negative && !positive) return done(c, c.constant(Tensor(TensorType(DType::Bool, x->type().shape))));
  double inf = std::numeric_limits<double>::infinity();
  KF_ASSIGN_OR_RETURN(Value* y, c.build("equal", {x, scalarLike(c, x, positive ? inf : -inf)}));
  if (negative && positive) {
    KF_ASSIGN_OR_RETURN(Value* minus, c.build("equal", {x, scalarLike(c, x, -inf)}));
    KF_ASSIGN_OR_RETURN(y, c.build("logical_or", {y, minus}));
  }
  return done(c, y);
}

const std::vector<OpLowering> kTable = {
    {"Abs", {6, 13}, lowerUnary, "abs"},
    {"Neg", {6, 13}, lowerUnary, "neg"},
    {"Exp", {6, 13}, lowerUnary, "exp"},
    {"Log", {6, 13}, lowerUnary, "log"},
    {"Sqrt", {6, 13}, lowerUnary, "sqrt"},
    {"Reciprocal", {6, 13}, lowerUnary, "reciprocal"},
    {"Tanh", {6, 13}, lowerUnary, "tanh"},
    {"Sigmoid", {6, 13}, lowerUnary, "sigmoid"},
    {"Relu", {6, 13, 14}, lowerUnary, "relu"},
    {"Erf", {9, 13}, lowerUnary, "erf"},
    {"Sin", {7, 22}, lowerUnary, "sin"},
    {"Cos", {7, 22}, lowerUnary, "cos"},
    {"Sign", {9, 13}, lowerUnary, "sign"},
    {"Floor", {6, 13}, lowerUnary, "floor"},
    {"Ceil", {6, 13}, lowerUnary, "ceil"},
    {"Softplus", {1, 22}, lowerUnary, "softplus"},
    {"Not", {1}, lowerUnary, "logical_not"},
    {"Elu", {6, 22}, lowerElu, "elu"},
    {"LeakyRelu", {6, 16}, lowerLeakyRelu, "leaky_relu"},
    {"Selu", {6, 22}, lowerSelu, "elu + mul"},
    {"HardSigmoid", {6, 22}, lowerHardSigmoid, "mul + add + clip"},
    {"HardSwish", {14, 22}, lowerHardSwish, "mul + add + clip + mul"},
    {"Softsign", {1, 22}, lowerSoftsign, "abs + add + div"},
    {"Celu", {12, 28}, lowerCelu, "div + elu + mul"},
    {"Gelu", {20}, lowerGelu, "gelu (erf or tanh form)"},
    {"Mish", {18, 22}, lowerMish, "softplus + tanh + mul"},
    {"ThresholdedRelu", {10, 22}, lowerThresholdedRelu, "greater + where"},
    {"PRelu", {6, 7, 9, 16}, lowerPRelu, "less + mul + where"},
    {"Add", {6, 7, 13, 14}, lowerBinary, "add"},
    {"Sub", {6, 7, 13, 14}, lowerBinary, "sub"},
    {"Mul", {6, 7, 13, 14}, lowerBinary, "mul"},
    {"Div", {6, 7, 13, 14}, lowerBinary, "div"},
    {"Pow", {1, 7, 12, 13, 15}, lowerPow, "pow (exponent cast to the base's type; integers through f64)"},
    {"Equal", {7, 11, 13, 19}, lowerBinary, "equal"},
    {"Less", {7, 9, 13}, lowerBinary, "less"},
    {"Greater", {7, 9, 13}, lowerBinary, "greater"},
    {"LessOrEqual", {12, 16}, lowerBinary, "less_equal"},
    {"GreaterOrEqual", {12, 16}, lowerBinary, "greater_equal"},
    {"And", {7}, lowerBinary, "logical_and"},
    {"Or", {7}, lowerBinary, "logical_or"},
    {"Xor", {7}, lowerBinary, "logical_xor"},
    {"Max", {6, 8, 12, 13}, lowerVariadic, "maximum, one per extra input"},
    {"Min", {6, 8, 12, 13}, lowerVariadic, "minimum, one per extra input"},
    {"Sum", {6, 8, 13}, lowerVariadic, "add, one per extra input"},
    {"Mean", {6, 8, 13}, lowerVariadic, "add per extra input + div"},
    {"Where", {9, 16}, lowerWhere, "where"},
    {"Clip", {6, 11, 12, 13}, lowerClip, "clip (constant bounds) or maximum/minimum (run-time bounds)"},
    {"Cast", {6, 9, 13, 19, 21, 23, 24, 25, 28}, lowerCast, "cast"},
    {"CastLike", {15, 19, 21, 23, 24, 25}, lowerCastLike, "cast"},
    {"IsNaN", {9, 13, 20}, lowerIsNaN, "equal + logical_not"},
    {"IsInf", {10, 20}, lowerIsInf, "equal + logical_or"},
    {"Shrink", {9}, lowerShrink, "less + greater + add + sub + where"},
};

}  // namespace

std::span<const OpLowering> elementwiseLowerings() { return kTable; }

}  // namespace kfuse::onnx_import
