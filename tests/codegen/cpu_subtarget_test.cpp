// What each x86-64 level's code may use (codegen/cpu/subtarget.h), decided
// from the named CPU alone, and the code generated for it: compiled to
// assembly for every level on whatever machine runs the suite, and checked
// for registers and instructions the level lacks. Nothing here runs the
// code; the suite's qemu runs do that at the levels below the host's
// (docs/testing.md).
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "codegen/cpu/compile.h"
#include "codegen/cpu/subtarget.h"
#include "ir/support/strings.h"
#include "tests/codegen/jit_harness.h"
#include "tests/codegen/kernel_builder.h"

namespace kfuse::testing {
namespace {

using cpu::IsaLevel;

struct Decided {
  const char* cpu;
  IsaLevel level;
  int vectorBits;
  bool fma, f16c;
  const char* vectorMath;  // the variants, as "b4 d8"
  cpu::ConvTiling conv;
  cpu::GemmTiling gemm;
  unsigned preferVectorWidth;
};

// The subtarget of CPU `cpu` with `features` over the name's own (as
// LLVM's feature strings override a name's).
Expected<cpu::CpuSubtarget> subtargetWith(const std::string& cpu, const std::string& features) {
  KF_ASSIGN_OR_RETURN(cpu::CpuTarget t, cpu::CpuTarget::named(cpu));
  t.features = features;
  return cpu::subtargetOf(t);
}

std::string variants(const cpu::CpuSubtarget& s) {
  std::vector<std::string> out;
  for (const cpu::VectorMathVariant& v : s.vectorMath) out.push_back(str(v.isa, v.lanes));
  return join(out, " ");
}

TEST(CpuSubtarget, DecidesFromTheNamedCpu) {
  const Decided cases[] = {
      {"x86-64", IsaLevel::Generic, 128, false, false, "b4", {4, 2, 4}, {4, 2, 6}, 0},
      {"x86-64-v2", IsaLevel::SSE42, 128, false, false, "b4", {4, 2, 4}, {4, 2, 6}, 0},
      {"nehalem", IsaLevel::SSE42, 128, false, false, "b4", {4, 2, 4}, {4, 2, 6}, 0},
      {"sandybridge", IsaLevel::AVX, 256, false, false, "b4 c8", {8, 2, 6, false}, {8, 2, 6}, 0},
      {"ivybridge", IsaLevel::AVX, 256, false, true, "b4 c8", {8, 2, 6, false}, {8, 2, 6}, 0},
      {"haswell", IsaLevel::AVX2, 256, true, true, "b4 d8", {8, 2, 6, false}, {8, 2, 6}, 0},
      {"x86-64-v3", IsaLevel::AVX2, 256, true, true, "b4 d8", {8, 2, 6, false}, {8, 2, 6}, 0},
      {"znver3", IsaLevel::AVX2, 256, true, true, "b4 d8", {8, 2, 6, false}, {8, 2, 6}, 0},
      {"skylake-avx512", IsaLevel::AVX512, 512, true, true, "b4 d8 e16", {16, 2, 8}, {16, 2, 12}, 512},
      {"x86-64-v4", IsaLevel::AVX512, 512, true, true, "b4 d8 e16", {16, 2, 8}, {16, 2, 12}, 512},
  };
  for (const Decided& c : cases) {
    const cpu::CpuSubtarget& s = subtargetNamed(c.cpu);
    EXPECT_EQ(s.level, c.level) << c.cpu << " is " << cpu::isaLevelName(s.level);
    EXPECT_EQ(s.vectorBits, c.vectorBits) << c.cpu;
    EXPECT_EQ(s.fma, c.fma) << c.cpu;
    EXPECT_EQ(s.f16c, c.f16c) << c.cpu;
    EXPECT_EQ(variants(s), c.vectorMath) << c.cpu;
    EXPECT_EQ(std::tie(s.conv.lanes, s.conv.vectors, s.conv.channels, s.conv.partialVectors),
              std::tie(c.conv.lanes, c.conv.vectors, c.conv.channels, c.conv.partialVectors))
        << c.cpu;
    EXPECT_EQ(std::tie(s.gemm.lanes, s.gemm.vectors, s.gemm.rows), std::tie(c.gemm.lanes, c.gemm.vectors, c.gemm.rows))
        << c.cpu;
    EXPECT_EQ(s.preferVectorWidth, c.preferVectorWidth) << c.cpu;
    // First layers over their input's phases except where AVX-512's direct
    // stride-2 convolution was the faster.
    EXPECT_EQ(s.firstLayerPhases, c.level != IsaLevel::AVX512) << c.cpu;
    // A block's mostly empty only vector in half the lanes: 512-bit ones only.
    EXPECT_EQ(s.conv.halveLastVector, c.level == IsaLevel::AVX512) << c.cpu;
    // Exponentials inline with 512-bit vectors, libmvec's elsewhere.
    EXPECT_EQ(s.inlineExp, c.level == IsaLevel::AVX512) << c.cpu;
    // erf inline with FMA (AVX2 and AVX-512), libmvec's elsewhere.
    EXPECT_EQ(s.inlineErf, c.level == IsaLevel::AVX2 || c.level == IsaLevel::AVX512) << c.cpu;
    // Packed-filter 1x1 blocks: 7 pixels x 3 vectors of channels with 32
    // registers (21 accumulators), 4 x 3 with 16 (12).
    EXPECT_EQ(std::make_pair(s.conv.pointwisePixels, s.conv.pointwiseVectors),
              c.level == IsaLevel::AVX512 ? std::make_pair(7, 3) : std::make_pair(4, 3))
        << c.cpu;
    // Filters with taps packed too with 32 registers only.
    EXPECT_EQ(s.conv.packedTaps, c.level == IsaLevel::AVX512) << c.cpu;
    // Ungrouped blocks of 16 channels x 1 vector with 32 registers.
    const cpu::ConvTiling dense = s.conv.forConv(1, 9, true, false), depthwise = s.conv.forConv(8, 9, true, false);
    const cpu::ConvTiling pointwisePlanes = s.conv.forConv(1, 1, true, false), phases = s.conv.forConv(1, 4, true, true);
    const std::pair<int, int> own{c.conv.vectors, c.conv.channels};
    EXPECT_EQ(std::make_pair(dense.vectors, dense.channels), c.level == IsaLevel::AVX512 ? std::make_pair(1, 16) : own)
        << c.cpu;
    EXPECT_EQ(std::make_pair(depthwise.vectors, depthwise.channels), own) << c.cpu;
    EXPECT_EQ(std::make_pair(pointwisePlanes.vectors, pointwisePlanes.channels), own) << c.cpu;
    EXPECT_EQ(std::make_pair(phases.vectors, phases.channels), own) << c.cpu;
    // 1x1 layers as rows keep vectors x channels on Intel's AVX-512 CPUs
    // too (two 512-bit units: DenseRowsWhereWideProductsSplit).
    EXPECT_EQ(s.conv.forConv(1, 1, false, false).channels, c.conv.channels) << c.cpu;
  }
}

// A Zen 4 (LLVM 14's znver3, whose features include AMD's SSE4a, with
// AVX-512) splits each 512-bit product in two: its 1x1 layers run as rows
// take the dense block of 16 channels x 1 vector, as its layers with taps
// do.
TEST(CpuSubtarget, DenseRowsWhereWideProductsSplit) {
  auto s = subtargetWith("znver3", "+avx512f,+avx512bw,+avx512cd,+avx512dq,+avx512vl");
  ASSERT_TRUE(s) << s.error().message();
  ASSERT_TRUE(s->has("sse4a"));
  ASSERT_EQ(s->level, IsaLevel::AVX512);
  const cpu::ConvTiling rows = s->conv.forConv(1, 1, false, false), taps = s->conv.forConv(1, 9, false, false);
  EXPECT_EQ(std::make_pair(rows.vectors, rows.channels), std::make_pair(1, 16));
  EXPECT_EQ(std::make_pair(taps.vectors, taps.channels), std::make_pair(1, 16));
  const cpu::ConvTiling intel = subtargetNamed("skylake-avx512").conv.forConv(1, 1, false, false);
  EXPECT_EQ(std::make_pair(intel.vectors, intel.channels), std::make_pair(2, 8));
  EXPECT_EQ(subtargetNamed("skylake-avx512").conv.forConv(1, 9, false, false).channels, 16);
}

// A feature string overrides the CPU name: without avx512f a Skylake server
// gets AVX2 code.
TEST(CpuSubtarget, FeatureStringOverridesTheName) {
  auto s = subtargetWith("skylake-avx512", "-avx512f");
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->level, IsaLevel::AVX2);
  EXPECT_EQ(s->vectorBits, 256);
  EXPECT_EQ(variants(*s), "b4 d8");
  EXPECT_EQ(s->describe(), "skylake-avx512 (avx2: 256-bit vectors, fma, f16c)");
}

TEST(CpuSubtarget, UnknownCpuIsRefused) {
  auto t = cpu::cpuTargetFor("pentium9000");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message().find("unknown CPU 'pentium9000'"), std::string::npos) << t.error().message();
  EXPECT_TRUE(cpu::cpuTargetFor(""));
  EXPECT_TRUE(cpu::cpuTargetFor("native"));
}

