#include "exec/packed_filter.h"

#include "ir/ops/window.h"

namespace kfuse {

bool packedFilterShape(const ConvSpec& c) {
  // Taps over a plane taken whole (at stride 1 and as wide as its input)
  // or strided: every tap of every output pixel reads an input row of the
  // plane or none (the code skips those), and each pixel's input is a
  // broadcast wherever it lies.
  const bool taps = (c.wholePlanes() && c.dilH == 1 && c.dilW == 1) ||
                    ops::packedFilterStrided(c.strideH, c.strideW, c.dilH, c.dilW);
  return c.direction == ConvDirection::Forward && !c.channelsLast && !c.filterLast && (c.pointwise() || taps) &&
         c.groups == 1 && (c.liveTaps.empty() || !c.pointwise()) && c.c > 0 && c.n > 0 &&
         ops::packedFilterPlanes(c.o, packedFilterRows(c), c.oh, c.ow);
}

bool packedFilterAllowed(const Plan& plan, size_t step) {
  if (step >= plan.steps.size() || plan.steps[step].kind() != StepKind::Conv) return false;
  const ConvSpec& c = plan.steps[step].conv();
  if (!packedFilterShape(c)) return false;
  for (int b : {c.x, c.w, c.y, c.bias})
    if (b >= 0 && plan.buffers[static_cast<size_t>(b)].type.dtype != DType::F32) return false;
  return c.x >= 0 && c.w >= 0 && c.y >= 0 && readOnlyWhileRunning(plan, c.w);
}

bool packedFilterFits(const Plan& plan, size_t step) {
  return packedFilterAllowed(plan, step) && plan.steps[step].conv().packedFilter;
}

void markPackedFilters(Plan& plan, const PackedFilterPolicy& policy) {
  for (size_t s = 0; s < plan.steps.size(); ++s)
    if (plan.steps[s].kind() == StepKind::Conv) {
      const bool pack = policy && packedFilterAllowed(plan, s) && policy(plan.steps[s].conv());
      plan.steps[s].conv().packedFilter = pack;
    }
}

std::vector<size_t> packedFilterSteps(const Plan& plan) {
  std::vector<size_t> out;
  for (size_t s = 0; s < plan.steps.size(); ++s)
    if (packedFilterFits(plan, s)) out.push_back(s);
  return out;
}

int64_t packedFilterElements(const ConvSpec& c) { return packedFilterOutputs(c.o) * packedFilterRows(c); }

uint64_t packedFilterBytes(const Plan& plan, const std::vector<size_t>& steps) {
  uint64_t bytes = 0;
  for (size_t s : steps) bytes += static_cast<uint64_t>(packedFilterElements(plan.steps[s].conv())) * sizeof(float);
  return bytes;
}

void packFilter(const ConvSpec& c, const float* w, float* out) {
  const int64_t rows = packedFilterRows(c), outputs = packedFilterOutputs(c.o);
  for (int64_t o = 0; o < outputs; ++o)
    for (int64_t k = 0; k < rows; ++k) out[packedFilterIndex(c, o, k)] = o < c.o ? w[o * rows + k] : 0.0f;
}

}  // namespace kfuse
