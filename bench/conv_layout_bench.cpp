// Measures conv2d on the CPU (runtime/cpu_conv: im2col + BLAS GEMM) in each
// activation / filter layout, and as the generated direct convolution
// (codegen/cpu/conv_emitter.h, NCHW, where passes/direct_conv.h gives one
// with the host's vectors), over the convolutions of ResNet-18 (64x64 and
// 224x224 input), the test CNN and the benchmark CNN, and fits the CPU
// layout cost model that codegen/backend.cpp gives layout selection
// (docs/layout.md).
//
//   conv_layout_bench [--reps N] [--fit] [--probes] [--cpu NAME] [--tiling LANESxVECTORSxCHANNELS]
//
// --cpu generates the direct convolutions for a named CPU (LLVM's name,
// e.g. haswell on an AVX-512 machine, to measure AVX2 code at real speed;
// set OPENBLAS_CORETYPE to the same level for the im2col side); --tiling
// overrides its register tiling (tuning); --probes adds row widths and
// channel counts of no model (tuning the rule of which rows run directly).
//
// Prints one line per shape and layout (best of N runs, milliseconds), then
// with --fit the coefficient of the cost model's form
//   seconds = macs * a        (per layout pair, and for direct convolutions)
// and a transpose's seconds per byte moved.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <cmath>
#include <vector>

#include "codegen/cpu/jit.h"
#include "exec/parallel.h"
#include "runtime/cpu_conv.h"

