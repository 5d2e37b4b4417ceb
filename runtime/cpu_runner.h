// Runs plans on the host CPU. Kernels run as compiled functions (JIT or a
// package's object code) or, without them, with the kernel interpreter;
// GEMMs call BLAS; reference steps call the op's reference implementation.
#pragma once

#include <memory>

#include "ir/interpreter.h"
#include "runtime/plan.h"

namespace kfuse {

// The ABI of a compiled kernel: one pointer per kernel buffer, in order.
using KernelFn = void (*)(void** buffers);

class CpuRunner {
 public:
  // `kernels[i]` runs plan->kernels[i]; empty or null entries use the kernel
  // interpreter.
  CpuRunner(std::shared_ptr<const Plan> plan, std::vector<KernelFn> kernels = {});

  // Runs the plan with the module's parameters; returns outputs and the new
  // values of updated parameters.
  Expected<InterpreterResult> run(const Module& m, const std::vector<Tensor>& args);

  // Launches so far (one per step run: kernel bundle, GEMM, reference op).
  uint64_t launches() const { return launches_; }
  const Plan& plan() const { return *plan_; }

 private:
  struct Frame;
  Status runStep(const Step& s, Frame& f);
  Status runKernel(int kernel, const std::vector<int>& buffers, Frame& f);
  Status runGemm(const GemmSpec& g, Frame& f);
  Status runConv(const ConvSpec& c, Frame& f);
  Status runReference(const Step& s, Frame& f);

  std::shared_ptr<const Plan> plan_;
  std::vector<KernelFn> kernels_;
  uint64_t launches_ = 0;
};

}  // namespace kfuse
