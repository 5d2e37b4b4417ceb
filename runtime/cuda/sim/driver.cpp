#include "runtime/cuda/sim/driver.h"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ir/support/strings.h"
#include "runtime/cuda/sim/memory.h"
#include "runtime/cuda/sim/module.h"

namespace kfuse::cuda::sim {
namespace {

// The simulated device's objects; the driver's opaque handles point at them.
struct SimModule {
  std::unique_ptr<Module> module;
  std::vector<std::unique_ptr<struct SimFunction>> functions;
};

struct SimFunction {
  SimModule* module = nullptr;
  const kfsim_entry* entry = nullptr;
  size_t maxDynamicShared = kDefaultSharedBytes;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
};

using Op = std::function<CUresult()>;

struct SimStream {
  bool capturing = false;
  bool captureFailed = false;
  std::vector<Op> captured;
};

struct SimGraph {
  std::vector<Op> ops;
};

struct SimEvent {
  std::chrono::steady_clock::time_point at{};
  bool recorded = false;
};

int gContext = 0;  // what CUcontext points at (one device, one context)

thread_local Schedule tSchedule;
thread_local std::string tLastError;
thread_local CUresult tLastResult = CUDA_SUCCESS;

template <typename T, typename H>
T* from(H handle) {
  return reinterpret_cast<T*>(handle);
}

const char* errorName(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS: return "no error";
    case CUDA_ERROR_INVALID_VALUE: return "invalid argument";
    case CUDA_ERROR_OUT_OF_MEMORY: return "out of memory";
    case CUDA_ERROR_INVALID_IMAGE: return "device kernel image is invalid";
    case CUDA_ERROR_INVALID_HANDLE: return "invalid resource handle";
    case CUDA_ERROR_NOT_FOUND: return "named symbol not found";
    case CUDA_ERROR_ILLEGAL_ADDRESS: return "an illegal memory access was encountered";
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: return "too many resources requested for launch";
    case CUDA_ERROR_LAUNCH_FAILED: return "unspecified launch failure";
    case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE: return "too many blocks in cooperative launch";
    case CUDA_ERROR_NOT_SUPPORTED: return "operation not supported";
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: return "operation failed due to a previous error during capture";
    case CUDA_ERROR_ILLEGAL_STATE: return "the operation cannot be performed in the present state";
    default: return "error";
  }
}

// ---- device, context ----

CUresult simInit(unsigned int) { return CUDA_SUCCESS; }

CUresult simGetErrorString(CUresult r, const char** text) {
  // The simulator's explanation of this thread's last failure, when that
  // is what is being asked about.
  thread_local std::string message;
  message = errorName(r);
  if (r == tLastResult && !tLastError.empty()) message += str(": ", tLastError);
  *text = message.c_str();
  return CUDA_SUCCESS;
}

CUresult simDeviceGetCount(int* n) {
  *n = 1;
  return CUDA_SUCCESS;
}

CUresult simDeviceGet(CUdevice* d, int ordinal) {
  if (ordinal != 0) return failWith(CUDA_ERROR_INVALID_VALUE, str("the simulator has one device, not ", ordinal + 1));
  *d = 0;
  return CUDA_SUCCESS;
}

CUresult simDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice) {
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = kMultiprocessors; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = static_cast<int>(kMaxThreadsPerBlock); return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: *v = 1; return CUDA_SUCCESS;
    default: return failWith(CUDA_ERROR_NOT_SUPPORTED, str("the simulator does not model device attribute ", a));
  }
}

CUresult simPrimaryCtxRetain(CUcontext* c, CUdevice) {
  *c = reinterpret_cast<CUcontext>(&gContext);
  return CUDA_SUCCESS;
}

CUresult simCtxSetCurrent(CUcontext) { return CUDA_SUCCESS; }

// ---- modules ----

