#include "runtime/cpu_conv.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "exec/parallel.h"
#include "runtime/cpu_depthwise.h"

namespace kfuse {
namespace {

// c = op(a) * op(b) (+ c when `accumulate`), row-major.
struct GemmArgs {
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  bool accumulate = false;
};
void gemm(const Blas& blas, const GemmArgs& g, const float* a, const float* b, float* c) {
  blas.sgemm(CblasRowMajor, g.transA ? CblasTrans : CblasNoTrans, g.transB ? CblasTrans : CblasNoTrans,
             static_cast<int>(g.m), static_cast<int>(g.n), static_cast<int>(g.k), 1.0f, a, static_cast<int>(g.lda), b,
             static_cast<int>(g.ldb), g.accumulate ? 1.0f : 0.0f, c, static_cast<int>(g.ldc));
}
void gemm(const Blas& blas, const GemmArgs& g, const double* a, const double* b, double* c) {
  blas.dgemm(CblasRowMajor, g.transA ? CblasTrans : CblasNoTrans, g.transB ? CblasTrans : CblasNoTrans,
             static_cast<int>(g.m), static_cast<int>(g.n), static_cast<int>(g.k), 1.0, a, static_cast<int>(g.lda), b,
             static_cast<int>(g.ldb), g.accumulate ? 1.0 : 0.0, c, static_cast<int>(g.ldc));
}

// Short contiguous copies (9 to ~100 values, tens of thousands per
// convolution) as fixed-size 8-value moves the compiler inlines, the last
// one overlapping the previous: a memcpy call per copy cost more than the
// copy itself.
template <typename T>
void copySpan(const T* __restrict src, T* __restrict dst, int64_t n) {
  constexpr int64_t kChunk = 8;
  if (n < kChunk) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(T));
    return;
  }
  for (int64_t i = 0; i + kChunk <= n; i += kChunk) std::memcpy(dst + i, src + i, kChunk * sizeof(T));
  std::memcpy(dst + n - kChunk, src + n - kChunk, kChunk * sizeof(T));
}

// n copies of v, 16 at a time: std::fill compiled to one scalar store per
// value for the baseline x86-64 the runtime is built for, and filling NCHW
// outputs with their bias was a sixth of a small CNN's time.
template <typename T>
void fillWith(T* dst, int64_t n, T v) {
  constexpr int64_t kChunk = 16;
  T chunk[kChunk];
  std::fill(chunk, chunk + kChunk, v);
  int64_t i = 0;
  for (; i + kChunk <= n; i += kChunk) std::memcpy(dst + i, chunk, sizeof chunk);
  for (; i < n; ++i) dst[i] = v;
}

// What one unit computes of a group (exec/parallel.h's im2colSplit): the
// columns of output rows [oy0, oy1) (a tile) and the rows of input channels
// [c0, c1) of its patch matrix, for output channels [o0, o1) (blocks).
struct Part {
  int64_t oy0 = 0, oy1 = 0, c0 = 0, c1 = 0, o0 = 0, o1 = 0;
};

// The patch matrix of an image, group and part: column p (an output pixel)
// holds the inputs its filter taps read, zero where they fall in padding.
// Rows follow the filter's memory order over the part's channels: (c, ky,
// kx) for OIHW, (ky, kx, c) for OHWI, so the filter's rows are the GEMM's
// other operand as they lie (in runs, for a block of OHWI's channels).
template <typename T>
struct Conv {
  const ConvSpec& c;
  const Blas& blas;
  int64_t cg, og, taps, pixels;
  Im2colSplit split;

  Conv(const ConvSpec& s, const Blas& b)
      : c(s),
        blas(b),
        cg(s.c / s.groups),
        og(s.o / s.groups),
        taps(cg * s.kh * s.kw),
        pixels(s.oh * s.ow),
        split(im2colSplit(s)) {}

