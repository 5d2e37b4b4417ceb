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
#include "runtime/plan_runner.h"

namespace kfuse::cuda {

struct CudaRunnerOptions {
  // Run on the simulated device (runtime/cuda/sim/driver.h, a debugging aid
  // that needs no GPU) instead of the driver: the program must have been
  // compiled for it (CudaCompileOptions::simulate). Never chosen otherwise.
  bool simulate = false;
  bool cudaGraph = false;
  bool profile = false;  // per-step times (stepTimes()); not with cudaGraph
  bool poison = poisonByDefault();  // RunnerOptions::poison
  // RunnerOptions::communicator: on a GPU one that exchanges device memory
  // on the runner's stream (Communicator::onDevice); on the simulated
  // device, whose memory is the host's, any.
  std::shared_ptr<Communicator> communicator;
};

// A device for PlanRunner (plan_runner.h): binding, stepping, poisoning,
// resident state and the loss guard are the runner's, the same as on the
// CPU; this supplies device memory, the launches and the CUDA Graph.
class CudaRunner : public PlanRunner {
 public:
  static Expected<std::unique_ptr<CudaRunner>> create(std::shared_ptr<const Plan> plan, CudaProgram program,
                                                      CudaRunnerOptions opts = {});
  ~CudaRunner() override;

  const CudaProgram& program() const { return program_; }

 private:
  CudaRunner(std::shared_ptr<const Plan> plan, CudaProgram program, CudaRunnerOptions opts)
      : PlanRunner(std::move(plan), RunnerOptions{.poison = opts.poison, .profile = opts.profile,
                                                  .communicator = opts.communicator}),
        program_(std::move(program)),
        simulate_(opts.simulate),
        cudaGraph_(opts.cudaGraph) {}
  Status init();
  CUdeviceptr pointer(int buffer) const { return base_ + offsets_[static_cast<size_t>(plan_->storageOf(buffer))]; }

  // PlanRunner's device hooks.
  Status allocate() override { return Status::ok(); }  // create() allocated
  Status upload(int buffer, const Tensor& t) override;
  Status download(int buffer, Tensor& into) override;
  Status copyBuffer(int dst, int src) override;
  Status poisonArena() override;
  Status poisonBuffer(int buffer) override;
  Status beginRun() override;
  Status finishRun() override;
  Status runStep(size_t i) override;
  Expected<bool> runAllSteps() override;
  bool timesSteps() const override { return opts_.profile; }
  Expected<bool> allFinite(int buffer) override;

  Status runDeviceStep(const StepProgram& s);
  Status readStepTimes();
  Status runHostStep(const Step& s);
  Status runCollective(const CollectiveSpec& c);
  Status runMatmul(const MatmulCall& c);
  Status launch(const KernelLaunch& l);
  Status check(const char* call, CUresult r) const;
  Status synchronize() const;

  CudaProgram program_;
  bool simulate_ = false;
  bool cudaGraph_ = false;
  const DriverApi* cu_ = nullptr;
  const BlasLtApi* lt_ = nullptr;
  cublasLtHandle_t ltHandle_ = nullptr;
  CUstream stream_ = nullptr;
  std::vector<CUmodule> modules_;
  std::map<std::pair<int, std::string>, CUfunction> functions_;
  int smCount_ = 0;
  CUdeviceptr base_ = 0;
  std::vector<uint64_t> offsets_;  // per storage buffer, in the allocation
  uint64_t scratchOffset_ = 0, workspaceOffset_ = 0;
  CUgraph graph_ = nullptr;
  CUgraphExec graphExec_ = nullptr;
  bool capturing_ = false;  // recording a CUDA Graph: launches are counted per replay
  // profile: per step, the events recorded before and after it (null for
  // host steps).
  std::vector<std::pair<CUevent, CUevent>> events_;
  std::vector<bool> recorded_;  // per step: its events were recorded this run
};

}  // namespace kfuse::cuda
