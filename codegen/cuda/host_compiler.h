// The simulator's compiler (docs/cuda.md, "The simulator"): a unit of
// emitted CUDA C -> a shared object for the host, compiled by g++ with the
// simulator's device header (runtime/cuda/sim/device.h) included first and
// the unit's entry table appended, wrapped as a simulator module image
// (runtime/cuda/sim/module.h). It takes the place of NVRTC when a program
// is compiled for the simulator (CudaCompileOptions::simulate), at the same
// point: plan-compile time, so the runtime only loads what it is given.
//
// The unit is compiled as ISO C++17 at -O2 for the baseline x86-64 ISA:
// no FMA contraction and IEEE arithmetic, so a simulated run's bits do
// not depend on the machine (the GPU's own contractions and math
// functions' ulps are beyond the simulator, docs/cuda.md).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "codegen/cuda/nvrtc_compiler.h"

namespace kfuse::cuda {

struct HostCompileOptions {
  std::string compiler = "g++";  // found on PATH
};

// The compiler's identity for the compile cache: its version, the flags
// and the device headers' text.
Expected<std::string> hostCompilerIdentity(const HostCompileOptions& opts);

// Compiles one unit whose `extern "C" __global__` entries are `entries`.
// The result's `cubin` is the module image (`ptx` empty); errors name the
// unit (`what`) and quote the compiler's messages.
Expected<CompiledUnit> compileHostUnit(const std::string& source, const std::vector<std::string>& entries,
                                       const std::string& what, const HostCompileOptions& opts);

// The device headers as text (generated from runtime/cuda/sim at build time).
std::string_view simAbiHeader();
std::string_view simDeviceHeader();

}  // namespace kfuse::cuda
