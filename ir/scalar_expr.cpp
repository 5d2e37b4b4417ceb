#include "ir/scalar_expr.h"

#include <cassert>
#include <cmath>
#include <string>
#include <unordered_map>

#include "ir/philox.h"
#include "ir/support/strings.h"

namespace kfuse {

std::string_view scalarOpName(ScalarOp op) {
  switch (op) {
    case ScalarOp::Const: return "const";
    case ScalarOp::Input: return "input";
    case ScalarOp::Index: return "index";
    case ScalarOp::Neg: return "neg";
    case ScalarOp::Abs: return "abs";
    case ScalarOp::Exp: return "exp";
    case ScalarOp::Expm1: return "expm1";
    case ScalarOp::Log: return "log";
    case ScalarOp::Log1p: return "log1p";
    case ScalarOp::Sqrt: return "sqrt";
    case ScalarOp::Rsqrt: return "rsqrt";
    case ScalarOp::Tanh: return "tanh";
    case ScalarOp::Erf: return "erf";
    case ScalarOp::Sin: return "sin";
    case ScalarOp::Cos: return "cos";
    case ScalarOp::Floor: return "floor";
    case ScalarOp::Ceil: return "ceil";
    case ScalarOp::Not: return "not";
    case ScalarOp::Cast: return "cast";
    case ScalarOp::Add: return "add";
    case ScalarOp::Sub: return "sub";
    case ScalarOp::Mul: return "mul";
    case ScalarOp::Div: return "div";
    case ScalarOp::Pow: return "pow";
    case ScalarOp::Max: return "max";
    case ScalarOp::Min: return "min";
    case ScalarOp::Lt: return "lt";
    case ScalarOp::Le: return "le";
    case ScalarOp::Gt: return "gt";
    case ScalarOp::Ge: return "ge";
    case ScalarOp::Eq: return "eq";
    case ScalarOp::Ne: return "ne";
    case ScalarOp::And: return "and";
    case ScalarOp::Or: return "or";
    case ScalarOp::Select: return "select";
    case ScalarOp::Philox: return "philox";
  }
  return "?";
}

size_t scalarArity(ScalarOp op) {
  switch (op) {
    case ScalarOp::Const:
    case ScalarOp::Input:
    case ScalarOp::Index: return 0;
    case ScalarOp::Select: return 3;
    case ScalarOp::Philox: return 4;
    default: return op >= ScalarOp::Add ? 2 : 1;
  }
}

DType computeType(DType storage) {
  switch (storage) {
    case DType::F32:
    case DType::F16:
    case DType::BF16: return DType::F32;
    case DType::F64: return DType::F64;
    case DType::Bool: return DType::Bool;
    default: return DType::I64;
  }
}

namespace {
ScalarRef make(ScalarNode n) { return std::make_shared<const ScalarNode>(std::move(n)); }

bool isComparison(ScalarOp op) {
  return op == ScalarOp::Lt || op == ScalarOp::Le || op == ScalarOp::Gt || op == ScalarOp::Ge ||
         op == ScalarOp::Eq || op == ScalarOp::Ne;
}
}  // namespace

Scalar Scalar::input(int index, DType storage) {
  return Scalar(make({ScalarOp::Input, computeType(storage), 0, index, {}}));
}

Scalar Scalar::index(int dim) { return Scalar(make({ScalarOp::Index, DType::I64, 0, dim, {}})); }

Scalar Scalar::constant(double v, DType type) {
  return Scalar(make({ScalarOp::Const, computeType(type), v, -1, {}}));
}

Scalar unary(ScalarOp op, const Scalar& x) {
  DType t = op == ScalarOp::Not ? DType::Bool : x.type();
  return Scalar(make({op, t, 0, -1, {x.node()}}));
}

Scalar binary(ScalarOp op, const Scalar& a, const Scalar& b) {
  // Op definitions are written against well-typed operands; a mismatch is a
  // bug in a registry entry, not user input.
  assert(a.type() == b.type() && "scalar binary operands must share a compute type");
  DType t = (isComparison(op) || op == ScalarOp::And || op == ScalarOp::Or) ? DType::Bool : a.type();
  return Scalar(make({op, t, 0, -1, {a.node(), b.node()}}));
}

Scalar select(const Scalar& cond, const Scalar& a, const Scalar& b) {
  assert(cond.type() == DType::Bool && a.type() == b.type());
  return Scalar(make({ScalarOp::Select, a.type(), 0, -1, {cond.node(), a.node(), b.node()}}));
}

Scalar cast(const Scalar& x, DType storage) {
  return Scalar(make({ScalarOp::Cast, computeType(storage), 0, -1, {x.node()}}));
}

Scalar philoxBits(const Scalar& index, const Scalar& step, int64_t seed) {
  assert(index.type() == DType::I64 && step.type() == DType::I64);
  auto s = static_cast<uint64_t>(seed);
  Scalar lo = Scalar::constant(static_cast<double>(philox::lo32(s)), DType::I64);
  Scalar hi = Scalar::constant(static_cast<double>(philox::hi32(s)), DType::I64);
  return Scalar(make({ScalarOp::Philox, DType::I64, 0, -1, {index.node(), step.node(), lo.node(), hi.node()}}));
}

namespace {
double truncToType(double v, DType t) {
  if (t == DType::Bool) return v != 0 ? 1 : 0;
  if (t == DType::I64) return std::isnan(v) ? 0 : std::trunc(v);
  return v;
}

double nanMax(double a, double b) { return (std::isnan(a) || std::isnan(b)) ? NAN : (a > b ? a : b); }
double nanMin(double a, double b) { return (std::isnan(a) || std::isnan(b)) ? NAN : (a < b ? a : b); }
}  // namespace

double evaluateScalar(const ScalarNode& n, std::span<const double> in, std::span<const int64_t> index) {
  auto arg = [&](size_t i) { return evaluateScalar(*n.args[i], in, index); };
  switch (n.op) {
    case ScalarOp::Const: return n.constant;
    case ScalarOp::Index: return static_cast<double>(index[static_cast<size_t>(n.input)]);
    case ScalarOp::Input: return truncToType(in[static_cast<size_t>(n.input)], n.type);
    case ScalarOp::Neg: return -arg(0);
    case ScalarOp::Abs: return std::fabs(arg(0));
    case ScalarOp::Exp: return std::exp(arg(0));
    case ScalarOp::Expm1: return std::expm1(arg(0));
    case ScalarOp::Log: return std::log(arg(0));
    case ScalarOp::Log1p: return std::log1p(arg(0));
    case ScalarOp::Sqrt: return std::sqrt(arg(0));
    case ScalarOp::Rsqrt: return 1.0 / std::sqrt(arg(0));
    case ScalarOp::Tanh: return std::tanh(arg(0));
    case ScalarOp::Erf: return std::erf(arg(0));
    case ScalarOp::Sin: return std::sin(arg(0));
    case ScalarOp::Cos: return std::cos(arg(0));
    case ScalarOp::Floor: return std::floor(arg(0));
    case ScalarOp::Ceil: return std::ceil(arg(0));
    case ScalarOp::Not: return arg(0) != 0 ? 0 : 1;
    case ScalarOp::Cast: return truncToType(arg(0), n.type);
    case ScalarOp::Add: return arg(0) + arg(1);
    case ScalarOp::Sub: return arg(0) - arg(1);
    case ScalarOp::Mul: return arg(0) * arg(1);
    case ScalarOp::Div: {
      double a = arg(0), b = arg(1);
      if (n.type == DType::I64) return b == 0 ? 0 : std::trunc(a / b);
      return a / b;
    }
    case ScalarOp::Pow: return std::pow(arg(0), arg(1));
    case ScalarOp::Max: return nanMax(arg(0), arg(1));
    case ScalarOp::Min: return nanMin(arg(0), arg(1));
    case ScalarOp::Lt: return arg(0) < arg(1);
    case ScalarOp::Le: return arg(0) <= arg(1);
    case ScalarOp::Gt: return arg(0) > arg(1);
    case ScalarOp::Ge: return arg(0) >= arg(1);
    case ScalarOp::Eq: return arg(0) == arg(1);
    case ScalarOp::Ne: return arg(0) != arg(1);
    case ScalarOp::And: return (arg(0) != 0) && (arg(1) != 0);
    case ScalarOp::Or: return (arg(0) != 0) || (arg(1) != 0);
    case ScalarOp::Select: return arg(0) != 0 ? arg(1) : arg(2);
    case ScalarOp::Philox: {
      // Operands are integral doubles; through int64 so that negative ones
      // keep their two's-complement bits, as the emitters' i64s do.
      auto bits = [&](size_t i) { return static_cast<uint64_t>(static_cast<int64_t>(arg(i))); };
      uint64_t i = bits(0), t = bits(1);
      return philox::philox4x32_10({philox::lo32(i), philox::hi32(i), philox::lo32(t), philox::hi32(t)},
                                   {static_cast<uint32_t>(bits(2)), static_cast<uint32_t>(bits(3))})[0];
    }
  }
  return 0;
}

std::string formatScalar(const ScalarNode& n) {
  switch (n.op) {
    case ScalarOp::Const: return isFloat(n.type) ? formatDouble(n.constant) : std::to_string(static_cast<int64_t>(n.constant));
    case ScalarOp::Input: return str("in", n.input);
    case ScalarOp::Index: return str("i", n.input);
    case ScalarOp::Cast: return str("cast<", dtypeName(n.type), ">(", formatScalar(*n.args[0]), ")");
    default: {
      std::vector<std::string> args;
      for (const auto& a : n.args) args.push_back(formatScalar(*a));
      return str(scalarOpName(n.op), "(", join(args), ")");
    }
  }
}

}  // namespace kfuse
