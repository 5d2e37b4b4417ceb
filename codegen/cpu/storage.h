// How kernel values are represented in LLVM IR, and the conversions between
// representations, each with exactly the meaning ir/ gives it:
//   compute types (scalar_expr.h): f32 -> float, f64 -> double, i64 -> i64,
//     bool -> i1; conversions between them follow evaluateScalar's Cast;
//   storage dtypes: f16 and bf16 are i16 bit patterns converted with integer
//     code bit-identical to ir/dtype.h (LLVM's own half conversions differ
//     on NaN payloads and need F16C or a runtime library), bool is one byte
//     0/1, and stores round like roundToDType (integers truncate toward
//     zero and saturate, NaN becomes 0).
#pragma once

#include <llvm/IR/IRBuilder.h>

#include "ir/dtype.h"

namespace kfuse::cpu {

// The LLVM type of a compute type (f32, f64, i64, bool); nullptr otherwise.
llvm::Type* computeTypeOf(llvm::LLVMContext& ctx, DType computeType);
// The LLVM type one element of `storage` occupies in memory.
llvm::Type* storageTypeOf(llvm::LLVMContext& ctx, DType storage);

// `v != 0` as an i1 (NaN counts as nonzero, as in evaluateScalar).
llvm::Value* emitTruthy(llvm::IRBuilderBase& b, llvm::Value* v, DType from);

// Converts a value between compute types with Cast's meaning: to bool is
// `!= 0`, float to i64 truncates toward zero with NaN -> 0. Where the double
// reference would hold a value no i64 can (beyond +-2^63), it saturates the
// way an i64 store of that value does (roundToDType).
llvm::Value* emitConvert(llvm::IRBuilderBase& b, llvm::Value* v, DType from, DType to);

// Loads the element at `ptr` (a pointer to storageTypeOf(storage), aligned to
// the element's size) as a value of computeType(storage).
llvm::Value* emitLoadElement(llvm::IRBuilderBase& b, llvm::Value* ptr, DType storage);

// Stores `v`, a value of compute type `from`, to `ptr` with roundToDType's
// rounding to `storage`.
void emitStoreElement(llvm::IRBuilderBase& b, llvm::Value* ptr, llvm::Value* v, DType from, DType storage);

}  // namespace kfuse::cpu
