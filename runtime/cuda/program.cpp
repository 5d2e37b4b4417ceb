#include "runtime/cuda/program.h"

#include <sstream>

#include "ir/support/strings.h"
#include "exec/plan.h"

namespace kfuse::cuda {

size_t CudaProgram::deviceLaunches() const {
  size_t n = 0;
  for (const StepProgram& s : steps)
    if (s.mode == StepMode::Device) n += s.launches.size() + (s.matmul ? 1 : 0);
  return n;
}

size_t CudaProgram::hostSteps() const {
  size_t n = 0;
  for (const StepProgram& s : steps) n += s.mode == StepMode::Host ? 1 : 0;
  return n;
}

DeviceAllocation deviceAllocation(uint64_t regionsEnd, size_t scratchBytes, size_t matmulWorkspaceBytes,
                                  const std::vector<StepProgram>& steps) {
  bool anyMatmul = false;
  for (const StepProgram& s : steps) anyMatmul |= s.matmul.has_value();
  DeviceAllocation a;
  a.scratchOffset = alignedBytes(regionsEnd);
  a.workspaceOffset = alignedBytes(a.scratchOffset + scratchBytes);
  a.workspaceBytes = anyMatmul ? matmulWorkspaceBytes : 0;
  a.total = a.workspaceOffset + a.workspaceBytes;
  return a;
}

std::string describeProgram(const CudaProgram& p) {
  std::ostringstream os;
  os << "cuda program for " << p.arch << ": " << p.modules.size() << " modules, " << p.deviceLaunches()
     << " device launches, " << p.hostSteps() << " host steps, scratch " << p.scratchBytes << " bytes\n";
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const StepProgram& s = p.steps[i];
    os << "  step " << i << ":";
    if (s.mode == StepMode::Host) os << " host";
    if (s.matmul)
      os << " cublasLt " << s.matmul->m << "x" << s.matmul->n << "x" << s.matmul->k
         << (s.matmul->batch > 1 ? str(" batch ", s.matmul->batch) : std::string()) << " epilogue "
         << s.matmul->epilogueName << ";";
    for (const KernelLaunch& l : s.launches)
      os << " launch <<<" << l.grid << ", " << l.block << ", " << l.sharedBytes << ">>>"
         << (l.cooperative ? " cooperative" : "") << " " << l.what << ";";
    if (!s.note.empty()) os << "  // " << s.note;
    os << "\n";
  }
  return os.str();
}

}  // namespace kfuse::cuda
