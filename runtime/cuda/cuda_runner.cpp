#include "runtime/cuda/cuda_runner.h"

#include <chrono>
#include <cstring>

#include "ir/op_registry.h"
#include "ir/support/strings.h"
#include "runtime/cuda/sim/driver.h"

namespace kfuse::cuda {
namespace {

cudaDataType_t ltType(DType t) {
  switch (t) {
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
    case DType::F64: return CUDA_R_64F;
    default: return CUDA_R_32F;
  }
}

// Whether every storage buffer has a planned offset (codegen/plan/buffer_plan.h).
bool planned(const Plan& p) {
  if (p.arenaBytes + p.residentBytes == 0) return false;
  for (size_t b = 0; b < p.buffers.size(); ++b)
    if (p.buffers[b].kind != BufferKind::Alias && p.buffers[b].offset < 0) return false;
  return true;
}

}  // namespace

Status CudaRunner::check(const char* call, CUresult r) const {
  if (r == CUDA_SUCCESS) return Status::ok();
  return Error(cu_->describe(call, r));
}

Expected<std::unique_ptr<CudaRunner>> CudaRunner::create(std::shared_ptr<const Plan> plan, CudaProgram program,
                                                         CudaRunnerOptions opts) {
  if (program.steps.size() != plan->steps.size())
    return Error(str("the CUDA program has ", program.steps.size(), " steps for a plan of ", plan->steps.size()));
  if (opts.simulate != (program.arch == kSimulatorArch))
    return Error(opts.simulate ? str("the simulated device runs programs compiled for it (--simulate), not for ",
                                     program.arch)
                               : str("the program was compiled for the simulator; run it with --simulate"));
  if (opts.profile && opts.cudaGraph)
    return Error("per-step times cannot be measured in a CUDA Graph (it replays the whole plan as one launch): "
                 "profile and cudaGraph exclude each other");
  std::unique_ptr<CudaRunner> r(new CudaRunner(std::move(plan), std::move(program), opts));
  KF_RETURN_IF_ERROR(r->init());  // on failure the destructor releases what init made
  return r;
}

Status CudaRunner::init() {
  if (simulate_) {
    cu_ = sim::simulatedDriver();
  } else {
    KF_ASSIGN_OR_RETURN(cu_, loadDriver());
  }
  CUdevice dev = 0;
  KF_RETURN_IF_ERROR(check("cuDeviceGet", cu_->deviceGet(&dev, 0)));
  CUcontext ctx = nullptr;
  KF_RETURN_IF_ERROR(check("cuDevicePrimaryCtxRetain", cu_->primaryCtxRetain(&ctx, dev)));
  KF_RETURN_IF_ERROR(check("cuCtxSetCurrent", cu_->ctxSetCurrent(ctx)));
  KF_RETURN_IF_ERROR(check("cuDeviceGetAttribute",
                           cu_->deviceGetAttribute(&smCount_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)));
  KF_RETURN_IF_ERROR(check("cuStreamCreate", cu_->streamCreate(&stream_, CU_STREAM_NON_BLOCKING)));
  if (opts_.profile) {
    events_.assign(program_.steps.size(), {nullptr, nullptr});
    recorded_.assign(program_.steps.size(), false);
    for (size_t i = 0; i < events_.size(); ++i) {
      if (program_.steps[i].mode == StepMode::Host) continue;
      KF_RETURN_IF_ERROR(check("cuEventCreate", cu_->eventCreate(&events_[i].first, CU_EVENT_DEFAULT)));
      KF_RETURN_IF_ERROR(check("cuEventCreate", cu_->eventCreate(&events_[i].second, CU_EVENT_DEFAULT)));
    }
  }

  // Modules: the CUBIN for the program's architecture; the driver JIT-compiles
  // the PTX when the device is newer than that.
  for (const ModuleImage& img : program_.modules) {
    CUmodule mod = nullptr;
    CUresult res = cu_->moduleLoadData(&mod, img.cubin.data());
    if (res != CUDA_SUCCESS && !img.ptx.empty()) res = cu_->moduleLoadData(&mod, img.ptx.c_str());
    if (res != CUDA_SUCCESS)
      return Error(str("cannot load the module of step ", img.name, " (", program_.arch, "): ",
                       cu_->describe("cuModuleLoadData", res)));
    modules_.push_back(mod);
  }
  bool anyMatmul = false;
  for (const StepProgram& s : program_.steps) {
    anyMatmul |= s.matmul.has_value();
    for (const KernelLaunch& l : s.launches) {
      if (l.module < 0 || static_cast<size_t>(l.module) >= modules_.size())
        return Error(str("launch ", l.entry, " names module ", l.module, " of ", modules_.size()));
      CUfunction fn = nullptr;
      KF_RETURN_IF_ERROR(check("cuModuleGetFunction",
                               cu_->moduleGetFunction(&fn, modules_[static_cast<size_t>(l.module)], l.entry.c_str())));
      if (l.sharedBytes > 48 * 1024)
        KF_RETURN_IF_ERROR(check("cuFuncSetAttribute",
                                 cu_->funcSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                       static_cast<int>(l.sharedBytes))));
      functions_[{l.module, l.entry}] = fn;
    }
  }
  if (anyMatmul) {
    if (simulate_) {
      lt_ = sim::simulatedBlasLt();
    } else {
      KF_ASSIGN_OR_RETURN(lt_, loadBlasLt());
    }
    if (lt_->create(&ltHandle_) != CUBLAS_STATUS_SUCCESS) return Error("cublasLtCreate failed");
  }