CUresult simModuleLoadData(CUmodule* out, const void* image) {
  auto m = Module::load(image);
  if (!m) return failWith(CUDA_ERROR_INVALID_IMAGE, m.error().message());
  auto* sm = new SimModule();
  sm->module = std::move(*m);
  *out = reinterpret_cast<CUmodule>(sm);
  return CUDA_SUCCESS;
}

CUresult simModuleUnload(CUmodule m) {
  delete from<SimModule>(m);
  return CUDA_SUCCESS;
}

CUresult simModuleGetFunction(CUfunction* out, CUmodule m, const char* name) {
  SimModule* sm = from<SimModule>(m);
  if (!sm) return failWith(CUDA_ERROR_INVALID_HANDLE, "no module");
  const kfsim_entry* e = sm->module->entry(name);
  if (!e) return failWith(CUDA_ERROR_NOT_FOUND, str(sm->module->name(), " has no entry ", name));
  auto f = std::make_unique<SimFunction>();
  f->module = sm;
  f->entry = e;
  *out = reinterpret_cast<CUfunction>(f.get());
  sm->functions.push_back(std::move(f));
  return CUDA_SUCCESS;
}

CUresult simFuncSetAttribute(CUfunction fn, CUfunction_attribute a, int value) {
  SimFunction* f = from<SimFunction>(fn);
  if (a != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
    return failWith(CUDA_ERROR_NOT_SUPPORTED, str("the simulator does not model function attribute ", a));
  if (value < 0 || static_cast<size_t>(value) > kMaxSharedBytes)
    return failWith(CUDA_ERROR_INVALID_VALUE, str(value, " bytes of dynamic shared memory exceed the device's ",
                                                  kMaxSharedBytes));
  f->maxDynamicShared = static_cast<size_t>(value);
  return CUDA_SUCCESS;
}

CUresult simOccupancy(int* blocks, CUfunction, int blockSize, size_t) {
  *blocks = maxActiveBlocksPerMultiprocessor(static_cast<unsigned>(std::max(blockSize, 0)));
  return CUDA_SUCCESS;
}

// ---- memory ----

CUresult simMemGetInfo(size_t* freeBytes, size_t* total) {
  const size_t bytes = static_cast<size_t>(::sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  *freeBytes = bytes;
  *total = bytes;
  return CUDA_SUCCESS;
}

CUresult simMemAlloc(CUdeviceptr* p, size_t bytes) {
  if (bytes == 0) return failWith(CUDA_ERROR_INVALID_VALUE, "cuMemAlloc of 0 bytes");
  void* m = allocateRegion(bytes, 256, RegionKind::Device);
  if (!m) return failWith(CUDA_ERROR_OUT_OF_MEMORY, str("the host cannot hold ", bytes, " more bytes"));
  *p = reinterpret_cast<CUdeviceptr>(m);
  return CUDA_SUCCESS;
}

CUresult simMemFree(CUdeviceptr p) {
  if (regionSize(reinterpret_cast<void*>(p)) == 0 && p != 0 &&
      !insideRegion(static_cast<uintptr_t>(p), 0, RegionKind::Device))
    return failWith(CUDA_ERROR_INVALID_VALUE, "cuMemFree of a pointer cuMemAlloc did not return");
  freeRegion(reinterpret_cast<void*>(p));
  return CUDA_SUCCESS;
}

CUresult checkRange(const char* call, CUdeviceptr p, size_t bytes) {
  if (isDeviceRange(reinterpret_cast<const void*>(p), bytes)) return CUDA_SUCCESS;
  return failWith(CUDA_ERROR_INVALID_VALUE, str(call, " of ", bytes, " bytes at 0x", std::hex, p, std::dec,
                                                " reaches outside the device's allocations"));
}

CUresult simMemcpyHtoD(CUdeviceptr dst, const void* src, size_t n) {
  if (CUresult r = checkRange("cuMemcpyHtoD", dst, n)) return r;
  std::memcpy(reinterpret_cast<void*>(dst), src, n);
  return CUDA_SUCCESS;
}

CUresult simMemcpyDtoH(void* dst, CUdeviceptr src, size_t n) {
  if (CUresult r = checkRange("cuMemcpyDtoH", src, n)) return r;
  std::memcpy(dst, reinterpret_cast<const void*>(src), n);
  return CUDA_SUCCESS;
}

CUresult simMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  if (CUresult r = checkRange("cuMemcpyDtoD", dst, n)) return r;
  if (CUresult r = checkRange("cuMemcpyDtoD", src, n)) return r;
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
  return CUDA_SUCCESS;
}

template <typename T>
CUresult memsetOn(const char* call, CUdeviceptr dst, T value, size_t n, CUstream stream) {
  if (CUresult r = checkRange(call, dst, n * sizeof(T))) return r;
  if (dst % sizeof(T) != 0)
    return failWith(CUDA_ERROR_INVALID_VALUE, str(call, " at an address not aligned to ", sizeof(T), " bytes"));
  return enqueue(stream, [dst, value, n] {
    T* p = reinterpret_cast<T*>(dst);
    for (size_t i = 0; i < n; ++i) p[i] = value;
    return CUDA_SUCCESS;
  });
}

CUresult simMemsetD8(CUdeviceptr d, unsigned char v, size_t n) { return memsetOn("cuMemsetD8", d, v, n, nullptr); }
CUresult simMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
  return memsetOn("cuMemsetD8Async", d, v, n, s);
}
CUresult simMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream s) {
  return memsetOn("cuMemsetD16Async", d, v, n, s);
}
CUresult simMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream s) {
  return memsetOn("cuMemsetD32Async", d, v, n, s);
}