// Code for a CPU runs on a machine that has all its features; a machine
// that reports lacking one (as LLVM's host detection does, "-avx512f")
// refuses it by name.
TEST(CpuSubtarget, RunsOnlyWhereEveryFeatureIsPresent) {
  auto machine = cpu::CpuTarget::named("haswell");
  ASSERT_TRUE(machine);
  machine->features = "+avx2,+fma,-avx512f,-avx512bw,-avx512dq,-avx512vl,-avx512cd";
  EXPECT_TRUE(cpu::checkRunsOn(subtargetNamed("haswell"), *machine));
  EXPECT_TRUE(cpu::checkRunsOn(subtargetNamed("x86-64-v2"), *machine));
  Status s = cpu::checkRunsOn(subtargetNamed("skylake-avx512"), *machine);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message(),
            "code for CPU 'skylake-avx512' needs avx512bw, avx512cd, avx512dq, avx512f, avx512vl, which this CPU lacks "
            "(name an older CPU with --cpu, or none for this one)");
  // The JIT is for this machine, which runs its own code.
  EXPECT_TRUE(cpu::checkRunsHere(sharedJit().subtarget()));
}

// What the code of one level must not contain: registers, instructions and
// libmvec variants of the levels above it.
struct Forbidden {
  const char* cpu;
  std::vector<std::string> patterns;  // regular expressions over the assembly
};

