// Numeric ops of newer opsets and models: Round (kfuse's round, halves to
// even) and the ones composed from existing kfuse ops, Swish and
// LpNormalization.
#include "frontend/onnx/lower_util.h"
#include "frontend/onnx/op_table.h"

namespace kfuse::onnx_import {
namespace {

Status lowerRound(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_RETURN_IF_ERROR(requireFloat(c, x, "operand"));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("round", {x}));
  return done(c, y);
}

// Swish: x * sigmoid(alpha * x).
Status lowerSwish(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(double alpha, c.attrs().getFloat("alpha", 1.0));
  KF_RETURN_IF_ERROR(requireFloat(c, x, "operand"));
  Value* scaled = x;
  if (alpha != 1.0) {
    KF_ASSIGN_OR_RETURN(scaled, c.build("mul", {x, scalarLike(c, x, alpha)}));
  }
  KF_ASSIGN_OR_RETURN(Value* s, c.build("sigmoid", {scaled}));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("mul", {x, s}));
  return done(c, y);
}

// LpNormalization: x / ||x||_p along `axis` (p = 1: sum |x|; p = 2:
// sqrt(sum x^2)), and 0 where the norm is 0, as ONNX's reference does.
Status lowerLpNormalization(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(int64_t axis, c.attrs().getInt("axis", -1));
  KF_ASSIGN_OR_RETURN(int64_t p, c.attrs().getInt("p", 2));
  KF_RETURN_IF_ERROR(requireFloat(c, x, "operand"));
  if (p != 1 && p != 2) return Error(str("attribute p = ", p, " must be 1 or 2"));
  KF_ASSIGN_OR_RETURN(axis, normalizedAxis(axis, static_cast<int64_t>(x->type().rank()), "attribute axis"));
  Value* terms = nullptr;
  if (p == 1) {
    KF_ASSIGN_OR_RETURN(terms, c.build("abs", {x}));
  } else {
    KF_ASSIGN_OR_RETURN(terms, c.build("mul", {x, x}));
  }
  KF_ASSIGN_OR_RETURN(Value* norm, c.build("reduce_sum", {terms}, {{"axes", Attribute(std::vector<int64_t>{axis})},
                                                                  {"keepdims", true}}));
  if (p == 2) {
    KF_ASSIGN_OR_RETURN(norm, c.build("sqrt", {norm}));
  }
  KF_ASSIGN_OR_RETURN(Value* zero, c.build("equal", {norm, scalarLike(c, norm, 0)}));
  KF_ASSIGN_OR_RETURN(Value* q, c.build("div", {x, norm}));
  KF_ASSIGN_OR_RETURN(Value* y, c.build("where", {zero, scalarLike(c, q, 0), q}));
  return done(c, y);
}

const std::vector<OpLowering> kTable = {
    {"LpNormalization", {1, 22}, lowerLpNormalization,
     "abs or mul + reduce_sum (+ sqrt) + div, where for a zero norm"},
    {"Round", {11, 22}, lowerRound, "round (halves to even)"},
    {"Swish", {24}, lowerSwish, "mul + sigmoid + mul"},
};

}  // namespace

std::span<const OpLowering> numericLowerings() { return kTable; }

}  // namespace kfuse::onnx_import
