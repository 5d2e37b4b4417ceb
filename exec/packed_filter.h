// Convolutions over small planes run on the cpu target with their output
// channels across the vector lanes, reading a copy of the filter packed
// once (below), instead of with pixels across the lanes
// (codegen/cpu/conv_emitter.h): 1x1 ones, and where the CPU's tiling says,
// taps over whole planes (a "same" 3x3; a strided layer over its input's
// phases) and strided layers read in place. The rule below says which may;
// the target's policy which do, when the plan is built, marking them in the
// plan (ConvSpec::packedFilter) for code generation, packages and the
// runner to read.
//
// Pixels across the lanes waste the lanes a plane leaves empty: a 7x7
// plane takes four 16-lane vectors for 49 pixels, and a block of them
// loads a broadcast filter value per output channel for every 16 outputs.
// Channels across the lanes fill every lane wherever the output channels
// are a multiple of 16, and each vector of filter values serves a block of
// pixels (codegen/cpu/subtarget.h's ConvTiling::pointwisePixels).
// ResNet-50's 1x1 layers over 7x7 planes took 1.19-1.39 ms each with
// pixels across the lanes (73-86 GFLOP/s), 0.99-1.07 with channels (Zen 4,
// one thread, docs/fusion.md).
//
// The copy: w (OIHW) as panels of kPackedFilterChannels output channels
// (the last padded with zeros: ops::packedFilterOutputs), panel after
// panel, each C x kh x kw rows (input channel, then tap) of
// kPackedFilterChannels contiguous floats: a block's vector of output
// channels is one load per input channel and tap, and its loads run
// through memory in order. (Rows of all O channels put a block's
// consecutive loads O floats apart: 8 KB for 2048 channels, one set of the
// first-level cache for all of them.)
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "exec/plan.h"

namespace kfuse {

// Which planes and filters pay (ops::packedFilterPlanes, beside the other
// geometry rules the graph passes read too).
using ops::kPackedFilterChannels;
using ops::packedFilterOutputs;

// Whether convolution `c`'s shape may run with a packed filter: a forward
// NCHW 1x1 convolution at stride 1 without padding (ConvSpec::pointwise),
// every tap live, one with taps over whole planes without dilation
// (ConvSpec::wholePlanes: stride 1, rows as wide as the input's), or one
// strided by 2 without dilation (ops::packedFilterStrided); one group, an
// OIHW filter, and planes and filter rows ops::packedFilterPlanes takes.
// Such a convolution runs directly whatever the CPU's lanes (codegen/cpu's
// directConvFits; a strided one where the CPU packs taps), whichever form
// its plan marks.
bool packedFilterShape(const ConvSpec& c);

// Whether Conv step `step` of `plan` may read its filter packed:
// packedFilterShape, f32 operands, and a filter that no step of the plan
// writes (a constant, or an inference plan's parameter; a training step's
// weights keep the other form).
bool packedFilterAllowed(const Plan& plan, size_t step);

// Whether it does: allowed, and marked so (ConvSpec::packedFilter) when the
// plan was built. Read by code generation, packages and the runner.
bool packedFilterFits(const Plan& plan, size_t step);

// The Conv steps of `plan` that packedFilterFits, in step order.
std::vector<size_t> packedFilterSteps(const Plan& plan);

// Which of the allowed convolutions a target packs (the cpu target's
// codegen/cpu/conv_emitter.h: packedFilterPolicy, per CPU); null: none.
using PackedFilterPolicy = std::function<bool(const ConvSpec&)>;

// Marks the Conv steps of `plan` that are allowed and that `policy` packs
// (ConvSpec::packedFilter), and unmarks the others.
void markPackedFilters(Plan& plan, const PackedFilterPolicy& policy);

// Whether the work units of convolution `c`, run with a packed filter, are
// output rows, (image, row, output channel) row-major (a 1x1 one, whose
// rows are the plan's joined rows: ops::pointwiseRowsJoined), rather than
// output planes, (image, output channel) row-major (one with taps). Two
// threads then take half the rows of every channel each, reading half of
// the input, instead of half the channels, each reading all of it, half
// written by the other core in the step before: MobileNetV2's 576 -> 96
// projections over 14x14 took 141 us at one thread and 179 at two by
// channels (Xeon, Emerald Rapids; docs/fusion.md). A 1x1 layer over one
// row (a 7x7 plane, joined) has one row per plane; layers with taps keep
// planes.
inline bool packedFilterRowUnits(const ConvSpec& c) { return c.pointwise(); }

// Whether each such unit completes whole output planes: planes, or rows of
// planes one row high. Read by the epilogue rule (a reduction inside needs
// whole planes) and by packages (format 14's code took planes).
inline bool packedFilterUnitsHoldPlanes(const ConvSpec& c) { return !packedFilterRowUnits(c) || c.oh == 1; }

// Floats the packed copy of the filter takes, and the bytes a runner
// allocates for the copies of `steps`.
int64_t packedFilterElements(const ConvSpec& c);
uint64_t packedFilterBytes(const Plan& plan, const std::vector<size_t>& steps);

// A panel's rows: one per input channel and tap, (ci * kh + ky) * kw + kx.
inline int64_t packedFilterRows(const ConvSpec& c) { return c.c * c.kh * c.kw; }

// Where filter value (o, row) lies in the packed copy.
inline int64_t packedFilterIndex(const ConvSpec& c, int64_t o, int64_t row) {
  return (o / kPackedFilterChannels * packedFilterRows(c) + row) * kPackedFilterChannels + o % kPackedFilterChannels;
}

// Packs w (OIHW) into `out` (packedFilterElements floats), the padding
// channels' filters zero.
void packFilter(const ConvSpec& c, const float* w, float* out);

}  // namespace kfuse
