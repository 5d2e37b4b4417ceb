// A plan step as one CUDA compilation unit: the prelude, a device function
// per kernel (kernel_emitter.h) and the `extern "C" __global__` entries the
// runtime launches. One launch per step:
//
//   kernel bundles  one entry that hands each kernel a range of blockIdx.x
//                   (multi-tensor launches: every optimizer update at once);
//                   when the pointers exceed the launch-parameter limit the
//                   bundle is cut into consecutive chunks, one launch each;
//   GEMM / conv     a tiled GEMM (or direct convolution) whose epilogue runs
//                   per output element in registers when it is pointwise,
//                   else after a grid barrier (a cooperative launch) over
//                   the product written to memory (gemm_emitter.h);
//                   or cuBLASLt followed by the epilogue kernel as a bundle.
//
// Entries take one pointer per distinct plan buffer (named b<id>, const when
// no kernel of the entry writes it) and, when a kernel needs it, the step's
// scratch memory.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "codegen/cuda/kernel_emitter.h"
#include "runtime/cuda/program.h"
#include "exec/plan.h"

namespace kfuse::cuda {

struct StepEmitOptions {
  EmitOptions kernel;
  // Bytes of kernel parameters one launch may take. 4 KiB holds on every
  // driver (newer ones allow 32 KiB on sm_70+).
  size_t maxParamBytes = 4096;
};

// One compilation unit and the launches of its entries (module still -1;
// scratch offsets relative to the step's own scratch, which the program
// builder places).
struct StepSource {
  std::string name;  // the step's name
  std::string source;
  std::vector<KernelLaunch> launches;
  size_t scratchBytes = 0;
  std::string note;
};

// The parameters of one entry: distinct plan buffers in order of first use.
class EntryParams {
 public:
  explicit EntryParams(const Plan& plan) : plan_(&plan) {}
  // The parameter holding `buffer` (added on first use).
  std::string use(int buffer, bool written);
  std::string declarations() const;
  const std::vector<int>& buffers() const { return order_; }
  size_t bytes(bool withScratch) const { return 8 * (order_.size() + (withScratch ? 1 : 0)); }

 private:
  const Plan* plan_;
  std::vector<int> order_;
  std::map<int, bool> written_;
};

// What a kernel of `step` may assume of its buffers: which may be
// __restrict__ (no other buffer of the kernel shares its storage, or only
// inputs do), and which were written earlier in the same launch.
KernelEmitContext kernelContext(const Plan& plan, const kernel::Kernel& k, const std::vector<int>& buffers,
                                int writtenBefore = -1);

// A C identifier from a kernel name: "kf_" + name with other characters as '_'.
std::string deviceName(const std::string& kernelName);

// The kernels of `step` (all of a Kernels step, or a GEMM step's epilogue
// after a cuBLASLt matmul) as one launch, or several when parameters overflow.
Expected<StepSource> emitKernelStep(const Plan& plan, const Step& step, const StepEmitOptions& opts);

// The header every unit starts with: a comment naming the step, the prelude.
std::string unitHeader(const std::string& stepName, const std::string& what, bool withGemm);

}  // namespace kfuse::cuda
