// Sliding-window geometry shared by conv2d and the pooling ops: the NCHW /
// NHWC image view, the OIHW / OHWI filter view, list attributes, and the
// output-extent rule.
#pragma once

#include "ir/ops/op_helpers.h"

namespace kfuse::ops {

// An NCHW or NHWC value: logical extents and memory offsets by logical index.
struct Image {
  int64_t n = 0, c = 0, h = 0, w = 0;
  bool channelsLast = false;

  Shape shape() const { return channelsLast ? Shape{n, h, w, c} : Shape{n, c, h, w}; }
  int64_t offset(int64_t in, int64_t ic, int64_t ih, int64_t iw) const {
    return channelsLast ? ((in * h + ih) * w + iw) * c + ic : ((in * c + ic) * h + ih) * w + iw;
  }
};

// A value of type t as an image; plain rank-4 data is NCHW, as in ONNX and
// PyTorch. Types rather than operands, because the gradient ops know some
// images only by a shape attribute; `what` names the value in messages
// ("operand 0", "attribute input_shape").
Expected<Image> imageOfType(const TensorType& t, std::string_view what);

// An OIHW or OHWI filter [O, I, kH, kW] (logical order).
struct Filter {
  int64_t o = 0, i = 0, kh = 0, kw = 0;
  bool channelsLast = false;