  Part whole() const { return {0, c.oh, 0, cg, 0, og}; }
  // Unit u's part: forward (image, tile, output block), backward to the
  // input (image, input block), to the weights (group, block).
  Part part(int64_t u) const {
    Part p = whole();
    const int64_t b = u % split.blocks, first = b * split.blockChannels, tile = u / split.blocks % split.tiles;
    const bool outputs = c.direction == ConvDirection::Forward || split.outputBlocks;
    (outputs ? p.o0 : p.c0) = first;
    (outputs ? p.o1 : p.c1) = std::min(outputs ? og : cg, first + split.blockChannels);
    p.oy0 = tile * split.tileRows;
    p.oy1 = std::min(c.oh, p.oy0 + split.tileRows);
    return p;
  }
  int64_t partTaps(const Part& p) const { return (p.c1 - p.c0) * c.kh * c.kw; }
  int64_t partPixels(const Part& p) const { return (p.oy1 - p.oy0) * c.ow; }

  int64_t row(const Part& p, int64_t ch, int64_t ky, int64_t kx) const {
    const int64_t cb = p.c1 - p.c0;
    ch -= p.c0;
    return c.filterLast ? (ky * c.kw + kx) * cb + ch : (ch * c.kh + ky) * c.kw + kx;
  }
  // Where a part's patch rows lie among the filter's `taps` columns: runs of
  // `length` from filter column `filter` and patch row `patch`. One run
  // unless the part is a block of an OHWI filter's channels.
  template <typename F>
  void forRuns(const Part& p, F f) const {
    const int64_t cb = p.c1 - p.c0;
    if (!c.filterLast || cb == cg) return f(p.c0 * c.kh * c.kw, int64_t{0}, partTaps(p));
    for (int64_t r = 0; r < c.kh * c.kw; ++r) f(r * cg + p.c0, r * cb, cb);
  }

  // NCHW: col is [part taps, part pixels] with rows `ld` apart (several
  // images' patch matrices side by side); NHWC: [part pixels, part taps]
  // (so GEMM writes NHWC rows; several images' lie one after another).
  void im2col(const T* x, int64_t n, int64_t g, const Part& p, T* col, int64_t ld) const {
    if (!c.channelsLast) return im2colRows(x, n, g, p, col, ld);
    if (c.filterLast && c.groups == 1 && c.dilW == 1 && p.c0 == 0 && p.c1 == cg) return im2colFilterRows(x, n, p, col);
    im2colPixels(x, n, g, p, col);
  }


  // NCHW: one col row per (channel, tap) holds a strided window of one input
  // plane, copied a row of the output at a time (a memcpy at stride 1), with
  // the padding's zeros written around it.
  void im2colRows(const T* x, int64_t n, int64_t g, const Part& p, T* col, int64_t ld) const {
    if (c.strideH == 1 && c.strideW == 1 && c.wd == c.ow) return im2colPlanes(x, n, g, p, col, ld);
    for (int64_t ch = p.c0; ch < p.c1; ++ch) {
      const T* plane = x + (n * c.c + g * cg + ch) * c.h * c.wd;
      for (int64_t ky = 0; ky < c.kh; ++ky)
        for (int64_t kx = 0; kx < c.kw; ++kx) {
          T* dst = col + row(p, ch, ky, kx) * ld;
          int64_t off = kx * c.dilW - c.padLeft;
          auto [lo, hi] = validOutputColumns(c, off);
          for (int64_t oy = p.oy0; oy < p.oy1; ++oy, dst += c.ow) {
            int64_t iy = oy * c.strideH - c.padTop + ky * c.dilH;
            if (iy < 0 || iy >= c.h) {
              std::fill(dst, dst + c.ow, T(0));
              continue;
            }
            const T* src = plane + iy * c.wd + off;
            std::fill(dst, dst + lo, T(0));
            if (c.strideW == 1)
              std::copy(src + lo, src + hi, dst + lo);
            else
              for (int64_t ox = lo; ox < hi; ++ox) dst[ox] = src[ox * c.strideW];
            std::fill(dst + hi, dst + c.ow, T(0));
          }
        }
    }
  }