  // One allocation: planned regions (or, before buffer planning, one slot
  // per storage buffer), then the scratch, then cuBLASLt's workspace.
  const Plan& p = *plan_;
  offsets_.assign(p.buffers.size(), 0);
  uint64_t end = 0;
  if (planned(p)) {
    for (size_t b = 0; b < p.buffers.size(); ++b) {
      const PlanBuffer& buf = p.buffers[b];
      if (buf.kind == BufferKind::Alias) continue;
      offsets_[b] = static_cast<uint64_t>(buf.offset) + (buf.kind == BufferKind::Temp ? p.residentBytes : 0);
    }
    end = p.residentBytes + p.arenaBytes;
  } else {
    for (size_t b = 0; b < p.buffers.size(); ++b) {
      if (p.buffers[b].kind == BufferKind::Alias) continue;
      offsets_[b] = end;
      end += alignedBytes(p.buffers[b].type.byteSize());
    }
  }
  DeviceAllocation a = deviceAllocation(end, program_.scratchBytes, program_.matmulWorkspaceBytes, program_.steps);
  scratchOffset_ = a.scratchOffset;
  workspaceOffset_ = a.workspaceOffset;
  bytesAllocated_ = a.total;
  size_t freeBytes = 0, totalBytes = 0;
  KF_RETURN_IF_ERROR(check("cuMemGetInfo", cu_->memGetInfo(&freeBytes, &totalBytes)));
  CUresult res = cu_->memAlloc(&base_, std::max<uint64_t>(bytesAllocated_, 1));
  if (res != CUDA_SUCCESS) {
    base_ = 0;
    return Error(str("device out of memory: the plan needs ", bytesAllocated_, " bytes, ", freeBytes, " of ",
                     totalBytes, " are available (", cu_->describe("cuMemAlloc", res), ")"));
  }
  // The scratch starts zeroed; kernels leave it zeroed (prelude: last-block
  // counters and grid barriers reset themselves).
  if (program_.scratchBytes > 0)
    KF_RETURN_IF_ERROR(check("cuMemsetD8", cu_->memsetD8(base_ + scratchOffset_, 0, program_.scratchBytes)));
  return Status::ok();  // constants: the first run binds them (PlanRunner)
}

