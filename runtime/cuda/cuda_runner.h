// Runs a CudaProgram (program.h) on the first CUDA device: one stream, one
// device allocation holding every planned buffer (the plan's resident region
// and arena at their planned offsets), the kernels' scratch and cuBLASLt's
// workspace; parameters and optimizer state stay on the device between runs
// and are uploaded again only when the module's data changed; reference
// steps run on the host between device steps. With `cudaGraph`, the first
// run captures every device step of the plan as a CUDA Graph and later runs
// replay it: one launch per run from the host. With `profile`, every step
// of every run is timed (stepTimes()): CUDA events on the stream before and
// after each device step, read after the run's final synchronisation, and
// the wall clock around each host step; a CUDA Graph runs every step as one
// launch, so the two options exclude each other.
//
// Nothing here needs a GPU to build; create() fails with a message naming
// why (no driver, no device, out of memory) and leaves nothing allocated.
#pragma once

#include <cuda.h>

#include <map>
#include <memory>

#include "ir/interpreter.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/program.h"
#include "exec/plan.h"
#include "runtime/step_times.h"

namespace kfuse::cuda {

struct CudaRunnerOptions {
  bool cudaGraph = false;
  bool profile = false;  // per-step times (stepTimes()); not with cudaGraph
};

class CudaRunner {
 public:
  static Expected<std::unique_ptr<CudaRunner>> create(std::shared_ptr<const Plan> plan, CudaProgram program,
                                                      CudaRunnerOptions opts = {});
  ~CudaRunner();
  CudaRunner(const CudaRunner&) = delete;
  CudaRunner& operator=(const CudaRunner&) = delete;

  // Runs the plan with the module's parameters; returns outputs and the new
  // values of updated parameters (which stay on the device as well).
  Expected<InterpreterResult> run(const Module& m, const std::vector<Tensor>& args);

  // Launches issued from the host so far: kernels and matmuls, or one per
  // graph replay.
  uint64_t launches() const { return launches_; }
  uint64_t bytesAllocated() const { return bytes_; }
  const Plan& plan() const { return *plan_; }
  const CudaProgram& program() const { return program_; }
  // Per-step times of the complete runs so far; empty unless profiling.
  const StepTimes& stepTimes() const { return times_; }

 private:
  CudaRunner(std::shared_ptr<const Plan> plan, CudaProgram program, CudaRunnerOptions opts)
      : plan_(std::move(plan)), program_(std::move(program)), opts_(opts) {}
  Status init();
  CUdeviceptr pointer(int buffer) const { return base_ + offsets_[static_cast<size_t>(plan_->storageOf(buffer))]; }
  Status upload(int buffer, const Tensor& t);
  Expected<Tensor> download(int buffer) const;
  Status uploadParams(const Module& m);
  Status runStep(size_t i);
  Status runDeviceStep(const StepProgram& s);
  Status readStepTimes();
  Status runHostStep(const Step& s);
  Status runMatmul(const MatmulCall& c);
  Status launch(const KernelLaunch& l);
  Status check(const char* call, CUresult r) const;

  std::shared_ptr<const Plan> plan_;
  CudaProgram program_;
  CudaRunnerOptions opts_;
  const DriverApi* cu_ = nullptr;
  const BlasLtApi* lt_ = nullptr;
  cublasLtHandle_t ltHandle_ = nullptr;
  CUstream stream_ = nullptr;
  std::vector<CUmodule> modules_;
  std::map<std::pair<int, std::string>, CUfunction> functions_;
  int smCount_ = 0;
  CUdeviceptr base_ = 0;
  uint64_t bytes_ = 0;
  std::vector<uint64_t> offsets_;  // per storage buffer, in the allocation
  uint64_t scratchOffset_ = 0, workspaceOffset_ = 0;
  // What the device holds per parameter: the tensor it came from or the
  // update it computed (a module still holding that tensor uploads nothing).
  std::map<std::string, std::shared_ptr<const Tensor>> resident_;
  CUgraph graph_ = nullptr;
  CUgraphExec graphExec_ = nullptr;
  uint64_t launches_ = 0;
  // profile: per step, the events recorded before and after it (null for
  // host steps), the current run's times, and the complete runs' sums.
  std::vector<std::pair<CUevent, CUevent>> events_;
  std::vector<double> runTimes_;
  StepTimes times_;
};

}  // namespace kfuse::cuda
