// Elementwise ONNX ops that kfuse composes from its own: trigonometric and
// hyperbolic functions, and Mod.
#include <cmath>
#include <limits>

#include "frontend/onnx/lower_util.h"
#include "frontend/onnx/op_table.h"

namespace kfuse::onnx_import {
namespace {

Expected<Value*> op(LoweringContext& c, std::string_view name, std::vector<Value*> operands) {
  return c.build(name, operands);
}

Expected<Value*> plusConstant(LoweringContext& c, Value* x, double k) { return op(c, "add", {x, scalarLike(c, x, k)}); }
Expected<Value*> timesConstant(LoweringContext& c, Value* x, double k) {
  return op(c, "mul", {x, scalarLike(c, x, k)});
}

// (e^x - e^-x) / 2 or (e^x + e^-x) / 2.
Expected<Value*> hyperbolic(LoweringContext& c, Value* x, bool sinh) {
  KF_ASSIGN_OR_RETURN(Value* ep, op(c, "exp", {x}));
  KF_ASSIGN_OR_RETURN(Value* nx, op(c, "neg", {x}));
  KF_ASSIGN_OR_RETURN(Value* en, op(c, "exp", {nx}));
  KF_ASSIGN_OR_RETURN(Value* s, op(c, sinh ? "sub" : "add", {ep, en}));
  return timesConstant(c, s, 0.5);
}

// asinh(x) = sign(x) log(|x| + sqrt(x^2 + 1)), odd by construction so that
// large negative inputs do not cancel; acosh(x) = log(x + sqrt(x^2 - 1));
// atanh(x) = log((1 + x) / (1 - x)) / 2.
Expected<Value*> inverseHyperbolic(LoweringContext& c, Value* x, const std::string& which) {
  if (which == "Atanh") {
    KF_ASSIGN_OR_RETURN(Value* num, plusConstant(c, x, 1.0));
    KF_ASSIGN_OR_RETURN(Value* nx, op(c, "neg", {x}));
    KF_ASSIGN_OR_RETURN(Value* den, plusConstant(c, nx, 1.0));
    KF_ASSIGN_OR_RETURN(Value* q, op(c, "div", {num, den}));
    KF_ASSIGN_OR_RETURN(Value* l, op(c, "log", {q}));
    return timesConstant(c, l, 0.5);
  }
  bool asinh = which == "Asinh";
  Value* base = x;
  if (asinh) {
    KF_ASSIGN_OR_RETURN(base, op(c, "abs", {x}));
  }
  KF_ASSIGN_OR_RETURN(Value* sq, op(c, "mul", {x, x}));
  KF_ASSIGN_OR_RETURN(Value* shifted, plusConstant(c, sq, asinh ? 1.0 : -1.0));
  KF_ASSIGN_OR_RETURN(Value* root, op(c, "sqrt", {shifted}));
  KF_ASSIGN_OR_RETURN(Value* sum, op(c, "add", {base, root}));
  KF_ASSIGN_OR_RETURN(Value* l, op(c, "log", {sum}));
  if (!asinh) return l;
  KF_ASSIGN_OR_RETURN(Value* sign, op(c, "sign", {x}));
  return op(c, "mul", {sign, l});
}

Status lowerTrig(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_RETURN_IF_ERROR(requireFloat(c, x, "operand"));
  const std::string& t = c.opType();
  Value* y = nullptr;
  if (t == "Tan") {
    KF_ASSIGN_OR_RETURN(Value* s, op(c, "sin", {x}));
    KF_ASSIGN_OR_RETURN(Value* co, op(c, "cos", {x}));
    KF_ASSIGN_OR_RETURN(y, op(c, "div", {s, co}));
  } else if (t == "Sinh" || t == "Cosh") {
    KF_ASSIGN_OR_RETURN(y, hyperbolic(c, x, t == "Sinh"));
  } else {
    KF_ASSIGN_OR_RETURN(y, inverseHyperbolic(c, x, t));
  }
  return done(c, y);
}

// Mod with fmod = 1 (C's fmod, the sign of the dividend): a - trunc(a / b) b,
// computed in double so that the quotient is exact for float32 inputs. With
// fmod = 0 (integers only, Python's %, the sign of the divisor): the
// truncated remainder, plus b where it is non-zero and its sign differs
// from b's.
// Python's % of floats from the truncated remainder r: a nonzero r whose
// sign differs from b's moves by b; a finite, nonzero a over an infinite b
// is a itself when their signs agree, else b (a zero a stays zero), where r
// is NaN (0 * inf). Infinite a, zero b and NaNs are NaN already.
Expected<Value*> floorMod(LoweringContext& c, Value* a, Value* b, Value* r) {
  double inf = std::numeric_limits<double>::infinity();
  Value* zero = scalarLike(c, r, 0.0);
  KF_ASSIGN_OR_RETURN(Value* isZero, op(c, "equal", {r, zero}));
  KF_ASSIGN_OR_RETURN(Value* nonzero, op(c, "logical_not", {isZero}));
  KF_ASSIGN_OR_RETURN(Value* rNeg, op(c, "less", {r, zero}));
  KF_ASSIGN_OR_RETURN(Value* bNeg, op(c, "less", {b, zero}));
  KF_ASSIGN_OR_RETURN(Value* differ, op(c, "logical_xor", {rNeg, bNeg}));
  KF_ASSIGN_OR_RETURN(Value* fix, op(c, "logical_and", {nonzero, differ}));
  KF_ASSIGN_OR_RETURN(Value* shifted, op(c, "add", {r, b}));
  KF_ASSIGN_OR_RETURN(r, op(c, "where", {fix, shifted, r}));
  KF_ASSIGN_OR_RETURN(Value* absB, op(c, "abs", {b}));
  KF_ASSIGN_OR_RETURN(Value* absA, op(c, "abs", {a}));
  KF_ASSIGN_OR_RETURN(Value* bInf, op(c, "equal", {absB, scalarLike(c, b, inf)}));
  KF_ASSIGN_OR_RETURN(Value* aFinite, op(c, "less", {absA, scalarLike(c, a, inf)}));  // false for NaN too
  KF_ASSIGN_OR_RETURN(Value* overInf, op(c, "logical_and", {bInf, aFinite}));
  KF_ASSIGN_OR_RETURN(Value* aNeg, op(c, "less", {a, zero}));
  KF_ASSIGN_OR_RETURN(Value* signsDiffer, op(c, "logical_xor", {aNeg, bNeg}));
  KF_ASSIGN_OR_RETURN(Value* aOrB, op(c, "where", {signsDiffer, b, a}));
  KF_ASSIGN_OR_RETURN(Value* aZero, op(c, "equal", {a, zero}));
  KF_ASSIGN_OR_RETURN(Value* big, op(c, "where", {aZero, a, aOrB}));
  return op(c, "where", {overInf, big, r});
}

Status lowerMod(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* a, c.input(0));
  KF_ASSIGN_OR_RETURN(Value* b, c.input(1));
  KF_ASSIGN_OR_RETURN(int64_t fmod, c.attrs().getInt("fmod", 0));
  DType dt = a->type().dtype;
  bool floating = isFloat(dt);
  // Mod-28 defines fmod = 0 for floats (Python's %, as NumPy's mod).
  if (floating && !fmod && c.version() < 28) return Error("Mod on floating-point operands requires fmod = 1");
  if (floating) {
    KF_ASSIGN_OR_RETURN(a, castTo(c, a, DType::F64));
    KF_ASSIGN_OR_RETURN(b, castTo(c, b, DType::F64));
  }
  KF_ASSIGN_OR_RETURN(Value* q, op(c, "div", {a, b}));
  if (floating) {
    KF_ASSIGN_OR_RETURN(Value* negative, op(c, "less", {q, scalarLike(c, q, 0.0)}));
    KF_ASSIGN_OR_RETURN(Value* up, op(c, "ceil", {q}));
    KF_ASSIGN_OR_RETURN(Value* down, op(c, "floor", {q}));
    KF_ASSIGN_OR_RETURN(q, op(c, "where", {negative, up, down}));
  }
  KF_ASSIGN_OR_RETURN(Value* qb, op(c, "mul", {q, b}));
  KF_ASSIGN_OR_RETURN(Value* r, op(c, "sub", {a, qb}));
  if (floating) {
    if (!fmod) {
      KF_ASSIGN_OR_RETURN(r, floorMod(c, a, b, r));
    }
    KF_ASSIGN_OR_RETURN(r, castTo(c, r, dt));
    return done(c, r);
  }
  if (!fmod) {
    KF_ASSIGN_OR_RETURN(Value* zero, op(c, "equal", {r, scalarLike(c, r, 0.0)}));
    KF_ASSIGN_OR_RETURN(Value* rNeg, op(c, "less", {r, scalarLike(c, r, 0.0)}));
    KF_ASSIGN_OR_RETURN(Value* bNeg, op(c, "less", {b, scalarLike(c, b, 0.0)}));
    KF_ASSIGN_OR_RETURN(Value* differ, op(c, "logical_xor", {rNeg, bNeg}));
    KF_ASSIGN_OR_RETURN(Value* nonzero, op(c, "logical_not", {zero}));
    KF_ASSIGN_OR_RETURN(Value* fix, op(c, "logical_and", {nonzero, differ}));
    KF_ASSIGN_OR_RETURN(Value* shifted, op(c, "add", {r, b}));
    KF_ASSIGN_OR_RETURN(r, op(c, "where", {fix, shifted, r}));
  }
  return done(c, r);
}

const std::vector<OpLowering> kTable = {
    {"Tan", {7, 22}, lowerTrig, "sin + cos + div"},
    {"Sinh", {9, 22}, lowerTrig, "exp + neg + exp + sub + mul"},
    {"Cosh", {9, 22}, lowerTrig, "exp + neg + exp + add + mul"},
    {"Asinh", {9, 22}, lowerTrig, "sign(x) log(|x| + sqrt(x^2 + 1))"},
    {"Acosh", {9, 22}, lowerTrig, "log(x + sqrt(x^2 - 1))"},
    {"Atanh", {9, 22}, lowerTrig, "log((1 + x) / (1 - x)) / 2"},
    {"Mod", {10, 13, 28}, lowerMod, "div + mul + sub (and a sign fix for fmod = 0; in f64 for floats)"},
};

}  // namespace

std::span<const OpLowering> compositeMathLowerings() { return kTable; }

}  // namespace kfuse::onnx_import
