// Which convolutions the cpu target runs as generated direct convolutions
// (codegen/cpu/conv_emitter.h) instead of im2col + GEMM (cpu_conv.h): one
// rule, read by code generation, plan building (which convolutions need an
// im2col workspace) and the layout cost model (passes/layout_cost.cpp).
#pragma once

#include <cstdint>

#include "ir/ops/window.h"

namespace kfuse {

// The generated code computes NCHW convolutions with horizontal stride 1 or
// 2: each vector of its output block is a contiguous run of one output row,
// and each vector of inputs a tap reads is a contiguous run of an input row
// (stride 1) or the even elements of two (stride 2).
inline bool directConvComputes(bool channelsLast, int64_t strideW) {
  return !channelsLast && (strideW == 1 || strideW == 2);
}

// And pays where output rows of `ow` pixels take more than one `lanes`-wide
// vector and fill at least three quarters of the lanes they take. A 7-pixel
// row in 16 lanes does less than half the work it pays for; a row of one
// vector leaves a block too few accumulators per filter value loaded: with
// 16 lanes, ResNet-18's 14-pixel rows (256 channels) took 2.67 ms directly
// against 1.71 ms as im2col + GEMM, its 28- and 56-pixel rows 1.73 against
// 1.80 and 1.63 against 2.30 ms (bench/conv_layout_bench).
// Without `partialVectors` (a CPU whose masked loads are slow: AVX2's
// vmaskmovps), rows must also end in a whole vector, or in one that misses
// a single lane of 8 or more: at 8 lanes, rows of 14, 20 and 28 pixels ran
// 0.84-0.97x im2col + GEMM's speed directly, rows of 16, 32, 48 and 56
// 1.1-1.4x; rows of 39, 47 and 55 (one lane short) 1.07-1.14x, SqueezeNet's
// 55-pixel fire layers 1.20x and its 111-pixel stride-2 first layer 1.04x,
// where 54 ran 0.99x and 51 and 53 0.94-0.98x (conv_layout_bench
// --cpu=haswell --probes, 64 channels, planes too large to be taken whole).
// (ops::fillsThreeQuarters, beside the whole-plane rule.)
using ops::fillsThreeQuarters;

inline bool directConvRowsFill(int64_t ow, int64_t lanes, bool partialVectors) {
  if (ow <= lanes || lanes < 1) return false;
  if (!partialVectors && ow % lanes != 0 && (lanes < 8 || ow % lanes != lanes - 1)) return false;
  return fillsThreeQuarters(ow, lanes);
}

// A convolution strided by s in both axes over few input channels (an
// image model's first layer: 3) runs as a stride-1 convolution over the s*s
// phases of its input (the conv-phases pass: C*s*s channels, a kernel of
// about k/s taps, those standing for none of the op's zero and left out:
// live_taps) where that has at most 16 channels. The stride-2
// direct convolution deinterleaves every vector of inputs it loads, and
// over 3 channels it has few output channels to share each one with:
// ResNet-50's 7x7 first layer took 4.7 ms, 3.5 over the phases, pad and
// split included (AVX2, one thread). A 3x3 stride-2 first layer came out
// even while the phases' zero taps were multiplied (1.8 times the work);
// with them left out, MobileNetV2's went from 610-720 us to 60-90 for the
// split plus 360-420, EfficientNet-B0's from 950-1190 to 80 + 620-960,
// MobileNetV3-small's from 305-404 to 50 + 160-170.
inline bool convPhasesPay(int64_t channels, int64_t stride) {
  return stride >= 2 && channels * stride * stride <= 16;
}

// Whole planes pay where they fill their vectors (ops::directConvPlaneFills,
// beside ops::convWholePlanes).
using ops::directConvPlaneFills;

// A convolution strided by s in both axes over more channels, or grouped
// (depthwise too: each group's channels' phases stay in the group), runs
// over the phases of its input (the conv-phases pass, with live_taps: no
// more multiplications than the op's) where the stride-1 convolution takes its
// output planes whole (ops::convWholePlanes: the phases' rows, W/s, as wide
// as the output's) and they fill 8- and 16-lane vectors
// (directConvPlaneFills). Those are a ResNet's stride-2 layers on 56, 28 and
// 14 pixel inputs; directly they deinterleave every input vector and their
// rows of 28, 14 and 7 pixels end inside vectors, so they ran as im2col +
// GEMM at 52-60 GFLOP/s where stride-1 whole planes run at 75-85 (AVX2);
// MobileNetV2's 3x3 stride-2 depthwise layers ran in the runtime's loops
// (357, 152 and 173 us; 222, 88 and 66 over the phases, split included):
// ResNet-18's 3x3 layers took 1.61 ms on 28x28 and 14x14 outputs over the
// phases against 2.13 and 1.97 ms, on 7x7 1.96 against 2.21. A 1x1 filter
// reads a quarter of the phases and has few products per load: over 7x7
// outputs it took 373 us against 294, over 14x14 233 against 273, so it
// needs planes of 14x14 or more. And planes of at most 32x32: the split of
// a larger input costs more than the phases save (EfficientNet-B0's
// 112x112 depthwise input, 96 channels: a 310-370 us split).
inline constexpr int64_t kPhasesPlanePixels = 1024;
inline bool convPhasesTakePlanes(int64_t stride, int64_t h, int64_t w, int64_t oh, int64_t ow, int64_t taps) {
  if (stride < 2 || h % stride != 0 || w % stride != 0) return false;
  const int64_t pixels = oh * ow;
  if (pixels > kPhasesPlanePixels || (taps == 1 && pixels < 196)) return false;
  return ops::convWholePlanes(1, 1, oh, ow, w / stride, /*groups=*/1, taps) && directConvPlaneFills(pixels, 8) &&
         directConvPlaneFills(pixels, 16);
}

// A 1x1 convolution strided by s without padding, its filter fixed, whose
// input no other layer splits into phases, runs at stride 1 over every
// s-th pixel of its input (the conv-phases pass: a strided slice, then the
// convolution) where that one runs directly over whole planes filling 8-
// and 16-lane vectors. Otherwise it ran as im2col + GEMM, whose patch
// matrix is the same pixels: ResNet-50's downsamples took 2.60, 2.30 and
// 2.84 ms (79, 89 and 72 GFLOP/s; Zen 4, one thread) that way.
inline bool pointwiseSubsamplePays(int64_t stride, int64_t oh, int64_t ow) {
  const int64_t pixels = oh * ow;
  return stride >= 2 && ops::convWholePlanes(1, 1, oh, ow, ow, /*groups=*/1, /*taps=*/1) &&
         directConvPlaneFills(pixels, 8) && directConvPlaneFills(pixels, 16);
}

}  // namespace kfuse