namespace {

using kfuse::ConvSpec;

struct Shape {
  const char* name;
  int64_t n, c, h, w, o, k, stride, pad, groups, dil;
};

// ResNet-18's convolutions at 64x64 (batch 1 and 8) and the CNN test model's.
std::vector<Shape> shapes(bool probes) {
  std::vector<Shape> s;
  for (int64_t n : {1, 8}) {
    s.push_back({"r18.conv1", n, 3, 64, 64, 64, 7, 2, 3, 1, 1});
    s.push_back({"r18.l1", n, 64, 16, 16, 64, 3, 1, 1, 1, 1});
    s.push_back({"r18.l2.down", n, 64, 16, 16, 128, 3, 2, 1, 1, 1});
    s.push_back({"r18.l2", n, 128, 8, 8, 128, 3, 1, 1, 1, 1});
    s.push_back({"r18.l2.ds", n, 64, 16, 16, 128, 1, 2, 0, 1, 1});
    s.push_back({"r18.l3", n, 256, 4, 4, 256, 3, 1, 1, 1, 1});
    s.push_back({"r18.l4", n, 512, 2, 2, 512, 3, 1, 1, 1, 1});
  }
  s.push_back({"cnn.conv1", 2, 3, 16, 16, 8, 3, 1, 1, 1, 1});
  s.push_back({"cnn.conv2", 2, 8, 8, 8, 16, 3, 2, 1, 2, 1});
  s.push_back({"cnn.conv3", 2, 16, 4, 4, 16, 3, 1, 2, 1, 2});
  // ResNet-18's stride-1 stages at 224x224 (rows of 56, 28, 14, 7 pixels) and
  // the benchmark CNN (bench/workloads.py): where direct convolutions run.
  s.push_back({"r18@224.l1", 1, 64, 56, 56, 64, 3, 1, 1, 1, 1});
  s.push_back({"r18@224.l2", 1, 128, 28, 28, 128, 3, 1, 1, 1, 1});
  s.push_back({"r18@224.l3", 1, 256, 14, 14, 256, 3, 1, 1, 1, 1});
  s.push_back({"r18@224.l4", 1, 512, 7, 7, 512, 3, 1, 1, 1, 1});
  s.push_back({"bench.conv1", 8, 3, 32, 32, 16, 3, 1, 1, 1, 1});
  s.push_back({"bench.conv2", 8, 16, 32, 32, 32, 3, 1, 1, 1, 1});
  if (!probes) return s;
  // ResNet-18's 7x7 stride-2 first layer at 224x224 (blocks: --tiling).
  s.push_back({"r18@224.conv1", 1, 3, 224, 224, 64, 7, 2, 3, 1, 1});
  // Rows of whole and partial vectors at 8 lanes, behind the AVX2 rule that
  // rows end in whole vectors (codegen/cpu/subtarget.cpp); not in the fit.
  s.push_back({"p.32x128", 1, 128, 32, 32, 128, 3, 1, 1, 1, 1});
  s.push_back({"p.24x128", 1, 128, 24, 24, 128, 3, 1, 1, 1, 1});
  s.push_back({"p.16x256", 1, 256, 16, 16, 256, 3, 1, 1, 1, 1});
  s.push_back({"p.28x64", 1, 64, 28, 28, 64, 3, 1, 1, 1, 1});
  s.push_back({"p.14x64", 1, 64, 14, 14, 64, 3, 1, 1, 1, 1});
  s.push_back({"p.56x32", 1, 32, 56, 56, 32, 3, 1, 1, 1, 1});
  s.push_back({"p.20x64", 1, 64, 20, 20, 64, 3, 1, 1, 1, 1});
  s.push_back({"p.40x128", 1, 128, 40, 40, 128, 3, 1, 1, 1, 1});
  s.push_back({"p.48x64", 1, 64, 48, 48, 64, 3, 1, 1, 1, 1});
  s.push_back({"p.44x64", 1, 64, 44, 44, 64, 3, 1, 1, 1, 1});
  s.push_back({"p.30x32", 1, 32, 30, 30, 32, 3, 1, 1, 1, 1});
  // Rows whose last vector misses one lane, or more (SqueezeNet's 55-pixel
  // fire layers and its 111-pixel stride-2 first layer).
  s.push_back({"sq.conv1", 1, 3, 224, 224, 64, 3, 2, 0, 1, 1});
  s.push_back({"sq.fire2.e3", 1, 16, 55, 55, 64, 3, 1, 1, 1, 1});
  for (int64_t w : {55, 54, 53, 51, 47, 39, 31, 23})
    s.push_back({w == 55 ? "p.55x64" : w == 54 ? "p.54x64" : w == 53 ? "p.53x64" : w == 51 ? "p.51x64" : w == 47 ? "p.47x64"
                 : w == 39 ? "p.39x64" : w == 31 ? "p.31x64" : "p.23x64",
                 1, 64, w, w, 64, 3, 1, 1, 1, 1});
  // Depthwise convolutions of MobileNetV2's training benchmark (batch 16,
  // 64x64 images) and of its inference at 224x224 (runtime/cpu_depthwise).
  s.push_back({"mb.dw32.b16", 16, 96, 32, 32, 96, 3, 1, 1, 96, 1});
  s.push_back({"mb.dw32s2.b16", 16, 144, 32, 32, 144, 3, 2, 1, 144, 1});
  s.push_back({"mb.dw14", 1, 384, 14, 14, 384, 3, 1, 1, 384, 1});
  s.push_back({"mb.dw112s2", 1, 96, 112, 112, 96, 3, 2, 1, 96, 1});
  // MobileNetV2's pointwise convolutions at batch 1 on 14x14 and 7x7, and
  // the same products as one row of 196 and 49 pixels (a 1x1 convolution
  // at stride 1 without padding does not care how its pixels are rowed).
  for (int64_t hw : {14, 7}) {
    const bool small = hw == 7;
    s.push_back({small ? "mb.pw7.exp" : "mb.pw14.exp", 1, small ? 160 : 64, hw, hw, small ? 960 : 384, 1, 1, 0, 1, 1});
    s.push_back({small ? "mb.pw7.exp.row" : "mb.pw14.exp.row", 1, small ? 160 : 64, 1, hw * hw, small ? 960 : 384, 1, 1, 0, 1, 1});
    s.push_back({small ? "mb.pw7.prj" : "mb.pw14.prj", 1, small ? 960 : 384, hw, hw, small ? 160 : 64, 1, 1, 0, 1, 1});
    s.push_back({small ? "mb.pw7.prj.row" : "mb.pw14.prj.row", 1, small ? 960 : 384, 1, hw * hw, small ? 160 : 64, 1, 1, 0, 1, 1});
  }
  return s;
}

ConvSpec spec(const Shape& s, bool last, bool filterLast) {
  ConvSpec c;
  c.n = s.n;
  c.c = s.c;
  c.h = s.h;
  c.wd = s.w;
  c.o = s.o;
  c.kh = c.kw = s.k;
  c.groups = s.groups;
  c.strideH = c.strideW = s.stride;
  c.padTop = c.padLeft = s.pad;
  c.dilH = c.dilW = s.dil;
  int64_t span = s.dil * (s.k - 1) + 1;
  c.oh = (s.h + 2 * s.pad - span) / s.stride + 1;
  c.ow = (s.w + 2 * s.pad - span) / s.stride + 1;
  c.channelsLast = last;
  c.filterLast = filterLast;
  return c;
}

template <typename T>
T orExit(kfuse::Expected<T> e) {
  if (!e) {
    std::cerr << e.error().message() << "\n";
    std::exit(1);
  }
  return std::move(*e);
}

// Best of `reps` runs of `direct` (compiled for c) or, when null, of
// runConv2d's im2col + GEMM.
double seconds(const ConvSpec& c, int reps, kfuse::cpu::KernelFn direct = nullptr) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(static_cast<size_t>(c.n * c.c * c.h * c.wd)), w(static_cast<size_t>(c.o * c.c / c.groups * c.kh * c.kw)),
      y(static_cast<size_t>(c.n * c.o * c.oh * c.ow)),
      col(static_cast<size_t>(kfuse::im2colWorkspaceRows(c, kfuse::im2colImagesPerGemm(c)) * c.oh * c.ow));
  for (float& v : x) v = u(rng);
  for (float& v : w) v = u(rng);
  auto bytes = [](auto& v) { return reinterpret_cast<std::byte*>(v.data()); };
  static const kfuse::Blas* blas = orExit(kfuse::openBlas());
  void* buffers[] = {x.data(), w.data(), nullptr, y.data()};
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    if (direct)
      direct(buffers, 0, kfuse::directConvWork(c).units);
    else
      kfuse::runConv2d(*blas, c, kfuse::DType::F32, {bytes(x), bytes(w), nullptr, bytes(y)}, bytes(col),
                       col.size() * sizeof(float), 0, kfuse::im2colConvWork(c).units);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// --tiling's override of the subtarget's tiling (lanes 0: none).
kfuse::cpu::ConvTiling gTiling{0, 0, 0};

// The direct convolution of `c` compiled for the JIT's CPU, or null where
// that CPU runs im2col instead.
kfuse::cpu::KernelFn directFor(kfuse::cpu::CpuJit& jit, const ConvSpec& c) {
  const kfuse::cpu::ConvTiling& tiling = gTiling.lanes ? gTiling : jit.subtarget().conv;
  if (!kfuse::cpu::directConvFits(c, kfuse::DType::F32, tiling)) return nullptr;
  kfuse::cpu::DirectConv conv{"conv", c, tiling};
  auto compiled = orExit(jit.compile(kfuse::cpu::CodeBatch{{}, std::span(&conv, 1)}));
  return compiled.convs[0];
}

// NCHW -> NHWC of an f32 image with the loop nest a generated transpose
// kernel has (one read, one write per element): seconds per byte moved.
double transposeSecondsPerByte(int64_t n, int64_t c, int64_t hw, int reps) {
  std::vector<float> x(static_cast<size_t>(n * c * hw)), y(x.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t b = 0; b < n; ++b)
      for (int64_t p = 0; p < hw; ++p)
        for (int64_t ch = 0; ch < c; ++ch) y[static_cast<size_t>((b * hw + p) * c + ch)] = x[static_cast<size_t>((b * c + ch) * hw + p)];
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  volatile float sink = y[y.size() / 2];
  (void)sink;
  return best / static_cast<double>(2 * x.size() * sizeof(float));
}

// The cost model's form: seconds = macs * a per layout pair, with a the
// measured total time over the total multiply-adds of the shapes (the
// weighted mean, so the large convolutions that dominate a model decide).
// A second term for the im2col traffic fitted to negative values on these
// shapes (noise dominates it), so the model leaves it out.
void fit(const char* label, const std::vector<double>& macs, const std::vector<double>& t) {
  double tm = 0, tt = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    tm += macs[i];
    tt += t[i];
  }
  double a = tt / tm;
  std::printf("fit %-10s a = %.4g s/MAC (%.2f GMAC/s)\n", label, a, 1e-9 / a);
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 20;
  bool doFit = false, probes = false;
  std::string cpu;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--fit")) doFit = true;
    else if (!std::strcmp(argv[i], "--probes")) probes = true;
    else if (!std::strcmp(argv[i], "--cpu") && i + 1 < argc) cpu = argv[++i];
    else if (!std::strcmp(argv[i], "--tiling") && i + 1 < argc)
      std::sscanf(argv[++i], "%dx%dx%d", &gTiling.lanes, &gTiling.vectors, &gTiling.channels);
  }
  const char* labels[4] = {"nchw/oihw", "nchw/ohwi", "nhwc/oihw", "nhwc/ohwi"};
  std::vector<double> macs, t[4], directMacs, directT;
  auto jit = orExit(kfuse::cpu::CpuJit::create(orExit(kfuse::cpu::cpuTargetFor(cpu))));
  std::printf("direct convolutions for %s\n", jit->subtarget().describe().c_str());
  std::printf("%-12s %2s %4s %4s %4s %2s  %9s %9s %9s %9s %9s  (ms, best of %d)\n", "conv", "n", "c", "hw", "o", "k",
              labels[0], labels[1], labels[2], labels[3], "direct", reps);
  for (const Shape& s : shapes(probes)) {
    std::printf("%-12s %2lld %4lld %4lld %4lld %2lld ", s.name, (long long)s.n, (long long)s.c, (long long)s.h,
                (long long)s.o, (long long)s.k);
    ConvSpec c0 = spec(s, false, false);
    macs.push_back(static_cast<double>(c0.n * c0.o * c0.oh * c0.ow * (c0.c / c0.groups) * c0.kh * c0.kw));
    for (int l = 0; l < 4; ++l) {
      double sec = seconds(spec(s, l >= 2, l % 2 == 1), reps);
      t[l].push_back(sec);
      std::printf(" %9.4f", sec * 1e3);
    }
    if (kfuse::cpu::KernelFn direct = directFor(*jit, c0)) {
      double sec = seconds(c0, reps, direct);
      directMacs.push_back(macs.back());
      directT.push_back(sec);
      std::printf(" %9.4f", sec * 1e3);
    } else {
      std::printf(" %9s", "-");
    }
    std::printf("\n");
  }
  double total[4] = {0, 0, 0, 0};
  for (int l = 0; l < 4; ++l)
    for (double v : t[l]) total[l] += v;
  std::printf("total ms:    %9.3f %9.3f %9.3f %9.3f\n", total[0] * 1e3, total[1] * 1e3, total[2] * 1e3, total[3] * 1e3);
  if (doFit) {
    for (int l = 0; l < 4; ++l) fit(labels[l], macs, t[l]);
    if (!directT.empty()) fit("direct", directMacs, directT);
  }
  for (auto [n, c, hw] : {std::tuple<int64_t, int64_t, int64_t>{1, 64, 32 * 32}, {8, 64, 32 * 32}, {2, 16, 8 * 8}})
    std::printf("transpose nchw->nhwc [%lld,%lld,%lld]: %.3g s/byte (%.2f GB/s)\n", (long long)n, (long long)c,
                (long long)hw, transposeSecondsPerByte(n, c, hw, reps), 1e-9 / transposeSecondsPerByte(n, c, hw, reps));
  return 0;
}
