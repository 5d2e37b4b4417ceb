#include "exec/packed_gemm.h"

#include <algorithm>

namespace kfuse {

bool packedGemmShape(const GemmSpec& g) {
  return numElements(g.batch) == 1 && !g.transA && g.m >= 1 && g.n >= 1 && g.k >= 1;
}

bool packedGemmAllowed(const Plan& plan, size_t step) {
  if (step >= plan.steps.size() || plan.steps[step].kind() != StepKind::Gemm) return false;
  const GemmSpec& g = plan.steps[step].gemm();
  for (int b : {g.a, g.b, g.c})
    if (b < 0 || plan.buffers[static_cast<size_t>(b)].type.dtype != DType::F32) return false;
  return packedGemmShape(g) && readOnlyWhileRunning(plan, g.b);
}

bool packedGemmFits(const Plan& plan, size_t step) {
  return packedGemmAllowed(plan, step) && plan.steps[step].gemm().packedB;
}

void markPackedGemms(Plan& plan, const PackedGemmPolicy& policy) {
  for (size_t s = 0; s < plan.steps.size(); ++s)
    if (plan.steps[s].kind() == StepKind::Gemm) {
      const bool pack = policy && packedGemmAllowed(plan, s) && policy(plan.steps[s].gemm());
      plan.steps[s].gemm().packedB = pack;
    }
}

bool packedColumnsOuter(const GemmSpec& g) {
  return g.k > kPackedMaxK || packedBElements(g) * int64_t{sizeof(float)} > kPackedMaxBytes;
}

std::vector<size_t> packedGemmSteps(const Plan& plan) {
  std::vector<size_t> out;
  for (size_t s = 0; s < plan.steps.size(); ++s)
    if (packedGemmFits(plan, s)) out.push_back(s);
  return out;
}

Expected<kernel::RowBlocks> packedEpilogue(const Plan& plan, size_t step) {
  if (!packedGemmFits(plan, step)) return Error("the GEMM is not packed");
  const Step& s = plan.steps[step];
  if (s.kernels.empty()) return Error("there is no epilogue");
  if (packedColumnsOuter(s.gemm())) return Error("the GEMM runs columns outer: a row of C is complete only at the end");
  const EpilogueStorage e = epilogueStorage(plan, s, s.gemm().c);
  if (std::find(e.written.begin(), e.written.end(), plan.storageOf(s.gemm().a)) != e.written.end())
    return Error("the epilogue writes over A");
  return kernel::rowBlocksOf(plan.kernels[static_cast<size_t>(s.kernels[0])], s.gemm().m, e.confined);
}

int64_t packedBElements(const GemmSpec& g) { return (g.n + kPackedPanel - 1) / kPackedPanel * kPackedPanel * g.k; }

uint64_t packedBytes(const Plan& plan, const std::vector<size_t>& steps) {
  uint64_t bytes = 0;
  for (size_t s : steps) bytes += static_cast<uint64_t>(packedBElements(plan.steps[s].gemm())) * sizeof(float);
  return bytes;
}

void packB(const GemmSpec& g, const float* b, float* out) {
  std::fill(out, out + packedBElements(g), 0.0f);
  for (int64_t j0 = 0; j0 < g.n; j0 += kPackedPanel) {
    float* panel = out + j0 * g.k;
    const int64_t cols = std::min(kPackedPanel, g.n - j0);
    for (int64_t kk = 0; kk < g.k; ++kk)
      for (int64_t c = 0; c < cols; ++c)
        panel[kk * kPackedPanel + c] = g.transB ? b[(j0 + c) * g.k + kk] : b[kk * g.n + j0 + c];
  }
}

}  // namespace kfuse