CudaRunner::~CudaRunner() {
  if (!cu_) return;
  if (stream_) cu_->streamSynchronize(stream_);
  if (graphExec_) cu_->graphExecDestroy(graphExec_);
  if (graph_) cu_->graphDestroy(graph_);
  if (ltHandle_) lt_->destroy(ltHandle_);
  if (base_) cu_->memFree(base_);
  for (CUmodule m : modules_) cu_->moduleUnload(m);
  for (auto [before, after] : events_) {
    if (before) cu_->eventDestroy(before);
    if (after) cu_->eventDestroy(after);
  }
  if (stream_) cu_->streamDestroy(stream_);
}

Status CudaRunner::upload(int buffer, const Tensor& t) {
  const PlanBuffer& b = plan_->buffers[static_cast<size_t>(buffer)];
  if (t.type().dtype != b.type.dtype || t.numElements() != b.type.numElements())
    return Error(str("buffer ", b.name, " is ", formatType(b.type), ", not ", formatType(t.type())));
  if (t.byteSize() == 0) return Status::ok();
  return check("cuMemcpyHtoD", cu_->memcpyHtoD(pointer(buffer), t.data(), t.byteSize()));
}

Status CudaRunner::download(int buffer, Tensor& into) {
  if (into.byteSize() == 0) return Status::ok();
  return check("cuMemcpyDtoH", cu_->memcpyDtoH(into.data(), pointer(buffer), into.byteSize()));
}

Status CudaRunner::copyBuffer(int dst, int src) {
  uint64_t bytes = plan_->buffers[static_cast<size_t>(dst)].type.byteSize();
  if (bytes == 0) return Status::ok();
  return check("cuMemcpyDtoD", cu_->memcpyDtoD(pointer(dst), pointer(src), bytes));
}

Status CudaRunner::synchronize() const { return check("cuStreamSynchronize", cu_->streamSynchronize(stream_)); }

// The arena with 0xFF bytes (NaN in every float type); a buffer with its
// dtype's NaN, or 0xAB bytes (runtime/poison.h). On the stream, in order
// with the launches around them.
Status CudaRunner::poisonArena() {
  const Plan& p = *plan_;
  if (p.arenaBytes == 0) return Status::ok();
  return check("cuMemsetD8Async", cu_->memsetD8Async(base_ + p.residentBytes, 0xFF, p.arenaBytes, stream_));
}

Status CudaRunner::poisonBuffer(int buffer) {
  const TensorType& t = plan_->buffers[static_cast<size_t>(buffer)].type;
  const uint64_t bytes = t.byteSize();
  if (bytes == 0) return Status::ok();
  switch (t.dtype) {
    // An f64 of two 0x7FF80000 words is a NaN too.
    case DType::F32:
    case DType::F64:
      return check("cuMemsetD32Async", cu_->memsetD32Async(pointer(buffer), 0x7FC00000u, bytes / 4, stream_));
    case DType::F16: return check("cuMemsetD16Async", cu_->memsetD16Async(pointer(buffer), 0x7E00, bytes / 2, stream_));
    case DType::BF16: return check("cuMemsetD16Async", cu_->memsetD16Async(pointer(buffer), 0x7FC0, bytes / 2, stream_));
    default: return check("cuMemsetD8Async", cu_->memsetD8Async(pointer(buffer), 0xAB, bytes, stream_));
  }
}

Expected<bool> CudaRunner::allFinite(int buffer) {
  KF_RETURN_IF_ERROR(synchronize());
  return PlanRunner::allFinite(buffer);
}

