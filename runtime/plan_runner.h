// What running a plan on a device means, written once above the device:
// checking a run's inputs and parameters, binding them (inputs every run,
// constants once, a parameter when the module's tensor is not the one the
// device holds), stepping through the plan, poisoning dead buffers, keeping
// state resident between training steps, the finite-loss guard, per-step
// times, and the outputs and updates that come back. A device (the CPU, a
// CUDA GPU, the simulated one of the simulator) derives from PlanRunner and
// supplies memory and launches through the protected hooks; every device
// then behaves alike.
#pragma once

#include <memory>
#include <vector>

#include "exec/plan.h"
#include "runtime/comm/communicator.h"
#include "ir/interpreter.h"
#include "runtime/poison.h"
#include "runtime/step_times.h"

namespace kfuse {

struct RunnerOptions {
  // Debug: fill the arena with 0xFF bytes (NaN in every float type) before
  // each run, and each buffer with NaN (float dtypes) or 0xAB bytes (others)
  // after the last step that uses it, so that reading a dead or overwritten
  // buffer gives a visibly wrong result. Off unless the build says otherwise.
  bool poison = poisonByDefault();
  // Time every step of every run (stepTimes(); kfuse profile). Off, a run
  // reads no clock and stores nothing.
  bool profile = false;
  // Threads a step may use (the cpu target; runtime/threads.h); 0: one per
  // CPU the process may run on. Results do not depend on it.
  int threads = 0;
  // The ranks a plan's collective steps exchange with; null: a world of one
  // (each all-reduce is then a copy).
  std::shared_ptr<Communicator> communicator;
};

// How one run treats the state it updates (training loops: Trainer::step).
struct RunOptions {
  // Leave the updated state in the device's resident region instead of
  // returning it: no update tensors, and the module's parameters are stale
  // until syncState(). A training step then copies nothing in or out (the
  // copy out of a 784-512-512-10 MLP's weights and Adam moments was 14% of
  // its step on the CPU). Needs canKeepState().
  bool keepState = false;
  // When output `finiteOutput` (a training step's loss) is NaN or infinite,
  // stop before the first step that overwrites a parameter: the outputs come
  // back, no state changes. Needs canGuard(finiteOutput).
  int finiteOutput = -1;
};

class PlanRunner {
 public:
  virtual ~PlanRunner() = default;
  PlanRunner(const PlanRunner&) = delete;
  PlanRunner& operator=(const PlanRunner&) = delete;

  // Runs the plan with the module's parameters; returns outputs and the new
  // values of updated parameters (which the device holds too, so a caller
  // applying them uploads nothing on the next run).
  Expected<InterpreterResult> run(const Module& m, const std::vector<Tensor>& args, const RunOptions& ro = {});

  // Whether every update writes a parameter the plan holds (keepState).
  bool canKeepState() const { return keepable_; }
  // Whether output `o` is final before any step overwrites a parameter
  // (finiteOutput); false when, say, batch norm's running statistics are
  // updated in the forward, before the loss.
  bool canGuard(int o) const;
  // A training loop's run (Executor::runTrainingStep): keeps the state when
  // the plan allows it, with output `guard` (-1: none) checked first, and
  // says so in `kept`; otherwise a plain run().
  Expected<InterpreterResult> runTrainingStep(const Module& m, const std::vector<Tensor>& args, int guard, bool& kept);
  // Copies the state keepState runs left on the device into `m`.
  Status syncState(Module& m);

  // Launches so far, as the device counts them (one per step on the CPU).
  uint64_t launches() const { return launches_; }
  const Plan& plan() const { return *plan_; }
  // Per-step times of the complete runs so far; empty unless profiling.
  const StepTimes& stepTimes() const { return times_; }
  // Device memory allocated so far.
  uint64_t bytesAllocated() const { return bytesAllocated_; }

 protected:
  PlanRunner(std::shared_ptr<const Plan> plan, RunnerOptions opts);