  // NCHW, stride 1, output rows as wide as input rows (a "same" 3x3
  // convolution): for one (channel, tap), the col rows of consecutive output
  // rows read consecutive input rows at the same shift, so the whole block
  // is one copy of the plane, after which the columns that fell into the
  // padding (and read a neighbouring row instead) are zeroed. A copy per
  // output row, with a fill on either side, was most of a small CNN's
  // im2col time.
  void im2colPlanes(const T* x, int64_t n, int64_t g, const Part& p, T* col, int64_t ld) const {
    const int64_t planeSize = c.h * c.wd, width = partPixels(p);
    for (int64_t ch = p.c0; ch < p.c1; ++ch) {
      const T* plane = x + (n * c.c + g * cg + ch) * planeSize;
      for (int64_t ky = 0; ky < c.kh; ++ky)
        for (int64_t kx = 0; kx < c.kw; ++kx) {
          T* dst = col + row(p, ch, ky, kx) * ld;
          auto at = [&](int64_t oy) { return dst + (oy - p.oy0) * c.ow; };  // output row oy's columns
          const int64_t dy = ky * c.dilH - c.padTop, off = kx * c.dilW - c.padLeft;
          // Output rows [y0, y1) of the part read input rows inside the image.
          const int64_t y0 = std::clamp<int64_t>(-dy, p.oy0, p.oy1), y1 = std::clamp<int64_t>(c.h - dy, y0, p.oy1);
          std::fill(dst, at(y0), T(0));
          std::fill(at(y1), dst + width, T(0));
          if (y0 == y1) continue;
          // Plane elements [a, b) land at output row y0 onwards; the ends
          // that fall outside the plane are padding columns, zeroed below.
          const int64_t a = (y0 + dy) * c.wd + off, b = (y1 - 1 + dy) * c.wd + off + c.ow;
          const int64_t from = std::max<int64_t>(a, 0), to = std::min(b, planeSize);
          if (from < to) std::memcpy(at(y0) + (from - a), plane + from, static_cast<size_t>(to - from) * sizeof(T));
          // Column by column: a fill per row of the one or two padding
          // columns became a memset call per row.
          auto [lo, hi] = validOutputColumns(c, off);
          auto zeroColumn = [&](int64_t ox) {
            for (int64_t oy = y0; oy < y1; ++oy) at(oy)[ox] = T(0);
          };
          for (int64_t ox = 0; ox < lo; ++ox) zeroColumn(ox);
          for (int64_t ox = hi; ox < c.ow; ++ox) zeroColumn(ox);
        }
    }
  }

  // NHWC: one col row per output pixel; each tap reads the block's channels
  // of one input pixel (one copy when the filter is OHWI, whose taps keep
  // channels innermost too).
  void im2colPixels(const T* x, int64_t n, int64_t g, const Part& p, T* col) const {
    const int64_t stride = partTaps(p), cb = p.c1 - p.c0;
    for (int64_t oy = p.oy0; oy < p.oy1; ++oy)
      for (int64_t ox = 0; ox < c.ow; ++ox) {
        T* dst = col + ((oy - p.oy0) * c.ow + ox) * stride;
        for (int64_t ky = 0; ky < c.kh; ++ky)
          for (int64_t kx = 0; kx < c.kw; ++kx) {
            int64_t iy = oy * c.strideH - c.padTop + ky * c.dilH;
            int64_t ix = ox * c.strideW - c.padLeft + kx * c.dilW;
            bool inside = iy >= 0 && iy < c.h && ix >= 0 && ix < c.wd;
            const T* src = inside ? x + ((n * c.h + iy) * c.wd + ix) * c.c + g * cg : nullptr;
            if (c.filterLast) {
              T* d = dst + row(p, p.c0, ky, kx);
              if (inside)
                std::copy(src + p.c0, src + p.c1, d);
              else
                std::fill(d, d + cb, T(0));
            } else {
              for (int64_t ch = p.c0; ch < p.c1; ++ch) dst[row(p, ch, ky, kx)] = inside ? src[ch] : T(0);
            }
          }
      }
  }