Status CudaRunner::launch(const KernelLaunch& l) {
  CUfunction fn = functions_.at({l.module, l.entry});
  std::vector<CUdeviceptr> ptrs;
  for (int b : l.args) ptrs.push_back(pointer(b));
  if (l.scratch >= 0) ptrs.push_back(base_ + scratchOffset_ + static_cast<uint64_t>(l.scratch));
  std::vector<void*> params;
  for (CUdeviceptr& p : ptrs) params.push_back(&p);
  uint32_t grid = l.grid;
  if (!capturing_) countLaunches(1);
  if (l.cooperative) {
    // Every block must be resident at once for the grid barrier; the
    // kernel is written for any grid size.
    int perSm = 0;
    KF_RETURN_IF_ERROR(check("cuOccupancyMaxActiveBlocksPerMultiprocessor",
                             cu_->occupancy(&perSm, fn, static_cast<int>(l.block), l.sharedBytes)));
    grid = std::max<uint32_t>(1, std::min<uint32_t>(grid, static_cast<uint32_t>(perSm * smCount_)));
    return check("cuLaunchCooperativeKernel", cu_->launchCooperativeKernel(fn, grid, 1, 1, l.block, 1, 1, l.sharedBytes,
                                                                           stream_, params.data()));
  }
  return check("cuLaunchKernel",
               cu_->launchKernel(fn, grid, 1, 1, l.block, 1, 1, l.sharedBytes, stream_, params.data(), nullptr));
}

Status CudaRunner::runMatmul(const MatmulCall& c) {
  if (!capturing_) countLaunches(1);
  const bool f64 = c.dtype == DType::F64;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  auto cleanup = [&] {
    if (pref) lt_->preferenceDestroy(pref);
    if (ld) lt_->layoutDestroy(ld);
    if (lb) lt_->layoutDestroy(lb);
    if (la) lt_->layoutDestroy(la);
    if (desc) lt_->descDestroy(desc);
  };
  auto fail = [&](const char* what) {
    cleanup();
    return Error(str("cuBLASLt ", what, " failed for a ", c.m, "x", c.n, "x", c.k, " matmul (epilogue ", c.epilogueName,
                     ")", simulate_ ? str(": ", sim::lastBlasLtError()) : std::string()));
  };
  if (lt_->descCreate(&desc, f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F, f64 ? CUDA_R_64F : CUDA_R_32F) !=
      CUBLAS_STATUS_SUCCESS)
    return fail("cublasLtMatmulDescCreate");
  cublasOperation_t ta = c.transA ? CUBLAS_OP_T : CUBLAS_OP_N, tb = c.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  auto epi = static_cast<cublasLtEpilogue_t>(c.epilogue);
  lt_->descSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta));
  lt_->descSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb));
  lt_->descSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi));
  if (c.bias >= 0) {
    CUdeviceptr bias = pointer(c.bias);
    lt_->descSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
  }
  if (c.aux >= 0) {
    CUdeviceptr aux = pointer(c.aux);
    int64_t auxLd = c.m;
    lt_->descSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux));
    lt_->descSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &auxLd, sizeof(auxLd));
  }
  cudaDataType_t t = ltType(c.dtype);
  auto layout = [&](cublasLtMatrixLayout_t* l, int64_t rows, int64_t cols, int64_t ldv, int64_t stride) {
    if (lt_->layoutCreate(l, t, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ldv) != CUBLAS_STATUS_SUCCESS)
      return false;
    if (c.batch > 1) {
      int count = static_cast<int>(c.batch);
      lt_->layoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count));
      lt_->layoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride));
    }
    return true;
  };
  if (!layout(&la, c.transA ? c.k : c.m, c.transA ? c.m : c.k, c.lda, c.strideA) ||
      !layout(&lb, c.transB ? c.n : c.k, c.transB ? c.k : c.n, c.ldb, c.strideB) ||
      !layout(&ld, c.m, c.n, c.ldd, c.strideD))
    return fail("cublasLtMatrixLayoutCreate");
  if (lt_->preferenceCreate(&pref) != CUBLAS_STATUS_SUCCESS) return fail("cublasLtMatmulPreferenceCreate");
  uint64_t ws = program_.matmulWorkspaceBytes;
  lt_->preferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  if (lt_->algoGetHeuristic(ltHandle_, desc, la, lb, ld, ld, pref, 1, &heuristic, &found) != CUBLAS_STATUS_SUCCESS ||
      found == 0)
    return fail("cublasLtMatmulAlgoGetHeuristic (no algorithm)");
  double alpha64 = 1, beta64 = 0;
  float alpha32 = 1, beta32 = 0;
  const void* alpha = f64 ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = f64 ? static_cast<const void*>(&beta64) : &beta32;
  auto ptr = [&](int b) { return reinterpret_cast<void*>(pointer(b)); };
  cublasStatus_t st = lt_->matmul(ltHandle_, desc, alpha, ptr(c.a), la, ptr(c.b), lb, beta, ptr(c.d), ld, ptr(c.d), ld,
                                  &heuristic.algo, reinterpret_cast<void*>(base_ + workspaceOffset_), ws, stream_);
  if (st != CUBLAS_STATUS_SUCCESS) return fail("cublasLtMatmul");
  cleanup();
  return Status::ok();
}

