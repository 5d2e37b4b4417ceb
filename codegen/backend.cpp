#include "codegen/backend.h"

#include <map>

#include "codegen/kernel/lower.h"
#include "codegen/plan/plan_builder.h"
#include "ir/support/strings.h"
#include "runtime/cpu_runner.h"

namespace kfuse {
namespace {

constexpr const char* kSimplify = "constant-fold,canonicalize,cse,dce";

class InterpreterExecutor : public Executor {
 public:
  std::string_view target() const override { return "interpreter"; }
  Expected<InterpreterResult> run(const Graph& fn, const std::vector<Tensor>& args) override {
    return interpret(fn, args);
  }
};

// Plans each function once (fused nodes and lone kernelizable ops become
// kernels, matmuls GEMM steps) and runs it on the CPU.
class CpuExecutor : public Executor {
 public:
  std::string_view target() const override { return "cpu"; }
  Expected<InterpreterResult> run(const Graph& fn, const std::vector<Tensor>& args) override {
    KF_ASSIGN_OR_RETURN(CpuRunner * runner, runnerFor(fn));
    return runner->run(*fn.module(), args);
  }
  uint64_t launches() const override {
    uint64_t total = 0;
    for (const auto& [fn, runner] : runners_) total += runner->launches();
    return total;
  }
  const Plan* planFor(const Graph& fn) override {
    auto r = runnerFor(fn);
    return r ? &(*r)->plan() : nullptr;
  }

 private:
  Expected<CpuRunner*> runnerFor(const Graph& fn) {
    auto it = runners_.find(&fn);
    if (it != runners_.end()) return it->second.get();
    KF_ASSIGN_OR_RETURN(Plan plan, buildPlan(fn));
    auto runner = std::make_unique<CpuRunner>(std::make_shared<const Plan>(std::move(plan)));
    return runners_.emplace(&fn, std::move(runner)).first->second.get();
  }

  std::map<const Graph*, std::unique_ptr<CpuRunner>> runners_;
};

}  // namespace

std::vector<std::string> availableTargets() { return {"cpu", "interpreter"}; }
std::string defaultTarget() { return "cpu"; }

Expected<Backend> backendFor(std::string_view target, bool fuse) {
  if (target == "interpreter") return Backend{"interpreter", kSimplify, {}};
  if (target == "cpu")
    return Backend{"cpu", fuse ? str(kSimplify, ",fuse,dce") : std::string(kSimplify), kernel::checkGroup};
  return Error(str("unknown target '", target, "' (available: ", join(availableTargets()), ")"));
}

Expected<std::unique_ptr<Executor>> createExecutor(std::string_view target) {
  if (target == "interpreter") return std::unique_ptr<Executor>(new InterpreterExecutor());
  if (target == "cpu") return std::unique_ptr<Executor>(new CpuExecutor());
  return Error(str("unknown target '", target, "' (available: ", join(availableTargets()), ")"));
}

}  // namespace kfuse
