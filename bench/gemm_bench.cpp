// Measures the cpu target's packed GEMM (codegen/cpu/gemm_emitter.h: B
// packed once, blocks of C in registers) against the BLAS path it replaces
// (OpenBLAS sgemm, which packs B on every call), one thread, over the GEMMs
// of the benchmark's workloads and of small real models, for one CPU.
//
//   gemm_bench [--reps N] [--cpu NAME] [--tiling LANESxVECTORSxROWS]
//
// --cpu generates the packed GEMMs for a named CPU (LLVM's name: haswell on
// an AVX-512 machine measures AVX2 code at real speed); set
// OPENBLAS_CORETYPE to the same level (Haswell) so that the BLAS side runs
// that level's kernels too. --tiling overrides the subtarget's register
// tiling (tuning). Prints one line per shape: best of N runs of each, in
// microseconds, and BLAS / packed (above 1: packed is faster).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "codegen/cpu/jit.h"
#include "runtime/blas.h"
#include "exec/packed_gemm.h"
#include "exec/parallel.h"

namespace {

template <typename T>
T orExit(kfuse::Expected<T> e) {
  if (!e) {
    std::cerr << "gemm_bench: " << e.error().message() << "\n";
    std::exit(1);
  }
  return std::move(*e);
}

struct Shape {
  const char* name;
  int64_t m, k, n;
};

// The workloads' GEMMs (bench/workloads.py) and those of small real models
// at batch 1 / one sequence.
const Shape kShapes[] = {
    {"spiral fc2", 256, 64, 64},         {"mlp fc1", 128, 784, 512},      {"mlp fc2", 128, 512, 512},
    {"enc qkv", 256, 128, 384},          {"enc out", 256, 128, 128},      {"enc ffn1", 256, 128, 512},
    {"enc ffn2", 256, 512, 128},         {"vit-tiny qkv", 197, 192, 576}, {"vit-tiny fc1", 197, 192, 768},
    {"vit-tiny fc2", 197, 768, 192},     {"bert-mini ffn", 128, 256, 1024}, {"resnet fc", 1, 512, 1000},
    {"mobilenet pw", 196, 96, 576},
    // The zoo's BERT (2 x 128 tokens, hidden 256): k of 256 against 1024.
    {"zoo-bert qkv", 256, 256, 256},     {"zoo-bert ffn1", 256, 256, 1024}, {"zoo-bert ffn2", 256, 1024, 256},
    // k past kPackedMaxK: columns outer, packed where A is small (exec/packed_gemm.h).
    {"effnet fc", 1, 1280, 1000},        {"resnet50 fc", 1, 2048, 1000},  {"k2048 m8", 8, 2048, 1000},
    {"k2048 m32", 32, 2048, 1024},       {"k2048 m64", 64, 2048, 1024},   {"k2048 m128", 128, 2048, 512},
    {"k2048 m256", 256, 2048, 512},      {"k4096 m128", 128, 4096, 512},
    // ConvNeXt-tiny's second MLP GEMMs, stages 3 and 4 (A 1.2 MB and 602 KB).
    {"convnext s3 fc2", 196, 1536, 384}, {"convnext s4 fc2", 49, 3072, 768},
    // B past 2 MB: columns outer (exec/packed_gemm.h's packedColumnsOuter).
    {"vit-s fc1", 197, 384, 1536},       {"bert-base ffn1", 128, 768, 3072}, {"gpt2 lm head", 128, 256, 50257},
};

using Clock = std::chrono::steady_clock;

template <typename F>
double bestSeconds(int reps, F&& f) {
  f();  // warm
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 50;
  std::string cpu;
  kfuse::cpu::GemmTiling tiling{0, 0, 0};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--cpu") && i + 1 < argc) cpu = argv[++i];
    else if (!std::strcmp(argv[i], "--tiling") && i + 1 < argc)
      std::sscanf(argv[++i], "%dx%dx%d", &tiling.lanes, &tiling.vectors, &tiling.rows);
    else {
      std::cerr << "usage: gemm_bench [--reps N] [--cpu NAME] [--tiling LANESxVECTORSxROWS]\n";
      return 1;
    }
  }
  auto jit = orExit(kfuse::cpu::CpuJit::create(orExit(kfuse::cpu::cpuTargetFor(cpu))));
  if (tiling.lanes == 0) tiling = jit->subtarget().gemm;
  const kfuse::Blas* blas = orExit(kfuse::openBlas());
  std::printf("packed GEMMs for %s, tiling %d rows x %dx%d; OpenBLAS core %s; best of %d\n",
              jit->subtarget().describe().c_str(), tiling.rows, tiling.vectors, tiling.lanes, blas->core.c_str(), reps);
  std::printf("%-14s %5s %5s %5s  %10s %10s %8s\n", "gemm", "m", "k", "n", "BLAS us", "packed us", "ratio");
  double logSum = 0;
  int count = 0;
  for (const Shape& s : kShapes) {
    kfuse::GemmSpec g;
    g.m = s.m, g.k = s.k, g.n = s.n, g.transB = true;  // a Linear layer's weight, out x in
    std::vector<float> a(static_cast<size_t>(s.m * s.k)), b(static_cast<size_t>(s.k * s.n)),
        c(static_cast<size_t>(s.m * s.n));
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 7919 % 1000) / 1000.0 - 0.5);
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 104729 % 1000) / 1000.0 - 0.5);
    std::vector<float> packed(static_cast<size_t>(kfuse::packedBElements(g)));
    kfuse::packB(g, b.data(), packed.data());
    kfuse::cpu::PackedGemm gemm{"gemm", g, tiling};
    auto compiled = orExit(jit->compile(kfuse::cpu::CodeBatch{{}, {}, std::span(&gemm, 1)}));
    void* buffers[] = {a.data(), packed.data(), c.data()};
    double tPacked = bestSeconds(reps, [&] { compiled.gemms[0](buffers, 0, kfuse::packedGemmWork(g).units); });
    double tBlas = bestSeconds(reps, [&] {
      blas->sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(s.m), static_cast<int>(s.n),
                  static_cast<int>(s.k), 1.0f, a.data(), static_cast<int>(s.k), b.data(), static_cast<int>(s.k), 0.0f,
                  c.data(), static_cast<int>(s.n));
    });
    std::printf("%-14s %5lld %5lld %5lld  %10.1f %10.1f %7.2fx%s\n", s.name, (long long)s.m, (long long)s.k,
                (long long)s.n, tBlas * 1e6, tPacked * 1e6, tBlas / tPacked,
                kfuse::packedColumnsOuter(g) ? "  (columns outer)" : "");
    logSum += std::log(tBlas / tPacked);
    ++count;
  }
  std::printf("geometric mean BLAS / packed: %.2fx\n", std::exp(logSum / count));
  return 0;
}
