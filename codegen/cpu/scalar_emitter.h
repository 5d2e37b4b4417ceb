// Scalar expression DAGs (ir/scalar_expr.h) as LLVM IR, each op with exactly
// evaluateScalar's meaning computed in the node's compute type: Max/Min
// propagate NaN, integer Div truncates toward zero and gives 0 for a zero
// divisor (it never traps), comparisons with NaN are false except Ne, erf,
// tanh, expm1, log1p, sin and cos call libm (resolved from the process by
// the JIT, or by the linker for AOT objects).
#pragma once

#include <vector>

#include <llvm/IR/IRBuilder.h>

#include "ir/scalar_expr.h"
#include "ir/support/expected.h"

namespace kfuse::cpu {

// Whether every node of `n` has a type and arity the CPU backend implements.
// Ops evaluateScalar defines only through doubles are rejected where no i64
// or bool value could hold their result (exp of an i64, add of two bools).
// The error names the op and its types; callers prefix the kernel.
Status checkEmittable(const ScalarNode& n);

// Emits one node of a scalar program given its operands' values (the
// kernel walk, codegen/kernel/kernel_walk.h, memoizes nodes per evaluation
// point and resolves the leaves).
class ScalarEmitter {
 public:
  explicit ScalarEmitter(llvm::IRBuilderBase& builder) : b_(builder) {}

  // `n` must have passed checkEmittable. For an Input or Index leaf, `args`
  // holds its value, returned as it is; a constant takes none.
  llvm::Value* node(const ScalarNode& n, const std::vector<llvm::Value*>& args);

 private:
  llvm::Value* emitConstant(const ScalarNode& n);
  llvm::Value* emitUnary(const ScalarNode& n, llvm::Value* x);
  llvm::Value* emitBinary(const ScalarNode& n, llvm::Value* x, llvm::Value* y);
  llvm::Value* emitCompare(ScalarOp op, DType type, llvm::Value* x, llvm::Value* y);
  llvm::Value* emitPhilox(const std::vector<llvm::Value*>& args);
  llvm::Value* callLibm(const char* name, DType type, llvm::Value* x);

  llvm::IRBuilderBase& b_;
};

// NaN-propagating max/min of two floats, as evaluateScalar's: NaN if either
// is NaN, else `x > y ? x : y` (resp. `<`), so max(+0, -0) is -0.
llvm::Value* emitNanMax(llvm::IRBuilderBase& b, llvm::Value* x, llvm::Value* y);
llvm::Value* emitNanMin(llvm::IRBuilderBase& b, llvm::Value* x, llvm::Value* y);

}  // namespace kfuse::cpu
