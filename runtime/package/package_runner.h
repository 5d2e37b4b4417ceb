// Runs a loaded package (package.h): inference, or training steps, on the
// package's target, with the package's parameters, which every run that
// updates them (a training step, batch norm statistics) changes in place.
// Links neither LLVM nor NVRTC: a cpu package's kernels are its shared
// object, a cuda package's its CUBIN/PTX.
//
//   KF_ASSIGN_OR_RETURN(auto pkg, Package::load("mlp.kfpkg"));
//   KF_ASSIGN_OR_RETURN(auto runner, PackageRunner::create(pkg));
//   KF_ASSIGN_OR_RETURN(std::vector<Tensor> out, runner->run("forward", {x}));
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "runtime/package/package.h"
#include "runtime/poison.h"

namespace kfuse {

struct PackageRunnerOptions {
  // Debug: poison buffers when their lifetime ends (cpu; runtime/cpu_runner.h).
  bool poison = poisonByDefault();
  // cuda: capture each run as a CUDA Graph and replay it.
  bool cudaGraph = false;
  // cpu: threads each step may use (0: one per CPU the process may run on).
  int threads = 0;
};

class PackageRunner {
 public:
  // Fails, having run nothing, when this machine cannot run the package:
  // another CPU architecture, missing CPU features, no GPU or driver for a
  // cuda package, a runtime built without the package's target.
  static Expected<std::unique_ptr<PackageRunner>> create(std::shared_ptr<const Package> package,
                                                         PackageRunnerOptions opts = {});
  ~PackageRunner();
  PackageRunner(const PackageRunner&) = delete;
  PackageRunner& operator=(const PackageRunner&) = delete;

  // Runs `function` on one tensor per input of its signature (of exactly
  // its type), applies the parameter updates it makes, returns its outputs.
  Expected<std::vector<Tensor>> run(std::string_view function, const std::vector<Tensor>& inputs);

  // Training packages: one optimizer step on a batch (one tensor per input
  // of the forward, then the labels); returns the loss before the update.
  // A non-finite loss is an error and leaves the parameters as they were.
  Expected<double> trainStep(const std::vector<Tensor>& inputs, const Tensor& labels, double lr);
  int64_t stepCount() const { return steps_; }

  const Package& package() const { return *package_; }
  // The parameters as they are now (after the updates so far; on cpu, the
  // training step keeps them in its runner and they are copied out here).
  const Module& parameters() const {
    sync();
    return params_;
  }
  // Writes every parameter (optimizer state included) as safetensors, atomically.
  Status saveWeights(const std::string& path) const;

  // Launches so far, over every function run.
  uint64_t launches() const;
  // Device memory allocated so far (plans' arenas and resident regions).
  uint64_t deviceBytesAllocated() const;

  struct FunctionRunner;  // one per function: its device runner

 private:
  PackageRunner() = default;
  // Copies the state a training step kept on its device into params_.
  void sync() const;
  std::shared_ptr<const Package> package_;
  mutable Module params_;
  std::vector<std::unique_ptr<FunctionRunner>> runners_;  // per package function
  int64_t steps_ = 0;
  mutable int staleRunner_ = -1;  // the runner holding newer state than params_
};

}  // namespace kfuse