// ---- streams, launches ----

CUresult simStreamCreate(CUstream* s, unsigned int) {
  *s = reinterpret_cast<CUstream>(new SimStream());
  return CUDA_SUCCESS;
}

CUresult simStreamDestroy(CUstream s) {
  delete from<SimStream>(s);
  return CUDA_SUCCESS;
}

CUresult simStreamSynchronize(CUstream s) {
  if (s && from<SimStream>(s)->capturing)
    return failWith(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "cuStreamSynchronize on a stream being captured");
  return CUDA_SUCCESS;  // work ran when it was issued
}

CUresult launchOn(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                  unsigned shared, CUstream stream, void** params, bool cooperative) {
  SimFunction* f = from<SimFunction>(fn);
  if (!f) return failWith(CUDA_ERROR_INVALID_HANDLE, "no function");
  const kfsim_entry* e = f->entry;
  const std::string name = str(e->name, " of ", f->module->module->name());
  const uint64_t threads = static_cast<uint64_t>(bx) * by * bz;
  if (gx == 0 || gy == 0 || gz == 0 || threads == 0 || threads > kMaxThreadsPerBlock || bz > 64 || gy > 65535 ||
      gz > 65535 || gx > 0x7fffffffu)
    return failWith(CUDA_ERROR_INVALID_VALUE, str("launch of ", name, " with grid (", gx, ",", gy, ",", gz, ") and block (",
                                                  bx, ",", by, ",", bz, ")"));
  if (e->max_threads > 0 && threads > static_cast<uint64_t>(e->max_threads))
    return failWith(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, str("a block of ", threads, " threads exceeds ", name,
                                                            "'s __launch_bounds__(", e->max_threads, ")"));
  if (shared > f->maxDynamicShared)
    return failWith(CUDA_ERROR_INVALID_VALUE,
                    str(name, " asks for ", shared, " bytes of dynamic shared memory; ", f->maxDynamicShared,
                        " without cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)"));
  if (cooperative && static_cast<uint64_t>(gx) * gy * gz >
                         static_cast<uint64_t>(maxActiveBlocksPerMultiprocessor(static_cast<unsigned>(threads))) *
                             kMultiprocessors)
    return failWith(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
                    str(name, ": ", gx * gy * gz, " blocks cannot all be resident at once"));
  if (!params && e->num_params > 0) return failWith(CUDA_ERROR_INVALID_VALUE, str(name, " takes ", e->num_params, " arguments"));
  // The arguments' values, copied now: a captured launch outlives the
  // caller's variables. Pointers must point into device memory.
  std::vector<std::vector<unsigned char>> values(static_cast<size_t>(e->num_params));
  for (int i = 0; i < e->num_params; ++i) {
    const unsigned size = e->param_sizes[i];
    values[static_cast<size_t>(i)].assign(static_cast<unsigned char*>(params[i]),
                                          static_cast<unsigned char*>(params[i]) + size);
    if (e->param_is_pointer[i]) {
      void* p = nullptr;
      std::memcpy(&p, params[i], sizeof(p));
      if (p && !isDeviceRange(p, 0))
        return failWith(CUDA_ERROR_INVALID_VALUE,
                        str("argument ", i, " of ", name, " points to no device memory (", p, ")"));
    }
  }
  Launch l;
  l.entry = e;
  l.name = name;
  l.grid = {gx, gy, gz};
  l.block = {bx, by, bz};
  l.sharedBytes = shared;
  l.cooperative = cooperative;
  return enqueue(stream, [l, values = std::move(values)]() mutable {
    std::vector<void*> ptrs;
    for (auto& v : values) ptrs.push_back(v.data());
    l.params = ptrs.data();
    Status s = runLaunch(l, tSchedule);
    if (!s) return failWith(CUDA_ERROR_LAUNCH_FAILED, s.message());
    return CUDA_SUCCESS;
  });
}