std::vector<Forbidden> forbidden() {
  const std::string evex = R"(%zmm|%k[0-7]\b|\{%k|%[xy]mm(1[6-9]|2[0-9]|3[01])\b|_ZGVeN)";
  const std::string avx2 = R"(\tv(fn?m(add|sub)|pbroadcast|broadcasti128|perm(d|q|ps)|gather|pmaskmov|inserti128|extracti128|ps[lr]lv|psrav)|_ZGVdN)";
  const std::string f16c = R"(\tvcvtp[hs]2p[sh])";
  return {
      {"x86-64-v2", {R"(\tv[a-z])", R"(%ymm|%zmm)", R"(_ZGV[cde]N)"}},
      {"sandybridge", {evex, avx2, f16c}},
      {"haswell", {evex}},
  };
}

// Kernels that exercise every choice the subtarget makes: vector math of
// every function, f16 and bf16 storage, a softmax row, a direct
// convolution, a packed GEMM with remainders.
struct Batch {
  std::vector<kernel::Kernel> kernels;
  std::vector<cpu::DirectConv> convs;
  std::vector<cpu::PackedGemm> gemms;
};

Batch everyChoice(const cpu::CpuSubtarget& s) {
  Batch b;
  for (ScalarOp op : {ScalarOp::Exp, ScalarOp::Log, ScalarOp::Sin, ScalarOp::Cos, ScalarOp::Tanh, ScalarOp::Erf,
                      ScalarOp::Expm1, ScalarOp::Log1p})
    b.kernels.push_back(elementwiseKernel(str("math_", scalarOpName(op)), {1024}, {DType::F32}, DType::F32,
                                          [&](const std::vector<Scalar>& x) { return unary(op, x[0]); }));
  for (DType t : {DType::F16, DType::BF16})
    b.kernels.push_back(elementwiseKernel(str("half_gelu_", dtypeName(t)), {1000}, {t, t}, t,
                                          [](const std::vector<Scalar>& x) {
                                            Scalar y = x[0] * x[1];
                                            return 0.5 * y * (1.0 + erf(y * 0.7071067811865476));
                                          }));
  b.kernels.push_back(softmaxKernel(32, 256, DType::F32));
  ConvSpec c;
  c.n = 1, c.c = 4, c.h = 8, c.wd = 4 * s.conv.lanes, c.o = 8, c.kh = 3, c.kw = 3, c.oh = 8, c.ow = 4 * s.conv.lanes;
  c.padTop = c.padLeft = 1;
  b.convs.push_back({"conv", c, s.conv});
  GemmSpec g;
  g.m = 25, g.k = 17, g.n = 100;
  b.gemms.push_back({"gemm", g, s.gemm});
  return b;
}

