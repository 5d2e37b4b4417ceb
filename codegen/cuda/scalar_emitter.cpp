#include "codegen/cuda/scalar_emitter.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <unordered_set>

#include "codegen/kernel/scalar_rules.h"
#include "ir/support/strings.h"

namespace kfuse::cuda {

std::string_view computeCType(DType t) {
  switch (t) {
    case DType::F32: return "float";
    case DType::F64: return "double";
    case DType::Bool: return "bool";
    default: return "kf_i64";
  }
}

std::string_view storageCType(DType t) {
  switch (t) {
    case DType::F32: return "float";
    case DType::F64: return "double";
    case DType::F16:
    case DType::BF16: return "kf_u16";
    case DType::I64: return "kf_i64";
    case DType::I32: return "kf_i32";
    case DType::I8: return "kf_i8";
    case DType::U8:
    case DType::Bool: return "kf_u8";
  }
  return "void";
}

namespace {

using Kind = kernel::ScalarKind;
using kernel::arity;
using kernel::isComparison;
using kernel::isFloatType;
using kernel::kindOf;

// Exact literals: the shortest decimal that reads back as the same value.
std::string floatLiteral(float f) {
  if (std::isnan(f)) return "__uint_as_float(0x7fc00000u)";
  if (std::isinf(f)) return f > 0 ? "__uint_as_float(0x7f800000u)" : "__uint_as_float(0xff800000u)";
  std::string s = formatFloat(f);
  return (s[0] == '-' ? str("(", s, "f)") : s + "f");
}

std::string doubleLiteral(double d) {
  if (std::isnan(d)) return "__longlong_as_double(0x7ff8000000000000ll)";
  if (std::isinf(d)) return d > 0 ? "__longlong_as_double(0x7ff0000000000000ll)" : "__longlong_as_double(-0x10000000000000ll)";
  std::string s = formatDouble(d);
  return s[0] == '-' ? str("(", s, ")") : s;
}

std::string i64Literal(int64_t v) {
  if (v == std::numeric_limits<int64_t>::min()) return "(-0x7fffffffffffffffll - 1)";
  return v < 0 ? str("(", v, "ll)") : str(v, "ll");
}

std::string hexFloat(double v, bool isFloat) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%a", v);
  std::string s = buf;
  if (isFloat) s += "f";
  return s[0] == '-' ? str("(", s, ")") : s;
}

// A float (of compute type `from`) to a `bits`-bit integer as
// floatToSaturatedInt does, as an i64 expression.
std::string saturatedInt(const std::string& v, DType from, unsigned bits, bool isSigned) {
  int width = static_cast<int>(bits);
  double lo = isSigned ? -std::ldexp(1.0, width - 1) : 0.0;
  double end = std::ldexp(1.0, isSigned ? width - 1 : width);
  uint64_t top = bits == 64 ? 0x7ffffffffffffc00ull : (uint64_t{1} << (isSigned ? bits - 1 : bits)) - 1;
  bool f32 = from == DType::F32;
  double below = f32 ? static_cast<double>(std::nextafter(static_cast<float>(end), 0.0f)) : std::nextafter(end, 0.0);
  return str(f32 ? "kf_sat_f32(" : "kf_sat_f64(", v, ", ", hexFloat(lo, f32), ", ", hexFloat(below, f32), ", ",
             i64Literal(static_cast<int64_t>(top)), ")");
}

std::string truthy(const std::string& v, DType from) {
  if (from == DType::Bool) return v;
  if (isFloatType(from)) return str("(", v, " != ", from == DType::F32 ? "0.0f" : "0.0", ")");
  return str("(", v, " != 0ll)");
}

}  // namespace

Status checkEmittable(const ScalarNode& root) { return kernel::checkScalarProgram(root, "CUDA"); }

std::string convertExpr(const std::string& v, DType from, DType to) {
  if (from == to) return v;
  if (to == DType::Bool) return truthy(v, from);
  if (isFloatType(to)) return str("(", computeCType(to), ")(", v, ")");  // bool -> 0/1, i64 and floats round
  if (from == DType::Bool) return str("(kf_i64)(", v, ")");
  return saturatedInt(v, from, 64, /*isSigned=*/true);  // float -> i64
}

std::string loadConvertExpr(const std::string& raw, DType storage) {
  switch (storage) {
    case DType::F16: return str("kf_half_to_float(", raw, ")");
    case DType::BF16: return str("kf_bf16_to_float(", raw, ")");
    case DType::I32:
    case DType::I8:
    case DType::U8: return str("(kf_i64)(", raw, ")");
    case DType::Bool: return str("(", raw, " != 0)");  // any nonzero byte reads as true
    default: return raw;
  }
}

std::string storeConvertExpr(const std::string& v, DType from, DType storage) {
  switch (storage) {
    case DType::F32:
    case DType::F64: return convertExpr(v, from, storage);
    case DType::F16: return str("kf_float_to_half(", convertExpr(v, from, DType::F32), ")");
    case DType::BF16: return str("kf_float_to_bf16(", convertExpr(v, from, DType::F32), ")");
    case DType::Bool: return str("(kf_u8)", truthy(v, from));
    default: break;
  }
  std::string_view type = storageCType(storage);
  if (from == DType::Bool) return str("(", type, ")(", v, ")");
  unsigned bits = static_cast<unsigned>(dtypeSize(storage) * 8);
  if (isFloatType(from)) return str("(", type, ")", saturatedInt(v, from, bits, storage != DType::U8));
  switch (storage) {  // from i64
    case DType::I32: return str("(kf_i32)kf_clamp(", v, ", -2147483648ll, 2147483647ll)");
    case DType::I8: return str("(kf_i8)kf_clamp(", v, ", -128ll, 127ll)");
    case DType::U8: return str("(kf_u8)kf_clamp(", v, ", 0ll, 255ll)");
    default: return v;
  }
}

