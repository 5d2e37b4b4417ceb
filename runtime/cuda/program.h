// What a plan becomes for an NVIDIA GPU, as data: compiled modules (CUBIN
// for the target architecture, PTX beside it for newer devices), and per
// plan step what to launch: cuBLASLt matmuls with their descriptor
// parameters, generated kernels with their grids and arguments (plan
// buffers), or the host (reference ops). codegen/cuda builds it; the
// runtime (runner.h) loads and runs it without NVRTC or the code generator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace kfuse::cuda {

// One NVRTC compilation unit's output.
struct ModuleImage {
  std::string name;   // the first step it serves, for messages
  std::string cubin;  // for CudaProgram::arch
  std::string ptx;    // for devices newer than arch (JIT-compiled by the driver)
};

struct KernelLaunch {
  int module = -1;
  std::string entry;  // an extern "C" __global__ function of the module
  uint32_t grid = 1, block = 256;
  uint32_t sharedBytes = 0;  // dynamic shared memory
  // The kernel meets all its blocks at a grid barrier: it is launched
  // cooperatively, its grid clamped to the blocks the device holds at once
  // (the kernel is written for any grid size).
  bool cooperative = false;
  std::vector<int> args;       // plan buffer per pointer parameter, in order
  int64_t scratch = -1;        // offset of the scratch parameter in the scratch area; -1: none
  std::string what;            // "@softmax, @adam_part0": what it computes, for reports
};

// A cuBLASLt matmul in cuBLASLt's column-major terms:
//   D[m x n] = epilogue(opA(A)[m x k] @ opB(B)[k x n] (+ bias[m]))
// for `batch` strided matrices. A row-major plan GEMM C = op(a) @ op(b)
// becomes D = C^T = op(b)^T @ op(a)^T: cuBLASLt's A is the plan's b.
struct MatmulCall {
  int a = -1, b = -1, d = -1;  // plan buffers
  int bias = -1;               // bias vector of length m, or -1
  int aux = -1;                // GELU input (GELU_AUX forms), ld = m, or -1
  DType dtype = DType::F32;    // of A, B, D, bias and aux
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldd = 0;
  int64_t batch = 1;
  int64_t strideA = 0, strideB = 0, strideD = 0;  // elements between batch matrices
  uint32_t epilogue = 1;       // cublasLtEpilogue_t (1: CUBLASLT_EPILOGUE_DEFAULT)
  std::string epilogueName = "DEFAULT";
};

enum class StepMode : uint8_t { Device, Host };

struct StepProgram {
  StepMode mode = StepMode::Device;
  std::optional<MatmulCall> matmul;  // runs first
  std::vector<KernelLaunch> launches;  // then these, in order
  std::string note;                  // how the step was compiled, for reports
};

constexpr size_t kMatmulWorkspaceBytes = 32u << 20;

// CudaProgram::arch of a program compiled for the simulator (its modules
// are host shared objects, runtime/cuda/sim/module.h): only the simulated
// driver runs it, and the simulated driver runs nothing else.
inline constexpr const char* kSimulatorArch = "simulator";

struct CudaProgram {
  std::string arch;  // "sm_90"
  std::vector<ModuleImage> modules;
  std::vector<StepProgram> steps;  // one per plan step
  // Zero-initialised once; kernels leave it zeroed (counters of the
  // last-block protocol and grid barriers reset themselves).
  size_t scratchBytes = 0;
  size_t matmulWorkspaceBytes = kMatmulWorkspaceBytes;  // cuBLASLt workspace

  // Device launches one run of the plan performs: kernels and matmuls.
  size_t deviceLaunches() const;
  size_t hostSteps() const;
};

// The one device allocation a CudaRunner makes: the plan's regions (ending
// at `regionsEnd`), then the zeroed scratch, then cuBLASLt's workspace when
// any step calls cuBLASLt. `kfuse memory --target=cuda` reports the same.
struct DeviceAllocation {
  uint64_t scratchOffset = 0, workspaceOffset = 0;
  uint64_t workspaceBytes = 0;  // 0 when no step calls cuBLASLt
  uint64_t total = 0;
};
DeviceAllocation deviceAllocation(uint64_t regionsEnd, size_t scratchBytes, size_t matmulWorkspaceBytes,
                                  const std::vector<StepProgram>& steps);

// One line per step: its matmul and launches, for kfuse's reports.
std::string describeProgram(const CudaProgram& p);

}  // namespace kfuse::cuda