  // NHWC input, OHWI filter, one group, no horizontal dilation: the kw taps
  // of one filter row read kw adjacent input pixels, c.c channels each, which
  // lie contiguously in memory and in the col row alike: one copy of
  // kw * c.c values per (pixel, ky) where the window is inside the image
  // (tiny per-tap copies were most of a 3-channel first layer's time).
  void im2colFilterRows(const T* x, int64_t n, const Part& p, T* col) const {
    const int64_t span = c.kw * c.c;
    for (int64_t oy = p.oy0; oy < p.oy1; ++oy)
      for (int64_t ox = 0; ox < c.ow; ++ox) {
        T* dst = col + ((oy - p.oy0) * c.ow + ox) * taps;
        const int64_t ix0 = ox * c.strideW - c.padLeft;
        const bool rowInside = ix0 >= 0 && ix0 + c.kw <= c.wd;
        for (int64_t ky = 0; ky < c.kh; ++ky, dst += span) {
          int64_t iy = oy * c.strideH - c.padTop + ky * c.dilH;
          if (iy < 0 || iy >= c.h) {
            std::fill(dst, dst + span, T(0));
            continue;
          }
          const T* src = x + ((n * c.h + iy) * c.wd + ix0) * c.c;
          if (rowInside) {
            copySpan(src, dst, span);
            continue;
          }
          for (int64_t kx = 0; kx < c.kw; ++kx) {
            bool inside = ix0 + kx >= 0 && ix0 + kx < c.wd;
            for (int64_t ch = 0; ch < c.c; ++ch) dst[kx * c.c + ch] = inside ? src[kx * c.c + ch] : T(0);
          }
        }
      }
  }

  // A 1x1 filter at stride 1 without padding reads every input pixel once,
  // in place: the image is its own patch matrix (no copy, no scatter),
  // unless several NCHW images share the GEMM (sideBySide).
  bool patchesAreImage(int64_t b) const { return c.pointwise() && !sideBySide(b); }
  // The part of image n, group g's patch matrix in an image
  // (patchesAreImage), and its leading dimension: NCHW [cg, pixels] rows of
  // a plane, NHWC [pixels, cg] rows of c.c channels.
  template <typename P>
  P* imagePatches(P* x, int64_t n, int64_t g, const Part& p) const {
    const int64_t p0 = p.oy0 * c.ow;
    return c.channelsLast ? x + (n * pixels + p0) * c.c + g * cg + p.c0 : x + (n * c.c + g * cg + p.c0) * pixels + p0;
  }
  int64_t patchLd(bool inImage, const Part& p) const {
    if (c.channelsLast) return inImage ? c.c : partTaps(p);
    return inImage ? pixels : partPixels(p);
  }

  // Images [n0, n0 + b) at once (whole parts only): one GEMM per group over
  // all their pixels. NHWC images lie one after another, so b images are
  // one image of b * pixels rows. NCHW images' patch matrices sit side by
  // side in col (rows b * pixels apart) and their outputs or output
  // gradients pass through a block after the patches (im2colWorkspaceRows).
  // So do a 1x1 convolution's, forward and to the input: its images read
  // in place, one GEMM each, repacked the filters for every image (a [1280,
  // 320] filter 16 times for the 2x2 planes of MobileNetV2's last block:
  // 2.4 -> 1.3 ms). Its weight gradient, whose GEMMs have no filter to
  // pack, stays image by image: the copies made 13 of MobileNetV2's 17
  // such steps 5-20% slower.
  bool sideBySide(int64_t b) const {
    return b > 1 && !c.channelsLast && !(c.pointwise() && c.direction == ConvDirection::GradWeight);
  }
  T* outputBlock(T* col, int64_t b) const { return col + b * taps * pixels; }
  // Where the i-th image of a GEMM's chunk has its patch matrix in col.
  T* imageCol(T* col, int64_t i) const { return col + i * pixels * (c.channelsLast ? taps : 1); }

