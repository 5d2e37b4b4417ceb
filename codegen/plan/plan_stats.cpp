#include "codegen/plan/plan_stats.h"

#include <set>

namespace kfuse {

uint64_t PlanStats::launches() const {
  uint64_t n = 0;
  for (const PhaseStats& p : phases) n += p.launches;
  return n;
}

uint64_t PlanStats::bytesMoved() const {
  uint64_t n = 0;
  for (const PhaseStats& p : phases) n += p.bytesMoved;
  return n;
}

PlanStats planStats(const Plan& p) {
  PlanStats s;
  for (const Step& step : p.steps) {
    // Views of one buffer count once; an output written in place over an
    // input is still a read and a write.
    std::set<int> touched;
    auto touch = [&](int b) {
      while (p.buffers[static_cast<size_t>(b)].kind == BufferKind::Alias && !p.buffers[static_cast<size_t>(b)].inPlace)
        b = p.buffers[static_cast<size_t>(b)].aliasOf;
      touched.insert(b);
    };
    switch (step.kind()) {
      case StepKind::Kernels:
        ++s.kernelLaunches;
        break;
      case StepKind::Gemm:
        ++s.libraryCalls;
        touch(step.gemm().a);
        touch(step.gemm().b);
        // A GEMM with an epilogue hands its result to the epilogue in cache
        // line-sized pieces on a GPU, but on the CPU it is written and read.
        touch(step.gemm().c);
        break;
      case StepKind::Conv:
        ++s.libraryCalls;
        for (int b : {step.conv().x, step.conv().w, step.conv().bias, step.conv().y})
          if (b >= 0) touch(b);
        break;
      case StepKind::Reference:
        ++s.referenceOps;
        for (int b : step.reference().inputs) touch(b);
        for (int b : step.reference().outputs) touch(b);
        break;
      case StepKind::Collective:
        if (step.collective().phase == CollectivePhase::Wait) break;
        ++s.collectives;
        for (int b : step.collective().outputs) s.collectiveBytes += p.buffers[static_cast<size_t>(b)].type.byteSize();
        for (int b : step.collective().inputs) touch(b);
        for (int b : step.collective().outputs) touch(b);
        break;
    }
    for (const std::vector<int>& buffers : step.kernelBuffers)
      for (int b : buffers) touch(b);
    if (step.ops > 1) ++s.fusedKernels;
    PhaseStats& ph = s.phases[static_cast<size_t>(step.phase)];
    ++ph.launches;
    for (int b : touched) ph.bytesMoved += p.buffers[static_cast<size_t>(b)].type.byteSize();
  }
  return s;
}

}  // namespace kfuse
