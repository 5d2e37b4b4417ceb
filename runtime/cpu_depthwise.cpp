#include "runtime/cpu_depthwise.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "exec/parallel.h"

namespace kfuse {
namespace {

// One channel's plane at a time. Forward with the common filters
// (forwardBlock), and backward to the input (gradInputBlock at stride 1,
// gradInputPhases at stride 2), each output pixel sums its taps in
// registers; otherwise one filter tap at a time: each tap adds its weight times a
// shifted (and, at stride 2, strided) window of the input plane into the
// output rows it reaches, or the transpose of that. A plane of a MobileNet
// (7x7 to 112x112) stays in L1 across its taps.
template <typename T>
struct Depthwise {
  const ConvSpec& c;
  int64_t plane, outPlane, taps;

  explicit Depthwise(const ConvSpec& s) : c(s), plane(s.h * s.wd), outPlane(s.oh * s.ow), taps(s.kh * s.kw) {}

  // The lanes of one 128-bit register, which every x86-64 CPU has (a 3x3
  // filter's nine partial sums or weights fit in its 16 registers).
  static constexpr int kLanes = 16 / sizeof(T);
  static constexpr int kBlockSlack = kLanes;  // sumTaps' last vector reads past the block
  // The forward filters whose blocks hold their columns by phase, for
  // sumTaps' vectors: 5x5 at stride 2. EfficientNet-B0's 144-channel 56x56
  // -> 28x28 layer took 635 us with strided reads, 367 by phase (one
  // thread, AVX2 machine, 128-bit vectors here); a 672-channel 14x14 -> 7x7
  // one 333 and 235. A 3x3 filter at stride 2 has too few taps to repay
  // the split: 89 -> 119 us at 192 channels, 28x28 -> 14x14.
  template <int K, int S>
  static constexpr bool kByPhase = S == 2 && K == 5;  // copyPadded splits stride 2 only
  typedef T Lanes __attribute__((vector_size(16)));
  template <int S>
  static Lanes lanesAt(const T* p) {
    Lanes v;
    if constexpr (S == 1)
      std::memcpy(&v, p, sizeof v);
    else
      for (int i = 0; i < kLanes; ++i) v[i] = p[i * S];
    return v;
  }

  // The filters every direction has a padded-block form for: square 3x3
  // or 5x5, stride 1 or 2 both ways, undilated. Calls f(K, S) with both as
  // std::integral_constant and returns true for those; false otherwise.
  template <typename F>
  bool commonFilter(F f) const {
    if (c.kh != c.kw || c.strideH != c.strideW || c.dilH != 1 || c.dilW != 1) return false;
    using I3 = std::integral_constant<int, 3>;
    using I5 = std::integral_constant<int, 5>;
    using I1 = std::integral_constant<int, 1>;
    using I2 = std::integral_constant<int, 2>;
    const int64_t k = c.kh, st = c.strideH;
    if (k == 3 && st == 1) return f(I3{}, I1{}), true;
    if (k == 3 && st == 2) return f(I3{}, I2{}), true;
    if (k == 5 && st == 1) return f(I5{}, I1{}), true;
    if (k == 5 && st == 2) return f(I5{}, I2{}), true;
    return false;
  }

  // Calls f(oy, iy, ox0, ox1, ixOfOx0) for every output row in [oy0, oy1)
  // and tap (ky, kx) whose input row is inside the image.
  template <typename F>
  void forTapRows(int64_t ky, int64_t kx, int64_t oy0, int64_t oy1, F f) const {
    const int64_t off = kx * c.dilW - c.padLeft;
    auto [lo, hi] = validOutputColumns(c, off);
    if (lo >= hi) return;
    for (int64_t oy = oy0; oy < oy1; ++oy) {
      const int64_t iy = oy * c.strideH - c.padTop + ky * c.dilH;
      if (iy >= 0 && iy < c.h) f(oy, iy, lo, hi, lo * c.strideW + off);
    }
  }

