// Runs plans on the host CPU. Kernels run as compiled functions (JIT or a
// package's object code) or, without them, with the kernel interpreter;
// GEMMs call BLAS; reference steps call the op's reference implementation.
#pragma once

#include <memory>

#include "ir/interpreter.h"
#include "exec/plan.h"
#include "runtime/poison.h"
#include "runtime/step_times.h"

namespace kfuse {

// The ABI of a compiled kernel: one pointer per kernel buffer, in order.
using KernelFn = void (*)(void** buffers);

// A plan's compiled code. kernels[i] runs plan.kernels[i]; steps[s], when
// there is one, runs step s as generated code: a Conv step as a direct
// convolution with buffers {x, w, bias, y} (codegen/cpu/conv_emitter.h), a
// Gemm step as a packed GEMM with buffers {a, packed b, c}
// (codegen/cpu/gemm_emitter.h; the runner packs B, exec/packed_gemm.h).
// Missing or null entries fall back to the kernel interpreter, im2col +
// GEMM and BLAS.
struct CpuFunctions {
  std::vector<KernelFn> kernels;
  std::vector<KernelFn> steps;
};

struct CpuRunnerOptions {
  // Debug: fill the arena with 0xFF bytes (NaN in every float type) before
  // each run, and each buffer with NaN (float dtypes) or 0xAB bytes (others)
  // after the last step that uses it, so that reading a dead or overwritten
  // buffer gives a visibly wrong result. Off unless the build says otherwise.
  bool poison = poisonByDefault();
  // Time every step of every run with the wall clock (stepTimes(); kfuse
  // profile). Off, a run reads no clock and stores nothing.
  bool profile = false;
};

// How one run treats the state it updates (training loops: Trainer::step).
struct RunOptions {
  // Leave the updated state in the runner's resident region instead of
  // returning it: no update tensors, and the module's parameters are stale
  // until syncState(). A training step then copies nothing in or out (the
  // copy out of a 784-512-512-10 MLP's weights and Adam moments was 14% of
  // its step). Needs canKeepState().
  bool keepState = false;
  // When output `finiteOutput` (a training step's loss) is NaN or infinite,
  // stop before the first step that overwrites a parameter: the outputs come
  // back, no state changes. Needs canGuard(finiteOutput).
  int finiteOutput = -1;
};

// Memory: the runner is the device. On its first run it allocates the
// plan's two regions (Plan::arenaBytes, Plan::residentBytes) and nothing
// else that outlives a step; buffers sit at their planned offsets. Inputs
// are copied in on every run, constants once, parameters when the module's
// tensor is not the one the resident copy holds. run() returns updates as
// new tensors (the module keeps the old value until the caller applies
// them); a parameter updated in place then holds exactly the returned
// tensor, so a caller that applies the updates costs one copy of the state
// per step, out, and none in. A training loop copies nothing: with
// RunOptions::keepState the resident region stays ahead of the module
// until syncState().
class CpuRunner {
 public:
  CpuRunner(std::shared_ptr<const Plan> plan, CpuFunctions code = {}, CpuRunnerOptions opts = {});
  ~CpuRunner();

  // Runs the plan with the module's parameters; returns outputs and the new
  // values of updated parameters.
  Expected<InterpreterResult> run(const Module& m, const std::vector<Tensor>& args, const RunOptions& ro = {});

  // Whether every update writes a parameter the plan holds (keepState).
  bool canKeepState() const { return keepable_; }
  // Whether output `o` is final before any step overwrites a parameter
  // (finiteOutput); false when, say, batch norm's running statistics are
  // updated in the forward, before the loss.
  bool canGuard(int o) const;
  // Copies the state keepState runs left in the resident region into `m`.
  void syncState(Module& m);
  // A training loop's run (Executor::runTrainingStep): keeps the state when
  // the plan allows it with output `guard` (-1: none) checked first, and
  // says so in `kept`; otherwise a plain run().
  Expected<InterpreterResult> runTrainingStep(const Module& m, const std::vector<Tensor>& args, int guard, bool& kept);

  // Launches so far (one per step run: kernel bundle, GEMM, reference op).
  uint64_t launches() const { return launches_; }
  const Plan& plan() const { return *plan_; }
  // Per-step times of the complete runs so far; empty unless
  // CpuRunnerOptions::profile.
  const StepTimes& stepTimes() const { return times_; }
  // Bytes of device memory allocated so far: the arena and the resident
  // region once the first run started, 0 before. (Host scratch of the
  // interpreter paths, reference ops and half-precision GEMMs, which widen
  // to f32 copies, is not device memory and is not counted.)
  uint64_t bytesAllocated() const { return bytesAllocated_; }

 private:
  struct Frame;
  Status runStep(size_t index, Frame& f);
  Status runKernel(int kernel, const std::vector<int>& buffers, Frame& f);
  Status runGemm(size_t index, Frame& f);
  Status runPackedGemm(size_t index, KernelFn fn, Frame& f);
  Status runConv(const ConvSpec& c, KernelFn direct, Frame& f);
  Status runReference(const Step& s, Frame& f);

  Status allocate();
  // A tensor holding update `u`'s new value, copied from `p`.
  std::shared_ptr<Tensor> updateTensor(size_t u, const std::byte* p, const TensorType& t);
  void poison(int buffer, std::byte* p) const;

  std::shared_ptr<const Plan> plan_;
  std::vector<KernelFn> kernels_;
  std::vector<KernelFn> steps_;  // per step
  // Per packed GEMM step: B packed (exec/packed_gemm.h) and the tensor
  // it was packed from, kept so that a new upload is never mistaken for it.
  struct PackedB {
    std::unique_ptr<float, void (*)(void*)> data{nullptr, std::free};
    std::shared_ptr<const Tensor> source;
  };
  std::vector<PackedB> packed_;
  // Per step, from exec/packed_gemm.h's rule once (it scans every
  // step's writes): whether generated GEMM code may run it packed, and
  // whether that code runs the epilogue too.
  std::vector<bool> packable_;
  std::vector<bool> epilogueInside_;
  CpuRunnerOptions opts_;
  uint64_t launches_ = 0;
  uint64_t bytesAllocated_ = 0;
  std::byte* arena_ = nullptr;
  std::byte* resident_ = nullptr;
  bool constantsCopied_ = false;
  // Per buffer: the tensor its resident copy holds (parameters); null when
  // it holds none.
  std::vector<std::shared_ptr<const Tensor>> uploaded_;
  std::vector<bool> writtenInPlace_;   // parameter storage an update overwrites
  std::vector<bool> residentAhead_;    // parameter storage newer than the module's tensor (keepState)
  std::vector<int> paramBuffer_;       // per update: the Param buffer of its parameter, or -1
  bool keepable_ = true;
  int firstParamWrite_ = -1;           // the first step writing parameter storage (-1: none)
  std::vector<int> lastWriter_;        // per buffer's storage: the last step writing it (-1: none)
  std::vector<std::vector<int>> dying_;  // per step: storage whose last use it is
  // Per plan update: the tensor returned by the last run and the one before
  // it, reused when nobody else holds it any more.
  std::vector<std::shared_ptr<Tensor>> last_, spare_;
  StepTimes times_;
  std::vector<double> runTimes_;  // profile: the current run's, added to times_ when it completes
};

}  // namespace kfuse