  // ---- what a device supplies
  // Allocates the plan's regions (Plan::arenaBytes, residentBytes), once,
  // before the first run binds anything; adds them to bytesAllocated_.
  virtual Status allocate() = 0;
  // Copies between the host and buffer `buffer` (its storage, for aliases).
  virtual Status upload(int buffer, const Tensor& t) = 0;
  virtual Status download(int buffer, Tensor& into) = 0;
  // A new host tensor holding the buffer (a run's outputs). Devices whose
  // memory the host reads copy straight into it, without zero-filling it
  // first (GPT-2's logits are 25.7 MB).
  virtual Expected<Tensor> fetch(int buffer);
  // Copies buffer `src` over buffer `dst` (same size) on the device.
  virtual Status copyBuffer(int dst, int src) = 0;
  // Poisoning (RunnerOptions::poison): the whole arena before a run, one
  // buffer after its last use.
  virtual Status poisonArena() = 0;
  virtual Status poisonBuffer(int buffer) = 0;
  // Before the run binds its inputs, and after its last step (the outputs
  // are then complete and readable).
  virtual Status beginRun() { return Status::ok(); }
  virtual Status finishRun() { return Status::ok(); }
  // Runs step `i`, counting what it launches (countLaunches).
  virtual Status runStep(size_t i) = 0;
  // Runs every step as one replay (a CUDA Graph) when the device does so;
  // false: the runner steps one by one. Never asked when the run guards.
  virtual Expected<bool> runAllSteps() { return false; }
  // Whether the device times its own steps (into stepSeconds() by the end
  // of finishRun); otherwise the runner reads the wall clock around each.
  virtual bool timesSteps() const { return false; }
  // Whether every element of float buffer `buffer` is finite, mid-run (the
  // guard). By default from a download.
  virtual Expected<bool> allFinite(int buffer);

  // ---- for the device
  // An all-reduce start: each input copied into its output, unless in-place
  // rewriting made them one storage (the exchange then works on outputs).
  Status bucketIntoOutputs(const CollectiveSpec& c);
  // The tensor the device's copy of buffer `b` (a parameter's storage)
  // holds, or null when it holds none the module has.
  const std::shared_ptr<const Tensor>& uploaded(int b) const { return uploaded_[static_cast<size_t>(b)]; }
  void countLaunches(uint64_t n) { launches_ += n; }
  std::vector<double>& stepSeconds() { return runTimes_; }
  uint64_t bytesAllocated_ = 0;
  const RunnerOptions opts_;
  const std::shared_ptr<const Plan> plan_;

 private:
  Status checkRun(const Module& m, const std::vector<Tensor>& args, const RunOptions& ro) const;
  Status bind(const Module& m, const std::vector<Tensor>& args);
  Expected<bool> guardFails(const RunOptions& ro);
  Expected<InterpreterResult> outputs();
  Status stepAll(const RunOptions& ro, bool& stopped);
  Status keepUpdates();
  Status returnUpdates(InterpreterResult& r);
  // A tensor for update `u`'s new value, reusing the one of two runs ago
  // when nobody else holds it any more.
  std::shared_ptr<Tensor> updateTensor(size_t u, const TensorType& t);

  uint64_t launches_ = 0;
  bool allocated_ = false;
  bool constantsUploaded_ = false;
  // Per buffer: the tensor the device's copy holds (parameters); null when
  // it holds none.
  std::vector<std::shared_ptr<const Tensor>> uploaded_;
  std::vector<bool> writtenInPlace_;   // parameter storage an update overwrites
  std::vector<bool> residentAhead_;    // parameter storage newer than the module's tensor (keepState)
  std::vector<int> paramBuffer_;       // per update: the Param buffer of its parameter, or -1
  bool keepable_ = true;
  int firstParamWrite_ = -1;           // the first step writing parameter storage (-1: none)
  std::vector<int> lastWriter_;        // per buffer's storage: the last step writing it (-1: none)
  std::vector<std::vector<int>> dying_;  // per step: buffers whose last use it is
  // Per plan update: the tensor returned by the last run and the one before.
  std::vector<std::shared_ptr<Tensor>> last_, spare_;
  StepTimes times_;
  std::vector<double> runTimes_;  // profile: the current run's, added to times_ when it completes
};

}  // namespace kfuse
