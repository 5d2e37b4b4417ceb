// The scalar expression language: how an elementwise op computes one output
// element from its input elements. It is the single definition of an
// elementwise op's math: the reference interpreter evaluates it, and the CUDA
// and LLVM emitters translate it, so the three can never disagree on what an
// op means. Expressions form a DAG (shared sub-expressions are one node).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "ir/dtype.h"

namespace kfuse {

enum class ScalarOp : uint8_t {
  Const, Input,
  Index,  // kernel IR only: iteration dim `input` as an i64
  // unary
  Neg, Abs, Exp, Expm1, Log, Log1p, Sqrt, Rsqrt, Tanh, Erf, Sin, Cos, Floor, Ceil, Not, Cast,
  // binary (Max/Min propagate NaN, as torch.maximum does; integer Div truncates toward zero)
  Add, Sub, Mul, Div, Pow, Max, Min, Lt, Le, Gt, Ge, Eq, Ne, And, Or,
  // ternary
  Select,
  // philox(index, step, key_lo, key_hi), all i64: the first 32-bit output of
  // Philox4x32-10 for counter (index, step) and key (key_lo, key_hi) (each a
  // 32-bit half, so that a 64-bit seed survives the double Const holds), as
  // an i64 in [0, 2^32): dropout's random bits (ir/philox.h).
  Philox,
};

std::string_view scalarOpName(ScalarOp op);
// The number of operands of `op` (0 for leaves).
size_t scalarArity(ScalarOp op);

// The type arithmetic happens in for a storage dtype: f32 for f32/f16/bf16,
// f64 for f64, i64 for every integer type, bool for bool.
DType computeType(DType storage);

struct ScalarNode;
using ScalarRef = std::shared_ptr<const ScalarNode>;

struct ScalarNode {
  ScalarOp op;
  DType type;              // compute type of the result
  double constant = 0;     // Const
  int input = -1;          // Input: operand index
  std::vector<ScalarRef> args;
};

// Value handle with operators, for writing op definitions readably:
//   return {select(x > 0.0, x, alpha * expm1(x))};
class Scalar {
 public:
  Scalar() = default;
  explicit Scalar(ScalarRef n) : node_(std::move(n)) {}
  static Scalar input(int index, DType storage);
  static Scalar constant(double v, DType computeType);
  // Iteration dim `dim` of a kernel (kernel IR only).
  static Scalar index(int dim);

  const ScalarRef& node() const { return node_; }
  DType type() const { return node_->type; }

 private:
  ScalarRef node_;
};

Scalar unary(ScalarOp op, const Scalar& x);
Scalar binary(ScalarOp op, const Scalar& a, const Scalar& b);
Scalar select(const Scalar& cond, const Scalar& a, const Scalar& b);
Scalar cast(const Scalar& x, DType storage);
// Philox's first 32-bit output for counter (index, step) and key `seed`
// (ir/philox.h's dropoutBits), as an i64 in [0, 2^32).
Scalar philoxBits(const Scalar& index, const Scalar& step, int64_t seed);

// A double mixed with a Scalar becomes a constant of the Scalar's type.
#define KF_SCALAR_BINARY_OP(sym, op)                                                          \
  inline Scalar operator sym(const Scalar& a, const Scalar& b) { return binary(op, a, b); }   \
  inline Scalar operator sym(const Scalar& a, double b) {                                     \
    return binary(op, a, Scalar::constant(b, a.type()));                                      \
  }                                                                                           \
  inline Scalar operator sym(double a, const Scalar& b) {                                     \
    return binary(op, Scalar::constant(a, b.type()), b);                                      \
  }
KF_SCALAR_BINARY_OP(+, ScalarOp::Add)
KF_SCALAR_BINARY_OP(-, ScalarOp::Sub)
KF_SCALAR_BINARY_OP(*, ScalarOp::Mul)
KF_SCALAR_BINARY_OP(/, ScalarOp::Div)
KF_SCALAR_BINARY_OP(<, ScalarOp::Lt)
KF_SCALAR_BINARY_OP(<=, ScalarOp::Le)
KF_SCALAR_BINARY_OP(>, ScalarOp::Gt)
KF_SCALAR_BINARY_OP(>=, ScalarOp::Ge)
KF_SCALAR_BINARY_OP(&&, ScalarOp::And)
KF_SCALAR_BINARY_OP(||, ScalarOp::Or)
#undef KF_SCALAR_BINARY_OP

inline Scalar operator-(const Scalar& x) { return unary(ScalarOp::Neg, x); }
inline Scalar operator!(const Scalar& x) { return unary(ScalarOp::Not, x); }
inline Scalar abs(const Scalar& x) { return unary(ScalarOp::Abs, x); }
inline Scalar exp(const Scalar& x) { return unary(ScalarOp::Exp, x); }
inline Scalar expm1(const Scalar& x) { return unary(ScalarOp::Expm1, x); }
inline Scalar log(const Scalar& x) { return unary(ScalarOp::Log, x); }
inline Scalar log1p(const Scalar& x) { return unary(ScalarOp::Log1p, x); }
inline Scalar sqrt(const Scalar& x) { return unary(ScalarOp::Sqrt, x); }
inline Scalar rsqrt(const Scalar& x) { return unary(ScalarOp::Rsqrt, x); }
inline Scalar tanh(const Scalar& x) { return unary(ScalarOp::Tanh, x); }
inline Scalar erf(const Scalar& x) { return unary(ScalarOp::Erf, x); }
inline Scalar sin(const Scalar& x) { return unary(ScalarOp::Sin, x); }
inline Scalar cos(const Scalar& x) { return unary(ScalarOp::Cos, x); }
inline Scalar floor(const Scalar& x) { return unary(ScalarOp::Floor, x); }
inline Scalar ceil(const Scalar& x) { return unary(ScalarOp::Ceil, x); }
inline Scalar pow(const Scalar& a, const Scalar& b) { return binary(ScalarOp::Pow, a, b); }
inline Scalar pow(const Scalar& a, double b) { return binary(ScalarOp::Pow, a, Scalar::constant(b, a.type())); }
inline Scalar max(const Scalar& a, const Scalar& b) { return binary(ScalarOp::Max, a, b); }
inline Scalar max(const Scalar& a, double b) { return binary(ScalarOp::Max, a, Scalar::constant(b, a.type())); }
inline Scalar min(const Scalar& a, const Scalar& b) { return binary(ScalarOp::Min, a, b); }
inline Scalar min(const Scalar& a, double b) { return binary(ScalarOp::Min, a, Scalar::constant(b, a.type())); }
inline Scalar equal(const Scalar& a, const Scalar& b) { return binary(ScalarOp::Eq, a, b); }
inline Scalar notEqual(const Scalar& a, const Scalar& b) { return binary(ScalarOp::Ne, a, b); }

// Evaluates an expression in double precision (the reference semantics).
// Integer-typed Div truncates toward zero; comparisons yield 0 or 1. `index`
// gives the iteration indices Index leaves read (kernel IR).
double evaluateScalar(const ScalarNode& n, std::span<const double> inputs, std::span<const int64_t> index = {});

// Prints an expression as nested calls, for kernel dumps and test messages:
// "max(in0, 0.0)".
std::string formatScalar(const ScalarNode& n);

}  // namespace kfuse