  // Output channels [p.o0, p.o1) of every group over tile p of images [n0,
  // n0 + b): NCHW y[n, g*og + o, q] = sum_t w[o, t] * col[t, q]; NHWC y[n, q,
  // g*og + o] = sum_t col[q, t] * w[o, t]. `patched`: col already holds the
  // tile's patches (the previous unit was another block of the same tile,
  // one group).
  void forward(const T* x, const T* w, const T* bias, T* y, T* col, int64_t n0, int64_t b, const Part& p,
               bool patched) const {
    if (bias)
      for (int64_t n = n0; n < n0 + b; ++n) fillBias(bias, y, n, p);
    const bool inImage = patchesAreImage(b), wide = sideBySide(b);
    const int64_t ld = b * partPixels(p), p0 = p.oy0 * c.ow, o0 = p.o0, o1 = p.o1;
    for (int64_t g = 0; g < c.groups; ++g) {
      if (!inImage && !patched)
        for (int64_t i = 0; i < b; ++i) im2col(x, n0 + i, g, p, imageCol(col, i), ld);
      const T* patches = inImage ? imagePatches(x, n0, g, p) : col;
      const T* wg = w + (g * og + o0) * taps;  // the block's filters: o1 - o0 rows of `taps`
      if (c.channelsLast) {
        gemm(blas, {false, true, ld, o1 - o0, taps, patchLd(inImage, p), taps, c.o, bias != nullptr}, patches, wg,
             y + (n0 * pixels + p0) * c.o + g * og + o0);
      } else if (!wide) {
        gemm(blas, {false, false, o1 - o0, ld, taps, taps, patchLd(inImage, p), pixels, bias != nullptr}, wg, patches,
             y + (n0 * c.o + g * og + o0) * pixels + p0);
      } else {
        T* out = outputBlock(col, b);
        gemm(blas, {false, false, og, ld, taps, taps, ld, ld, false}, wg, col, out);
        for (int64_t i = 0; i < b; ++i)
          for (int64_t o = 0; o < og; ++o) {
            T* dst = y + ((n0 + i) * c.o + g * og + o) * pixels;
            const T* src = out + o * ld + i * pixels;
            if (bias)
              for (int64_t q = 0; q < pixels; ++q) dst[q] += src[q];
            else
              copySpan(src, dst, pixels);
          }
      }
    }
  }

  // dx of images [n0, n0 + b), the input channels of block p in every group:
  // the patches' gradient, w's transpose times dy (NCHW: col[t, q] = sum_o
  // w[o, t] * dy[n, g*og + o, q]; NHWC: col[q, t] = sum_o dy[n, q, g*og + o] *
  // w[o, t]), scattered back where the patches were read (col2im), or
  // written straight into dx when they are the image.
  void gradInput(const T* dy, const T* w, T* dx, T* col, int64_t n0, int64_t b, const Part& p) const {
    const bool inImage = patchesAreImage(b), wide = sideBySide(b);
    const int64_t ld = b * pixels;
    if (!inImage) zeroInputs(dx, n0, b, p);
    for (int64_t g = 0; g < c.groups; ++g) {
      T* patches = inImage ? imagePatches(dx, n0, g, p) : col;
      const T* wg = w + g * og * taps;
      const int64_t pld = patchLd(inImage, p);
      if (c.channelsLast) {
        forRuns(p, [&](int64_t filter, int64_t patch, int64_t len) {
          gemm(blas, {false, false, ld, len, og, c.o, taps, pld, false}, dy + n0 * pixels * c.o + g * og, wg + filter,
               patches + patch);
        });
      } else if (!wide) {
        forRuns(p, [&](int64_t filter, int64_t patch, int64_t len) {
          gemm(blas, {true, false, len, pixels, og, taps, pixels, pixels, false}, wg + filter,
               dy + (n0 * c.o + g * og) * pixels, patches + patch * pixels);
        });
      } else {
        T* dyg = outputBlock(col, b);
        gatherOutputs(dy, n0, b, g * og, og, dyg);
        gemm(blas, {true, false, taps, ld, og, taps, ld, ld, false}, wg, dyg, col);
      }
      if (!inImage)
        for (int64_t i = 0; i < b; ++i) col2im(imageCol(col, i), n0 + i, g, p, dx, c.channelsLast ? pixels : ld);
    }
  }

