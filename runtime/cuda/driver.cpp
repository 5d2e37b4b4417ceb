#include "runtime/cuda/driver.h"

#include <dlfcn.h>

#include <mutex>

#include "ir/support/strings.h"

namespace kfuse::cuda {
namespace {

// Stringifies after macro expansion: the header maps cuMemAlloc to
// cuMemAlloc_v2, the symbol that has today's signature.
#define KF_SYMBOL_NAME2(x) #x
#define KF_SYMBOL_NAME(x) KF_SYMBOL_NAME2(x)
#define KF_LOAD(api, lib, field, fn)                                                       \
  do {                                                                                     \
    void* sym = dlsym(lib, KF_SYMBOL_NAME(fn));                                            \
    if (!sym) return Error(str(what, " lacks ", KF_SYMBOL_NAME(fn), " (too old a version)")); \
    (api).field = reinterpret_cast<decltype((api).field)>(sym);                            \
  } while (0)

void* openFirst(std::initializer_list<const char*> names, std::string& errors) {
  for (const char* n : names) {
    if (void* lib = dlopen(n, RTLD_NOW | RTLD_LOCAL)) return lib;
    const char* e = dlerror();
    errors += str(errors.empty() ? "" : "; ", e ? e : n);
  }
  return nullptr;
}

Expected<DriverApi> openDriver() {
  const char* what = "libcuda.so.1";
  std::string errors;
  void* lib = openFirst({"libcuda.so.1", "libcuda.so"}, errors);
  if (!lib) return Error(str("libcuda.so.1 cannot be loaded (no NVIDIA driver on this machine): ", errors));
  DriverApi api{};
  KF_LOAD(api, lib, init, cuInit);
  KF_LOAD(api, lib, getErrorString, cuGetErrorString);
  KF_LOAD(api, lib, deviceGetCount, cuDeviceGetCount);
  KF_LOAD(api, lib, deviceGet, cuDeviceGet);
  KF_LOAD(api, lib, deviceGetAttribute, cuDeviceGetAttribute);
  KF_LOAD(api, lib, primaryCtxRetain, cuDevicePrimaryCtxRetain);
  KF_LOAD(api, lib, ctxSetCurrent, cuCtxSetCurrent);
  KF_LOAD(api, lib, moduleLoadData, cuModuleLoadData);
  KF_LOAD(api, lib, moduleUnload, cuModuleUnload);
  KF_LOAD(api, lib, moduleGetFunction, cuModuleGetFunction);
  KF_LOAD(api, lib, funcSetAttribute, cuFuncSetAttribute);
  KF_LOAD(api, lib, occupancy, cuOccupancyMaxActiveBlocksPerMultiprocessor);
  KF_LOAD(api, lib, memGetInfo, cuMemGetInfo);
  KF_LOAD(api, lib, memAlloc, cuMemAlloc);
  KF_LOAD(api, lib, memFree, cuMemFree);
  KF_LOAD(api, lib, memcpyHtoD, cuMemcpyHtoD);
  KF_LOAD(api, lib, memcpyDtoH, cuMemcpyDtoH);
  KF_LOAD(api, lib, memcpyDtoD, cuMemcpyDtoD);
  KF_LOAD(api, lib, memsetD8, cuMemsetD8);
  KF_LOAD(api, lib, memsetD8Async, cuMemsetD8Async);
  KF_LOAD(api, lib, memsetD16Async, cuMemsetD16Async);
  KF_LOAD(api, lib, memsetD32Async, cuMemsetD32Async);
  KF_LOAD(api, lib, streamCreate, cuStreamCreate);
  KF_LOAD(api, lib, streamDestroy, cuStreamDestroy);
  KF_LOAD(api, lib, streamSynchronize, cuStreamSynchronize);
  KF_LOAD(api, lib, launchKernel, cuLaunchKernel);
  KF_LOAD(api, lib, launchCooperativeKernel, cuLaunchCooperativeKernel);
  KF_LOAD(api, lib, streamBeginCapture, cuStreamBeginCapture);
  KF_LOAD(api, lib, streamEndCapture, cuStreamEndCapture);
  KF_LOAD(api, lib, graphInstantiate, cuGraphInstantiate);
  KF_LOAD(api, lib, graphLaunch, cuGraphLaunch);
  KF_LOAD(api, lib, graphExecDestroy, cuGraphExecDestroy);
  KF_LOAD(api, lib, graphDestroy, cuGraphDestroy);
  KF_LOAD(api, lib, eventCreate, cuEventCreate);
  KF_LOAD(api, lib, eventRecord, cuEventRecord);
  KF_LOAD(api, lib, eventSynchronize, cuEventSynchronize);
  KF_LOAD(api, lib, eventElapsedTime, cuEventElapsedTime);
  KF_LOAD(api, lib, eventDestroy, cuEventDestroy);
  if (CUresult r = api.init(0); r != CUDA_SUCCESS) return Error(str("no CUDA device: ", api.describe("cuInit", r)));
  int count = 0;
  if (CUresult r = api.deviceGetCount(&count); r != CUDA_SUCCESS)
    return Error(str("no CUDA device: ", api.describe("cuDeviceGetCount", r)));
  if (count == 0) return Error("no CUDA device: the driver is loaded but reports no device");
  return api;
}

Expected<BlasLtApi> openBlasLt() {
  const char* what = "libcublasLt";
  std::string errors;
  void* lib = openFirst({"libcublasLt.so.13", "libcublasLt.so"}, errors);
  if (!lib) return Error(str("cuBLASLt cannot be loaded: ", errors));
  BlasLtApi api{};
  KF_LOAD(api, lib, create, cublasLtCreate);
  KF_LOAD(api, lib, destroy, cublasLtDestroy);
  KF_LOAD(api, lib, descCreate, cublasLtMatmulDescCreate);
  KF_LOAD(api, lib, descDestroy, cublasLtMatmulDescDestroy);
  KF_LOAD(api, lib, descSetAttribute, cublasLtMatmulDescSetAttribute);
  KF_LOAD(api, lib, layoutCreate, cublasLtMatrixLayoutCreate);
  KF_LOAD(api, lib, layoutDestroy, cublasLtMatrixLayoutDestroy);
  KF_LOAD(api, lib, layoutSetAttribute, cublasLtMatrixLayoutSetAttribute);
  KF_LOAD(api, lib, preferenceCreate, cublasLtMatmulPreferenceCreate);
  KF_LOAD(api, lib, preferenceDestroy, cublasLtMatmulPreferenceDestroy);
  KF_LOAD(api, lib, preferenceSetAttribute, cublasLtMatmulPreferenceSetAttribute);
  KF_LOAD(api, lib, algoGetHeuristic, cublasLtMatmulAlgoGetHeuristic);
  KF_LOAD(api, lib, matmul, cublasLtMatmul);
  return api;
}

}  // namespace

std::string DriverApi::describe(const char* call, CUresult r) const {
  const char* text = nullptr;
  if (getErrorString) getErrorString(r, &text);
  return str(call, ": error ", static_cast<int>(r), text ? str(" (", text, ")") : std::string());
}

// Loaded once; a failure is remembered (the machine will not grow a driver).
Expected<const DriverApi*> loadDriver() {
  static std::once_flag once;
  static Expected<DriverApi> api = Error("not loaded");
  std::call_once(once, [] { api = openDriver(); });
  if (!api) return api.error();
  return &*api;
}

Expected<const BlasLtApi*> loadBlasLt() {
  static std::once_flag once;
  static Expected<BlasLtApi> api = Error("not loaded");
  std::call_once(once, [] { api = openBlasLt(); });
  if (!api) return api.error();
  return &*api;
}

}  // namespace kfuse::cuda
