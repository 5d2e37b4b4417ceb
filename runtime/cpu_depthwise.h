// Depthwise convolutions (one input and one output channel per group) in
// NCHW on the CPU, forward and backward, as loops over each channel's plane
// instead of im2col + a GEMM of one row per group: for a plan's Conv steps
// that have no generated direct convolution (runtime/cpu_conv.h sends them
// here).
#pragma once

#include <cstdint>

#include "exec/plan.h"
#include "ir/dtype.h"
#include "runtime/cpu_conv.h"

namespace kfuse {

// Whether runDepthwise computes `c`: NCHW, c.c == c.o == c.groups > 1.
bool depthwiseRuns(const ConvSpec& c);

// Units [begin, end) of `c` in exec/parallel.h's im2colConvWork numbering
// (forward: images x tiles of output rows; backward to the input: images;
// to the weights: channels, each summed over every image in order), f32 or
// f64; no workspace.
void runDepthwise(const ConvSpec& c, DType dtype, const ConvBuffers& buffers, int64_t begin, int64_t end);

}  // namespace kfuse
