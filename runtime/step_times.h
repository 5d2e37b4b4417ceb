// Per-step times of a plan's runs (`kfuse profile`): what each launch of
// the plan costs, measured by the device that runs it. Runners measure only
// when asked to (CpuRunnerOptions::profile, cuda::CudaRunnerOptions::profile,
// ExecutionOptions::profile); off, nothing is measured or stored.
#pragma once

#include <cstdint>
#include <vector>

namespace kfuse {

struct StepTimes {
  // Per plan step (Plan::steps order), seconds summed over `runs`: the cpu
  // runner's wall clock around the step; on cuda, the device time between
  // CUDA events recorded before and after a device step, and the wall clock
  // around a host (reference) step.
  std::vector<double> seconds;
  // Runs measured: a run stopped before its last step (an error, a
  // non-finite loss guard) adds nothing.
  uint64_t runs = 0;

  // Adds one complete run's times.
  void add(const std::vector<double>& run) {
    if (seconds.size() < run.size()) seconds.resize(run.size(), 0.0);
    for (size_t i = 0; i < run.size(); ++i) seconds[i] += run[i];
    ++runs;
  }
  // The runs after `earlier`, a reading of the same plan's times taken
  // before them (a profile without its warm-up runs).
  StepTimes since(const StepTimes& earlier) const {
    StepTimes d = *this;
    for (size_t i = 0; i < earlier.seconds.size() && i < d.seconds.size(); ++i) d.seconds[i] -= earlier.seconds[i];
    d.runs -= earlier.runs;
    return d;
  }
};

}  // namespace kfuse
