// A plan -> a CudaProgram (runtime/cuda/program.h): every step emitted as a
// compilation unit (step_emitter.h, gemm_emitter.h) or a cuBLASLt call
// (matmul_match.h), identical units compiled once, all of them by NVRTC in
// parallel through the on-disk cache (compile_cache.h).
#pragma once

#include <string>
#include <vector>

#include "codegen/cuda/compile_cache.h"
#include "codegen/cuda/host_compiler.h"
#include "codegen/cuda/step_emitter.h"
#include "runtime/cuda/program.h"

namespace kfuse::cuda {

// How GEMM steps run:
//   Library    cuBLASLt (with a matched epilogue, else the epilogue kernel
//              as a second launch); generated kernels only where cuBLASLt
//              cannot (batch strides that do not flatten);
//   Generated  always the generated GEMM with its epilogue (one launch);
//   Auto       cuBLASLt when the epilogue matches (or there is none), the
//              generated GEMM for other epilogues up to
//              `generatedGemmMaxFlops`, cuBLASLt + the epilogue launch above.
enum class GemmPolicy : uint8_t { Auto, Library, Generated };

struct CudaCompileOptions {
  std::string arch = "sm_90";
  StepEmitOptions emit;
  GemmPolicy gemm = GemmPolicy::Auto;
  double generatedGemmMaxFlops = 1u << 28;  // 2*m*n*k*batch; to be tuned on GPUs (docs/cuda.md)
  std::string cacheDir = CompileCache::defaultDir();  // "" disables the cache
  int compileThreads = 0;                             // 0: one per hardware thread
  bool lineInfo = false;
  // For the simulator (docs/cuda.md): every unit compiled as host C++ by
  // `host` instead of NVRTC; the program's arch is kSimulatorArch and only
  // the simulated driver loads it.
  bool simulate = false;
  HostCompileOptions host;
};


struct CudaCompileReport {
  CompileStats nvrtc;
  size_t generatedGemms = 0, libraryGemms = 0, matchedEpilogues = 0;
};

// The units of a plan before NVRTC: one per distinct source, in step order,
// with the step programs that launch them (module indices into the result).
struct EmittedProgram {
  std::vector<StepSource> units;
  std::vector<StepProgram> steps;
  size_t scratchBytes = 0;
};
Expected<EmittedProgram> emitProgram(const Plan& plan, const CudaCompileOptions& opts,
                                     CudaCompileReport* report = nullptr);

// emitProgram + NVRTC. Errors: an unsupported architecture, a step the
// backend cannot emit (naming it), an NVRTC failure (the unit's kernels and
// NVRTC's log).
Expected<CudaProgram> compileProgram(const Plan& plan, const CudaCompileOptions& opts,
                                     CudaCompileReport* report = nullptr);
// The NVRTC half of compileProgram, for callers that keep the emitted
// source too (kfuse compile stores it in packages).
Expected<CudaProgram> compileEmitted(EmittedProgram emitted, const CudaCompileOptions& opts,
                                     CompileStats* stats = nullptr);

// Every unit's CUDA C, each preceded by a line naming it (--dump-cuda).
std::string programSource(const EmittedProgram& p);

}  // namespace kfuse::cuda