  // y[n, ch, oy0:oy1, :] = bias + sum over taps, taps in (ky, kx) order.
  void forward(const T* x, const T* w, const T* bias, T* y, int64_t n, int64_t oy0, int64_t oy1) const {
    if (commonFilter([&](auto k, auto s) { forwardBlock<k, s>(x, w, bias, y, n, oy0, oy1); })) return;
    for (int64_t ch = 0; ch < c.c; ++ch) {
      const T* in = x + (n * c.c + ch) * plane;
      T* out = y + (n * c.c + ch) * outPlane;
      std::fill(out + oy0 * c.ow, out + oy1 * c.ow, bias ? bias[ch] : T(0));
      for (int64_t ky = 0; ky < c.kh; ++ky)
        for (int64_t kx = 0; kx < c.kw; ++kx) {
          const T wv = w[ch * taps + ky * c.kw + kx];
          forTapRows(ky, kx, oy0, oy1, [&](int64_t oy, int64_t iy, int64_t lo, int64_t hi, int64_t ix) {
            T* __restrict dst = out + oy * c.ow;
            const T* __restrict src = in + iy * c.wd + ix - lo * c.strideW;
            if (c.strideW == 1)
              for (int64_t ox = lo; ox < hi; ++ox) dst[ox] += wv * src[ox];
            else
              for (int64_t ox = lo; ox < hi; ++ox) dst[ox] += wv * src[ox * c.strideW];
          });
        }
    }
  }

  // The common filters (3x3 and 5x5, stride 1 or 2, undilated): the input
  // rows a tile reads, copied into a zero-padded block `pitch` = (ow - 1) *
  // stride + k wide (5x5 at stride 2: its columns by phase, kByPhase),
  // then each output pixel sums its k * k taps in registers (the tap loops
  // unrolled, the pixel loop vectorised) and is stored once. A pass over
  // the output per tap, or a short loop per row and tap, ran at a fifth of
  // this.
  template <int K, int S>
  void forwardBlock(const T* x, const T* w, const T* bias, T* y, int64_t n, int64_t oy0, int64_t oy1) const {
    blockChannels<K, S>(
        c.h, c.wd, c.padTop - oy0 * S, c.padLeft, oy1 - oy0, c.ow, [&](int64_t ch) { return x + (n * c.c + ch) * plane; },
        [&](int64_t ch, T* wk) { std::copy(w + ch * taps, w + ch * taps + K * K, wk); }, bias,
        [&](int64_t ch) { return y + (n * c.c + ch) * outPlane + oy0 * c.ow; });
  }

  // Every channel's block convolution: channel ch's `srcRows` x `srcWidth`
  // plane src(ch) copied into a zero-padded block at (top, left), then
  // dst(ch)[r, ox] = bias + the sum of its K * K taps (weights(ch, wk) gives
  // them in the order they add) over rows x width outputs (sumTaps). Planes
  // no wider than a register (up to 4x4 in f32: MobileNetV2's last blocks)
  // go kLanes channels at a time, a channel per lane, so that a tap is one
  // vector multiply-add where it was kLanes scalar ones, or one short
  // vector loop per row and channel (4x4 input gradients about 15% faster):
  // per lane the same sum in the same order, so the same bits.
  template <int K, int S, typename Src, typename Weights, typename Dst>
  void blockChannels(int64_t srcRows, int64_t srcWidth, int64_t top, int64_t left, int64_t rows, int64_t width, Src src,
                     Weights weights, const T* bias, Dst dst) const {
    const int64_t pitch = (width - 1) * S + K, blockRows = (rows - 1) * S + K;
    int64_t ch = 0;
    if (width <= kLanes) {
      // Held as T (a vector of Lanes would drop the vector attribute: GCC
      // ignores attributes on template arguments) and read as Lanes, which
      // GCC lets alias T; operator new aligns it to 16 bytes, a Lanes'.
      thread_local std::vector<T> interleaved;
      interleaved.assign(static_cast<size_t>(blockRows * pitch * kLanes), T(0));
      const Lanes* lanes = reinterpret_cast<const Lanes*>(interleaved.data());
      for (; ch + kLanes <= c.c; ch += kLanes) {
        Lanes wk[K * K], b{};
        for (int l = 0; l < kLanes; ++l) {
          copyPadded(src(ch + l), srcRows, srcWidth, top, left, interleaved.data(), blockRows, pitch, kLanes, l);
          T one[K * K];
          weights(ch + l, one);
          for (int t = 0; t < K * K; ++t) wk[t][l] = one[t];
          b[l] = bias ? bias[ch + l] : T(0);
        }
        sumTapsByLane<K, S>(lanes, pitch, wk, b, rows, width, [&](int l) { return dst(ch + l); });
      }
    }
    if (ch == c.c) return;
    thread_local std::vector<T> block;
    block.assign(static_cast<size_t>(blockRows * pitch + kBlockSlack), T(0));
    for (; ch < c.c; ++ch) {
      copyPadded(src(ch), srcRows, srcWidth, top, left, block.data(), blockRows, pitch, 1, 0, kByPhase<K, S>);
      T wk[K * K];
      weights(ch, wk);
      if constexpr (kByPhase<K, S>)
        sumTaps<K, S>(block.data(), pitch, wk, bias ? bias[ch] : T(0), dst(ch), rows, width);
      else
        sumTapsStrided<K, S>(block.data(), pitch, wk, bias ? bias[ch] : T(0), dst(ch), rows, width);
    }
  }

