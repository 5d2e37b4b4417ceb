// Compiles kernels for a CPU this process runs on, with LLVM 14's ORC
// LLJIT, and hands back C function pointers (llvm_emitter.h's ABI).
//
//   KF_ASSIGN_OR_RETURN(cpu::CpuTarget target, cpu::cpuTargetFor(""));  // this machine
//   KF_ASSIGN_OR_RETURN(auto jit, cpu::CpuJit::create(target));
//   KF_ASSIGN_OR_RETURN(auto compiled, jit->compile(kernels));
//   compiled.functions[0](buffers);
//
// Each compile() call is one batch, linked into its own JITDylib, so batches
// never clash on kernel names. Each distinct generated function of the batch
// is its own object file, named after a hash of its code (not the kernel's
// name), compiled (O2 by default: compile.h) on one thread per CPU this process may
// use, or taken from the on-disk cache (object_cache.h) when an earlier run
// compiled the same code for the same CPU with the same kfuse. Functions
// alike share one object: a 12-layer transformer's layers compile once.
// libm and libc symbols resolve from the process. Function pointers
// stay valid while the CpuJit lives.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "codegen/cpu/compile.h"
#include "codegen/cpu/llvm_emitter.h"
#include "codegen/cpu/object_cache.h"
#include "codegen/cpu/subtarget.h"

namespace llvm::orc {
class LLJIT;
class JITDylib;
}

namespace kfuse::cpu {

// The symbol each function of a batch is compiled under, in batch order.
struct FunctionNames {
  std::vector<std::string> kernels, convs, gemms;
};
struct JitUnits;  // jit.cpp: a batch's distinct functions
// Their code: the symbol each one is defined under, and the object file
// defining each symbol (units whose emitted code is the same share both).
struct JitObjects {
  std::map<std::string, std::string> symbols;  // by unit name
  std::map<std::string, std::string> objects;  // by symbol
};

struct CompiledKernels {
  std::vector<KernelFn> functions;  // in the order of the kernels compiled
  std::vector<KernelFn> convs;      // in the order of the direct convolutions compiled
  std::vector<KernelFn> gemms;      // in the order of the packed GEMMs compiled
  std::string optimizedIR;          // filled when CompileOptions::keepOptimizedIR
  size_t compiled = 0;              // functions LLVM compiled: one per distinct emitted code
  size_t cacheHits = 0;             // distinct functions loaded from the object cache
};

class CpuJit {
 public:
  // A JIT for `target`: this machine (cpuTargetFor("")) or a CPU whose
  // features it has (an older one, to run its code here). Refused, naming
  // what is missing, when this machine lacks a feature of `target`.
  // `cacheDir`: the object cache's folder ("": none).
  static Expected<std::unique_ptr<CpuJit>> create(const CpuTarget& target,
                                                  const std::string& cacheDir = ObjectCache::defaultDir());
  // A JIT whose code follows `subtarget`'s decisions (subtargetOf a target,
  // or one a test changed to exercise a choice this machine would not make);
  // refused where this machine lacks one of its features.
  static Expected<std::unique_ptr<CpuJit>> create(CpuSubtarget subtarget,
                                                  const std::string& cacheDir = ObjectCache::defaultDir());
  ~CpuJit();
  CpuJit(const CpuJit&) = delete;
  CpuJit& operator=(const CpuJit&) = delete;

  // Compiles one batch. Errors (a kernel that does not verify, an op the
  // backend lacks, a symbol that does not resolve) name the kernel. Safe to
  // call from several threads. With keepOptimizedIR or assembly, the batch
  // is one module, compiled on this thread and never cached.
  Expected<CompiledKernels> compile(std::span<const kernel::Kernel> kernels, const CompileOptions& options = {}) {
    return compile(CodeBatch{kernels, {}}, options);
  }
  Expected<CompiledKernels> compile(const CodeBatch& batch, const CompileOptions& options = {});

  const CpuSubtarget& subtarget() const { return subtarget_; }

 private:
  CpuJit(CpuSubtarget subtarget, std::unique_ptr<llvm::orc::LLJIT> jit, std::unique_ptr<llvm::TargetMachine> tm,
         std::string cacheDir);
  Expected<CompiledKernels> compileOneModule(const CodeBatch& batch, const CompileOptions& options);
  Expected<JitObjects> objectsOf(const JitUnits& units, const CompileOptions& options, CompiledKernels& stats);
  Expected<CompiledKernels> lookupAll(llvm::orc::JITDylib& dylib, const CodeBatch& batch, const FunctionNames& names,
                                      CompiledKernels out);

  CpuSubtarget subtarget_;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::unique_ptr<llvm::TargetMachine> tm_;  // the optimiser's cost models; not thread-safe
  ObjectCache cache_;
  std::mutex mutex_;
  int batches_ = 0;
};

}  // namespace kfuse::cpu
