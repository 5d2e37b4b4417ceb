// Training a model: compile the training step once, then run steps, evaluate
// and save. The module keeps the forward function (evaluation, with batch
// norm on running statistics) beside the compiled @train_step; both read
// the same parameters, which every step updates.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "passes/pass_manager.h"
#include "passes/training.h"
#include "runtime/executor.h"

namespace kfuse {

struct TrainerOptions {
  TrainingOptions training;
  std::string target = "interpreter";
  // Fuse (on targets that generate kernels); false: every node its own launch.
  bool fuse = true;
  // Mode of layout selection: auto, nchw or nhwc (passes/layout.cpp).
  std::string layout = "auto";
  // Function to train (default: the module's first).
  std::string forward;
  // Instrumentation of the training pipeline (--print-ir-after=autodiff,
  // --dump-ir-dir, ...).
  Instrumentation instrumentation;
  // Stop with an error when the loss becomes NaN or infinite.
  bool stopOnNonFinite = true;
  // In-place rewriting and buffer poisoning of the compiled plans; with a
  // communicator of more than one rank (execution.communicator), the step
  // is data-parallel: each rank trains on its own slice of the global
  // batch, and the data-parallel pass averages gradients, loss and buffer
  // updates over the ranks (docs/training.md).
  ExecutionOptions execution;
  // Data-parallel: the size of the gradient buckets exchanged, in MiB.
  double bucketMiB = 25;
  // Compile the data-parallel step without a communicator (kfuse stats,
  // memory, profile --data-parallel): it runs as a world of one rank.
  bool dataParallel = false;
  // ZeRO-1: the optimizer state sharded over this many ranks (0: not), each
  // rank updating its shard of every parameter (passes/data_parallel.cpp).
  // With a communicator it must be its size.
  int zeroRanks = 0;
};

// The forward function and the @train_step built from it.
struct TrainingFunctions {
  Graph* forward = nullptr;
  Graph* step = nullptr;
};

// Clones the forward (opts.forward, else the module's first function) into
// @train_step, runs autodiff on it (loss, backward, optimizer), then the
// target's pipeline over the module, instrumented as opts says. The
// Trainer and `kfuse compile --train` both compile training this way.
Expected<TrainingFunctions> buildTrainingStep(Module& m, const TrainerOptions& opts);

// ZeRO-1's sharded optimizer state in a training step (the data-parallel
// pass's zero-ranks): each state buffer's name and its whole type.
std::map<std::string, TensorType> shardedState(const Graph& step);

// Whether `opts` trains data-parallel: a communicator of several ranks, or
// TrainerOptions::dataParallel.
bool dataParallel(const TrainerOptions& opts);

class Trainer {
 public:
  // Builds @train_step from the forward function and compiles it. Data
  // parallel, every rank then checks that all compiled the same step (an
  // error naming the ranks that differ, instead of a hang later) and takes
  // rank 0's parameters, so that the replicas start equal.
  static Expected<std::unique_ptr<Trainer>> create(std::unique_ptr<Module> model, TrainerOptions opts);

  // One optimizer step on a batch (one tensor per forward input), with the
  // given labels and learning rate; returns the loss before the update.
  Expected<double> step(const std::vector<Tensor>& inputs, const Tensor& labels, double lr);
  // Runs the forward function (evaluation mode) on a batch.
  Expected<std::vector<Tensor>> eval(const std::vector<Tensor>& inputs);

  int64_t stepCount() const { return steps_; }
  // The plan the training step runs as (null on the interpreter).
  const Plan* trainPlan() { return exec_->planFor(*train_); }
  // Per-step times of the training step's runs so far (Executor::stepTimes;
  // needs TrainerOptions::execution.profile).
  Expected<StepTimes> trainStepTimes() const { return exec_->stepTimes(*train_); }
  // Launches performed so far by every function run.
  uint64_t launches() const { return exec_->launches(); }
  // Device memory allocated so far by every function run.
  uint64_t deviceBytesAllocated() const { return exec_->deviceBytesAllocated(); }
  // The module, its parameters current (synced from the device first).
  Module& module() {
    sync();
    return *module_;
  }
  const Graph& forward() const { return *forward_; }
  const Graph& trainStep() const { return *train_; }
  // The trainable parameters, in declaration order.
  std::vector<const Param*> parameters() const;
  // Writes every parameter and buffer (optimizer state included) to a
  // weights file, atomically. Data-parallel, every rank calls it and rank 0
  // writes; ZeRO-1's state shards are gathered into whole tensors first.
  Status save(const std::string& path) const;

 private:
  Trainer() = default;
  // Brings the module's parameters up to date with the state the executor
  // kept on its device (Executor::runTrainingStep).
  void sync() const;
  std::unique_ptr<Module> module_;
  Graph* forward_ = nullptr;
  Graph* train_ = nullptr;
  std::unique_ptr<Executor> exec_;
  TrainerOptions opts_;
  int64_t steps_ = 0;
  mutable bool stale_ = false;  // the device holds newer state than the module
};

}  // namespace kfuse