  // Zeroes the inputs of images [n0, n0 + b) in block p of every group, for
  // col2im to add into.
  void zeroInputs(T* dx, int64_t n0, int64_t b, const Part& p) const {
    const int64_t image = c.c * c.h * c.wd, plane = c.h * c.wd, cb = p.c1 - p.c0;
    if (cb == cg) return std::fill(dx + n0 * image, dx + (n0 + b) * image, T(0));
    for (int64_t n = n0; n < n0 + b; ++n)
      for (int64_t g = 0; g < c.groups; ++g) {
        if (!c.channelsLast) {
          T* first = dx + (n * c.c + g * cg + p.c0) * plane;
          std::fill(first, first + cb * plane, T(0));
          continue;
        }
        for (int64_t q = 0; q < plane; ++q) {
          T* px = dx + (n * plane + q) * c.c + g * cg + p.c0;
          std::fill(px, px + cb, T(0));
        }
      }
  }

  // dw of group g, the input and output channels of part p, summed over
  // the images in order, `batch` at a time: NCHW dw[o, t] += sum_q dy[n,
  // g*og + o, q] * col[t, q]; NHWC dw[o, t] += sum_q dy[n, q, g*og + o] *
  // col[q, t].
  void gradWeight(const T* dy, const T* x, T* dw, T* col, int64_t g, const Part& p, int64_t batch) const {
    T* wg = dw + (g * og + p.o0) * taps;  // the part's rows of filters
    for (int64_t n0 = 0; n0 < c.n; n0 += batch) {
      const int64_t b = std::min(batch, c.n - n0);
      if (!c.channelsLast && b > 1 && !sideBySide(b)) {
        for (int64_t n = n0; n < n0 + b; ++n) gradWeightOf(dy, x, wg, col, g, p, n, 1, n > 0);
        continue;
      }
      gradWeightOf(dy, x, wg, col, g, p, n0, b, n0 > 0);
    }
    if (c.n == 0)
      forRuns(p, [&](int64_t filter, int64_t, int64_t len) {
        for (int64_t o = 0; o < p.o1 - p.o0; ++o) std::fill(wg + o * taps + filter, wg + o * taps + filter + len, T(0));
      });
  }

  void gradWeightOf(const T* dy, const T* x, T* wg, T* col, int64_t g, const Part& p, int64_t n0, int64_t b,
                    bool accumulate) const {
    const bool inImage = patchesAreImage(b), wide = sideBySide(b);
    const int64_t ld = b * pixels, rows = p.o1 - p.o0, o = g * og + p.o0;  // the part's first output channel
    if (!inImage)
      for (int64_t i = 0; i < b; ++i) im2col(x, n0 + i, g, p, imageCol(col, i), ld);
    const T* patches = inImage ? imagePatches(x, n0, g, p) : col;
    const int64_t pld = patchLd(inImage, p);
    if (c.channelsLast) {
      forRuns(p, [&](int64_t filter, int64_t patch, int64_t len) {
        gemm(blas, {true, false, rows, len, ld, c.o, pld, taps, accumulate}, dy + n0 * pixels * c.o + o,
             patches + patch, wg + filter);
      });
    } else if (!wide) {
      forRuns(p, [&](int64_t filter, int64_t patch, int64_t len) {
        gemm(blas, {false, true, rows, len, pixels, pixels, pld, taps, accumulate}, dy + (n0 * c.o + o) * pixels,
             patches + patch * pld, wg + filter);
      });
    } else {
      T* dyg = outputBlock(col, b);
      gatherOutputs(dy, n0, b, o, rows, dyg);
      forRuns(p, [&](int64_t filter, int64_t patch, int64_t len) {
        gemm(blas, {false, true, rows, len, ld, ld, ld, taps, accumulate}, dyg, col + patch * ld, wg + filter);
      });
    }
  }

