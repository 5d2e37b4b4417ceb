// The im2col convolutions (runtime/cpu_conv.h, and the depthwise plane
// loops it sends NCHW depthwise convolutions to) in every direction and
// layout, on shapes that split into tiles of output rows and blocks of
// channels (exec/parallel.h's im2colSplit) and on shapes that do not: each
// against a direct sum in double, and the same bits whether the units run
// in one range, one at a time, or in the ranges 2 and 3 threads take.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "exec/parallel.h"
#include "runtime/blas.h"
#include "runtime/cpu_conv.h"

namespace kfuse {
namespace {

struct Case {
  std::string name;
  ConvSpec c;
  bool bias = false;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

ConvSpec spec(ConvDirection d, int64_t n, int64_t ch, int64_t hw, int64_t o, int64_t k, int64_t stride, int64_t pad,
              int64_t groups = 1, int64_t dil = 1) {
  ConvSpec c;
  c.direction = d;
  c.n = n, c.c = ch, c.h = hw, c.wd = hw, c.o = o, c.kh = k, c.kw = k, c.groups = groups;
  c.strideH = c.strideW = stride, c.padTop = c.padLeft = pad, c.dilH = c.dilW = dil;
  c.oh = c.ow = (hw + 2 * pad - dil * (k - 1) - 1) / stride + 1;
  return c;
}
ConvSpec nhwc(ConvSpec c, bool filterLast = true) {
  c.channelsLast = true;
  c.filterLast = filterLast;
  return c;
}

// Element offsets in the spec's layouts.
int64_t xAt(const ConvSpec& c, int64_t n, int64_t ch, int64_t y, int64_t x) {
  return c.channelsLast ? ((n * c.h + y) * c.wd + x) * c.c + ch : ((n * c.c + ch) * c.h + y) * c.wd + x;
}
int64_t yAt(const ConvSpec& c, int64_t n, int64_t o, int64_t y, int64_t x) {
  return c.channelsLast ? ((n * c.oh + y) * c.ow + x) * c.o + o : ((n * c.o + o) * c.oh + y) * c.ow + x;
}
int64_t wAt(const ConvSpec& c, int64_t o, int64_t ci, int64_t ky, int64_t kx) {
  const int64_t cg = c.c / c.groups;
  return c.filterLast ? ((o * c.kh + ky) * c.kw + kx) * cg + ci : ((o * cg + ci) * c.kh + ky) * c.kw + kx;
}

struct Tensors {
  std::vector<float> x, w, bias, y;
};

// The result the direction writes, as a sum in double, and the sum of the
// terms' magnitudes (what float rounding is relative to).
void reference(const ConvSpec& c, const Tensors& t, bool bias, std::vector<double>& sum, std::vector<double>& mag) {
  const int64_t cg = c.c / c.groups, og = c.o / c.groups;
  const size_t size = c.direction == ConvDirection::Forward     ? t.y.size()
                      : c.direction == ConvDirection::GradInput ? t.x.size()
                                                                : t.w.size();
  sum.assign(size, 0.0);
  mag.assign(size, 0.0);
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t o = 0; o < c.o; ++o)
      for (int64_t oy = 0; oy < c.oh; ++oy)
        for (int64_t ox = 0; ox < c.ow; ++ox) {
          const int64_t yi = yAt(c, n, o, oy, ox), g = o / og;
          if (c.direction == ConvDirection::Forward && bias) sum[static_cast<size_t>(yi)] += t.bias[static_cast<size_t>(o)];
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ky = 0; ky < c.kh; ++ky)
              for (int64_t kx = 0; kx < c.kw; ++kx) {
                const int64_t iy = oy * c.strideH - c.padTop + ky * c.dilH, ix = ox * c.strideW - c.padLeft + kx * c.dilW;
                if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.wd) continue;
                const int64_t xi = xAt(c, n, g * cg + ci, iy, ix), wi = wAt(c, o, ci, ky, kx);
                const int64_t out = c.direction == ConvDirection::Forward ? yi : c.direction == ConvDirection::GradInput ? xi : wi;
                const double a = c.direction == ConvDirection::GradWeight ? t.x[static_cast<size_t>(xi)] : t.w[static_cast<size_t>(wi)];
                const double b = c.direction == ConvDirection::Forward ? t.x[static_cast<size_t>(xi)] : t.y[static_cast<size_t>(yi)];
                sum[static_cast<size_t>(out)] += a * b;
                mag[static_cast<size_t>(out)] += std::abs(a * b);
              }
        }
}

