// Math functions the CPU's kernels compute inline rather than call: LLVM
// IR built from scalar operations, which the loop vectorizer widens like
// the rest of a kernel.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

namespace kfuse::cpu {

// e^x for an f32 `x` (a scalar or a vector of floats): within 1.2 ulp of
// the exact result over every float (0.91 with fused multiply-adds),
// +inf past the largest float, subnormal results rounded once, 0 below
// them, NaN for NaN.
llvm::Value* emitExpF32(llvm::IRBuilderBase& b, llvm::Value* x);

// Replaces every call of llvm.exp.f32 in `module` (the kernels' exponentials,
// as the scalar emitter writes them) by emitExpF32's code, before the
// optimiser vectorises it (CpuSubtarget::inlineExp says where).
void inlineExponentials(llvm::Module& module);

}  // namespace kfuse::cpu
