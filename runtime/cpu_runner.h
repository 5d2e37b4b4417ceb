// Runs plans on the host CPU. Kernels run as compiled functions (JIT or a
// package's object code) or, without them, with the kernel interpreter;
// GEMMs call BLAS; reference steps call the op's reference implementation.
#pragma once

#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>

#include "ir/interpreter.h"
#include "exec/plan.h"
#include "runtime/plan_runner.h"

namespace kfuse {

// The ABI of a compiled kernel: one pointer per kernel buffer, in order, and
// the range of its work units to do (exec/parallel.h).
using KernelFn = void (*)(void** buffers, int64_t begin, int64_t end);

// A plan's compiled code. kernels[i] runs plan.kernels[i]; steps[s], when
// there is one, runs step s as generated code: a Conv step as a direct
// convolution with buffers {x, w, bias, y} (codegen/cpu/conv_emitter.h), a
// Gemm step as a packed GEMM with buffers {a, packed b, c}
// (codegen/cpu/gemm_emitter.h; the runner packs B, exec/packed_gemm.h).
// Missing or null entries fall back to the kernel interpreter, im2col +
// GEMM and BLAS. A direct convolution whose filter exec/packed_filter.h's
// rule packs gets the packed copy as w.
struct CpuFunctions {
  std::vector<KernelFn> kernels;
  std::vector<KernelFn> steps;
};

using CpuRunnerOptions = RunnerOptions;

// Memory: the runner is the device. On its first run it allocates the
// plan's two regions (Plan::arenaBytes, Plan::residentBytes) and nothing
// else that outlives a step (but the packed copies of packed GEMMs' B and of packed filters);
// buffers sit at their planned offsets, but for a run's outputs, which its
// steps write straight into the tensors run() returns (a language model's
// logits are tens of MB: no copy out of the arena). What a run binds,
// returns and keeps is PlanRunner's (plan_runner.h).
class CpuRunner : public PlanRunner {
 public:
  CpuRunner(std::shared_ptr<const Plan> plan, CpuFunctions code = {}, CpuRunnerOptions opts = {});
  ~CpuRunner() override;

 private:
  Status allocate() override;
  Status upload(int buffer, const Tensor& t) override;
  Status download(int buffer, Tensor& into) override;
  Expected<Tensor> fetch(int buffer) override;
  Status copyBuffer(int dst, int src) override;
  Status poisonArena() override;
  Status poisonBuffer(int buffer) override;
  Status runStep(size_t index) override;
  Expected<bool> allFinite(int buffer) override;
  Status beginRun() override;

  Status runKernel(int kernel, const std::vector<int>& buffers);
  Status runGemm(size_t index);
  Status runPackedGemm(size_t index, KernelFn fn);
  Expected<float*> packedCopy(size_t index, int buffer, int64_t elements,
                              const std::function<void(const float*, float*)>& pack);
  const Tensor* unchangedTensor(int b) const;
  Status runConv(size_t index);
  Status runReference(const Step& s);
  Status startCollective(const CollectiveSpec& c);
  Status startSharded(const CollectiveSpec& c);
  Status launchExchange(int bucket, std::function<Status()> exchange);
  Status waitCollective(int bucket);
  Status finishRun() override;
  std::byte* at(int buffer) const { return ptr_[static_cast<size_t>(buffer)]; }
  std::byte* home(int buffer) const;

  std::vector<KernelFn> kernels_;
  std::vector<KernelFn> steps_;  // per step
  int threads_;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> kernelChunks_;  // per kernel: its ranges of units
  // Per packed GEMM step: B packed (exec/packed_gemm.h), per direct
  // convolution with a packed filter: the filter packed
  // (exec/packed_filter.h); and the tensor it was packed from, kept so that
  // a new upload is never mistaken for it.
  struct PackedB {
    std::unique_ptr<float, void (*)(void*)> data{nullptr, std::free};
    std::shared_ptr<const Tensor> source;
  };
  std::vector<PackedB> packed_;
  // Patch matrices for the im2col convolutions' second and later ranges
  // of work (the first uses the plan's workspace): convScratchSlots.
  std::vector<std::unique_ptr<std::byte, void (*)(void*)>> convScratch_;
  // Per step, from exec/packed_gemm.h's and exec/packed_filter.h's rules
  // once (they scan every step's writes): whether generated code may run it
  // with its constant operand packed, and whether that code runs the
  // epilogue too (a direct convolution's: whether its code runs the
  // epilogue, exec/conv_epilogue.h).
  std::vector<bool> packable_;
  std::vector<bool> epilogueInside_;
  // Exchanges started and not yet waited for, by bucket. Each runs on a
  // thread of its own once the one started before it is done, so that every
  // rank issues them to the communicator in the plan's order.
  std::map<int, std::shared_future<Status>> inFlight_;
  std::shared_future<Status> lastExchange_;
  std::byte* arena_ = nullptr;
  std::byte* resident_ = nullptr;
  std::vector<std::byte*> ptr_;  // per buffer, into the regions, once allocated
  // The outputs a run hands over (handedOutputs in cpu_runner.cpp says
  // which): every buffer on the output's storage points into `tensor`
  // from beginRun until fetch moves it out, then home again.
  struct HandedOutput {
    int output = -1;
    std::vector<int> buffers;
    std::optional<Tensor> tensor;
  };
  std::vector<HandedOutput> handed_;
};

}  // namespace kfuse
