#include "runtime/cpu_conv.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "exec/parallel.h"

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

// One image, one group: the patch matrix whose column p (an output pixel)
// holds the inputs its filter taps read, zero where they fall in padding.
// Rows follow the filter's memory order: (c, ky, kx) for OIHW, (ky, kx, c)
// for OHWI, so the filter's rows are the GEMM's other operand as they lie.
template <typename T>
struct Conv {
  const ConvSpec& c;
  const Blas& blas;
  int64_t cg, og, taps, pixels;

  Conv(const ConvSpec& s, const Blas& b)
      : c(s), blas(b), cg(s.c / s.groups), og(s.o / s.groups), taps(cg * s.kh * s.kw), pixels(s.oh * s.ow) {}

  int64_t row(int64_t ch, int64_t ky, int64_t kx) const {
    return c.filterLast ? (ky * c.kw + kx) * cg + ch : (ch * c.kh + ky) * c.kw + kx;
  }
  // NCHW: col is [taps, pixels] with rows `ld` apart (several images'
  // patch matrices side by side); NHWC: [pixels, taps] (so GEMM writes NHWC
  // rows; several images' lie one after another).
  void im2col(const T* x, int64_t n, int64_t g, T* col, int64_t ld) const {
    if (c.channelsLast)
      im2colPixels(x, n, g, col);
    else
      im2colRows(x, n, g, col, ld);
  }

  // The output columns ox whose input column ox * stride + off lies inside
  // the image: [lo, hi).
  std::pair<int64_t, int64_t> validColumns(int64_t off) const {
    int64_t lo = 0;
    while (lo < c.ow && lo * c.strideW + off < 0) ++lo;
    int64_t hi = c.ow;
    while (hi > lo && (hi - 1) * c.strideW + off >= c.wd) --hi;
    return {lo, hi};
  }

