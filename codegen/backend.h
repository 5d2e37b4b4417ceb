// What a target is to the rest of kfuse: the pipeline that prepares a
// function for it, whether a group of nodes can be one launch on it (the
// fusion pass's legality hook), and an executor that runs functions on it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codegen/plan/memory_report.h"
#include "codegen/plan/plan_builder.h"
#include "passes/pass.h"
#include "passes/pass_manager.h"
#include "runtime/executor.h"
#include "exec/plan.h"

namespace kfuse {

// How a target is configured: fusion (--no-fuse turns it off), the layout
// pass's mode (--layout: auto, nchw, nhwc) and, for the cpu target, the CPU
// the code is for (--cpu: an LLVM CPU name, "" for this machine): which
// convolutions run directly, and so need no im2col workspace, depends on it.
struct BackendOptions {
  bool fuse = true;
  std::string layout = "auto";
  std::string cpu;
  // cpu: the threads a runner splits steps over (0: one per CPU this
  // process may run on), for what its device allocates (deviceBytes).
  int threads = 0;
};

struct Backend {
  std::string target;
  std::string cpu;  // BackendOptions::cpu: executors for this backend's plans take it
  // The passes after any autodiff: simplification, then fusion when the
  // target generates kernels.
  std::string pipeline;
  GroupChecker canFormLaunch;  // empty where nothing is fused (interpreter)
  // The code this target generates for a plan's kernels, as `kfuse opt
  // --print-kernels` shows it: kernel IR for cpu (the LLVM IR is derived
  // from it), CUDA C for cuda. Empty for the interpreter.
  std::function<Expected<std::string>(const Plan&)> kernelSource;
  // What the target's device allocates to run a plan, when it is more than
  // the plan's two regions (cuda: scratch and cuBLASLt workspace, from the
  // emitted program, no GPU needed; cpu: packed GEMM weights, and im2col
  // patch matrices for threads beyond the first). Empty: the regions alone.
  std::function<Expected<DeviceBytes>(const Plan&)> deviceBytes;
  // How this target's plans are built, but for in-place rewriting: which
  // convolutions need an im2col workspace, which read their filter packed
  // (exec/packed_filter.h), which GEMMs read B packed (exec/packed_gemm.h).
  PlanOptions planning;

  PlanOptions planOptions(bool inplace) const {
    PlanOptions o = planning;
    o.inplace = inplace;
    return o;
  }
};

// What the cpu target allocates to run `plan` on `threads` threads (0: one
// per CPU this process may run on): the two regions, with LLVM a packed
// copy of each packed GEMM's B, and the im2col convolutions' patch
// matrices for their second and later ranges of work (runtime/cpu_conv.h).
Expected<DeviceBytes> cpuDeviceBytes(const Plan& plan, int threads = 0);

// How the cpu target builds plans for CPU `cpu` (as BackendOptions::cpu):
// a workspace for the convolutions that get no generated direct
// convolution (all of them without LLVM), and which convolutions and GEMMs
// read a packed operand (none without LLVM). Errors name an unknown CPU.
Expected<PlanOptions> cpuPlanOptions(std::string_view cpu);

// Without fusion (`fuse` false) every node is its own launch. Errors name
// an unknown target, layout mode or CPU.
Expected<Backend> backendFor(std::string_view target, const BackendOptions& options = {});

// Runs the backend's pipeline over every function of `m` (inference).
Status prepareModule(Module& m, const Backend& backend, const Instrumentation& instr = {});

// Executors keep one compiled plan per function they run.
Expected<std::unique_ptr<Executor>> createExecutor(std::string_view target, const ExecutionOptions& opts = {});
std::vector<std::string> availableTargets();
// The target used when none is given: cpu.
std::string defaultTarget();

}  // namespace kfuse
