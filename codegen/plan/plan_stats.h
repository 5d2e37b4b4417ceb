// What a plan costs: launches and bytes moved, per phase of a training step.
#pragma once

#include <array>
#include <cstdint>

#include "exec/plan.h"

namespace kfuse {

struct PhaseStats {
  uint64_t launches = 0;
  uint64_t bytesMoved = 0;  // read + written by the phase's launches
};

struct PlanStats {
  std::array<PhaseStats, 4> phases;  // indexed by Phase
  uint64_t kernelLaunches = 0;       // generated kernel bundles
  uint64_t fusedKernels = 0;         // launches computing more than one op
  uint64_t libraryCalls = 0;         // GEMMs and convolutions
  uint64_t referenceOps = 0;         // ops run by their reference implementation
  uint64_t collectives = 0;          // all-reduce buckets (a start and a wait step each)
  uint64_t collectiveBytes = 0;      // what they exchange per rank
  uint64_t launches() const;
  uint64_t bytesMoved() const;
};

// Bytes moved estimate each launch's distinct buffers once: every input it
// reads and every output it writes (a fused launch keeps its intermediates in
// registers, so they cost nothing).
PlanStats planStats(const Plan& p);

}  // namespace kfuse
