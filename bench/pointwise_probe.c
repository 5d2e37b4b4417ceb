// A probe of loop structures for a 1x1 NCHW convolution on one AVX-512
// core: Y[O][P] = W[O][C] X[C][P] + bias, P the plane's pixels, in
// register blocks of 8 output channels x 32 pixels (2 vectors), the block
// kfuse's direct convolution uses on Intel (codegen/cpu/subtarget.cpp).
// It measures how close each structure comes to the core's FMA peak, to
// tell which one a code generator should emit; it is not part of the build
// or the tests (AVX-512 only).
//
//   rows     kfuse's structure (codegen/cpu/conv_emitter.cpp's rows): per
//            row of ROW pixels, each block of 8 output channels walks the
//            row's column blocks, each folding every input channel read
//            where it lies (planes P floats apart)
//   panels   per block of 32 columns of the whole plane: a chunk of KC
//            input channels' columns copied into a contiguous panel, then
//            every block of output channels folds it from there, the filter
//            packed as [O/8][C][8]; sums kept in Y between chunks
//   rowpan   panels per column block of each row, the filter as it is
//            (OIHW): what the wip/pointwise-panels branch generates
//
// Build and run (pinned; best of 15 x 5 runs, no epilogue):
//   gcc -O3 -march=native bench/pointwise_probe.c -o /tmp/pointwise_probe
//   taskset -c 1 /tmp/pointwise_probe C O P ROW [KC]
// e.g. ResNet-50's 256 -> 64 over 56x56 as kfuse joins its rows:
//   taskset -c 1 /tmp/pointwise_probe 256 64 3136 112
// Results on a Xeon (Emerald Rapids): bench/README.md, stop 54.
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int C, O, P, ROW, KC = 256;
static float *X, *W, *Wp, *Y, *B, *Xp;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

// The block's 8 x 2 sums: from the bias (first chunk) or from Y.
static void start(__m512 a[8][2], int o0, int p0, int fromY) {
  for (int i = 0; i < 8; i++) {
    if (fromY) {
      a[i][0] = _mm512_loadu_ps(Y + (size_t)(o0 + i) * P + p0);
      a[i][1] = _mm512_loadu_ps(Y + (size_t)(o0 + i) * P + p0 + 16);
    } else {
      a[i][0] = a[i][1] = _mm512_set1_ps(B[o0 + i]);
    }
  }
}

static void finish(__m512 a[8][2], int o0, int p0, int two) {
  for (int i = 0; i < 8; i++) {
    _mm512_storeu_ps(Y + (size_t)(o0 + i) * P + p0, a[i][0]);
    if (two) _mm512_storeu_ps(Y + (size_t)(o0 + i) * P + p0 + 16, a[i][1]);
  }
}

static void rows(void) {
  for (int r = 0; r < P; r += ROW)
    for (int o0 = 0; o0 < O; o0 += 8)
      for (int p0 = r; p0 < r + ROW; p0 += 32) {
        int two = p0 + 32 <= r + ROW;
        __m512 a[8][2];
        start(a, o0, p0, 0);
        for (int c = 0; c < C; c++) {
          __m512 x0 = _mm512_loadu_ps(X + (size_t)c * P + p0);
          __m512 x1 = two ? _mm512_loadu_ps(X + (size_t)c * P + p0 + 16) : x0;
          for (int i = 0; i < 8; i++) {
            __m512 w = _mm512_set1_ps(W[(o0 + i) * C + c]);
            a[i][0] = _mm512_fmadd_ps(w, x0, a[i][0]);
            a[i][1] = _mm512_fmadd_ps(w, x1, a[i][1]);
          }
        }
        finish(a, o0, p0, two);
      }
}

