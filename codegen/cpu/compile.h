// From kernels to an optimised LLVM module, and from there to an object file
// (AOT packages) or, through jit.h, to callable code.
#pragma once

#include <memory>
#include <span>
#include <string>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include "codegen/cpu/conv_emitter.h"
#include "codegen/cpu/gemm_emitter.h"
#include "codegen/cpu/subtarget.h"
#include "exec/kernel_ir.h"
#include "ir/support/expected.h"

namespace kfuse::cpu {

enum class OptLevel : uint8_t { O0, O1, O2, O3 };

struct CompileOptions {
  // O2, not O3: both vectorise (loops and SLP), and no kernel measured ran
  // slower at O2 (the generated kernels of MobileNetV2's training step,
  // GPT-tiny's, BERT's and GPT-2's inference), while O3's extra unrolling
  // and loop passes took a quarter to two fifths more LLVM time, most of a
  // training step's first compile (MobileNetV2's 51 batch-norm kernels: 6.9
  // s of CPU at O3, 3.9 at O2). bench/README.md, "Kernels at O2".
  OptLevel optLevel = OptLevel::O2;
  // Return the optimised module's text (kfuse's kernel dumps, tests that
  // check what the vectorizer did).
  bool keepOptimizedIR = false;
  // emitObject: the target's assembly text instead of an object file (tests
  // that check which instructions and registers the code uses).
  bool assembly = false;
};

// Runs LLVM's default per-module pipeline for `level` (new pass manager, with
// loop and SLP vectorization from O2 on), its cost models those of `tm`, the
// vector math it may call the subtarget's.
void optimizeModule(llvm::Module& module, llvm::TargetMachine& tm, const CpuSubtarget& subtarget, OptLevel level);

// What one LLVM module holds: kernels, direct convolutions and packed
// GEMMs, their names unique among all.
struct CodeBatch {
  std::span<const kernel::Kernel> kernels;
  std::span<const DirectConv> convs;
  std::span<const PackedGemm> gemms{};
};

// Emits the batch into one new module of `ctx` for `tm`, which was created
// for `subtarget` (triple, data layout, each function's target-cpu,
// target-features and preferred vector width), then optimises it. Errors name the kernel, convolution or GEMM at fault (see emitKernel,
// emitDirectConv, emitPackedGemm).
Expected<std::unique_ptr<llvm::Module>> buildKernelModule(const CodeBatch& batch, llvm::LLVMContext& ctx,
                                                          llvm::TargetMachine& tm, const CpuSubtarget& subtarget,
                                                          OptLevel level);

// A batch emitted into a module of its own context for its own target
// machine, verified, not yet optimised: what emitObject compiles, split so
// that the JIT can compare modules before compiling them (jit.h).
struct EmittedModule {
  std::unique_ptr<llvm::LLVMContext> ctx;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::unique_ptr<llvm::Module> module;
  bool handBlocked = false;  // only direct convolutions and packed GEMMs without epilogues
};
Expected<EmittedModule> emitModule(const CodeBatch& batch, const CpuSubtarget& subtarget);

// An object file (ELF on Linux) defining one global function per kernel and
// direct convolution and packed GEMM, with the ABI of llvm_emitter.h, as position-independent code. It calls libm
// (erff, expf, ...) and, where the subtarget has vector math, libmvec (_ZGVdN8v_expf, ...),
// which the final link must provide.
struct ObjectCode {
  std::string bytes;
  std::string optimizedIR;  // filled when options.keepOptimizedIR
};
Expected<ObjectCode> emitObject(const CodeBatch& batch, const CpuSubtarget& subtarget,
                                const CompileOptions& options = {});
// The same from an emitted module, which it optimises and consumes.
Expected<ObjectCode> emitObject(EmittedModule emitted, const CpuSubtarget& subtarget, const CompileOptions& options);

// The module's text (as `opt -S` prints it).
std::string printModule(const llvm::Module& module);

}  // namespace kfuse::cpu
