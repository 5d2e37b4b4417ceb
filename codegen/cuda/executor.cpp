#include "codegen/cuda/executor.h"

#include <map>

#include "codegen/plan/plan_builder.h"
#include "ir/support/strings.h"
#include "runtime/cuda/cuda_runner.h"
#include "runtime/cuda/sim/driver.h"

namespace kfuse::cuda {
namespace {

class CudaExecutor : public Executor {
 public:
  explicit CudaExecutor(CudaExecutorOptions opts) : opts_(std::move(opts)) { opts_.compile.simulate = opts_.simulate; }
  std::string_view target() const override { return "cuda"; }

  Expected<InterpreterResult> run(const Graph& fn, const std::vector<Tensor>& args) override {
    KF_RETURN_IF_ERROR(checkDevice(fn));
    KF_ASSIGN_OR_RETURN(CudaRunner * runner, runnerFor(fn));
    sim::setSchedule(opts_.schedule);
    return runner->run(*fn.module(), args);
  }
  // The loss guard as on the cpu target (runtime/plan_runner.h): a
  // non-finite loss stops the step before any parameter is written. The
  // state comes back every step (nothing kept on the device).
  Expected<InterpreterResult> runTrainingStep(const Graph& fn, const std::vector<Tensor>& args, int guard,
                                              bool& kept) override {
    kept = false;
    KF_RETURN_IF_ERROR(checkDevice(fn));
    KF_ASSIGN_OR_RETURN(CudaRunner * runner, runnerFor(fn));
    sim::setSchedule(opts_.schedule);
    RunOptions ro;
    if (guard >= 0 && runner->canGuard(guard)) ro.finiteOutput = guard;
    return runner->run(*fn.module(), args, ro);
  }
  uint64_t launches() const override {
    uint64_t total = 0;
    for (const auto& [fn, r] : runners_) total += r->launches();
    return total;
  }
  uint64_t deviceBytesAllocated() const override {
    uint64_t total = 0;
    for (const auto& [fn, r] : runners_) total += r->bytesAllocated();
    return total;
  }
  // Plans need no device.
  const Plan* planFor(const Graph& fn) override {
    auto p = planOf(fn);
    return p ? p->get() : nullptr;
  }
  Expected<StepTimes> stepTimes(const Graph& fn) const override {
    if (!opts_.profile) return Error("profiling is off (CudaExecutorOptions::profile)");
    auto it = runners_.find(&fn);
    if (it == runners_.end()) return Error(str("@", fn.name(), " has not run on the cuda target"));
    return it->second->stepTimes();
  }

 private:
  // The device first: on a machine without one, say so before compiling.
  // The simulated device is always there.
  Status checkDevice(const Graph& fn) {
    if (opts_.simulate) return Status::ok();
    if (auto driver = loadDriver(); !driver) return driver.error().context(str("the cuda target cannot run @", fn.name()));
    return Status::ok();
  }

  Expected<std::shared_ptr<const Plan>> planOf(const Graph& fn) {
    if (auto it = plans_.find(&fn); it != plans_.end()) return it->second;
    KF_ASSIGN_OR_RETURN(Plan plan, buildPlan(fn, PlanOptions{opts_.inplace, noConvWorkspace()}));
    return plans_.emplace(&fn, std::make_shared<const Plan>(std::move(plan))).first->second;
  }
  Expected<CudaRunner*> runnerFor(const Graph& fn) {
    if (auto it = runners_.find(&fn); it != runners_.end()) return it->second.get();
    KF_ASSIGN_OR_RETURN(std::shared_ptr<const Plan> plan, planOf(fn));
    KF_ASSIGN_OR_RETURN(CudaProgram program, compileProgram(*plan, opts_.compile));
    CudaRunnerOptions ro;
    ro.simulate = opts_.simulate;
    ro.cudaGraph = opts_.cudaGraph;
    ro.profile = opts_.profile;
    ro.poison = opts_.poison;
    ro.communicator = opts_.communicator;
    KF_ASSIGN_OR_RETURN(auto runner, CudaRunner::create(plan, std::move(program), ro));
    return runners_.emplace(&fn, std::move(runner)).first->second.get();
  }

  CudaExecutorOptions opts_;
  std::map<const Graph*, std::shared_ptr<const Plan>> plans_;
  std::map<const Graph*, std::unique_ptr<CudaRunner>> runners_;
};

}  // namespace

std::unique_ptr<Executor> createCudaExecutor(CudaExecutorOptions opts) {
  return std::make_unique<CudaExecutor>(std::move(opts));
}

}  // namespace kfuse::cuda