// Copies channels [k0, k0 + kc) of columns [p0, p0 + 32) into the panel.
static void pack(int k0, int kc, int p0, int two) {
  for (int c = 0; c < kc; c++) {
    _mm512_storeu_ps(Xp + c * 32, _mm512_loadu_ps(X + (size_t)(k0 + c) * P + p0));
    if (two) _mm512_storeu_ps(Xp + c * 32 + 16, _mm512_loadu_ps(X + (size_t)(k0 + c) * P + p0 + 16));
  }
}

// Columns [p0, p0 + 32) over the plane or a row ending at `end`.
static void panelBlock(int p0, int end, int packedFilter) {
  int two = end - p0 > 16;
  for (int k0 = 0; k0 < C; k0 += KC) {
    int kc = C - k0 < KC ? C - k0 : KC;
    pack(k0, kc, p0, two);
    for (int o0 = 0; o0 < O; o0 += 8) {
      __m512 a[8][2];
      start(a, o0, p0, k0 > 0);
      for (int c = 0; c < kc; c++) {
        __m512 x0 = _mm512_loadu_ps(Xp + c * 32), x1 = _mm512_loadu_ps(Xp + c * 32 + 16);
        for (int i = 0; i < 8; i++) {
          float wv = packedFilter ? Wp[(size_t)o0 * C + (size_t)(k0 + c) * 8 + i] : W[(o0 + i) * C + k0 + c];
          __m512 w = _mm512_set1_ps(wv);
          a[i][0] = _mm512_fmadd_ps(w, x0, a[i][0]);
          a[i][1] = _mm512_fmadd_ps(w, x1, a[i][1]);
        }
      }
      finish(a, o0, p0, two);
    }
  }
}

static void panels(void) {
  for (int p0 = 0; p0 < P; p0 += 32) panelBlock(p0, P, 1);
}

static void rowpan(void) {
  for (int r = 0; r < P; r += ROW)
    for (int p0 = r; p0 < r + ROW; p0 += 32) panelBlock(p0, r + ROW, 0);
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s C O P ROW [KC]  (O a multiple of 8, P of ROW)\n", argv[0]);
    return 1;
  }
  C = atoi(argv[1]), O = atoi(argv[2]), P = atoi(argv[3]), ROW = atoi(argv[4]);
  if (argc > 5) KC = atoi(argv[5]);
  if (C < 1 || O < 8 || O % 8 || ROW < 1 || P % ROW || KC < 1) {
    fprintf(stderr, "bad shape\n");
    return 1;
  }
  // Reads may run one vector past a plane's last row: pad every buffer.
  X = aligned_alloc(64, ((size_t)C * P + 64) * 4), W = aligned_alloc(64, (size_t)O * C * 4);
  Wp = aligned_alloc(64, (size_t)O * C * 4), Y = aligned_alloc(64, ((size_t)O * P + 64) * 4);
  B = aligned_alloc(64, (size_t)O * 4), Xp = aligned_alloc(64, (size_t)KC * 32 * 4);
  for (size_t i = 0; i < (size_t)C * P + 64; i++) X[i] = (float)(i % 7) * 0.1f;
  for (int i = 0; i < O * C; i++) W[i] = (float)(i % 5) * 0.1f;
  for (int i = 0; i < O; i++) B[i] = (float)i;
  for (int o = 0; o < O; o++)
    for (int c = 0; c < C; c++) Wp[(o / 8) * C * 8 + c * 8 + o % 8] = W[o * C + c];
  void (*fn[])(void) = {rows, panels, rowpan};
  const char* names[] = {"rows", "panels", "rowpan"};
  double best[3] = {1e9, 1e9, 1e9}, flop = 2.0 * C * O * P;
  for (int rep = 0; rep < 15; rep++)
    for (int v = 0; v < 3; v++) {
      double t = now();
      for (int k = 0; k < 5; k++) fn[v]();
      t = (now() - t) / 5;
      if (t < best[v]) best[v] = t;
    }
  for (int v = 0; v < 3; v++) printf("%-8s %8.1f us %6.1f GFLOP/s\n", names[v], best[v] * 1e6, flop / best[v] / 1e9);
  return 0;
}
