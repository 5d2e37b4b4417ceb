#include "runtime/cpu_conv.h"

#include <cblas.h>

#include <vector>

namespace kfuse {
namespace {

void gemm(bool transB, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, transB ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c,
              ldc);
}
void gemm(bool transB, int m, int n, int k, const double* a, int lda, const double* b, int ldb, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, transB ? CblasTrans : CblasNoTrans, m, n, k, 1.0, a, lda, b, ldb, 0.0, c,
              ldc);
}

// One image, one group: the patch matrix whose column p (an output pixel)
// holds the inputs its filter taps read, zero where they fall in padding.
// Rows follow the filter's memory order: (c, ky, kx) for OIHW, (ky, kx, c)
// for OHWI, so the filter's rows are the GEMM's other operand as they lie.
template <typename T>
struct Conv {
  const ConvSpec& c;
  int64_t cg, og, taps, pixels;

  explicit Conv(const ConvSpec& s)
      : c(s), cg(s.c / s.groups), og(s.o / s.groups), taps(cg * s.kh * s.kw), pixels(s.oh * s.ow) {}

  int64_t row(int64_t ch, int64_t ky, int64_t kx) const {
    return c.filterLast ? (ky * c.kw + kx) * cg + ch : (ch * c.kh + ky) * c.kw + kx;
  }
  T input(const T* x, int64_t n, int64_t ch, int64_t iy, int64_t ix) const {
    if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.wd) return T(0);
    return c.channelsLast ? x[((n * c.h + iy) * c.wd + ix) * c.c + ch] : x[((n * c.c + ch) * c.h + iy) * c.wd + ix];
  }

  // NCHW: col is [taps, pixels]; NHWC: [pixels, taps] (so GEMM writes NHWC rows).
  void im2col(const T* x, int64_t n, int64_t g, T* col) const {
    for (int64_t ch = 0; ch < cg; ++ch)
      for (int64_t ky = 0; ky < c.kh; ++ky)
        for (int64_t kx = 0; kx < c.kw; ++kx) {
          int64_t r = row(ch, ky, kx);
          for (int64_t oy = 0; oy < c.oh; ++oy)
            for (int64_t ox = 0; ox < c.ow; ++ox) {
              T v = input(x, n, g * cg + ch, oy * c.strideH - c.padTop + ky * c.dilH,
                          ox * c.strideW - c.padLeft + kx * c.dilW);
              int64_t p = oy * c.ow + ox;
              col[static_cast<size_t>(c.channelsLast ? p * taps + r : r * pixels + p)] = v;
            }
        }
  }

  void run(const T* x, const T* w, const T* bias, T* y, T* col) const {
    for (int64_t n = 0; n < c.n; ++n)
      for (int64_t g = 0; g < c.groups; ++g) {
        im2col(x, n, g, col);
        const T* wg = w + g * og * taps;  // the group's filters: og rows of `taps`
        if (c.channelsLast) {
          // y[n, p, g*og + o] = sum_t col[p, t] * w[o, t]
          T* yg = y + n * pixels * c.o + g * og;
          gemm(true, static_cast<int>(pixels), static_cast<int>(og), static_cast<int>(taps), col,
               static_cast<int>(taps), wg, static_cast<int>(taps), yg, static_cast<int>(c.o));
        } else {
          // y[n, g*og + o, p] = sum_t w[o, t] * col[t, p]
          T* yg = y + (n * c.o + g * og) * pixels;
          gemm(false, static_cast<int>(og), static_cast<int>(pixels), static_cast<int>(taps), wg,
               static_cast<int>(taps), col, static_cast<int>(pixels), yg, static_cast<int>(pixels));
        }
      }
    if (!bias) return;
    for (int64_t n = 0; n < c.n; ++n)
      for (int64_t o = 0; o < c.o; ++o)
        for (int64_t p = 0; p < pixels; ++p) (c.channelsLast ? y[(n * pixels + p) * c.o + o] : y[(n * c.o + o) * pixels + p]) += bias[o];
  }
};

}  // namespace

void runConv2d(const ConvSpec& c, DType dtype, const std::byte* x, const std::byte* w, const std::byte* bias,
               std::byte* y, std::byte* workspace) {
  if (dtype == DType::F32)
    Conv<float>(c).run(reinterpret_cast<const float*>(x), reinterpret_cast<const float*>(w),
                       reinterpret_cast<const float*>(bias), reinterpret_cast<float*>(y),
                       reinterpret_cast<float*>(workspace));
  else
    Conv<double>(c).run(reinterpret_cast<const double*>(x), reinterpret_cast<const double*>(w),
                        reinterpret_cast<const double*>(bias), reinterpret_cast<double*>(y),
                        reinterpret_cast<double*>(workspace));
}

}  // namespace kfuse