  // NCHW: one col row per (channel, tap) holds a strided window of one input
  // plane, copied a row of the output at a time (a memcpy at stride 1), with
  // the padding's zeros written around it.
  void im2colRows(const T* x, int64_t n, int64_t g, T* col, int64_t ld) const {
    if (c.strideH == 1 && c.strideW == 1 && c.wd == c.ow) return im2colPlanes(x, n, g, col, ld);
    for (int64_t ch = 0; ch < cg; ++ch) {
      const T* plane = x + (n * c.c + g * cg + ch) * c.h * c.wd;
      for (int64_t ky = 0; ky < c.kh; ++ky)
        for (int64_t kx = 0; kx < c.kw; ++kx) {
          T* dst = col + row(ch, ky, kx) * ld;
          int64_t off = kx * c.dilW - c.padLeft;
          auto [lo, hi] = validColumns(off);
          for (int64_t oy = 0; oy < c.oh; ++oy, dst += c.ow) {
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
  void im2colPlanes(const T* x, int64_t n, int64_t g, T* col, int64_t ld) const {
    const int64_t planeSize = c.h * c.wd;
    for (int64_t ch = 0; ch < cg; ++ch) {
      const T* plane = x + (n * c.c + g * cg + ch) * planeSize;
      for (int64_t ky = 0; ky < c.kh; ++ky)
        for (int64_t kx = 0; kx < c.kw; ++kx) {
          T* dst = col + row(ch, ky, kx) * ld;
          const int64_t dy = ky * c.dilH - c.padTop, off = kx * c.dilW - c.padLeft;
          // Output rows [y0, y1) read input rows inside the image.
          const int64_t y0 = std::clamp<int64_t>(-dy, 0, c.oh), y1 = std::clamp<int64_t>(c.h - dy, y0, c.oh);
          std::fill(dst, dst + y0 * c.ow, T(0));
          std::fill(dst + y1 * c.ow, dst + pixels, T(0));
          if (y0 == y1) continue;
          // Plane elements [a, b) land at dst + y0 * ow onwards; the ends
          // that fall outside the plane are padding columns, zeroed below.
          const int64_t a = (y0 + dy) * c.wd + off, b = (y1 - 1 + dy) * c.wd + off + c.ow;
          const int64_t from = std::max<int64_t>(a, 0), to = std::min(b, planeSize);
          if (from < to) std::memcpy(dst + y0 * c.ow + (from - a), plane + from, static_cast<size_t>(to - from) * sizeof(T));
          // Column by column: a fill per row of the one or two padding
          // columns became a memset call per row.
          auto [lo, hi] = validColumns(off);
          auto zeroColumn = [&](int64_t ox) {
            for (int64_t oy = y0; oy < y1; ++oy) dst[oy * c.ow + ox] = T(0);
          };
          for (int64_t ox = 0; ox < lo; ++ox) zeroColumn(ox);
          for (int64_t ox = hi; ox < c.ow; ++ox) zeroColumn(ox);
        }
    }
  }

  // NHWC: one col row per output pixel; each tap reads the group's cg
  // contiguous channels of one input pixel (one copy when the filter is
  // OHWI, whose taps keep channels innermost too).
  void im2colPixels(const T* x, int64_t n, int64_t g, T* col) const {
    if (c.filterLast && c.groups == 1 && c.dilW == 1) return im2colFilterRows(x, n, col);
    for (int64_t oy = 0; oy < c.oh; ++oy)
      for (int64_t ox = 0; ox < c.ow; ++ox) {
        T* dst = col + (oy * c.ow + ox) * taps;
        for (int64_t ky = 0; ky < c.kh; ++ky)
          for (int64_t kx = 0; kx < c.kw; ++kx) {
            int64_t iy = oy * c.strideH - c.padTop + ky * c.dilH;
            int64_t ix = ox * c.strideW - c.padLeft + kx * c.dilW;
            bool inside = iy >= 0 && iy < c.h && ix >= 0 && ix < c.wd;
            const T* src = inside ? x + ((n * c.h + iy) * c.wd + ix) * c.c + g * cg : nullptr;
            if (c.filterLast) {
              T* d = dst + (ky * c.kw + kx) * cg;
              if (inside)
                std::copy(src, src + cg, d);
              else
                std::fill(d, d + cg, T(0));
            } else {
              for (int64_t ch = 0; ch < cg; ++ch) dst[row(ch, ky, kx)] = inside ? src[ch] : T(0);
            }
          }
      }
  }

  // NHWC input, OHWI filter, one group, no horizontal dilation: the kw taps
  // of one filter row read kw adjacent input pixels, c.c channels each, which
  // lie contiguously in memory and in the col row alike: one copy of
  // kw * c.c values per (pixel, ky) where the window is inside the image
  // (tiny per-tap copies were most of a 3-channel first layer's time).
  void im2colFilterRows(const T* x, int64_t n, T* col) const {
    const int64_t span = c.kw * c.c;
    for (int64_t oy = 0; oy < c.oh; ++oy)
      for (int64_t ox = 0; ox < c.ow; ++ox) {
        T* dst = col + (oy * c.ow + ox) * taps;
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
  // in place: the image is its own patch matrix (no copy, no scatter).
  bool patchesAreImage() const {
    return c.kh == 1 && c.kw == 1 && c.strideH == 1 && c.strideW == 1 && c.padTop == 0 && c.padLeft == 0 &&
           c.oh == c.h && c.ow == c.wd;
  }
  // The patch matrix of image n, group g in an image (patchesAreImage), and
  // its leading dimension: NCHW [cg, pixels] rows of a plane, NHWC
  // [pixels, cg] rows of c.c channels.
  template <typename P>
  P* imagePatches(P* x, int64_t n, int64_t g) const {
    return c.channelsLast ? x + n * pixels * c.c + g * cg : x + (n * c.c + g * cg) * pixels;
  }
  int64_t patchLd(bool inImage) const {
    if (c.channelsLast) return inImage ? c.c : taps;
    return pixels;
  }

  // Images [n0, n0 + b) at once: one GEMM per group over all their pixels.
  // NHWC images lie one after another, so b images are one image of b *
  // pixels rows. NCHW images' patch matrices sit side by side in col (rows
  // b * pixels apart) and their outputs or output gradients pass through a
  // block after the patches (im2colWorkspaceRows); a 1x1 NCHW convolution
  // that reads the image in place goes image by image.
  bool sideBySide(int64_t b) const { return b > 1 && !c.channelsLast && !patchesAreImage(); }
  T* outputBlock(T* col, int64_t b) const { return col + b * taps * pixels; }
  // Where the i-th image of a GEMM's chunk has its patch matrix in col.
  T* imageCol(T* col, int64_t i) const { return col + i * pixels * (c.channelsLast ? taps : 1); }

  // NCHW: y[n, g*og + o, p] = sum_t w[o, t] * col[t, p];
  // NHWC: y[n, p, g*og + o] = sum_t col[p, t] * w[o, t].
  void forward(const T* x, const T* w, const T* bias, T* y, T* col, int64_t n0, int64_t b) const {
    if (!c.channelsLast && b > 1 && !sideBySide(b)) {
      for (int64_t n = n0; n < n0 + b; ++n) forward(x, w, bias, y, col, n, 1);
      return;
    }
    if (bias)
      for (int64_t n = n0; n < n0 + b; ++n) fillBias(bias, y, n);
    const bool inImage = patchesAreImage(), wide = sideBySide(b);
    const int64_t ld = b * pixels;
    for (int64_t g = 0; g < c.groups; ++g) {
      if (!inImage)
        for (int64_t i = 0; i < b; ++i) im2col(x, n0 + i, g, imageCol(col, i), ld);
      const T* patches = inImage ? imagePatches(x, n0, g) : col;
      const T* wg = w + g * og * taps;  // the group's filters: og rows of `taps`
      if (c.channelsLast) {
        gemm(blas, {false, true, ld, og, taps, patchLd(inImage), taps, c.o, bias != nullptr}, patches, wg,
             y + n0 * pixels * c.o + g * og);
      } else if (!wide) {
        gemm(blas, {false, false, og, pixels, taps, taps, pixels, pixels, bias != nullptr}, wg, patches,
             y + (n0 * c.o + g * og) * pixels);
      } else {
        T* out = outputBlock(col, b);
        gemm(blas, {false, false, og, ld, taps, taps, ld, ld, false}, wg, col, out);
        for (int64_t i = 0; i < b; ++i)
          for (int64_t o = 0; o < og; ++o) {
            T* dst = y + ((n0 + i) * c.o + g * og + o) * pixels;
            const T* src = out + o * ld + i * pixels;
            if (bias)
              for (int64_t p = 0; p < pixels; ++p) dst[p] += src[p];
            else
              copySpan(src, dst, pixels);
          }
      }
    }
  }

  // dx of images [n0, n0 + b): the patches' gradient, w's transpose times dy
  // (NCHW: col[t, p] = sum_o w[o, t] * dy[n, g*og + o, p]; NHWC: col[p, t] =
  // sum_o dy[n, p, g*og + o] * w[o, t]), scattered back where the patches
  // were read (col2im), or written straight into dx when they are the image.
  void gradInput(const T* dy, const T* w, T* dx, T* col, int64_t n0, int64_t b) const {
    if (!c.channelsLast && b > 1 && !sideBySide(b)) {
      for (int64_t n = n0; n < n0 + b; ++n) gradInput(dy, w, dx, col, n, 1);
      return;
    }
    const bool inImage = patchesAreImage(), wide = sideBySide(b);
    const int64_t image = c.c * c.h * c.wd, ld = b * pixels;
    if (!inImage) std::fill(dx + n0 * image, dx + (n0 + b) * image, T(0));
    for (int64_t g = 0; g < c.groups; ++g) {
      T* patches = inImage ? imagePatches(dx, n0, g) : col;
      const T* wg = w + g * og * taps;
      if (c.channelsLast) {
        gemm(blas, {false, false, ld, taps, og, c.o, taps, patchLd(inImage), false}, dy + n0 * pixels * c.o + g * og,
             wg, patches);
      } else if (!wide) {
        gemm(blas, {true, false, taps, pixels, og, taps, pixels, pixels, false}, wg, dy + (n0 * c.o + g * og) * pixels,
             patches);
      } else {
        T* dyg = outputBlock(col, b);
        gatherOutputs(dy, n0, b, g, dyg);
        gemm(blas, {true, false, taps, ld, og, taps, ld, ld, false}, wg, dyg, col);
      }
      if (!inImage)
        for (int64_t i = 0; i < b; ++i)
          col2im(imageCol(col, i), n0 + i, g, dx, c.channelsLast ? pixels : ld);
    }
  }

  // dw of group g, summed over the images in order, `b` at a time: NCHW
  // dw[o, t] += sum_p dy[n, g*og + o, p] * col[t, p]; NHWC dw[o, t] += sum_p
  // dy[n, p, g*og + o] * col[p, t].
  void gradWeight(const T* dy, const T* x, T* dw, T* col, int64_t g, int64_t batch) const {
    T* wg = dw + g * og * taps;
    for (int64_t n0 = 0; n0 < c.n; n0 += batch) {
      const int64_t b = std::min(batch, c.n - n0);
      if (!c.channelsLast && b > 1 && !sideBySide(b)) {
        for (int64_t n = n0; n < n0 + b; ++n) gradWeightOf(dy, x, wg, col, g, n, 1, n > 0);
        continue;
      }
      gradWeightOf(dy, x, wg, col, g, n0, b, n0 > 0);
    }
    if (c.n == 0) std::fill(wg, wg + og * taps, T(0));
  }

  void gradWeightOf(const T* dy, const T* x, T* wg, T* col, int64_t g, int64_t n0, int64_t b, bool accumulate) const {
    const bool inImage = patchesAreImage(), wide = sideBySide(b);
    const int64_t ld = b * pixels;
    if (!inImage)
      for (int64_t i = 0; i < b; ++i) im2col(x, n0 + i, g, imageCol(col, i), ld);
    const T* patches = inImage ? imagePatches(x, n0, g) : col;
    if (c.channelsLast) {
      gemm(blas, {true, false, og, taps, ld, c.o, patchLd(inImage), taps, accumulate}, dy + n0 * pixels * c.o + g * og,
           patches, wg);
    } else if (!wide) {
      gemm(blas, {false, true, og, taps, pixels, pixels, patchLd(inImage), taps, accumulate},
           dy + (n0 * c.o + g * og) * pixels, patches, wg);
    } else {
      T* dyg = outputBlock(col, b);
      gatherOutputs(dy, n0, b, g, dyg);
      gemm(blas, {false, true, og, taps, ld, ld, ld, taps, accumulate}, dyg, col, wg);
    }
  }

  // NCHW output gradients of images [n0, n0 + b), group g, as one [og, b *
  // pixels] matrix.
  void gatherOutputs(const T* dy, int64_t n0, int64_t b, int64_t g, T* dyg) const {
    for (int64_t o = 0; o < og; ++o)
      for (int64_t i = 0; i < b; ++i)
        copySpan(dy + ((n0 + i) * c.o + g * og + o) * pixels, dyg + o * b * pixels + i * pixels, pixels);
  }

  // im2col's transpose: every patch entry added back into the input element
  // it was read from (entries read from padding are dropped). NCHW rows are
  // `ld` apart.
  void col2im(const T* col, int64_t n, int64_t g, T* dx, int64_t ld) const {
    if (c.channelsLast) return col2imPixels(col, n, g, dx);
    for (int64_t ch = 0; ch < cg; ++ch) {
      T* plane = dx + (n * c.c + g * cg + ch) * c.h * c.wd;
      for (int64_t ky = 0; ky < c.kh; ++ky)
        for (int64_t kx = 0; kx < c.kw; ++kx) {
          const T* src = col + row(ch, ky, kx) * ld;
          int64_t off = kx * c.dilW - c.padLeft;
          auto [lo, hi] = validColumns(off);
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

  void col2imPixels(const T* col, int64_t n, int64_t g, T* dx) const {
    for (int64_t oy = 0; oy < c.oh; ++oy)
      for (int64_t ox = 0; ox < c.ow; ++ox) {
        const T* src = col + (oy * c.ow + ox) * taps;
        for (int64_t ky = 0; ky < c.kh; ++ky) {
          int64_t iy = oy * c.strideH - c.padTop + ky * c.dilH;
          if (iy < 0 || iy >= c.h) continue;
          for (int64_t kx = 0; kx < c.kw; ++kx) {
            int64_t ix = ox * c.strideW - c.padLeft + kx * c.dilW;
            if (ix < 0 || ix >= c.wd) continue;
            T* dst = dx + ((n * c.h + iy) * c.wd + ix) * c.c + g * cg;
            for (int64_t ch = 0; ch < cg; ++ch) dst[ch] += src[row(ch, ky, kx)];
          }
        }
      }
  }

  // `batch`: images per GEMM (what the workspace holds, at most
  // im2colImagesPerGemm); ranges of images are cut into runs of it from
  // their start, which im2colConvWork aligns to it.
  void run(const ConvBuffers& b, T* col, int64_t begin, int64_t end, int64_t batch) const {
    auto p = [](std::byte* q) { return reinterpret_cast<T*>(q); };
    if (c.direction == ConvDirection::GradWeight) {
      for (int64_t g = begin; g < end; ++g) gradWeight(p(b.y), p(b.x), p(b.w), col, g, batch);
      return;
    }
    for (int64_t n0 = begin; n0 < end; n0 += batch) {
      const int64_t count = std::min(batch, end - n0);
      if (c.direction == ConvDirection::Forward)
        forward(p(b.x), p(b.w), p(b.bias), p(b.y), col, n0, count);
      else
        gradInput(p(b.y), p(b.w), p(b.x), col, n0, count);
    }
  }

  // Image n's output starts as the bias, written in memory order (NHWC rows
  // of c.o channels, NCHW planes), and the GEMMs accumulate onto it: no second
  // pass over the output (adding it after, along channels, was a fifth of a
  // small CNN's inference in NHWC).
  void fillBias(const T* bias, T* y, int64_t n) const {
    if (c.channelsLast) {
      y += n * pixels * c.o;
      for (int64_t r = 0; r < pixels; ++r, y += c.o) copySpan(bias, y, c.o);
      return;
    }
    y += n * c.o * pixels;
    for (int64_t o = 0; o < c.o; ++o, y += pixels) fillWith(y, pixels, bias[o]);
  }
};

}  // namespace

void runConv2d(const Blas& blas, const ConvSpec& c, DType dtype, const ConvBuffers& buffers, std::byte* workspace,
               uint64_t workspaceBytes, int64_t begin, int64_t end) {
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
