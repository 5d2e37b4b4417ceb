// CUDA C -> CUBIN (for the target architecture) and PTX (kept for devices
// newer than it) with NVRTC, at plan-compile time. No GPU is needed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/support/expected.h"

namespace kfuse::cuda {

// The architectures kfuse compiles for: sm_80 (A100), sm_89 (L4, Ada),
// sm_90 (H100/H200, the default). Anything else is refused with the list.
Expected<std::string> checkArch(std::string_view arch);
std::vector<std::string> supportedArchs();

struct NvrtcOptions {
  std::string arch = "sm_90";
  bool lineInfo = false;   // -lineinfo, for profilers
  // ptxas reports register spills as warnings. Off by default: with NVRTC
  // 13.0 one generated GEMM with a grid-barrier epilogue reports a 4-byte
  // spill that nvcc does not (docs/cuda.md), and a non-empty log fails the
  // compile test.
  bool warnOnSpills = false;
};

struct CompiledUnit {
  std::string cubin;
  std::string ptx;
  std::string log;  // NVRTC's log: warnings when the compile succeeded
};

// The option strings NVRTC gets (part of the cache key).
std::vector<std::string> nvrtcOptionList(const NvrtcOptions& o);
// "13.0": the NVRTC the process loaded (part of the cache key).
std::string nvrtcVersion();

// Compiles one unit. `what` names it in errors ("step fused_add (@fused_add)"),
// which then quote NVRTC's log lines.
Expected<CompiledUnit> compileUnit(const std::string& source, const std::string& what, const NvrtcOptions& opts);

}  // namespace kfuse::cuda
