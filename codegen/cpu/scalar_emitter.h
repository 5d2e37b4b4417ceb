// Scalar expression DAGs (ir/scalar_expr.h) as LLVM IR, each op with exactly
// evaluateScalar's meaning computed in the node's compute type: Max/Min
// propagate NaN, integer Div truncates toward zero and gives 0 for a zero
// divisor (it never traps), comparisons with NaN are false except Ne, erf,
// tanh, expm1, log1p, sin and cos call libm (resolved from the process by
// the JIT, or by the linker for AOT objects).
#pragma once

#include <functional>
#include <unordered_map>

#include <llvm/IR/IRBuilder.h>

#include "ir/scalar_expr.h"
#include "ir/support/expected.h"

namespace kfuse::cpu {

// Whether every node of `n` has a type and arity the CPU backend implements.
// Ops evaluateScalar defines only through doubles are rejected where no i64
// or bool value could hold their result (exp of an i64, add of two bools).
// The error names the op and its types; callers prefix the kernel.
Status checkEmittable(const ScalarNode& n);

// Emits the nodes of one evaluation point (one iteration of a loop body):
// each node once, memoized by node pointer, so that a DAG's shared
// sub-expressions are computed once. Values it returns dominate only the
// rest of the point, so a new point needs a new emitter.
class ScalarEmitter {
 public:
  // The value of an Input or Index leaf, in the leaf's compute type.
  using LeafFn = std::function<llvm::Value*(const ScalarNode& leaf)>;

  ScalarEmitter(llvm::IRBuilderBase& builder, LeafFn leaves) : b_(builder), leaves_(std::move(leaves)) {}

  // `n` must have passed checkEmittable.
  llvm::Value* emit(const ScalarNode& n);
  // Makes `v` the value of `n` (a node computed earlier and kept), so that
  // emit() of any expression containing `n` does not compute it again.
  void seed(const ScalarNode& n, llvm::Value* v) { memo_[&n] = v; }

 private:
  llvm::Value* emitNode(const ScalarNode& n);
  llvm::Value* emitConstant(const ScalarNode& n);
  llvm::Value* emitUnary(const ScalarNode& n, llvm::Value* x);
  llvm::Value* emitBinary(const ScalarNode& n, llvm::Value* x, llvm::Value* y);
  llvm::Value* emitCompare(ScalarOp op, DType type, llvm::Value* x, llvm::Value* y);
  llvm::Value* callLibm(const char* name, DType type, llvm::Value* x);

  llvm::IRBuilderBase& b_;
  LeafFn leaves_;
  std::unordered_map<const ScalarNode*, llvm::Value*> memo_;
};

// NaN-propagating max/min of two floats, as evaluateScalar's: NaN if either
// is NaN, else `x > y ? x : y` (resp. `<`), so max(+0, -0) is -0.
llvm::Value* emitNanMax(llvm::IRBuilderBase& b, llvm::Value* x, llvm::Value* y);
llvm::Value* emitNanMin(llvm::IRBuilderBase& b, llvm::Value* x, llvm::Value* y);

}  // namespace kfuse::cpu
