// The scalar programs every code generator implements: the structural
// facts about ScalarOp (leaf, unary, binary, ternary), the compute types, and
// which result types each op is defined for, shared by the LLVM and CUDA C
// emitters so that the two accept exactly the same kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "exec/kernel_ir.h"
#include "ir/scalar_expr.h"
#include "ir/support/expected.h"

namespace kfuse::kernel {

// Numbered by operand count: arity(kind) is the enumerator's value.
enum class ScalarKind : uint8_t { Leaf, Unary, Binary, Ternary, Quaternary };

ScalarKind kindOf(ScalarOp op);
size_t arity(ScalarKind k);
// f32, f64, i64 and bool: the types scalar programs compute in.
bool isComputeType(DType t);
bool isFloatType(DType t);
bool isComparison(ScalarOp op);

// Checks every node of the DAG under `root`: arity, compute types, operand
// types, and that the op is implemented for its type. `backend` names the
// code generator in the message ("the CPU backend does not implement ...").
Status checkScalarProgram(const ScalarNode& root, std::string_view backend);

// checkScalarProgram over every program of `k` (reductions, prologue,
// globals, stores); the message names the one at fault ("store 2: ...").
Status checkKernelScalars(const Kernel& k, std::string_view backend);

// Accumulators hold the reduced value's compute type, except that a sum of
// bools counts (the reference sums 0/1 doubles).
DType accumulatorType(Combiner c, DType value);

}  // namespace kfuse::kernel
