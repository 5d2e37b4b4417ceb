// How the CPU emitter folds a reduction: accumulator types and initial
// values, the combiners (NaN-propagating float max/min, reassociable float
// sums), and the integer keys that let LLVM vectorise a row's float max or
// min. Shared by every loop of llvm_emitter.cpp that reduces.
#pragma once

#include <llvm/ADT/APInt.h>
#include <llvm/IR/IRBuilder.h>

#include "exec/kernel_ir.h"

namespace kfuse::cpu {

// (Accumulator types: codegen/kernel/scalar_rules.h's accumulatorType.)
llvm::Value* initialValue(llvm::IRBuilderBase& b, kernel::Combiner c, DType t);
llvm::Value* combine(llvm::IRBuilderBase& b, kernel::Combiner c, DType t, llvm::Value* acc, llvm::Value* v);

// Marks a float add of a row's sum reassociable (combiners.cpp says why);
// returns it.
llvm::Value* reassociable(llvm::Value* v);

// Whether a row's max or min of type t runs on integer keys, and the keys:
// toKey maps a float to its key (NaN to the extreme key of c), fromKey back.
bool onKeys(kernel::Combiner c, DType t);
llvm::APInt extremeKey(kernel::Combiner c, unsigned bits);
llvm::Value* toKey(llvm::IRBuilderBase& b, kernel::Combiner c, llvm::Value* v);
llvm::Value* fromKey(llvm::IRBuilderBase& b, llvm::Value* key, llvm::Type* floatType);
llvm::Value* combineKeys(llvm::IRBuilderBase& b, kernel::Combiner c, llvm::Value* acc, llvm::Value* key);

}  // namespace kfuse::cpu