  // NCHW output gradients of images [n0, n0 + b), output channels [o0, o0 +
  // rows), as one [rows, b * pixels] matrix.
  void gatherOutputs(const T* dy, int64_t n0, int64_t b, int64_t o0, int64_t rows, T* dyg) const {
    for (int64_t o = 0; o < rows; ++o)
      for (int64_t i = 0; i < b; ++i)
        copySpan(dy + ((n0 + i) * c.o + o0 + o) * pixels, dyg + o * b * pixels + i * pixels, pixels);
  }

  // im2col's transpose over a block's channels: every patch entry added back
  // into the input element it was read from (entries read from padding are
  // dropped). NCHW rows are `ld` apart.
  void col2im(const T* col, int64_t n, int64_t g, const Part& p, T* dx, int64_t ld) const {
    if (c.channelsLast) return col2imPixels(col, n, g, p, dx);
    for (int64_t ch = p.c0; ch < p.c1; ++ch) {
      T* plane = dx + (n * c.c + g * cg + ch) * c.h * c.wd;
      for (int64_t ky = 0; ky < c.kh; ++ky)
        for (int64_t kx = 0; kx < c.kw; ++kx) {
          const T* src = col + row(p, ch, ky, kx) * ld;
          int64_t off = kx * c.dilW - c.padLeft;
          auto [lo, hi] = validOutputColumns(c, off);
          for (int64_t oy = 0; oy < c.oh; ++oy, src += c.ow) {
            int64_t iy = oy * c.strideH - c.padTop + ky * c.dilH;
            if (iy < 0 || iy >= c.h) continue;
            T* dst = plane + iy * c.wd + off;
            if (c.strideW == 1)
              for (int64_t ox = lo; ox < hi; ++ox) dst[ox] += src[ox];
            else
              for (int64_t ox = lo; ox < hi; ++ox) dst[ox * c.strideW] += src[ox];
          }
        }
    }
  }

  void col2imPixels(const T* col, int64_t n, int64_t g, const Part& p, T* dx) const {
    const int64_t stride = partTaps(p);
    for (int64_t oy = 0; oy < c.oh; ++oy)
      for (int64_t ox = 0; ox < c.ow; ++ox) {
        const T* src = col + (oy * c.ow + ox) * stride;
        for (int64_t ky = 0; ky < c.kh; ++ky) {
          int64_t iy = oy * c.strideH - c.padTop + ky * c.dilH;
          if (iy < 0 || iy >= c.h) continue;
          for (int64_t kx = 0; kx < c.kw; ++kx) {
            int64_t ix = ox * c.strideW - c.padLeft + kx * c.dilW;
            if (ix < 0 || ix >= c.wd) continue;
            T* dst = dx + ((n * c.h + iy) * c.wd + ix) * c.c + g * cg;
            for (int64_t ch = p.c0; ch < p.c1; ++ch) dst[ch] += src[row(p, ch, ky, kx)];
          }
        }
      }
  }

  // Units [begin, end) in exec/parallel.h's order. A spec split neither way
  // has images for units, `batch` per GEMM (what the workspace holds, at
  // most im2colImagesPerGemm), in runs from the range's start, which
  // im2colConvWork aligns to it.
  void run(const ConvBuffers& bf, T* col, int64_t begin, int64_t end, int64_t batch) const {
    auto ptr = [](std::byte* q) { return reinterpret_cast<T*>(q); };
    const T *x = ptr(bf.x), *w = ptr(bf.w), *bias = ptr(bf.bias);
    if (c.direction == ConvDirection::GradWeight) {
      for (int64_t u = begin; u < end; ++u) gradWeight(ptr(bf.y), x, ptr(bf.w), col, u / split.blocks, part(u), batch);
      return;
    }
    const bool forwards = c.direction == ConvDirection::Forward;
    if (split.tiles * split.blocks == 1) {
      for (int64_t n0 = begin; n0 < end; n0 += batch) {
        const int64_t count = std::min(batch, end - n0);
        if (forwards)
          forward(x, w, bias, ptr(bf.y), col, n0, count, whole(), false);
        else
          gradInput(ptr(bf.y), w, ptr(bf.x), col, n0, count, whole());
      }
      return;
    }
    const int64_t perImage = split.tiles * split.blocks;
    for (int64_t u = begin; u < end; ++u) {
      // The blocks of one tile share its patches (one group's at a time).
      const bool patched = c.groups == 1 && u > begin && u % split.blocks > 0;
      if (forwards)
        forward(x, w, bias, ptr(bf.y), col, u / perImage, 1, part(u), patched);
      else
        gradInput(ptr(bf.y), w, ptr(bf.x), col, u / perImage, 1, part(u));
    }
  }

