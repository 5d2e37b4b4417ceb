// The CUDA driver API and cuBLASLt, opened with dlopen on first use, so
// that kfuse, its tests and the CPU targets run on machines with no NVIDIA
// driver. Only the toolkit's headers are used at build time (for types and
// the versioned symbol names, e.g. cuMemAlloc -> cuMemAlloc_v2).
#pragma once

#include <cublasLt.h>
#include <cuda.h>

#include <string>

#include "ir/support/expected.h"

namespace kfuse::cuda {

struct DriverApi {
  decltype(&::cuInit) init;
  decltype(&::cuGetErrorString) getErrorString;
  decltype(&::cuDeviceGetCount) deviceGetCount;
  decltype(&::cuDeviceGet) deviceGet;
  decltype(&::cuDeviceGetAttribute) deviceGetAttribute;
  decltype(&::cuDevicePrimaryCtxRetain) primaryCtxRetain;
  decltype(&::cuCtxSetCurrent) ctxSetCurrent;
  decltype(&::cuModuleLoadData) moduleLoadData;
  decltype(&::cuModuleUnload) moduleUnload;
  decltype(&::cuModuleGetFunction) moduleGetFunction;
  decltype(&::cuFuncSetAttribute) funcSetAttribute;
  decltype(&::cuOccupancyMaxActiveBlocksPerMultiprocessor) occupancy;
  decltype(&::cuMemGetInfo) memGetInfo;
  decltype(&::cuMemAlloc) memAlloc;
  decltype(&::cuMemFree) memFree;
  decltype(&::cuMemcpyHtoD) memcpyHtoD;
  decltype(&::cuMemcpyDtoH) memcpyDtoH;
  decltype(&::cuMemcpyDtoD) memcpyDtoD;
  decltype(&::cuMemsetD8) memsetD8;
  decltype(&::cuMemsetD8Async) memsetD8Async;
  decltype(&::cuMemsetD16Async) memsetD16Async;
  decltype(&::cuMemsetD32Async) memsetD32Async;
  decltype(&::cuStreamCreate) streamCreate;
  decltype(&::cuStreamDestroy) streamDestroy;
  decltype(&::cuStreamSynchronize) streamSynchronize;
  decltype(&::cuLaunchKernel) launchKernel;
  decltype(&::cuLaunchCooperativeKernel) launchCooperativeKernel;
  decltype(&::cuStreamBeginCapture) streamBeginCapture;
  decltype(&::cuStreamEndCapture) streamEndCapture;
  decltype(&::cuGraphInstantiate) graphInstantiate;
  decltype(&::cuGraphLaunch) graphLaunch;
  decltype(&::cuGraphExecDestroy) graphExecDestroy;
  decltype(&::cuGraphDestroy) graphDestroy;
  // Per-step device times (CudaRunnerOptions::profile).
  decltype(&::cuEventCreate) eventCreate;
  decltype(&::cuEventRecord) eventRecord;
  decltype(&::cuEventSynchronize) eventSynchronize;
  decltype(&::cuEventElapsedTime) eventElapsedTime;
  decltype(&::cuEventDestroy) eventDestroy;

  // "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"
  std::string describe(const char* call, CUresult r) const;
};

struct BlasLtApi {
  decltype(&::cublasLtCreate) create;
  decltype(&::cublasLtDestroy) destroy;
  decltype(&::cublasLtMatmulDescCreate) descCreate;
  decltype(&::cublasLtMatmulDescDestroy) descDestroy;
  decltype(&::cublasLtMatmulDescSetAttribute) descSetAttribute;
  decltype(&::cublasLtMatrixLayoutCreate) layoutCreate;
  decltype(&::cublasLtMatrixLayoutDestroy) layoutDestroy;
  decltype(&::cublasLtMatrixLayoutSetAttribute) layoutSetAttribute;
  decltype(&::cublasLtMatmulPreferenceCreate) preferenceCreate;
  decltype(&::cublasLtMatmulPreferenceDestroy) preferenceDestroy;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) preferenceSetAttribute;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) algoGetHeuristic;
  decltype(&::cublasLtMatmul) matmul;
};

// The driver, initialised, with at least one device; loaded once per
// process. Errors say why there is none: "libcuda.so.1 cannot be loaded (no
// NVIDIA driver on this machine): ...", "no CUDA device: ...".
Expected<const DriverApi*> loadDriver();
// cuBLASLt (libcublasLt.so.13, or libcublasLt.so), loaded once.
Expected<const BlasLtApi*> loadBlasLt();

}  // namespace kfuse::cuda
