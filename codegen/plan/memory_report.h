// Where a plan's device memory goes (kfuse memory): the resident region by
// what it holds, the arena's buffers by role, the arena against its bounds,
// and the predicted peak: exactly what a device allocates to run the plan.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "exec/plan.h"

namespace kfuse {

struct MemoryReport {
  // Resident region, bytes of the buffers themselves.
  uint64_t parameters = 0;      // trainable parameters
  uint64_t optimizerState = 0;  // non-trainable parameters updated after the forward
  uint64_t otherBuffers = 0;    // other non-trainable parameters (running statistics)
  uint64_t constants = 0;
  uint64_t inputs = 0;
  // Arena buffers by role, each counted once (their sum is the no-reuse
  // total before alignment): storage the plan marks as a gradient (what an
  // optimizer update reads as its gradient operand: PlanBuffer::gradient)
  // counts as gradients (gradients fused into their update kernel have no
  // buffer); a Temp written in the forward
  // phase and last read by the loss or the backward is an activation saved
  // for backward; convolution patch matrices are workspace; the rest are
  // temporaries.
  uint64_t gradients = 0;
  uint64_t savedActivations = 0;
  uint64_t temporaries = 0;
  uint64_t workspace = 0;
  // The arena (aligned bytes): its size and its bounds (buffer_plan.h).
  uint64_t arena = 0;
  uint64_t noReuse = 0;
  uint64_t lowerBound = 0;
  // What a device allocates beyond the plan's regions (cuda: the zeroed
  // scratch of multi-block kernels, cuBLASLt's workspace; 0 on cpu).
  uint64_t deviceScratch = 0;
  uint64_t libraryWorkspace = 0;
  // cpu: the copies of B that packed GEMMs read (exec/packed_gemm.h), and
  // the im2col patch matrices of threads beyond the first (cpu_conv.h).
  uint64_t packedWeights = 0;
  uint64_t threadScratch = 0;
  // cpu, data-parallel: the communicator's staging copy of the largest
  // all-reduce bucket (Gloo reduces a bucket of several buffers as one).
  uint64_t exchangeStaging = 0;
  // Every allocation a device makes: each resident buffer aligned, plus the
  // arena, plus the device's own (addDeviceBytes).
  uint64_t predictedPeak = 0;
  // One line per output written over an input.
  std::vector<std::string> inPlace;

  double arenaOverLowerBound() const {
    return lowerBound ? static_cast<double>(arena) / static_cast<double>(lowerBound) : 1.0;
  }
};

MemoryReport memoryReport(const Plan& p, const std::set<std::string>& trainable);

// A target's allocations beyond a plan's two regions (Backend::deviceBytes),
// and the whole allocation they make together.
struct DeviceBytes {
  uint64_t scratch = 0;
  uint64_t libraryWorkspace = 0;
  uint64_t total = 0;
  uint64_t packedWeights = 0;
  uint64_t convScratch = 0;
  uint64_t exchangeStaging = 0;
};

// The host memory a Gloo communicator stages the plan's all-reduce buckets
// in: per dtype, the largest bucket that holds several buffers of it
// (runtime/comm/gloo_communicator.cpp reduces those through one copy), or
// ZeRO-1's largest padded tensor (the cpu runner's reduce-scatter and
// all-gather), whichever is larger.
uint64_t exchangeStagingBytes(const Plan& p);
void addDeviceBytes(MemoryReport& r, const DeviceBytes& d);

}  // namespace kfuse
