#include "codegen/cpu/subtarget.h"

#include <algorithm>
#include <set>

#include <llvm/MC/SubtargetFeature.h>

#include "ir/support/strings.h"

namespace kfuse::cpu {
namespace {

IsaLevel levelOf(const CpuSubtarget& s) {
  if (!llvm::Triple(s.target.triple).isX86()) return IsaLevel::Generic;
  if (s.has("avx512f")) return IsaLevel::AVX512;
  if (s.has("avx2") && s.has("fma")) return IsaLevel::AVX2;
  if (s.has("avx")) return IsaLevel::AVX;
  if (s.has("sse4.2")) return IsaLevel::SSE42;
  return IsaLevel::Generic;
}

// glibc's vector math for the target's vectors: the SSE forms everywhere on
// x86-64 Linux (glibc picks SSE4.1 or SSE2 code inside), then the widest
// form per lane count the CPU executes. libmvec's AVX2 and AVX-512 forms
// take their arguments in ymm and zmm registers, so a call to one is an
// illegal instruction on a CPU without them.
std::vector<VectorMathVariant> vectorMathOf(const llvm::Triple& triple, IsaLevel level) {
  if (!usesVectorMath(triple)) return {};
  std::vector<VectorMathVariant> out{{'b', 4}};
  if (level == IsaLevel::AVX) out.push_back({'c', 8});
  if (level >= IsaLevel::AVX2) out.push_back({'d', 8});
  if (level >= IsaLevel::AVX512) out.push_back({'e', 16});
  return out;
}

// Whether the CPU executes a 512-bit vector operation as two 256-bit
// halves: an AMD CPU with AVX-512 (SSE4a is AMD's alone), which was a Zen 4
// wherever kfuse measured (LLVM 14 names it znver3, its family's name).
bool splits512Bit(const CpuSubtarget& s) { return s.level == IsaLevel::AVX512 && s.has("sse4a"); }

}  // namespace

bool usesVectorMath(const llvm::Triple& triple) {
  return triple.getArch() == llvm::Triple::x86_64 && triple.isOSLinux() && triple.isGNUEnvironment();
}

std::string_view isaLevelName(IsaLevel level) {
  switch (level) {
    case IsaLevel::Generic: return "generic";
    case IsaLevel::SSE42: return "x86-64-v2";
    case IsaLevel::AVX: return "avx";
    case IsaLevel::AVX2: return "avx2";
    case IsaLevel::AVX512: return "avx512";
  }
  return "?";
}

bool CpuSubtarget::has(std::string_view feature) const {
  return std::binary_search(features.begin(), features.end(), feature);
}

std::string CpuSubtarget::describe() const {
  std::string extras;
  if (fma) extras += ", fma";
  if (f16c) extras += ", f16c";
  return str(target.cpu, " (", isaLevelName(level), ": ", vectorBits, "-bit vectors", extras, ")");
}

Expected<CpuSubtarget> subtargetOf(const CpuTarget& target) {
  CpuSubtarget s;
  s.target = target;
  KF_ASSIGN_OR_RETURN(s.features, enabledFeatures(target));
  std::sort(s.features.begin(), s.features.end());
  s.level = levelOf(s);
  s.fma = s.has("fma");
  s.f16c = s.has("f16c");
  s.vectorBits = s.level >= IsaLevel::AVX512 ? 512 : s.level >= IsaLevel::AVX ? 256 : 128;
  s.vectorRegisters = s.level >= IsaLevel::AVX512 ? 32 : 16;
  s.preferVectorWidth = s.level >= IsaLevel::AVX512 ? 512 : 0;
  s.vectorMath = vectorMathOf(llvm::Triple(target.triple), s.level);
  // The accumulators (channels or rows x vectors), a vector of inputs per
  // block vector and one broadcast value stay within the registers. With 32
  // (AVX-512): 8 channels and 12 rows of 2 vectors. With 16: 6 rows of 2
  // vectors for GEMMs (the classic 6x16 AVX2 block, within 1.02-1.15x of
  // OpenBLAS's Haswell kernels' speed or better over the benchmark's GEMMs,
  // bench/gemm_bench --cpu=haswell), 6 channels for AVX and AVX2 direct
  // convolutions (ResNet-18's 56-pixel rows 1.20x im2col + GEMM against
  // 0.95x with 4; bench/conv_layout_bench --cpu=haswell --tiling) and 4 for
  // SSE (6 was no faster). AVX and AVX2 mask with vmaskmovps, whose loads
  // made rows ending in a partial vector slower directly than as im2col +
  // GEMM; AVX-512's mask registers and SSE's scalar lanes did not.
  const int lanes = s.floatLanes();
  if (s.vectorRegisters >= 32) {
    s.conv = ConvTiling{lanes, 2, 8, true};
    // Ungrouped: 16 channels x 1 vector where ConvTiling::forConv says
    // (bench/conv_layout_bench --probes --tiling, Zen 4, ResNet-18's layers at
    // 224x224: the 7x7 first layer 2.56 -> 2.32 ms, the 3x3 ones
    // 2.07/2.02/2.18/2.45 -> 2.00/1.99/2.05/2.28); depthwise blocks keep 2
    // vectors (MobileNetV2's 14x14 0.026 ms against 0.034 with one).
    s.conv.denseVectors = 1;
    s.conv.denseChannels = 16;
    // 1x1 layers run as rows load one vector of inputs and broadcast a
    // weight per channel: 17 loads for 16 products with the dense block,
    // 10 with 8 channels x 2 vectors. Where each 512-bit product takes
    // both of the core's 256-bit units (Zen 4), the products bound the
    // block and the dense one was the faster (ResNet-50's 1x1 layers as
    // rows 2820 -> 2611 us); with two 512-bit units (Intel's), the loads
    // do, and 8 x 2 was (a Xeon, Emerald Rapids, one thread, 4 alternated
    // runs: ResNet-50's 256 -> 64 channels over 56x56 839 -> 630 us, 256
    // -> 128 1439 -> 1175, 64 -> 256 827 -> 677; MobileNetV2's 16 -> 96
    // over 112x112 474 -> 337), while its 3x3 and 7x7 layers kept the
    // dense block (8 x 2: 2-8% slower).
    s.conv.denseRows = splits512Bit(s);
    // Zen 4 splits each 512-bit operation in two 256-bit ones, so the last
    // vector of a 7x7 plane (one pixel live of 16) costs half as much in 8
    // lanes; Intel's 512-bit units take either width at the same rate.
    s.conv.halveLastVector = true;
    s.inlineExp = true;
    s.inlineErf = true;
    // 7 pixels x 3 vectors: 21 accumulators (a 7x7 plane in 7 blocks); 8 x
    // 3, 6 x 4 and 5 x 4 ran 1-10% slower in a hand-written kernel of the
    // same loops (Zen 4, ResNet-50's 2048 -> 512 channels over 7x7).
    s.conv.pointwisePixels = 7;
    s.conv.pointwiseVectors = 3;
    // 3x3 layers over 7x7 and 14x14 (49 pixels in 64 lanes, 196 in 208)
    // ran faster packed: ResNet-50's 2.25 -> 2.03 ms and 2.06 -> 1.95,
    // SqueezeNet's over 13x13 447 -> 421 us (Zen 4, one thread). With 16
    // registers they ran slower, ResNet-18's 2.49 -> 3.43 and 2.18 ->
    // 3.98 ms in AVX2 code (4 pixels x 3 vectors, the taps' loads
    // interleaved and the sums spilled), where pixels across 8 lanes fill
    // 49 of 56 and 196 of 200.
    s.conv.packedTaps = true;
    s.gemm = GemmTiling{lanes, 2, 12, int64_t{2} << 20};
    s.firstLayerPhases = false;
  } else if (s.level == IsaLevel::AVX || s.level == IsaLevel::AVX2) {
    s.conv = ConvTiling{lanes, 2, 6, false};
    s.gemm = GemmTiling{lanes, 2, 6};
    s.inlineErf = s.level == IsaLevel::AVX2;
  } else {
    s.conv = ConvTiling{lanes, 2, 4, true};
    s.gemm = GemmTiling{lanes, 2, 6};
  }
  return s;
}

Status checkRunsOn(const CpuSubtarget& code, const CpuTarget& machine) {
  llvm::SubtargetFeatures listed(machine.features);
  std::set<std::string> lacking;
  for (const std::string& f : listed.getFeatures())
    if (f.size() > 1 && f[0] == '-') lacking.insert(f.substr(1));
  std::vector<std::string> missing;
  for (const std::string& f : code.features)
    if (lacking.count(f)) missing.push_back(f);
  if (missing.empty()) return Status::ok();
  return Error(str("code for CPU '", code.target.cpu, "' needs ", join(missing),
                   ", which this CPU lacks (name an older CPU with --cpu, or none for this one)"));
}

Status checkRunsHere(const CpuSubtarget& code) { return checkRunsOn(code, CpuTarget::host()); }

}  // namespace kfuse::cpu
