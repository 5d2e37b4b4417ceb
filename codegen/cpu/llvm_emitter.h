// Kernel IR -> LLVM IR for the CPU. Each kernel becomes one function with a
// fixed C ABI:
//
//   void <kernel name>(void** buffers, int64_t begin, int64_t end);
//
// [begin, end) is the range of work units to do (exec/parallel.h: points of
// the first outer dim when the kernel splits, else the single unit 0);
// buffers[i] points at the first element of kernel buffer i (kernel order),
// in the buffer's storage dtype, aligned at least to the element size (the
// runtime's 64-byte alignment is not assumed). Buffers may not overlap,
// except that an output may be the very same memory as an input it replaces
// element for element (in-place kernels); no `noalias` is claimed, so LLVM
// guards vectorized loops with run-time overlap checks.
//
// The function runs the semantics of kernel_ir.h in order: prologue globals
// in a loop over the outer space, then the outer loop nest (innermost dim
// innermost, unit-stride friendly, so elementwise kernels vectorize), per
// outer point each reduction folded strictly in row-major order in the
// compute type (consecutive reductions that do not read each other share a
// loop), the element stores in a loop over the reduce space, the row stores
// and the globals; final stores last. Dims of extent 1 vanish and
// contiguous dims merge (exec/index_space.h).
#pragma once

#include <llvm/IR/Function.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "exec/kernel_ir.h"
#include "ir/support/expected.h"

namespace kfuse::cpu {

// The C type of every emitted kernel.
using KernelFn = void (*)(void** buffers, int64_t begin, int64_t end);

// The symbol of kernel `name` in emitted code. Kernel names come from user
// functions and ops (@tanh, @exp); the prefix keeps them from shadowing the
// C library functions the generated code calls (tanhf, expf, memset).
std::string symbolName(std::string_view kernelName);

// Adds the kernel's function, named symbolName(k.name), to `module` (whose
// context must be `ctx`). Fails, naming the kernel, if it does not verify
// (verifyKernel), uses an op/type pair the backend does not implement, or its
// symbol is taken.
Expected<llvm::Function*> emitKernel(const kernel::Kernel& k, llvm::LLVMContext& ctx, llvm::Module& module);

// A packed GEMM's or direct convolution's epilogue kernel, emitted beside
// it and called from it: internal, and marked kEpilogueAttribute, which
// tells the optimiser (compile.h) to vectorise it on its own before
// inlining it into the hand-blocked code.
inline constexpr const char* kEpilogueAttribute = "kfuse-epilogue";
void markEpilogue(llvm::Function& fn);

}  // namespace kfuse::cpu