  // sumTaps for kLanes channels at once, lane l's outputs at out(l).
  template <int K, int S, typename Out>
  static void sumTapsByLane(const Lanes* block, int64_t pitch, const Lanes* wk, Lanes b, int64_t rows, int64_t width,
                            Out out) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t ox = 0; ox < width; ++ox) {
        const Lanes* base = block + r * S * pitch + ox * S;
        Lanes sum = b;
        for (int ky = 0; ky < K; ++ky)
          for (int kx = 0; kx < K; ++kx) sum += wk[ky * K + kx] * base[ky * pitch + kx];
        for (int l = 0; l < kLanes; ++l) out(l)[r * width + ox] = sum[l];
      }
  }

  // block[r, q] = plane[r - top, q - left] (`rows` x `width`) where that
  // lies inside the plane. The rest of the block is left as it is: zero,
  // the same for every channel, since the same positions fall outside.
  // With `lanes` > 1 the block interleaves that many channels' blocks
  // (blockChannels) and this writes lane `lane` of each position.
  // `byPhase`: each block row holds its columns by phase at stride 2
  // (phaseColumn), the only stride kByPhase splits.
  static void copyPadded(const T* plane, int64_t rows, int64_t width, int64_t top, int64_t left, T* block,
                         int64_t blockRows, int64_t pitch, int lanes = 1, int lane = 0, bool byPhase = false) {
    const int64_t from = std::max<int64_t>(left, 0), to = std::min<int64_t>(pitch, width + left);
    if (from >= to) return;
    for (int64_t r = std::max<int64_t>(top, 0); r < std::min(blockRows, rows + top); ++r) {
      const T* src = plane + (r - top) * width - left;
      if (lanes > 1) {
        for (int64_t q = from; q < to; ++q) block[(r * pitch + q) * lanes + lane] = src[q];
      } else if (!byPhase) {
        std::copy(src + from, src + to, block + r * pitch + from);
      } else {
        splitPhases<2>(src, from, to, pitch, block + r * pitch);
      }
    }
  }

  // dst's columns by phase (phaseColumn) = src[from, to), read straight
  // from the plane (through a copied row, the reads stalled on the copy's
  // stores), with the stride known, which GCC vectorises.
  template <int S>
  static void splitPhases(const T* src, int64_t from, int64_t to, int64_t pitch, T* dst) {
    for (int p = 0; p < S; ++p) {
      T* __restrict run = dst + phaseColumn(p, pitch, S);
      const T* __restrict at = src + p;
      for (int64_t i = (from - p + S - 1) / S, n = (to - p + S - 1) / S; i < n; ++i) run[i] = at[i * S];
    }
  }

  // Where column q of a `pitch`-wide block row lies when the row holds its
  // columns by phase: those of q % S == 0 first, in order, then q % S == 1,
  // and so on. A stride-S tap then reads a contiguous run of its phase.
  static int64_t phaseColumn(int64_t q, int64_t pitch, int64_t S) {
    const int64_t p = q % S;
    int64_t start = 0;
    for (int64_t i = 0; i < p; ++i) start += (pitch - i + S - 1) / S;
    return start + q / S;
  }

