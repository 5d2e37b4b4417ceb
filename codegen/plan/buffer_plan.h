// Buffer planning: lifetimes from the plan's step order, every Temp placed
// at an offset in one arena, parameters, inputs and constants laid out in
// the resident region, and a verifier that no two buffers alive at the same
// step share a byte. It runs on the plan rather than on the graph because
// the buffers it places (GEMM results feeding an epilogue, convolution
// workspaces, reshape views) exist only once the graph is lowered.
#pragma once

#include <string>
#include <vector>

#include "exec/plan.h"

namespace kfuse {

// Sets firstUse / lastUse of every storage buffer (aliases: -1) from the
// steps touching it through any alias; outputs and updated values are read
// at the end (lastUse == steps.size()).
void computeLifetimes(Plan& p);

// The orders the packer tries; the smallest arena wins (the first on ties).
enum class PackOrder : uint8_t { SizeDesc, StartAsc, AreaDesc, LengthDesc };
std::string_view packOrderName(PackOrder o);

struct PackResult {
  PackOrder order = PackOrder::SizeDesc;
  uint64_t arenaBytes = 0;
  std::vector<uint64_t> sizes;  // arena size each order gave, by PackOrder
};

// Places every Temp (lifetimes must be computed): for each order, buffers
// in that order go to the tightest gap (best fit) among the buffers already
// placed whose lifetimes overlap theirs, or above them all; offsets aligned
// to kBufferAlignment. Keeps the smallest arena (XLA's heap simulator
// does the same with its global decreasing-size best fit).
PackResult packArena(Plan& p);

// Inputs, parameters and constants one after another, in buffer order.
void layoutResident(Plan& p);

// Every Temp inside the arena and aligned; no two Temps alive at a common
// step overlapping; resident buffers disjoint and inside their region;
// aliases pointing at buffers no smaller than themselves. Lists every
// problem found.
Status verifyBufferPlan(const Plan& p);

// Lifetimes, packing, the resident layout and the verifier, in that order.
Expected<PackResult> planBuffers(Plan& p);

// Arena bounds from the lifetimes, in aligned bytes: the largest total of
// Temps alive at one step (no placement can use less) and the sum of all
// Temps (one allocation each, no reuse).
struct ArenaBounds {
  uint64_t lowerBound = 0;
  uint64_t noReuse = 0;
  int peakStep = -1;  // the step where the lower bound is reached
};
ArenaBounds arenaBounds(const Plan& p);

}  // namespace kfuse
