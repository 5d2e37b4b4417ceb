// Runs functions of a module on a target (codegen/backend.h creates them):
// the reference interpreter, or a compiled plan on a device.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ir/interpreter.h"
#include "ir/support/strings.h"
#include "runtime/comm/communicator.h"
#include "runtime/poison.h"
#include "runtime/step_times.h"

namespace kfuse {

struct Plan;

// How an executor compiles and runs plans (targets that run no plan ignore it).
struct ExecutionOptions {
  // In-place rewriting of the plans (--no-inplace turns it off).
  bool inplace = true;
  // Poison buffers when their lifetime ends (--poison; runtime/cpu_runner.h).
  bool poison = poisonByDefault();
  // cpu: the CPU kernels are compiled for (--cpu: an LLVM CPU name such as
  // "haswell" or "x86-64-v2", whose features this machine must have; "":
  // this machine).
  std::string cpu;
  // cuda: the architecture NVRTC compiles for (--arch), and capturing each
  // run as a CUDA Graph replayed after (--cuda-graph).
  std::string cudaArch = "sm_90";
  bool cudaGraph = false;
  // cuda: the simulated device instead of a GPU (--simulate, a debugging
  // aid: docs/cuda.md, "The simulator"), its threads run in the order
  // `cudaSimSchedule` names (forward, reverse or random:SEED).
  bool cudaSimulate = false;
  std::string cudaSimSchedule = "forward";
  // Time every step of every run (stepTimes(); kfuse profile). Needs a
  // target that runs a plan (cpu, cuda) and, on cuda, no cudaGraph:
  // createExecutor refuses both. Off, runs read no clock.
  bool profile = false;
  // cpu: threads each step may use (0: one per CPU the process may run on;
  // runtime/threads.h). Results do not depend on it.
  int threads = 0;
  // cpu: the ranks a data-parallel plan's collectives exchange with
  // (runtime/comm/communicator.h); null: a world of one rank.
  std::shared_ptr<Communicator> communicator;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string_view target() const = 0;
  // Runs `fn` on `args` with the parameters its module holds now. State
  // updates are returned, not applied: the caller decides (applyUpdates).
  virtual Expected<InterpreterResult> run(const Graph& fn, const std::vector<Tensor>& args) = 0;
  // A training loop's run (Trainer::step). Like run(), except that a target
  // may keep the updated state on its device (`kept` true: no updates come
  // back and the module's parameters are stale until syncState), and that
  // when output `guard` (the loss; -1: none) is NaN or infinite no
  // parameter is changed at all. By default: run(), nothing kept.
  virtual Expected<InterpreterResult> runTrainingStep(const Graph& fn, const std::vector<Tensor>& args, int guard,
                                                      bool& kept) {
    kept = false;
    return run(fn, args);
  }
  // Copies the state runTrainingStep kept on the device for `fn` into `m`.
  virtual void syncState(const Graph& fn, Module& m) {}
  // Launches performed so far (0 for the interpreter, which launches nothing).
  virtual uint64_t launches() const { return 0; }
  // Device memory allocated so far by the plans run (0 for the interpreter).
  virtual uint64_t deviceBytesAllocated() const { return 0; }
  // The plan `fn` runs as (null for the interpreter).
  virtual const Plan* planFor(const Graph& fn) { return nullptr; }
  // With ExecutionOptions::profile: the per-step times of `fn`'s runs so
  // far, one entry per step of planFor(fn), summed over every complete run
  // (warm-up runs too: StepTimes::since an earlier reading leaves them
  // out). An error when profiling is off, `fn` has not run yet, or the
  // target runs no plan (this default).
  virtual Expected<StepTimes> stepTimes(const Graph& fn) const {
    return Error(str("the ", target(), " target runs no plan; profile needs cpu or cuda"));
  }
};

}  // namespace kfuse