  // out[r, ox] = b + sum over taps of wk[ky, kx] * block[r * S + ky, ox * S + kx],
  // rows of `width` pixels; block rows `pitch` apart, their columns by
  // phase (phaseColumn), so that each tap reads a contiguous run for a
  // vector of pixels. Up to eight vectors of a row at once: a pixel's taps
  // add in one dependent chain, and one chain per vector left the adder
  // idle. The row's last vector reads up to kLanes - 1 elements past its
  // run (the block holds kBlockSlack more) and stores only the row's
  // pixels. Each pixel adds its taps in (ky, kx) order from b: the same
  // bits as one at a time. Strided reads of the block as it was (GCC's
  // gathers) ran a 5x5 stride-2 layer at 6 GFLOP/s.
  template <int K, int S>
  static void sumTaps(const T* block, int64_t pitch, const T* wk, T b, T* out, int64_t rows, int64_t width) {
    int64_t tap[K];  // where tap column kx's run starts, for pixel 0
    for (int kx = 0; kx < K; ++kx) tap[kx] = phaseColumn(kx, pitch, S);
    Lanes w[K * K];
    for (int t = 0; t < K * K; ++t) w[t] = Lanes{} + wk[t];
    static constexpr auto kVectors = []<int... V>(std::integer_sequence<int, V...>) {
      return std::array{&sumTapVectors<K, V + 1>...};
    }(std::make_integer_sequence<int, kMaxVectors>{});
    const int64_t vectors = (width + kLanes - 1) / kLanes;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t v = 0; v < vectors; v += kMaxVectors) {
        const int64_t n = std::min<int64_t>(kMaxVectors, vectors - v), ox = v * kLanes;
        kVectors[static_cast<size_t>(n - 1)](block + r * S * pitch + ox, pitch, tap, w, b, out + r * width + ox,
                                             std::min(n * kLanes, width - ox));
      }
  }

  // sumTaps over a block as the plane has it, for the filters kByPhase
  // leaves: pixel by pixel, the loop over them vectorised by GCC.
  template <int K, int S>
  static void sumTapsStrided(const T* block, int64_t pitch, const T* wk, T b, T* out, int64_t rows, int64_t width) {
    for (int64_t r = 0; r < rows; ++r) {
      const T* base = block + r * S * pitch;
      T* __restrict o = out + r * width;
      for (int64_t ox = 0; ox < width; ++ox) {
        T sum = b;
        for (int ky = 0; ky < K; ++ky)
          for (int kx = 0; kx < K; ++kx) sum += wk[ky * K + kx] * base[ky * pitch + ox * S + kx];
        o[ox] = sum;
      }
    }
  }

  // V vectors of pixels from `base`'s pixel 0 (sumTaps); stores `keep`.
  static constexpr int kMaxVectors = 8;
  template <int K, int V>
  static void sumTapVectors(const T* base, int64_t pitch, const int64_t* tap, const Lanes* w, T b, T* o, int64_t keep) {
    // The vector loops unrolled, so that the sums live in registers.
    Lanes sum[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) sum[v] = Lanes{} + b;
    for (int ky = 0; ky < K; ++ky)
      for (int kx = 0; kx < K; ++kx) {
        const T* at = base + ky * pitch + tap[kx];
        const Lanes wt = w[ky * K + kx];
#pragma GCC unroll 8
        for (int v = 0; v < V; ++v) sum[v] += wt * lanesAt<1>(at + v * kLanes);
      }
    if (keep == V * kLanes)
      std::memcpy(o, sum, sizeof sum);
    else
      for (int64_t i = 0; i < keep; ++i) o[i] = sum[i / kLanes][i % kLanes];
  }

  // dx at stride 1 (3x3, 5x5, undilated): a forward convolution of dy,
  // zero-padded by the filter's reach, with the filter turned by half a
  // turn: dx[iy, ix] = sum of w[K-1-a, K-1-b] * block[iy + a, ix + b], block
  // row r and column q holding dy[r - (K-1-padTop), q - (K-1-padLeft)].
  template <int K>
  void gradInputBlock(const T* dy, const T* w, T* dx, int64_t n) const {
    blockChannels<K, 1>(
        c.oh, c.ow, K - 1 - c.padTop, K - 1 - c.padLeft, c.h, c.wd, [&](int64_t ch) { return dy + (n * c.c + ch) * outPlane; },
        [&](int64_t ch, T* wk) {
          for (int a = 0; a < K * K; ++a) wk[a] = w[ch * taps + K * K - 1 - a];
        },
        nullptr, [&](int64_t ch) { return dx + (n * c.c + ch) * plane; });
  }

  // dx at stride S (3x3, 5x5, undilated) as S * S stride-1 correlations,
  // one per phase of the input pixel: pixel iy = qy * S + ry - padTop takes
  // the taps ky = ry + S * j, each reading dy row qy - j, and the same along
  // the row. A row's phases are summed in registers into `phases` (S rows
  // of qw pixels, vectorised along qx), then interleaved into dx's row. The
  // per-tap loops this replaces read and wrote the plane once per tap with
  // stride-S stores. Each pixel adds its taps in (ky, kx) order from +0, as
  // they did; a tap over the zero border adds w * 0, which leaves the sum's
  // bits as they were for finite weights.
  template <int K, int S>
  void gradInputPhases(const T* dy, const T* w, T* dx, int64_t n) const {
    constexpr int J = (K + S - 1) / S;  // phase 0's taps along each axis
    const int64_t qh = (c.h - 1 + c.padTop) / S + 1, qw = (c.wd - 1 + c.padLeft) / S + 1;
    const int64_t pitch = qw + J - 1, blockRows = qh + J - 1;
    thread_local std::vector<T> block, phases;
    block.assign(static_cast<size_t>(blockRows * pitch), T(0));
    phases.resize(static_cast<size_t>(S * qw));
    for (int64_t ch = 0; ch < c.c; ++ch) {
      copyPadded(dy + (n * c.c + ch) * outPlane, c.oh, c.ow, J - 1, J - 1, block.data(), blockRows, pitch);
      const T* wk = w + ch * taps;
      T* out = dx + (n * c.c + ch) * plane;
      for (int64_t iy = 0; iy < c.h; ++iy) {
        const int64_t t = iy + c.padTop;
        const T* base = block.data() + (t / S + J - 1) * pitch + J - 1;  // dy[t / S, 0]
        phaseRows<K, S>(static_cast<int>(t % S), std::make_integer_sequence<int, S>{}, base, pitch, wk, phases.data(), qw);
        interleave<S>(phases.data(), qw, out + iy * c.wd, c.wd, c.padLeft);
      }
    }
  }

  // phases[rx * qw + qx] = the sum over the taps (RY + S j, RX + S l) of
  // their weight times dy[qy - j, qx - l], `base` pointing at dy[qy, 0].
  template <int K, int S, int RY, int RX>
  static void phaseRow(const T* base, int64_t pitch, const T* wk, T* __restrict row, int64_t qw) {
    for (int64_t qx = 0; qx < qw; ++qx) {
      T sum = T(0);
      for (int j = 0; RY + S * j < K; ++j)
        for (int l = 0; RX + S * l < K; ++l) sum += wk[(RY + S * j) * K + RX + S * l] * base[qx - j * pitch - l];
      row[qx] = sum;
    }
  }
  template <int K, int S, int... RY>
  static void phaseRows(int ry, std::integer_sequence<int, RY...>, const T* base, int64_t pitch, const T* wk, T* phases,
                        int64_t qw) {
    ((ry == RY ? phaseRowsOf<K, S, RY>(std::make_integer_sequence<int, S>{}, base, pitch, wk, phases, qw) : void()), ...);
  }
  template <int K, int S, int RY, int... RX>
  static void phaseRowsOf(std::integer_sequence<int, RX...>, const T* base, int64_t pitch, const T* wk, T* phases,
                          int64_t qw) {
    (phaseRow<K, S, RY, RX>(base, pitch, wk, phases + RX * qw, qw), ...);
  }

  // out[ix] = phases[(ix + left) % S][(ix + left) / S] for ix in [0, width):
  // whole groups of S pixels in one loop, the partial groups at the ends
  // one pixel at a time.
  template <int S>
  static void interleave(const T* phases, int64_t qw, T* __restrict out, int64_t width, int64_t left) {
    auto at = [&](int64_t ix) { return phases[((ix + left) % S) * qw + (ix + left) / S]; };
    const int64_t q0 = (left + S - 1) / S, q1 = (width + left) / S;  // groups wholly inside
    int64_t ix = 0;
    for (; ix < std::min(width, q0 * S - left); ++ix) out[ix] = at(ix);
    T* o = out + q0 * S - left;
    for (int64_t q = q0; q < q1; ++q)
      for (int r = 0; r < S; ++r) o[(q - q0) * S + r] = phases[r * qw + q];
    for (ix = std::max(ix, q1 * S - left); ix < width; ++ix) out[ix] = at(ix);
  }

  // dx[n] = every tap's weight times dy, added back where the tap read.
  void gradInput(const T* dy, const T* w, T* dx, int64_t n) const {
    const bool common = commonFilter([&](auto k, auto s) {
      if constexpr (s == 1)
        gradInputBlock<k>(dy, w, dx, n);
      else
        gradInputPhases<k, s>(dy, w, dx, n);
    });
    if (common) return;
    for (int64_t ch = 0; ch < c.c; ++ch) {
      const T* g = dy + (n * c.c + ch) * outPlane;
      T* in = dx + (n * c.c + ch) * plane;
      std::fill(in, in + plane, T(0));
      for (int64_t ky = 0; ky < c.kh; ++ky)
        for (int64_t kx = 0; kx < c.kw; ++kx) {
          const T wv = w[ch * taps + ky * c.kw + kx];
          forTapRows(ky, kx, 0, c.oh, [&](int64_t oy, int64_t iy, int64_t lo, int64_t hi, int64_t ix) {
            const T* __restrict src = g + oy * c.ow;
            T* __restrict dst = in + iy * c.wd + ix - lo * c.strideW;
            if (c.strideW == 1)
              for (int64_t ox = lo; ox < hi; ++ox) dst[ox] += wv * src[ox];
            else
              for (int64_t ox = lo; ox < hi; ++ox) dst[ox * c.strideW] += wv * src[ox];
          });
        }
    }
  }

  // dw[ch] = for each tap, the sum over images and output pixels of dy
  // times the input the tap read: a partial sum per tap and output column
  // (over the images and rows, in order), then each tap's columns in order.
  // One running sum ran scalar (a float sum cannot be reordered); the
  // columns' partial sums vectorise along the row. The taps share one walk
  // over the images' rows, so a dy row and the input rows under it are read
  // from L1 by every tap: a walk per tap read the channel's planes from L2
  // once per tap. Each partial sum adds the same terms in the same order
  // either way.
  void gradWeight(const T* dy, const T* x, T* dw, int64_t ch) const {
    if (commonFilter([&](auto k, auto s) { gradWeightBlock<k, s>(dy, x, dw, ch); })) return;
    thread_local std::vector<T> partial;
    partial.assign(static_cast<size_t>(taps * c.ow), T(0));
    thread_local std::vector<std::pair<int64_t, int64_t>> columns;  // per kx: [lo, hi) of ox
    columns.resize(static_cast<size_t>(c.kw));
    for (int64_t kx = 0; kx < c.kw; ++kx) columns[static_cast<size_t>(kx)] = validOutputColumns(c, kx * c.dilW - c.padLeft);
    for (int64_t n = 0; n < c.n; ++n) {
      const T* g = dy + (n * c.c + ch) * outPlane;
      const T* in = x + (n * c.c + ch) * plane;
      for (int64_t oy = 0; oy < c.oh; ++oy) {
        const T* __restrict row = g + oy * c.ow;
        for (int64_t ky = 0; ky < c.kh; ++ky) {
          const int64_t iy = oy * c.strideH - c.padTop + ky * c.dilH;
          if (iy < 0 || iy >= c.h) continue;
          for (int64_t kx = 0; kx < c.kw; ++kx) {
            const auto [lo, hi] = columns[static_cast<size_t>(kx)];
            T* __restrict acc = partial.data() + (ky * c.kw + kx) * c.ow;
            const T* __restrict src = in + iy * c.wd + kx * c.dilW - c.padLeft;
            if (c.strideW == 1)
              for (int64_t ox = lo; ox < hi; ++ox) acc[ox] += row[ox] * src[ox];
            else
              for (int64_t ox = lo; ox < hi; ++ox) acc[ox] += row[ox] * src[ox * c.strideW];
          }
        }
      }
    }
    sumTapColumns(partial.data(), dw + ch * taps);
  }

  // The common filters (as forwardBlock): each image's plane copied into a
  // zero-padded block, then every tap's multiply-add for each pixel (the
  // taps unrolled), the partial sums of a register's width of columns kept
  // in registers down all the image's rows (accumulateLanes), the columns
  // left over one row at a time. Per tap and column the terms still come in
  // image and row order; a tap that reads padding adds dy * 0, which leaves
  // the partial sum's bits as they were wherever dy is finite (sums start
  // at +0, so never become -0; an infinite dy there makes the tap NaN,
  // where skipping it left the tap as it was). On 4x4 planes, nine loops of
  // four iterations per row ran at 0.6 GFLOP/s; loading and storing the
  // partial sums for every row took half the time of this.
  template <int K, int S>
  void gradWeightBlock(const T* dy, const T* x, T* dw, int64_t ch) const {
    const int64_t ow = c.ow, pitch = (ow - 1) * S + K, blockRows = (c.oh - 1) * S + K, whole = ow / kLanes * kLanes;
    thread_local std::vector<T> block, partial;
    block.assign(static_cast<size_t>(blockRows * pitch), T(0));
    partial.assign(static_cast<size_t>(K * K * ow), T(0));
    T* __restrict acc = partial.data();
    for (int64_t n = 0; n < c.n; ++n) {
      copyPadded(x + (n * c.c + ch) * plane, c.h, c.wd, c.padTop, c.padLeft, block.data(), blockRows, pitch);
      const T* g = dy + (n * c.c + ch) * outPlane;
      for (int64_t ox = 0; ox < whole; ox += kLanes) accumulateLanes<K, S>(g + ox, block.data() + ox * S, pitch, acc + ox);
      for (int64_t oy = 0; oy < c.oh; ++oy) {
        const T* __restrict row = g + oy * ow;
        const T* __restrict base = block.data() + oy * S * pitch;
        for (int64_t ox = whole; ox < ow; ++ox) {
          const T d = row[ox];
          for (int ky = 0; ky < K; ++ky)
            for (int kx = 0; kx < K; ++kx) acc[(ky * K + kx) * ow + ox] += d * base[ky * pitch + ox * S + kx];
        }
      }
    }
    sumTapColumns(acc, dw + ch * taps);
  }

  // acc[t * ow + i] += the sum over the image's rows oy of dy[oy, i] times
  // the block's pixel under tap t, for the kLanes columns i from `dy` on.
  template <int K, int S>
  void accumulateLanes(const T* dy, const T* block, int64_t pitch, T* acc) const {
    Lanes a[K * K];
    for (int t = 0; t < K * K; ++t) a[t] = lanesAt<1>(acc + t * c.ow);
    for (int64_t oy = 0; oy < c.oh; ++oy) {
      const Lanes d = lanesAt<1>(dy + oy * c.ow);
      const T* base = block + oy * S * pitch;
      for (int ky = 0; ky < K; ++ky)
        for (int kx = 0; kx < K; ++kx) a[ky * K + kx] += d * lanesAt<S>(base + ky * pitch + kx);
    }
    for (int t = 0; t < K * K; ++t) std::memcpy(acc + t * c.ow, &a[t], sizeof(Lanes));
  }

  // dw[t] = the sum of tap t's column partial sums (`partial`, taps x ow),
  // columns in order.
  void sumTapColumns(const T* partial, T* dw) const {
    for (int64_t t = 0; t < taps; ++t) {
      T sum = 0;
      for (int64_t ox = 0; ox < c.ow; ++ox) sum += partial[t * c.ow + ox];
      dw[t] = sum;
    }
  }

  // Units as exec/parallel.h's im2colConvWork gives them for this spec:
  // forward (image, tile of rows), backward to the input images, to the
  // weights channels.
  void run(const ConvBuffers& b, int64_t begin, int64_t end) const {
    auto p = [](std::byte* q) { return reinterpret_cast<T*>(q); };
    const Im2colSplit split = im2colSplit(c);
    for (int64_t u = begin; u < end; ++u) {
      switch (c.direction) {
        case ConvDirection::Forward: {
          const int64_t t = u % split.tiles, oy0 = t * split.tileRows;
          forward(p(b.x), p(b.w), p(b.bias), p(b.y), u / split.tiles, oy0, std::min(c.oh, oy0 + split.tileRows));
          break;
        }
        case ConvDirection::GradInput: gradInput(p(b.y), p(b.w), p(b.x), u); break;
        case ConvDirection::GradWeight: gradWeight(p(b.y), p(b.x), p(b.w), u); break;
      }
    }
  }
};

}  // namespace

bool depthwiseRuns(const ConvSpec& c) {
  return !c.channelsLast && c.groups > 1 && c.c == c.groups && c.o == c.groups;
}

void runDepthwise(const ConvSpec& c, DType dtype, const ConvBuffers& buffers, int64_t begin, int64_t end) {
  if (dtype == DType::F32)
    Depthwise<float>(c).run(buffers, begin, end);
  else
    Depthwise<double>(c).run(buffers, begin, end);
}

}  // namespace kfuse
