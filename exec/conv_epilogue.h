// Running a convolution step's epilogue inside its generated direct
// convolution (codegen/cpu/conv_emitter.h), over each block of output
// channels as soon as the block is complete, while it is in the first-level
// cache, instead of in a second pass over the whole output. The packed GEMM
// does the same per block of rows (exec/row_blocks.h).
//
// A block is `channels` output channels of one image over `rows` output
// rows of `cols` columns (a 1x1 convolution over panels,
// ConvSpec::pointwisePanels: `cols` pixels of the flattened plane, each
// buffer's rows following one another), at (image, first channel, first row, column 0) of
// the convolution's output y (ConvSpec's n, o, oh, ow: NCHW, the spec's own
// rows where it joins a 1x1 convolution's rows). The epilogue kernel cut to
// a block walks [channels, rows, cols]; its buffers' pointers move to the
// block by fixed strides per image, channel and row.
//
// An epilogue qualifies when it walks y's elements: its space (outer, then
// reduce dims), however its dims are shaped, has y's element count, each
// access is affine in y's (image, channel, row, column), and the buffers
// the block must not reach past (y's storage, everything the epilogue
// writes: "confined") are walked exactly as y is, or, by a reduction's row
// stores, one element per plane, so a block touches only its own elements.
// A reduction must fold whole output planes (a global average pool), and
// the convolution must run whole planes (ConvSpec::wholePlanes, or a
// packed filter's code: ConvSpec::packedFilter, unless its units are rows
// of a plane of several, packedFilterRowUnits), whose blocks hold them
// complete; the cut kernel then reduces over [rows, cols]
// per channel. No globals, gathers, Index leaves or scatters.
#pragma once

#include <array>
#include <vector>

#include "exec/kernel_ir.h"
#include "exec/plan.h"
#include "ir/support/expected.h"

namespace kfuse {

// The fewest outputs a work unit of the convolution (a row or a plane of
// every channel of a group, exec/parallel.h) must hold for its epilogue to
// run inside: a call of the cut kernel per block of fewer costs more than
// the second pass saves (MobileNetV2's 3x3 depthwise convolutions over
// rows of 56 pixels, one channel per group: measured in docs/fusion.md).
inline constexpr int64_t kMinConvEpilogueUnit = 256;

// And a block, up to kConvEpilogueBlockChannels channels (the widest
// tiling's, subtarget.h) of a row or of whole planes, must stay in the
// first-level cache for the epilogue to read it back there: ResNet-18's
// 3x3 convolution over 56x56 planes (blocks of 200 KB) ran 4% slower with
// its ReLU inside (docs/fusion.md).
inline constexpr int64_t kConvEpilogueBlockChannels = 16;
inline constexpr int64_t kMaxConvEpilogueBlockBytes = 16 * 1024;

// Per epilogue kernel buffer, the elements its pointer moves per image,
// output channel, output row and output column of the convolution.
struct ConvBlocks {
  std::vector<std::array<int64_t, 4>> strides;
};

// Whether `k` runs in blocks of `c`'s output, and how; the error says why
// not. confined[i] and storedOnly[i] (EpilogueStorage; empty: none) are for
// kernel buffer i: a confined buffer is walked as y is, unless it is only
// stored, where any map that sends different outputs to different elements
// will do (a block then writes only elements of its own outputs): the
// copy a padded or concatenated tensor is built with, done by the
// convolution's epilogue writing into it (codegen/plan/copy_elision.h).
Expected<ConvBlocks> convBlocksOf(const kernel::Kernel& k, const ConvSpec& c, const std::vector<bool>& confined,
                                  const std::vector<bool>& storedOnly = {});

// `k` over one block of `channels` x `rows` x `cols`: run with every buffer
// i's pointer moved by blocks.strides[i] times the block's image, first
// channel and first row, it does what `k` does for that block.
kernel::Kernel convBlockKernel(const kernel::Kernel& k, const ConvBlocks& blocks, int64_t channels, int64_t rows,
                               int64_t cols);

// Whether Conv step `step` of `plan`, when it runs as a direct convolution,
// runs its epilogue too, and how; the error says why not. Besides
// convBlocksOf's rule: a forward convolution of f32 operands, and an
// epilogue that writes over none of them (later blocks still read x).
Expected<ConvBlocks> convEpilogue(const Plan& plan, size_t step);

}  // namespace kfuse
