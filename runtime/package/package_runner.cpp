#include "runtime/package/package_runner.h"

#include <cassert>

#include <cmath>

#include "ir/interpreter.h"
#include "ir/support/strings.h"
#include "runtime/cpu_runner.h"
#include "runtime/package/cpu_code.h"

#if KFUSE_PACKAGE_CUDA
#include "runtime/cuda/cuda_runner.h"
#endif

namespace kfuse {

// Runs one function's plan on the package's device.
struct PackageRunner::FunctionRunner {
  virtual ~FunctionRunner() = default;
  virtual Expected<InterpreterResult> run(const Module& m, const std::vector<Tensor>& args) = 0;
  virtual uint64_t launches() const = 0;
  virtual uint64_t bytesAllocated() const = 0;
  // As Executor::runTrainingStep / syncState: cpu keeps the state.
  virtual Expected<InterpreterResult> runTrainingStep(const Module& m, const std::vector<Tensor>& args, int guard,
                                                      bool& kept) {
    kept = false;
    return run(m, args);
  }
  virtual void syncState(Module& m) {}
};

namespace {

class CpuFunction : public PackageRunner::FunctionRunner {
 public:
  CpuFunction(std::shared_ptr<const Plan> plan, CpuFunctions fns, const PackageRunnerOptions& opts,
              std::shared_ptr<const CpuCode> code)
      : code_(std::move(code)), runner_(std::move(plan), std::move(fns), CpuRunnerOptions{.poison = opts.poison, .threads = opts.threads}) {}
  Expected<InterpreterResult> run(const Module& m, const std::vector<Tensor>& args) override {
    return runner_.run(m, args);
  }
  uint64_t launches() const override { return runner_.launches(); }
  uint64_t bytesAllocated() const override { return runner_.bytesAllocated(); }
  Expected<InterpreterResult> runTrainingStep(const Module& m, const std::vector<Tensor>& args, int guard,
                                              bool& kept) override {
    return runner_.runTrainingStep(m, args, guard, kept);
  }
  void syncState(Module& m) override {
    [[maybe_unused]] Status s = runner_.syncState(m);
    assert(s && "the CPU's copies out of its own memory do not fail");
  }

 private:
  std::shared_ptr<const CpuCode> code_;  // keeps the kernels mapped
  CpuRunner runner_;
};

Expected<std::vector<std::unique_ptr<PackageRunner::FunctionRunner>>> cpuRunners(const Package& pkg,
                                                                                 const PackageRunnerOptions& opts) {
  const PackageMeta& meta = pkg.meta();
  if (Status s = checkHostRuns(meta.cpuTriple, meta.cpuFeatures); !s)
    return s.error().context(str(pkg.name(), ": the package's kernels cannot run here"));
  KF_ASSIGN_OR_RETURN(std::unique_ptr<CpuCode> loaded, CpuCode::load(pkg.cpuSharedObject(), pkg.name()));
  std::shared_ptr<const CpuCode> code = std::move(loaded);
  std::vector<std::unique_ptr<PackageRunner::FunctionRunner>> out;
  for (size_t f = 0; f < pkg.functions().size(); ++f) {
    const PackageFunction& fn = pkg.functions()[f];
    CpuFunctions fns;
    for (size_t k = 0; k < fn.plan->kernels.size(); ++k) {
      KF_ASSIGN_OR_RETURN(KernelFn p, code->function(kernelSymbol(f, k)));
      fns.kernels.push_back(p);
    }
    fns.steps.assign(fn.plan->steps.size(), nullptr);
    for (const std::vector<size_t>* steps : {&fn.directConvs, &fn.packedGemms})
      for (size_t s : *steps) {
        KF_ASSIGN_OR_RETURN(fns.steps[s], code->function(stepSymbol(f, s)));
      }
    out.push_back(std::make_unique<CpuFunction>(fn.plan, std::move(fns), opts, code));
  }
  return out;
}

#if KFUSE_PACKAGE_CUDA
class CudaFunction : public PackageRunner::FunctionRunner {
 public:
  explicit CudaFunction(std::unique_ptr<cuda::CudaRunner> r) : runner_(std::move(r)) {}
  Expected<InterpreterResult> run(const Module& m, const std::vector<Tensor>& args) override {
    return runner_->run(m, args);
  }
  uint64_t launches() const override { return runner_->launches(); }
  uint64_t bytesAllocated() const override { return runner_->bytesAllocated(); }