// The direction's result after running `ranges` of the spec's units in turn.
std::vector<float> run(const Blas& blas, const ConvSpec& c, Tensors t, bool bias,
                       const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  std::vector<float>& out = c.direction == ConvDirection::Forward     ? t.y
                            : c.direction == ConvDirection::GradInput ? t.x
                                                                      : t.w;
  std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN());  // every element must be written
  const int64_t rows = im2colWorkspaceRows(c, im2colImagesPerGemm(c));
  std::vector<float> workspace(static_cast<size_t>(rows * c.oh * c.ow));
  auto bytes = [](std::vector<float>& v) { return reinterpret_cast<std::byte*>(v.data()); };
  ConvBuffers buffers{bytes(t.x), bytes(t.w), bias ? bytes(t.bias) : nullptr, bytes(t.y)};
  for (auto [begin, end] : ranges)
    runConv2d(blas, c, DType::F32, buffers, bytes(workspace), workspace.size() * sizeof(float), begin, end);
  return out;
}

class CpuConv : public testing::TestWithParam<Case> {};

TEST_P(CpuConv, MatchesTheDirectSumWithTheSameBitsForEveryRange) {
  const Case& tc = GetParam();
  const ConvSpec& c = tc.c;
  auto blas = openBlas();
  ASSERT_TRUE(blas) << blas.error().message();
  Tensors t;
  uint32_t state = 12345;
  auto fill = [&](std::vector<float>& v, size_t size) {
    v.resize(size);
    for (float& e : v) e = static_cast<float>((state = state * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
  };
  fill(t.x, static_cast<size_t>(c.n * c.c * c.h * c.wd));
  fill(t.w, static_cast<size_t>(c.o * (c.c / c.groups) * c.kh * c.kw));
  fill(t.bias, static_cast<size_t>(c.o));
  fill(t.y, static_cast<size_t>(c.n * c.o * c.oh * c.ow));

  const Work work = im2colConvWork(c);
  std::vector<float> once = run(**blas, c, t, tc.bias, {{0, work.units}});
  std::vector<double> sum, mag;
  reference(c, t, tc.bias, sum, mag);
  for (size_t i = 0; i < once.size(); ++i)
    ASSERT_LE(std::abs(once[i] - sum[i]), 1e-6 * mag[i] + 1e-6) << "element " << i << ": " << once[i] << " vs " << sum[i];

  std::vector<std::pair<int64_t, int64_t>> each;
  for (int64_t u = 0; u < work.units; ++u) each.emplace_back(u, u + 1);
  if (work.alignment == 1) {
    EXPECT_EQ(run(**blas, c, t, tc.bias, each), once) << "one unit at a time";
  }
  for (int threads : {2, 3}) EXPECT_EQ(run(**blas, c, t, tc.bias, chunksOf(work, threads)), once) << threads << " threads";
}

using D = ConvDirection;
const Case kCases[] = {
    // Forward: tiles of rows (stride 1 planes, strided rows, NHWC filter
    // rows), blocks of output channels, both, 1x1 in place, groups, and
    // several small images per GEMM.
    {"fwd_nchw_tiles", spec(D::Forward, 1, 8, 40, 24, 3, 1, 1), true},
    {"fwd_nchw_stride2_blocks", spec(D::Forward, 1, 8, 20, 64, 3, 2, 1), true},
    {"fwd_nhwc_tiles_blocks", nhwc(spec(D::Forward, 1, 3, 36, 32, 3, 1, 1)), true},
    {"fwd_nhwc_oihw_groups_dilated", nhwc(spec(D::Forward, 1, 8, 20, 64, 3, 1, 2, 2, 2), false), false},
    {"fwd_nchw_1x1_tiles_blocks", spec(D::Forward, 1, 16, 30, 32, 1, 1, 0), true},
    {"fwd_nhwc_1x1_tiles_blocks", nhwc(spec(D::Forward, 1, 16, 30, 32, 1, 1, 0)), true},
    {"fwd_nchw_depthwise", spec(D::Forward, 1, 16, 30, 16, 3, 1, 1, 16), true},
    {"fwd_nchw_small_images", spec(D::Forward, 8, 16, 6, 16, 3, 1, 1), true},
    {"fwd_nhwc_small_images", nhwc(spec(D::Forward, 8, 16, 6, 16, 3, 1, 1)), false},
    {"fwd_nchw_1x1_small_images", spec(D::Forward, 8, 16, 4, 24, 1, 1, 0), true},
    // Backward to the input: blocks of input channels, OHWI's runs, groups.
    {"dx_nchw_blocks", spec(D::GradInput, 1, 32, 12, 16, 3, 1, 1)},
    {"dx_nhwc_ohwi_stride2_blocks", nhwc(spec(D::GradInput, 2, 24, 13, 8, 3, 2, 1))},
    {"dx_nhwc_oihw_groups", nhwc(spec(D::GradInput, 1, 32, 10, 16, 3, 1, 1, 2), false)},
    {"dx_nchw_ohwi_groups", [] { ConvSpec c = spec(D::GradInput, 1, 32, 10, 16, 3, 1, 1, 2); c.filterLast = true; return c; }()},
    {"dx_nchw_1x1_blocks", spec(D::GradInput, 1, 16, 9, 8, 1, 1, 0)},
    {"dx_nhwc_1x1_blocks", nhwc(spec(D::GradInput, 1, 16, 9, 8, 1, 1, 0))},
    {"dx_nchw_small_images", spec(D::GradInput, 8, 16, 6, 16, 3, 1, 1)},
    // 1x1 images side by side too; 5 images in GEMMs of 2, 2 and 1.
    {"dx_nchw_1x1_small_images", spec(D::GradInput, 8, 16, 4, 24, 1, 1, 0)},
    {"dx_nchw_1x1_2x2_images_odd_batch", spec(D::GradInput, 5, 32, 2, 64, 1, 1, 0)},
    // Backward to the weights: blocks of input channels over every image.
    {"dw_nchw_blocks", spec(D::GradWeight, 3, 16, 12, 16, 3, 1, 1)},
    {"dw_nhwc_ohwi_blocks", nhwc(spec(D::GradWeight, 2, 32, 11, 8, 3, 2, 1))},
    {"dw_nhwc_oihw_blocks", nhwc(spec(D::GradWeight, 2, 32, 11, 8, 3, 1, 1), false)},
    {"dw_nchw_1x1_blocks", spec(D::GradWeight, 2, 32, 9, 8, 1, 1, 0)},
    {"dw_nhwc_1x1_blocks", nhwc(spec(D::GradWeight, 2, 32, 9, 8, 1, 1, 0))},
    {"dw_nchw_small_images", spec(D::GradWeight, 8, 16, 6, 16, 3, 1, 1)},
    {"dw_nchw_1x1_small_images", spec(D::GradWeight, 8, 16, 4, 24, 1, 1, 0)},
    {"dw_nchw_1x1_2x2_images_odd_batch", spec(D::GradWeight, 5, 32, 2, 64, 1, 1, 0)},
    {"dw_nchw_depthwise", spec(D::GradWeight, 4, 16, 10, 16, 3, 1, 1, 16)},
    // Depthwise in NCHW: plane loops (runtime/cpu_depthwise.h).
    {"fwd_nchw_depthwise_stride2", spec(D::Forward, 2, 24, 15, 24, 3, 2, 1, 24), true},
    {"fwd_nchw_depthwise_5x5_dilated", spec(D::Forward, 1, 8, 40, 8, 5, 1, 4, 8, 2), false},
    // Planes no wider than a register: four f32 channels at a time, one per
    // lane, and the channels left over one at a time.
    {"fwd_nchw_depthwise_2x2_planes", spec(D::Forward, 2, 10, 2, 10, 3, 1, 1, 10), true},
    {"fwd_nchw_depthwise_stride2_3_wide", spec(D::Forward, 2, 9, 5, 9, 3, 2, 1, 9), true},
    // 5x5 at stride 2, by phase: rows of two vectors, of ten (eight at
    // once, then two, the last one partial), and unpadded odd planes.
    {"fwd_nchw_depthwise_5x5_stride2", spec(D::Forward, 2, 8, 15, 8, 5, 2, 2, 8), true},
    {"fwd_nchw_depthwise_5x5_stride2_wide_rows", spec(D::Forward, 1, 4, 75, 4, 5, 2, 2, 4), true},
    {"fwd_nchw_depthwise_5x5_stride2_unpadded", spec(D::Forward, 1, 6, 14, 6, 5, 2, 0, 6), false},
    {"fwd_nchw_depthwise_5x5_3x3_planes", spec(D::Forward, 1, 8, 3, 8, 5, 1, 2, 8), false},
    {"dx_nchw_depthwise_2x2_planes", spec(D::GradInput, 2, 10, 2, 10, 3, 1, 1, 10)},
    {"fwd_nchw_depthwise_4x4_planes", spec(D::Forward, 2, 6, 4, 6, 3, 1, 1, 6), true},
    {"dx_nchw_depthwise_4x4_planes", spec(D::GradInput, 2, 6, 4, 6, 3, 1, 1, 6)},
    {"dx_nchw_depthwise_5x5_3x3_planes", spec(D::GradInput, 1, 7, 3, 7, 5, 1, 2, 7)},
    {"dx_nchw_depthwise_stride2", spec(D::GradInput, 2, 24, 15, 24, 3, 2, 1, 24)},
    {"dx_nchw_depthwise", spec(D::GradInput, 1, 16, 30, 16, 3, 1, 1, 16)},
    {"dx_nchw_depthwise_5x5_unpadded", spec(D::GradInput, 2, 8, 12, 8, 5, 1, 0, 8)},
    {"dx_nchw_depthwise_pads_past_the_filter", spec(D::GradInput, 1, 8, 9, 8, 3, 1, 3, 8)},
    // ... at stride 2 as four phases: odd and even planes, 5x5, no padding,
    // a plane smaller than the filter, padding past it.
    {"dx_nchw_depthwise_stride2_even_plane", spec(D::GradInput, 2, 8, 16, 8, 3, 2, 1, 8)},
    {"dx_nchw_depthwise_stride2_unpadded", spec(D::GradInput, 1, 8, 9, 8, 3, 2, 0, 8)},
    {"dx_nchw_depthwise_5x5_stride2", spec(D::GradInput, 2, 8, 14, 8, 5, 2, 2, 8)},
    {"dx_nchw_depthwise_5x5_stride2_3x3_plane", spec(D::GradInput, 2, 8, 3, 8, 5, 2, 2, 8)},
    {"dx_nchw_depthwise_stride2_pads_past_the_filter", spec(D::GradInput, 1, 8, 7, 8, 3, 2, 3, 8)},
    {"dw_nchw_depthwise_stride2_dilated", spec(D::GradWeight, 3, 8, 17, 8, 3, 2, 2, 8, 2)},
    // The padded-block path (3x3 and 5x5, stride 1 and 2): small planes, a
    // plane narrower than the filter's reach, and padding past the filter.
    {"dw_nchw_depthwise_4x4", spec(D::GradWeight, 16, 24, 4, 24, 3, 1, 1, 24)},
    {"dw_nchw_depthwise_stride2", spec(D::GradWeight, 3, 8, 15, 8, 3, 2, 1, 8)},
    {"dw_nchw_depthwise_5x5", spec(D::GradWeight, 2, 8, 9, 8, 5, 1, 2, 8)},
    {"dw_nchw_depthwise_5x5_stride2_3x3_plane", spec(D::GradWeight, 2, 8, 3, 8, 5, 2, 2, 8)},
    {"dw_nchw_depthwise_pads_past_the_filter", spec(D::GradWeight, 2, 8, 5, 8, 3, 1, 3, 8)},
    {"dw_nhwc_depthwise", nhwc(spec(D::GradWeight, 2, 16, 10, 16, 3, 1, 1, 16))},
    // ... and of output channels where the inputs are too few (a first layer).
    {"dw_nchw_rgb_output_blocks", spec(D::GradWeight, 2, 3, 20, 64, 7, 2, 3)},
    {"dw_nhwc_rgb_output_blocks", nhwc(spec(D::GradWeight, 2, 3, 20, 64, 7, 2, 3))},
    {"dw_nchw_small_images_output_blocks", spec(D::GradWeight, 8, 4, 6, 32, 3, 1, 1)},
};

INSTANTIATE_TEST_SUITE_P(Shapes, CpuConv, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<Case>& i) { return i.param.name; });

// The splits the cases above rely on really happen.
TEST(Im2colSplit, SplitsABatchOfOneIntoTilesAndBlocks) {
  Im2colSplit s = im2colSplit(spec(D::Forward, 1, 8, 40, 24, 3, 1, 1));
  EXPECT_EQ(s.tiles, 4);  // 1600 pixels: 4 tiles of 10 rows
  EXPECT_EQ(s.tileRows, 10);
  EXPECT_EQ(s.blocks, 1);
  s = im2colSplit(spec(D::Forward, 1, 8, 20, 64, 3, 2, 1));
  EXPECT_EQ(s.tiles, 1);
  EXPECT_EQ(s.blocks, 4);  // 64 outputs in 4 blocks of 16
  EXPECT_EQ(im2colConvWork(spec(D::Forward, 1, 8, 20, 64, 3, 2, 1)).units, 4);
  s = im2colSplit(spec(D::GradInput, 1, 32, 12, 16, 3, 1, 1));
  EXPECT_EQ(s.blocks, 4);
  EXPECT_EQ(s.blockChannels, 8);
  s = im2colSplit(spec(D::GradWeight, 3, 16, 12, 16, 3, 1, 1));
  EXPECT_EQ(s.blocks, 2);  // no block under 8 input channels
  EXPECT_EQ(im2colConvWork(spec(D::GradWeight, 4, 16, 10, 16, 3, 1, 1, 16)).units, 16);  // groups suffice
  s = im2colSplit(spec(D::GradWeight, 2, 3, 20, 64, 7, 2, 3));
  EXPECT_TRUE(s.outputBlocks);  // 3 input channels: 64 outputs in 2 blocks of 32
  EXPECT_EQ(s.blocks, 2);
  // A batch that fills the threads by itself is split by images alone.
  s = im2colSplit(spec(D::Forward, 8, 16, 6, 16, 3, 1, 1));
  EXPECT_EQ(s.tiles * s.blocks, 1);
}

}  // namespace
}  // namespace kfuse
