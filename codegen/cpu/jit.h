// Compiles kernels for a CPU this process runs on, with LLVM 14's ORC
// LLJIT, and hands back C function pointers (llvm_emitter.h's ABI).
//
//   KF_ASSIGN_OR_RETURN(cpu::CpuTarget target, cpu::cpuTargetFor(""));  // this machine
//   KF_ASSIGN_OR_RETURN(auto jit, cpu::CpuJit::create(target));
//   KF_ASSIGN_OR_RETURN(auto compiled, jit->compile(kernels));
//   compiled.functions[0](buffers);
//
// Each compile() call is one batch: one LLVM module, optimised as a whole
// (O3 by default) and linked into its own JITDylib, so batches never clash
// on kernel names. libm and libc symbols resolve from the process. Function
// pointers stay valid while the CpuJit lives.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "codegen/cpu/compile.h"
#include "codegen/cpu/llvm_emitter.h"
#include "codegen/cpu/subtarget.h"

namespace llvm::orc {
class LLJIT;
}

namespace kfuse::cpu {

struct CompiledKernels {
  std::vector<KernelFn> functions;  // in the order of the kernels compiled
  std::vector<KernelFn> convs;      // in the order of the direct convolutions compiled
  std::vector<KernelFn> gemms;      // in the order of the packed GEMMs compiled
  std::string optimizedIR;          // filled when CompileOptions::keepOptimizedIR
};

class CpuJit {
 public:
  // A JIT for `target`: this machine (cpuTargetFor("")) or a CPU whose
  // features it has (an older one, to run its code here). Refused, naming
  // what is missing, when this machine lacks a feature of `target`.
  static Expected<std::unique_ptr<CpuJit>> create(const CpuTarget& target);
  ~CpuJit();
  CpuJit(const CpuJit&) = delete;
  CpuJit& operator=(const CpuJit&) = delete;

  // Compiles one batch. Errors (a kernel that does not verify, an op the
  // backend lacks, a symbol that does not resolve) name the kernel. Safe to
  // call from several threads; batches compile one at a time.
  Expected<CompiledKernels> compile(std::span<const kernel::Kernel> kernels, const CompileOptions& options = {}) {
    return compile(CodeBatch{kernels, {}}, options);
  }
  Expected<CompiledKernels> compile(const CodeBatch& batch, const CompileOptions& options = {});

  const CpuSubtarget& subtarget() const { return subtarget_; }

 private:
  CpuJit(CpuSubtarget subtarget, std::unique_ptr<llvm::orc::LLJIT> jit, std::unique_ptr<llvm::TargetMachine> tm);

  CpuSubtarget subtarget_;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::unique_ptr<llvm::TargetMachine> tm_;  // the optimiser's cost models; not thread-safe
  std::mutex mutex_;
  int batches_ = 0;
};

}  // namespace kfuse::cpu