CUresult simLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                         unsigned shared, CUstream s, void** params, void** extra) {
  if (extra) return failWith(CUDA_ERROR_NOT_SUPPORTED, "the simulator takes kernelParams, not `extra`");
  return launchOn(f, gx, gy, gz, bx, by, bz, shared, s, params, false);
}

CUresult simLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                    unsigned bz, unsigned shared, CUstream s, void** params) {
  return launchOn(f, gx, gy, gz, bx, by, bz, shared, s, params, true);
}

// ---- graphs ----

CUresult simStreamBeginCapture(CUstream s, CUstreamCaptureMode) {
  SimStream* st = from<SimStream>(s);
  if (!st) return failWith(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "capturing the legacy default stream");
  if (st->capturing) return failWith(CUDA_ERROR_ILLEGAL_STATE, "the stream is being captured already");
  st->capturing = true;
  st->captureFailed = false;
  st->captured.clear();
  return CUDA_SUCCESS;
}

CUresult simStreamEndCapture(CUstream s, CUgraph* g) {
  SimStream* st = from<SimStream>(s);
  if (!st || !st->capturing) return failWith(CUDA_ERROR_ILLEGAL_STATE, "the stream is not being captured");
  st->capturing = false;
  if (st->captureFailed) {
    *g = nullptr;
    return failWith(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "a call during the capture failed");
  }
  auto* graph = new SimGraph();
  graph->ops = std::move(st->captured);
  st->captured.clear();
  *g = reinterpret_cast<CUgraph>(graph);
  return CUDA_SUCCESS;
}

CUresult simGraphInstantiate(CUgraphExec* e, CUgraph g, unsigned long long) {
  if (!g) return failWith(CUDA_ERROR_INVALID_VALUE, "no graph");
  *e = reinterpret_cast<CUgraphExec>(new SimGraph(*from<SimGraph>(g)));
  return CUDA_SUCCESS;
}

CUresult simGraphLaunch(CUgraphExec e, CUstream) {
  for (Op& op : from<SimGraph>(e)->ops)
    if (CUresult r = op()) return r;
  return CUDA_SUCCESS;
}

CUresult simGraphExecDestroy(CUgraphExec e) {
  delete from<SimGraph>(e);
  return CUDA_SUCCESS;
}

CUresult simGraphDestroy(CUgraph g) {
  delete from<SimGraph>(g);
  return CUDA_SUCCESS;
}

// ---- events: the host's clock when the stream reaches them ----

