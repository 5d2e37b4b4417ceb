// Math functions the CPU's kernels compute inline rather than call (exp,
// erf): LLVM IR built from scalar operations, which the loop vectorizer
// widens like the rest of a kernel.
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

// erf(x) for an f32 `x` (a scalar or a vector of floats): within 6 ulp of
// the exact result over every float, +-1 past +-4, NaN for NaN.
llvm::Value* emitErfF32(llvm::IRBuilderBase& b, llvm::Value* x);

// Replaces every call of erff in `module` (the kernels' erf, as the scalar
// emitter writes it) by emitErfF32's code, before the optimiser vectorises
// it (CpuSubtarget::inlineErf says where).
void inlineErfs(llvm::Module& module);

}  // namespace kfuse::cpu
