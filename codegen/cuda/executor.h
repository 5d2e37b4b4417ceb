// The cuda target's executor (codegen/backend.h creates it): plans each
// function once, compiles its kernels with NVRTC (through the on-disk
// cache) and runs the program on the GPU with runtime/cuda's device.
// Creating it needs no GPU; run() on a machine without a driver or device
// fails with a message that says which.
#pragma once

#include <memory>

#include "codegen/cuda/compiler.h"
#include "runtime/cuda/sim/scheduler.h"
#include "runtime/executor.h"

namespace kfuse::cuda {

struct CudaExecutorOptions {
  CudaCompileOptions compile;
  // The simulated device instead of a GPU (docs/cuda.md, "The simulator"):
  // kernels compiled as host C++, run by the simulator under `schedule`.
  // Sets compile.simulate.
  bool simulate = false;
  sim::Schedule schedule;
  bool cudaGraph = false;  // capture each run as a CUDA Graph, replay it after
  bool inplace = true;     // in-place rewriting of the plans (--no-inplace)
  bool profile = false;    // per-step times (Executor::stepTimes); not with cudaGraph
  bool poison = poisonByDefault();  // poison dead buffers (runtime/plan_runner.h)
  std::shared_ptr<Communicator> communicator;  // ExecutionOptions::communicator
};

std::unique_ptr<Executor> createCudaExecutor(CudaExecutorOptions opts = {});

}  // namespace kfuse::cuda