 private:
  std::unique_ptr<cuda::CudaRunner> runner_;
};

Expected<std::vector<std::unique_ptr<PackageRunner::FunctionRunner>>> cudaRunners(const Package& pkg,
                                                                                  const PackageRunnerOptions& opts) {
  std::vector<std::unique_ptr<PackageRunner::FunctionRunner>> out;
  for (const PackageFunction& fn : pkg.functions()) {
    auto r = cuda::CudaRunner::create(fn.plan, *fn.cuda, cuda::CudaRunnerOptions{.cudaGraph = opts.cudaGraph, .poison = opts.poison});
    if (!r) return r.error().context(str(pkg.name(), ": @", fn.name));
    out.push_back(std::make_unique<CudaFunction>(std::move(*r)));
  }
  return out;
}
#endif

}  // namespace

PackageRunner::~PackageRunner() = default;

Expected<std::unique_ptr<PackageRunner>> PackageRunner::create(std::shared_ptr<const Package> package,
                                                               PackageRunnerOptions opts) {
  std::unique_ptr<PackageRunner> r(new PackageRunner());
  const Package& pkg = *package;
  for (const PackageParam& p : pkg.meta().params) {
    r->params_.addParam(p.name, p.type, p.trainable);
    r->params_.setParamData(p.name, pkg.weights().at(p.name));
  }
  if (pkg.meta().target == "cpu") {
    KF_ASSIGN_OR_RETURN(r->runners_, cpuRunners(pkg, opts));
  } else {
#if KFUSE_PACKAGE_CUDA
    KF_ASSIGN_OR_RETURN(r->runners_, cudaRunners(pkg, opts));
#else
    return Error(str(pkg.name(), ": a ", pkg.meta().target, " package, and this runtime has no ", pkg.meta().target,
                     " target"));
#endif
  }
  r->package_ = std::move(package);
  return r;
}

Expected<std::vector<Tensor>> PackageRunner::run(std::string_view function, const std::vector<Tensor>& inputs) {
  const auto& fns = package_->functions();
  for (size_t i = 0; i < fns.size(); ++i) {
    if (fns[i].name != function) continue;
    sync();
    KF_ASSIGN_OR_RETURN(InterpreterResult r, runners_[i]->run(params_, inputs));
    applyUpdates(params_, r);
    return std::move(r.outputs);
  }
  std::vector<std::string> names;
  for (const PackageFunction& f : fns) names.push_back("@" + f.name);
  return Error(str(package_->name(), " has no function @", function, " (it has ", join(names), ")"));
}

Expected<double> PackageRunner::trainStep(const std::vector<Tensor>& inputs, const Tensor& labels, double lr) {
  const std::optional<PackageTraining>& t = package_->meta().training;
  if (!t) return Error(str(package_->name(), " is an inference package (compile with --train to train from it)"));
  std::vector<Tensor> args = inputs;
  if (t->labels) args.push_back(labels);
  args.push_back(Tensor::scalar(DType::F32, lr));
  Tensor step(TensorType(DType::I64, {}));
  step.as<int64_t>()[0] = steps_ + 1;
  args.push_back(std::move(step));
  const auto& fns = package_->functions();
  size_t i = static_cast<size_t>(package_->function(t->step) - fns.data());
  // The loss (output 0) is checked before any parameter changes.
  bool kept = false;
  KF_ASSIGN_OR_RETURN(InterpreterResult r, runners_[i]->runTrainingStep(params_, args, 0, kept));
  double loss = r.outputs.at(0).at(0);
  if (!std::isfinite(loss))
    return Error(str("the loss is ", loss, " at step ", steps_ + 1, "; the weights were not updated"));
  if (kept)
    staleRunner_ = static_cast<int>(i);
  else
    applyUpdates(params_, r);
  ++steps_;
  return loss;
}

void PackageRunner::sync() const {
  if (staleRunner_ < 0) return;
  runners_[static_cast<size_t>(staleRunner_)]->syncState(params_);
  staleRunner_ = -1;
}

Status PackageRunner::saveWeights(const std::string& path) const {
  sync();
  std::vector<std::pair<std::string, const Tensor*>> tensors;
  for (const auto& p : params_.params())
    if (p->data) tensors.emplace_back(p->name, p->data.get());
  return writeWeightsFile(path, tensors);
}

uint64_t PackageRunner::launches() const {
  uint64_t n = 0;
  for (const auto& r : runners_) n += r->launches();
  return n;
}

uint64_t PackageRunner::deviceBytesAllocated() const {
  uint64_t n = 0;
  for (const auto& r : runners_) n += r->bytesAllocated();
  return n;
}

}  // namespace kfuse