  int64_t offset(int64_t fo, int64_t fi, int64_t y, int64_t x) const {
    return channelsLast ? ((fo * kh + y) * kw + x) * i + fi : ((fo * i + fi) * kh + y) * kw + x;
  }
};

// A value of type t as a filter; plain rank-4 data is OIHW. `what` as for
// imageOfType.
Expected<Filter> filterOfType(const TensorType& t, std::string_view what);

// An int-list attribute of exactly `count` values, each >= `min`.
Expected<std::vector<int64_t>> intsAttr(const OpCall& c, std::string_view name, size_t count, int64_t min);

// One spatial axis of a sliding window.
struct WindowAxis {
  std::string_view name;  // "height" or "width", for messages
  int64_t in, kernel, stride, padBegin, padEnd, dilation;
  bool ceilMode = false;
};

// Window span: dilation * (kernel - 1) + 1, or an Error on overflow.
Expected<int64_t> windowSpan(const WindowAxis& a);

// out = floor or ceil((in + padBegin + padEnd - span) / stride) + 1; in ceil
// mode a last window that would start in the end padding is dropped
// (PyTorch's rule). An Error when the window does not fit or overflows.
Expected<int64_t> outputExtent(const WindowAxis& a);

// Window o of an undilated pooling along one axis, [begin, end) clipped to
// the padded input (`paddedExtent`: avg_pool's count_include_pad divisor)
// and to the input itself ([realBegin, realEnd)): the reference and the
// pool-expand pass (passes/pool_expand.cpp) read the same rule.
struct ClippedWindow {
  int64_t paddedExtent, realBegin, realEnd;
};
ClippedWindow clippedWindow(int64_t o, int64_t stride, int64_t kernel, int64_t padBegin, int64_t padEnd, int64_t in);

// A 1x1 NCHW convolution at stride 1 without padding reads each output
// pixel's inputs at the same place of every plane, so it computes the same
// whatever rows its planes are cut into. Plans give it rows of this many
// output rows joined (codegen/plan/plan_builder.cpp), the fewest that make
// kPointwiseRowPixels pixels and divide the height, so that small planes
// (a MobileNet's 14x14 and 7x7) still fill vector registers: a target's
// generated direct convolution then computes them, about twice as fast as
// im2col + GEMM there (bench/conv_layout_bench's mb.* probes). The layout
// cost model (passes/layout_cost.h) prices the same rows.
//
// Where a divisor of the height makes rows a multiple of
// kPointwiseRowQuantum pixels (the widest block, 2 vectors of 16 lanes) of
// at most kPointwiseRowMostPixels, plans take the fewest such rows instead:
// a row ending inside a block leaves a one-vector block per row, whose 8
// sums cannot hide the FMA latency. ResNet-50's 1x1 layers over 56x56 ran
// 11-12% faster as rows of 224 than of 112 (bench/pointwise_probe.c, Xeon).
inline constexpr int64_t kPointwiseRowPixels = 64;
inline constexpr int64_t kPointwiseRowQuantum = 32;
inline constexpr int64_t kPointwiseRowMostPixels = 512;
inline int64_t pointwiseRowsJoined(int64_t oh, int64_t ow) {
  if (oh <= 1) return 1;
  for (int64_t k = 1; k <= oh && k * ow <= kPointwiseRowMostPixels; ++k)
    if (oh % k == 0 && k * ow >= kPointwiseRowPixels && k * ow % kPointwiseRowQuantum == 0) return k;
  if (ow >= kPointwiseRowPixels) return 1;
  for (int64_t k = 2; k < oh; ++k)
    if (oh % k == 0 && k * ow >= kPointwiseRowPixels) return k;
  return oh;
}

// A 1x1 NCHW convolution of one group over a plane small enough to be
// taken whole (convWholePlanes), to no more channels than it reads, its
// filter as it is, runs on the cpu
// target over panels (ConvSpec::pointwisePanels): work units of this many
// pixels of one image's flattened plane, every output channel each
// (codegen/cpu/panel_conv_emitter.cpp). Two 16-lane vectors, four 8-lane.
inline constexpr int64_t kPointwisePanelPixels = 32;
// The units of one image's plane of `pixels`: the last holds the rest.
inline int64_t pointwisePanelUnits(int64_t pixels) {
  return (pixels + kPointwisePanelPixels - 1) / kPointwisePanelPixels;
}

// Small planes computed whole. In a convolution at stride 1 whose output
// rows are as wide as its input rows (a "same" convolution: 3x3 with
// padding 1, say), each tap reads the input pixel at a fixed offset from
// the output pixel's place in the flattened plane, so a vector may run
// across rows: the cpu target's generated direct convolution then takes
// the plane's pixels as one row of oh * ow, masking the lanes whose tap
// falls into padding (codegen/cpu/conv_emitter.h; the positions are known
// when the code is generated, so the masks are constants). A ResNet's
// 28x28, 14x14 and 7x7 planes, whose rows end inside a vector, then fill
// their vectors as 56-pixel rows do at 8 lanes. Up to kWholePlanePixels (a
// 32x32 plane), and up to kDenseWholePlanePixels (64x64) for ungrouped
// filters of more than one tap: 56-pixel rows fill 16-lane vectors to 7/8
// only, and a ResNet-18's 3x3 layers over 64 channels of 56x56 took 2.33
// ms each as rows and 2.10 whole on a Zen 4 (AVX-512), 2.30 and 2.20 with
// AVX2 code; SqueezeNet's 3x3 layers over 55x55 580 and 515 us. Depthwise
// layers over such planes were slower whole (ConvNeXt-tiny's 7x7 over 96
// channels of 56x56: 1.04 ms as rows, 1.21 whole), and so were 1x1 layers,
// whose rows join into whole vectors (pointwiseRowsJoined): ResNet-50's
// over 56x56 took 0.92-1.02 ms as rows and 1.08-1.19 whole.
// Plans split such convolutions across threads by output channels
// (exec/parallel.h).
inline constexpr int64_t kWholePlanePixels = 1024;
inline constexpr int64_t kDenseWholePlanePixels = 4096;
inline bool convWholePlanes(int64_t strideH, int64_t strideW, int64_t oh, int64_t ow, int64_t wd, int64_t groups,
                            int64_t taps) {
  const int64_t most = groups == 1 && taps > 1 ? kDenseWholePlanePixels : kWholePlanePixels;
  return strideH == 1 && strideW == 1 && ow == wd && oh * ow <= most;
}

// Whether `pixels` fill at least three quarters of the `lanes`-wide
// vectors they take.
inline bool fillsThreeQuarters(int64_t pixels, int64_t lanes) {
  const int64_t taken = (pixels + lanes - 1) / lanes * lanes;
  return 4 * pixels >= 3 * taken;
}

// Whole planes pay where the plane takes more than one vector's worth of
// lanes, or exactly one, and fills three quarters of the lanes it takes (a
// 2x2 plane in 8 lanes would waste half of them; im2col + GEMM batches such
// planes over images instead). The cpu target's direct convolutions
// (passes/direct_conv.h) and its packed filters (exec/packed_filter.h) read
// it.
inline bool directConvPlaneFills(int64_t pixels, int64_t lanes) {
  return lanes >= 1 && pixels >= lanes && fillsThreeQuarters(pixels, lanes);
}

// The planes and filters over which a convolution may run on the cpu target
// with its output channels across the vector lanes, reading a packed copy of
// its filter (exec/packed_filter.h): output planes of at most
// kPackedFilterMaxPixels (14x14), and at least kPackedFilterMinChannels
// filter rows (input channels x taps) where a plane takes more than
// kPackedFilterSmallPixels (8x8). A block's sums reach the output planes
// by scatters, one per vector of channels per pixel, whose cost the input
// channels pay for: over 14x14,
// MobileNetV2's 1x1 layers from 64 and 96 channels ran 10-25% slower
// packed (103 -> 127 us, 228 -> 249), ResNet-50's from 256 and 1024 4-10%
// faster (1178 -> 1057, 2072 -> 1916), where pixels across 16 lanes fill
// 196 of 208; over 7x7 (49 of 64) every one of them ran faster, from 160
// channels 113 -> 93 us, from 320 374 -> 313 (Zen 4, one thread).
// The packed copy holds output channels in panels of
// kPackedFilterChannels (the widest vectors' lanes), the last one padded
// with zero filters where the channels are not a multiple of it, and the
// work units a range of them starts on (exec/parallel.h's directConvWork)
// count the padded channels: every block is whole vectors, the last
// vector of an image's channels stored through a mask. The padding may
// cost at most an eighth of the channels (SqueezeNet's 512 -> 1000
// classifier over 13x13, 8 of 1000 wasted: 1241-1331 us over whole planes,
// 994-1089 for 1008 channels packed; Xeon, one thread). The plane must
// fill three quarters of the 16-lane vectors it would take with pixels
// across the lanes. Read by exec/packed_filter.h (which
// convolutions may pack) and the conv-phases pass (which strided ones stay
// strided where the cpu packs them).
inline constexpr int64_t kPackedFilterMaxPixels = 196;
inline constexpr int64_t kPackedFilterSmallPixels = 64;
inline constexpr int64_t kPackedFilterMinChannels = 256;
inline constexpr int64_t kPackedFilterChannels = 16;
inline int64_t packedFilterOutputs(int64_t outChannels) {
  return (outChannels + kPackedFilterChannels - 1) / kPackedFilterChannels * kPackedFilterChannels;
}
inline bool packedFilterPlanes(int64_t outChannels, int64_t filterRows, int64_t oh, int64_t ow) {
  const int64_t pixels = oh * ow;
  const bool fewRows = pixels > kPackedFilterSmallPixels && filterRows < kPackedFilterMinChannels;
  const bool littlePadding = (packedFilterOutputs(outChannels) - outChannels) * 8 <= outChannels;
  return outChannels > 0 && littlePadding && filterRows > 0 &&
         pixels <= kPackedFilterMaxPixels && !fewRows && directConvPlaneFills(pixels, kPackedFilterChannels);
}

// A convolution strided by 2 in both axes, undilated, whose output planes
// the packed filter takes (packedFilterPlanes) runs strided on CPUs whose
// tiling packs filters with taps (codegen/cpu/subtarget.h's
// ConvTiling::packedTaps): each pixel of a block reads its input by a
// broadcast, wherever it lies, so the stride costs nothing there, and the
// conv-phases pass leaves such layers alone on those CPUs. Over the
// phases, the packed copy held every phase's taps, the op's zeros among
// them (a 3x3 filter as 4 phases of 2x2: 16 taps for 9), and the split
// was a step of its own: ResNet-18's 3x3 layer from 256 channels of
// 14x14 took 1275 us over the phases (a 47 us split before it), 1156
// strided; from 128 of 28x28 1114 (17 us), 1042 (Zen 4, one thread,
// medians of 12 alternated runs; docs/fusion.md has more).
inline bool packedFilterStrided(int64_t strideH, int64_t strideW, int64_t dilH, int64_t dilW) {
  return strideH == 2 && strideW == 2 && dilH == 1 && dilW == 1;
}

}  // namespace kfuse::ops
