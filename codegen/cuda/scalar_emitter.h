// Scalar expression DAGs (ir/scalar_expr.h) as CUDA C statements, each op
// with exactly evaluateScalar's meaning computed in the node's compute type
// (f32 -> float, f64 -> double, i64 -> kf_i64, bool -> bool), the same
// choices as the CPU backend (codegen/cpu/scalar_emitter.h): Max/Min
// propagate NaN, integer arithmetic wraps, integer Div gives 0 for a zero
// divisor, comparisons with NaN are false except Ne, float -> i64 casts
// saturate like an i64 store. Transcendentals call CUDA's IEEE-accurate
// math library (no fast-math), Rsqrt is 1 / sqrt (not the approximate
// rsqrtf).
#pragma once

#include <string>
#include <vector>

#include "codegen/cuda/code_writer.h"
#include "ir/scalar_expr.h"
#include "ir/support/expected.h"

namespace kfuse::cuda {

// The C type of a compute type (float, double, kf_i64, bool).
std::string_view computeCType(DType computeType);
// The C type one element of a storage dtype occupies (kf_u16 for f16/bf16,
// kf_u8 for bool).
std::string_view storageCType(DType storage);

// Whether every node has a type and arity this backend implements (the CPU
// backend's rules). Errors name the op and its types.
Status checkEmittable(const ScalarNode& n);

// C expressions for conversions with emitConvert's meaning (codegen/cpu/storage.h).
std::string convertExpr(const std::string& value, DType from, DType to);
// The element value `raw` (of storageCType(storage)) in computeType(storage).
std::string loadConvertExpr(const std::string& raw, DType storage);
// `value` (of compute type `from`) rounded to `storage` like roundToDType,
// as a value of storageCType(storage).
std::string storeConvertExpr(const std::string& value, DType from, DType storage);
// A constant of compute type `type` that the CPU backend would use for `c`.
std::string constantExpr(double c, DType type);

// Writes one node of a scalar program given its operands' values: a
// `const` variable holding it (a literal for a constant). The kernel walk
// (codegen/kernel/kernel_walk.h) memoizes nodes per evaluation point and
// resolves the leaves.
class ScalarEmitter {
 public:
  explicit ScalarEmitter(CodeWriter& w) : w_(w) {}

  // `n` must have passed checkEmittable. For an Input or Index leaf, `args`
  // holds its value as an expression; a constant takes none.
  std::string node(const ScalarNode& n, const std::vector<std::string>& args);

 private:
  std::string unaryExpr(const ScalarNode& n, const std::string& x);
  std::string binaryExpr(const ScalarNode& n, const std::string& x, const std::string& y);

  CodeWriter& w_;
};

}  // namespace kfuse::cuda