CUresult simEventCreate(CUevent* e, unsigned int) {
  *e = reinterpret_cast<CUevent>(new SimEvent());
  return CUDA_SUCCESS;
}

CUresult simEventRecord(CUevent e, CUstream s) {
  SimEvent* ev = from<SimEvent>(e);
  return enqueue(s, [ev] {
    ev->at = std::chrono::steady_clock::now();
    ev->recorded = true;
    return CUDA_SUCCESS;
  });
}

CUresult simEventSynchronize(CUevent) { return CUDA_SUCCESS; }

CUresult simEventElapsedTime(float* ms, CUevent a, CUevent b) {
  SimEvent *x = from<SimEvent>(a), *y = from<SimEvent>(b);
  if (!x->recorded || !y->recorded) return failWith(CUDA_ERROR_INVALID_HANDLE, "an event that was never recorded");
  *ms = std::chrono::duration<float, std::milli>(y->at - x->at).count();
  return CUDA_SUCCESS;
}

CUresult simEventDestroy(CUevent e) {
  delete from<SimEvent>(e);
  return CUDA_SUCCESS;
}

DriverApi makeDriver() {
  DriverApi api{};
  api.init = simInit;
  api.getErrorString = simGetErrorString;
  api.deviceGetCount = simDeviceGetCount;
  api.deviceGet = simDeviceGet;
  api.deviceGetAttribute = simDeviceGetAttribute;
  api.primaryCtxRetain = simPrimaryCtxRetain;
  api.ctxSetCurrent = simCtxSetCurrent;
  api.moduleLoadData = simModuleLoadData;
  api.moduleUnload = simModuleUnload;
  api.moduleGetFunction = simModuleGetFunction;
  api.funcSetAttribute = simFuncSetAttribute;
  api.occupancy = simOccupancy;
  api.memGetInfo = simMemGetInfo;
  api.memAlloc = simMemAlloc;
  api.memFree = simMemFree;
  api.memcpyHtoD = simMemcpyHtoD;
  api.memcpyDtoH = simMemcpyDtoH;
  api.memcpyDtoD = simMemcpyDtoD;
  api.memsetD8 = simMemsetD8;
  api.memsetD8Async = simMemsetD8Async;
  api.memsetD16Async = simMemsetD16Async;
  api.memsetD32Async = simMemsetD32Async;
  api.streamCreate = simStreamCreate;
  api.streamDestroy = simStreamDestroy;
  api.streamSynchronize = simStreamSynchronize;
  api.launchKernel = simLaunchKernel;
  api.launchCooperativeKernel = simLaunchCooperativeKernel;
  api.streamBeginCapture = simStreamBeginCapture;
  api.streamEndCapture = simStreamEndCapture;
  api.graphInstantiate = simGraphInstantiate;
  api.graphLaunch = simGraphLaunch;
  api.graphExecDestroy = simGraphExecDestroy;
  api.graphDestroy = simGraphDestroy;
  api.eventCreate = simEventCreate;
  api.eventRecord = simEventRecord;
  api.eventSynchronize = simEventSynchronize;
  api.eventElapsedTime = simEventElapsedTime;
  api.eventDestroy = simEventDestroy;
  return api;
}

}  // namespace

const DriverApi* simulatedDriver() {
  static const DriverApi api = makeDriver();
  return &api;
}

void setSchedule(const Schedule& s) { tSchedule = s; }
const Schedule& currentSchedule() { return tSchedule; }

CUresult failWith(CUresult r, std::string message) {
  tLastResult = r;
  tLastError = std::move(message);
  return r;
}

CUresult enqueue(CUstream stream, std::function<CUresult()> op) {
  SimStream* s = from<SimStream>(stream);
  if (s && s->capturing) {
    s->captured.push_back(std::move(op));
    return CUDA_SUCCESS;
  }
  return op();
}

bool isDeviceRange(const void* p, size_t bytes) {
  return insideRegion(reinterpret_cast<uintptr_t>(p), bytes, RegionKind::Device);
}

}  // namespace kfuse::cuda::sim
