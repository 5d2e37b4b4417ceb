// Checks an op's gradient rule against central finite differences in f64.
#pragma once

#include <map>
#include <random>
#include <string>
#include <vector>

#include "ir/attribute.h"

namespace kfuse::test {

// How to fill an operand. Kinked ops (relu, abs, max) are checked away from
// their kinks, where the derivative is defined.
// SomeZeros: Normal with every third element exactly 0 (reduce_prod's rows
// with one and with several zeros).
enum class Fill { Normal, Positive, AwayFromZero, Labels, Indices, Bool, Step, SomeZeros };

struct Operand {
  TensorType type;
  Fill fill = Fill::Normal;
  int64_t range = 0;  // Labels/Indices: values in [0, range)
  bool differentiate = true;
};

struct GradCase {
  std::string name;
  std::string op;
  std::vector<Operand> operands;
  AttrMap attrs;
  // Finite-difference step (relative) and tolerance; casts to f32 round, so
  // they need a larger step and a looser bound.
  double eps = 1e-6;
  double rtol = 1e-5;
};

// Empty on success, else what went wrong (the worst element and both values).
std::string checkGradient(const GradCase& c, uint64_t seed = 1);

inline TensorType f64(Shape s) { return TensorType(DType::F64, std::move(s)); }
inline Operand in(Shape s, Fill f = Fill::Normal) { return {f64(std::move(s)), f}; }
// An operand that is not differentiated (labels, indices, conditions).
inline Operand fixed(TensorType t, Fill f, int64_t range = 0) { return {std::move(t), f, range, false}; }

// The cases of one op family, and the family's ops that have no gradient
// rule on purpose (op -> reason). Each family's cases live in
// tests/unit/gradcheck_<family>.cpp.
struct GradFamily {
  std::vector<GradCase> cases;
  std::map<std::string, std::string> notDifferentiable;
};
GradFamily elementwiseGrads();
GradFamily reductionGrads();
GradFamily shapeGrads();
GradFamily nnGrads();  // linalg, pooling, normalization, dropout, losses
GradFamily optimizerGrads();

}  // namespace kfuse::test