  // Image n's output over tile p, channels [p.o0, p.o1) of every group, starts
  // as the bias, written in memory order (NHWC rows of channels, NCHW
  // planes), and the GEMMs accumulate onto it: no second pass over the
  // output (adding it after, along channels, was a fifth of a small CNN's
  // inference in NHWC).
  void fillBias(const T* bias, T* y, int64_t n, const Part& p) const {
    const int64_t p0 = p.oy0 * c.ow, count = partPixels(p), o0 = p.o0, o1 = p.o1;
    if (c.channelsLast) {
      T* rowStart = y + (n * pixels + p0) * c.o;
      for (int64_t r = 0; r < count; ++r, rowStart += c.o) {
        if (o1 - o0 == og) {
          copySpan(bias, rowStart, c.o);
          continue;
        }
        for (int64_t g = 0; g < c.groups; ++g) copySpan(bias + g * og + o0, rowStart + g * og + o0, o1 - o0);
      }
      return;
    }
    for (int64_t g = 0; g < c.groups; ++g)
      for (int64_t o = g * og + o0; o < g * og + o1; ++o) fillWith(y + (n * c.o + o) * pixels + p0, count, bias[o]);
  }
};

}  // namespace

void runConv2d(const Blas& blas, const ConvSpec& c, DType dtype, const ConvBuffers& buffers, std::byte* workspace,
               uint64_t workspaceBytes, int64_t begin, int64_t end) {
  if (depthwiseRuns(c)) return runDepthwise(c, dtype, buffers, begin, end);
  // As many images per GEMM as the rule asks and the workspace holds (a
  // package planned before several images shared a GEMM holds one).
  const uint64_t rowBytes = static_cast<uint64_t>(std::max<int64_t>(c.oh * c.ow, 1)) * dtypeSize(dtype);
  int64_t batch = im2colImagesPerGemm(c);
  while (batch > 1 && static_cast<uint64_t>(im2colWorkspaceRows(c, batch)) * rowBytes > workspaceBytes) --batch;
  if (dtype == DType::F32)
    Conv<float>(c, blas).run(buffers, reinterpret_cast<float*>(workspace), begin, end, batch);
  else
    Conv<double>(c, blas).run(buffers, reinterpret_cast<double*>(workspace), begin, end, batch);
}

std::pair<int64_t, int64_t> validOutputColumns(const ConvSpec& c, int64_t off) {
  int64_t lo = 0;
  while (lo < c.ow && lo * c.strideW + off < 0) ++lo;
  int64_t hi = c.ow;
  while (hi > lo && (hi - 1) * c.strideW + off >= c.wd) --hi;
  return {lo, hi};
}

std::vector<uint64_t> convScratchSlots(const Plan& plan, int threads) {
  std::vector<uint64_t> slots;
  for (const Step& s : plan.steps) {
    if (s.kind() != StepKind::Conv || s.conv().workspace < 0) continue;
    const size_t ranges = chunksOf(im2colConvWork(s.conv()), threads).size();
    const uint64_t bytes = plan.buffers[static_cast<size_t>(s.conv().workspace)].type.byteSize();
    if (slots.size() + 1 < ranges) slots.resize(ranges - 1, 0);
    for (size_t i = 0; i + 1 < ranges; ++i) slots[i] = std::max(slots[i], bytes);
  }
  return slots;
}

}  // namespace kfuse