std::string assemblyFor(const cpu::CpuSubtarget& s) {
  Batch b = everyChoice(s);
  cpu::CompileOptions options;
  options.assembly = true;
  auto out = cpu::emitObject(cpu::CodeBatch{b.kernels, b.convs, b.gemms}, s, options);
  EXPECT_TRUE(out) << s.target.cpu << ": " << (out ? "" : out.error().message());
  return out ? out->bytes : "";
}

// The first line of `text` matching `re`, or "".
std::string firstMatch(const std::string& text, const std::regex& re) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (std::regex_search(line, re)) return line;
  return "";
}

TEST(CpuSubtarget, CodeUsesOnlyWhatItsLevelHas) {
  for (const Forbidden& f : forbidden()) {
    std::string text = assemblyFor(subtargetNamed(f.cpu));
    ASSERT_FALSE(text.empty()) << f.cpu;
    for (const std::string& p : f.patterns)
      EXPECT_EQ(firstMatch(text, std::regex(p)), "") << f.cpu << ": code matches " << p;
  }
}

// And each level's code uses its own vectors and vector math, so the
// checks above cannot pass by generating scalar code.
TEST(CpuSubtarget, CodeUsesItsLevelsVectors) {
  struct Wanted {
    const char* cpu;
    std::vector<std::string> patterns;
  };
  const Wanted wanted[] = {
      {"x86-64-v2", {R"(_ZGVbN4v_logf)", R"(\tmulps)"}},
      {"sandybridge", {R"(_ZGVcN8v_logf)", R"(%ymm)"}},
      {"haswell", {R"(_ZGVdN8v_logf)", R"(\tvfmadd)", R"(%ymm)"}},
      {"skylake-avx512", {R"(_ZGVeN16v_logf)", R"(%zmm)", R"(\tvfmadd)"}},
  };
  for (const Wanted& w : wanted) {
    std::string text = assemblyFor(subtargetNamed(w.cpu));
    for (const std::string& p : w.patterns)
      EXPECT_NE(firstMatch(text, std::regex(p)), "") << w.cpu << ": no " << p;
  }
}

}  // namespace
}  // namespace kfuse::testing