Status CudaRunner::runDeviceStep(const StepProgram& s) {
  if (s.matmul) KF_RETURN_IF_ERROR(runMatmul(*s.matmul));
  for (const KernelLaunch& l : s.launches) KF_RETURN_IF_ERROR(launch(l));
  return Status::ok();
}

// Step `i` of the plan; with profile, timed: events around a device step
// (read by readStepTimes once the run is synchronised), the wall clock
// around a host step.
Status CudaRunner::runStep(size_t i) {
  const StepProgram& s = program_.steps[i];
  if (!opts_.profile) return s.mode == StepMode::Host ? runHostStep(plan_->steps[i]) : runDeviceStep(s);
  if (s.mode == StepMode::Host) {
    // The device steps queued before it finish first, on their own time.
    KF_RETURN_IF_ERROR(check("cuStreamSynchronize", cu_->streamSynchronize(stream_)));
    auto start = std::chrono::steady_clock::now();
    KF_RETURN_IF_ERROR(runHostStep(plan_->steps[i]));
    stepSeconds()[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return Status::ok();
  }
  KF_RETURN_IF_ERROR(check("cuEventRecord", cu_->eventRecord(events_[i].first, stream_)));
  KF_RETURN_IF_ERROR(runDeviceStep(s));
  KF_RETURN_IF_ERROR(check("cuEventRecord", cu_->eventRecord(events_[i].second, stream_)));
  recorded_[i] = true;
  return Status::ok();
}

// The times of the device steps the run just synchronised recorded (all of
// them, unless the loss guard stopped it).
Status CudaRunner::readStepTimes() {
  for (size_t i = 0; i < events_.size(); ++i) {
    auto [before, after] = events_[i];
    if (!before || !recorded_[i]) continue;
    recorded_[i] = false;
    KF_RETURN_IF_ERROR(check("cuEventSynchronize", cu_->eventSynchronize(after)));
    float ms = 0;
    KF_RETURN_IF_ERROR(check("cuEventElapsedTime", cu_->eventElapsedTime(&ms, before, after)));
    stepSeconds()[i] = static_cast<double>(ms) * 1e-3;
  }
  return Status::ok();
}

// A reference op: operands to the host, the op's reference implementation,
// results back (ops with no kernel form yet; never inside a CUDA Graph).
Status CudaRunner::runHostStep(const Step& s) {
  if (s.kind() == StepKind::Collective) return runCollective(s.collective());
  KF_RETURN_IF_ERROR(check("cuStreamSynchronize", cu_->streamSynchronize(stream_)));
  std::vector<Tensor> inputs;
  std::vector<TensorType> inTypes, outTypes;
  for (int b : s.reference().inputs) {
    Tensor t(plan_->buffers[static_cast<size_t>(b)].type);
    KF_RETURN_IF_ERROR(download(b, t));
    inTypes.push_back(t.type());
    inputs.push_back(std::move(t));
  }
  for (int b : s.reference().outputs) outTypes.push_back(plan_->buffers[static_cast<size_t>(b)].type);
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs) ptrs.push_back(&t);
  OpCall call{*s.reference().op, s.reference().attrs, inTypes};
  KF_ASSIGN_OR_RETURN(std::vector<Tensor> outs, s.reference().op->reference(call, ptrs, outTypes));
  for (size_t i = 0; i < outs.size(); ++i) KF_RETURN_IF_ERROR(upload(s.reference().outputs[i], outs[i]));
  return Status::ok();
}