std::string constantExpr(double c, DType type) {
  switch (type) {
    case DType::F32: return floatLiteral(static_cast<float>(c));
    case DType::F64: return doubleLiteral(c);
    case DType::Bool: return c != 0 ? "true" : "false";
    default: {
      constexpr double kTwo63 = 0x1p63;
      int64_t i = std::isnan(c) ? 0 : c >= kTwo63 ? std::numeric_limits<int64_t>::max()
                                      : c < -kTwo63 ? std::numeric_limits<int64_t>::min()
                                                    : static_cast<int64_t>(c);
      return i64Literal(i);
    }
  }
}

std::string ScalarEmitter::node(const ScalarNode& n, const std::vector<std::string>& a) {
  if (n.op == ScalarOp::Const) return constantExpr(n.constant, n.type);
  std::string expr;
  if (n.op == ScalarOp::Input || n.op == ScalarOp::Index) {
    expr = a[0];
  } else {
    auto t = [&](size_t i) { return truthy(a[i], n.args[i]->type); };
    switch (n.op) {
      case ScalarOp::Cast: expr = convertExpr(a[0], n.args[0]->type, n.type); break;
      case ScalarOp::Not: expr = str("!", t(0)); break;
      case ScalarOp::And: expr = str("(", t(0), " && ", t(1), ")"); break;
      case ScalarOp::Or: expr = str("(", t(0), " || ", t(1), ")"); break;
      case ScalarOp::Select: expr = str("(", t(0), " ? ", a[1], " : ", a[2], ")"); break;
      case ScalarOp::Philox: expr = str("kf_philox(", a[0], ", ", a[1], ", ", a[2], ", ", a[3], ")"); break;
      default:
        if (isComparison(n.op)) {
          static constexpr const char* kOps[] = {"<", "<=", ">", ">=", "==", "!="};
          expr = str("(", a[0], " ", kOps[static_cast<int>(n.op) - static_cast<int>(ScalarOp::Lt)], " ", a[1], ")");
        } else if (kindOf(n.op) == Kind::Unary) {
          expr = unaryExpr(n, a[0]);
        } else {
          expr = binaryExpr(n, a[0], a[1]);
        }
    }
  }
  std::string var = w_.fresh("v");
  w_.line("const ", computeCType(n.type), " ", var, " = ", expr, ";");
  return var;
}

std::string ScalarEmitter::unaryExpr(const ScalarNode& n, const std::string& x) {
  if (n.type == DType::I64) {
    switch (n.op) {
      case ScalarOp::Neg: return str("kf_neg(", x, ")");
      case ScalarOp::Abs: return str("kf_iabs(", x, ")");
      default: return x;  // Floor, Ceil
    }
  }
  bool f = n.type == DType::F32;
  auto call = [&](const char* name) { return str(name, f ? "f(" : "(", x, ")"); };
  switch (n.op) {
    case ScalarOp::Neg: return str("-", x);
    case ScalarOp::Abs: return call("fabs");
    case ScalarOp::Exp: return call("exp");
    case ScalarOp::Expm1: return call("expm1");
    case ScalarOp::Log: return call("log");
    case ScalarOp::Log1p: return call("log1p");
    case ScalarOp::Sqrt: return call("sqrt");
    case ScalarOp::Rsqrt: return str(f ? "1.0f / sqrtf(" : "1.0 / sqrt(", x, ")");
    case ScalarOp::Tanh: return call("tanh");
    case ScalarOp::Erf: return call("erf");
    case ScalarOp::Sin: return call("sin");
    case ScalarOp::Cos: return call("cos");
    case ScalarOp::Floor: return call("floor");
    case ScalarOp::Ceil: return call("ceil");
    default: return x;  // unreachable after checkEmittable
  }
}

std::string ScalarEmitter::binaryExpr(const ScalarNode& n, const std::string& x, const std::string& y) {
  if (n.type == DType::Bool) {  // Mul, Max: and / or; Min: and
    return str("(", x, n.op == ScalarOp::Max ? " || " : " && ", y, ")");
  }
  if (n.type == DType::I64) {
    switch (n.op) {
      case ScalarOp::Add: return str("kf_add(", x, ", ", y, ")");
      case ScalarOp::Sub: return str("kf_sub(", x, ", ", y, ")");
      case ScalarOp::Mul: return str("kf_mul(", x, ", ", y, ")");
      case ScalarOp::Div: return str("kf_idiv(", x, ", ", y, ")");
      // evaluateScalar computes pow in double; the result goes back to i64 as a cast does.
      case ScalarOp::Pow:
        return convertExpr(str("pow((double)", x, ", (double)", y, ")"), DType::F64, DType::I64);
      case ScalarOp::Max: return str("kf_imax(", x, ", ", y, ")");
      default: return str("kf_imin(", x, ", ", y, ")");
    }
  }
  switch (n.op) {
    case ScalarOp::Add: return str(x, " + ", y);
    case ScalarOp::Sub: return str(x, " - ", y);
    case ScalarOp::Mul: return str(x, " * ", y);
    case ScalarOp::Div: return str(x, " / ", y);
    case ScalarOp::Pow: return str(n.type == DType::F32 ? "powf(" : "pow(", x, ", ", y, ")");
    case ScalarOp::Max: return str("kf_nanmax(", x, ", ", y, ")");
    default: return str("kf_nanmin(", x, ", ", y, ")");
  }
}

}  // namespace kfuse::cuda