// The bucket moves into its outputs on the stream; with other ranks, a
// communicator on the device (NCCL) then exchanges it on the stream, in
// order with the launches, and the wait has nothing left to do. On the
// simulated device, whose memory is the host's, a host communicator (Gloo)
// exchanges it once the stream has produced it.
Status CudaRunner::runCollective(const CollectiveSpec& c) {
  const std::shared_ptr<Communicator>& comm = opts_.communicator;
  if (c.phase == CollectivePhase::Wait) return Status::ok();
  if (c.op != CollectiveOp::AllReduce) {
    // One shard is the whole tensor; more need the cpu target.
    if (c.ranks != 1 || (comm && comm->size() > 1))
      return Error(str(collectiveOpName(c.op), ": ZeRO-1's sharded optimizer runs on the cpu target"));
    return copyBuffer(c.outputs[0], c.inputs[0]);
  }
  KF_RETURN_IF_ERROR(bucketIntoOutputs(c));
  if (!comm || comm->size() == 1) return Status::ok();  // the mean over one rank
  std::vector<CommBuffer> buffers;
  for (int b : c.outputs) {
    const TensorType& t = plan_->buffers[static_cast<size_t>(b)].type;
    buffers.push_back({reinterpret_cast<void*>(pointer(b)), t.numElements(), t.dtype});
  }
  if (comm->onDevice()) return comm->allReduceMeanOnStream(buffers, stream_);
  if (!simulate_)
    return Error(str("a GPU's buckets need a communicator that reaches device memory (NCCL); this one reaches host "
                     "memory only"));
  KF_RETURN_IF_ERROR(synchronize());
  return comm->allReduceMean(buffers);
}

// The launches queued by an earlier run are done before this one binds.
Status CudaRunner::beginRun() { return synchronize(); }

Status CudaRunner::finishRun() {
  KF_RETURN_IF_ERROR(synchronize());
  if (opts_.profile) KF_RETURN_IF_ERROR(readStepTimes());
  return Status::ok();
}

// With cudaGraph, the first run captures every device step as a CUDA Graph
// and every run replays it: one launch from the host.
Expected<bool> CudaRunner::runAllSteps() {
  if (!cudaGraph_) return false;
  const Plan& p = *plan_;
  if (program_.hostSteps() > 0)
    return Error(str("--cuda-graph: @", p.function, " has ", program_.hostSteps(),
                     " step(s) run on the host (reference ops), which a CUDA Graph cannot hold"));
  // Poisoning: the arena before the replay (PlanRunner); a graph runs its
  // steps without the host in between, so no buffer is poisoned at its
  // last use.
  if (!graphExec_) {
    // Capture records the launches without running them; counted once per replay instead.
    capturing_ = true;
    KF_RETURN_IF_ERROR(check("cuStreamBeginCapture", cu_->streamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)));
    Status captured = Status::ok();
    for (const StepProgram& s : program_.steps)
      if (captured) captured = runDeviceStep(s);
    CUresult end = cu_->streamEndCapture(stream_, &graph_);
    capturing_ = false;
    KF_RETURN_IF_ERROR(captured);
    KF_RETURN_IF_ERROR(check("cuStreamEndCapture", end));
    KF_RETURN_IF_ERROR(check("cuGraphInstantiate", cu_->graphInstantiate(&graphExec_, graph_, 0)));
  }
  countLaunches(1);
  KF_RETURN_IF_ERROR(check("cuGraphLaunch", cu_->graphLaunch(graphExec_, stream_)));
  return true;
}

}  // namespace kfuse::cuda
