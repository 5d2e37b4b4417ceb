// What code generated for one CPU may use, decided once from its features,
// the way LLVM's X86Subtarget is: the ISA level, the widest float vector,
// FMA and F16C, which of glibc's vector math variants kernels may call, the
// register tilings of packed GEMMs and direct convolutions, and the vector
// width the optimiser is asked to prefer. Every emitter, the optimiser and
// the plan's choices (which convolutions run directly) read a CpuSubtarget;
// nothing else looks at a CPU's features, and nothing reads the host's CPU
// but cpuTargetFor("") (target.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <llvm/ADT/Triple.h>

#include "codegen/cpu/target.h"
#include "ir/support/expected.h"

namespace kfuse::cpu {

// The x86-64 levels kfuse generates for, from the psABI's (x86-64-v2 is
// SSE4.2, v3 AVX2 + FMA + F16C, v4 AVX-512) with AVX between v2 and v3.
// `Generic` is an x86-64 CPU below v2, or any other architecture: scalar
// code and whatever LLVM's baseline for the triple vectorizes.
enum class IsaLevel : uint8_t { Generic, SSE42, AVX, AVX2, AVX512 };
std::string_view isaLevelName(IsaLevel level);  // "x86-64-v2", "avx", "avx2", "avx512", "generic"

// How a direct convolution blocks its output for one machine: each block is
// `channels` output channels times `vectors` vectors of `lanes` f32 pixels
// of one output row, accumulated in registers; and whether rows may end in
// a partial vector, read and written through masks (false where masked
// loads are slow: passes/direct_conv.h).
// `chunkBytes`: how much of its input a whole-plane convolution folds
// into all its output channels before the rest (conv_emitter.cpp's
// planeChunkChannels), a part of the smallest L2 of the x86-64 CPUs
// named here (256 KB).
// `denseVectors` x `denseChannels` (0: vectors x channels): the block of an
// ungrouped convolution, whose channels all read the same input vectors
// (forConv says which take it). Measured on a Zen 4 (AVX-512; kfuse profile,
// 5 alternated runs), 16 channels x 1 vector against 8 x 2: ResNet-18's
// 7x7 first layer 2784 -> 2524 us, its 3x3 layers 2.07-2.54 -> 2.00-2.37
// ms, ResNet-50's 1x1 layers run as rows 2820 -> 2611 us; but 1x1 layers
// over whole planes (ResNet-50's over 14x14: 1005 -> 2121 us) and layers
// over their input's phases (ResNet-18's: 1062 -> 2123 us) took twice as
// long, and depthwise ones (a depthwise block's channels share no input)
// lost a quarter (bench/conv_layout_bench --probes --tiling): those keep
// vectors x channels. `denseRows`: whether 1x1 layers run as rows take the
// dense block too (the CPU's choice, codegen/cpu/subtarget.cpp).
struct ConvTiling {
  int lanes = 8;
  int vectors = 2;
  int channels = 4;
  bool partialVectors = true;
  int64_t chunkBytes = 128 * 1024;
  int denseVectors = 0;
  int denseChannels = 0;
  bool denseRows = true;
  // A block of one vector with at most half its lanes live (a 7x7 plane's
  // last pixel, a 14-pixel row's last 4...) computes with vectors of half
  // the lanes, which cost half as much where the wide ones are split in two
  // (codegen/cpu/subtarget.cpp says where).
  bool halveLastVector = false;
  // A convolution with a packed filter (exec/packed_filter.h), output
  // channels across the lanes: blocks of pointwisePixels pixels (of the
  // flattened plane for a 1x1 filter, of a row with taps) x
  // pointwiseVectors vectors of channels.
  int pointwisePixels = 4;
  int pointwiseVectors = 3;
  // Whether convolutions with taps pack their filter too, not only 1x1
  // ones (packedFilterPolicy).
  bool packedTaps = false;
  // The block for a convolution of `groups` groups and `taps` taps, over
  // whole planes or rows, over its input's phases (live taps) or not.
  ConvTiling forConv(int64_t groups, int64_t taps, bool wholePlanes, bool phases) const {
    ConvTiling t = *this;
    const bool dense = groups == 1 && !phases && (taps > 1 || (!wholePlanes && denseRows));
    if (dense && denseVectors > 0 && denseChannels > 0) t.vectors = denseVectors, t.channels = denseChannels;
    return t;
  }
};

// How a packed GEMM blocks C for one machine: `rows` x `vectors` vectors of
// `lanes` floats, vectors * lanes dividing exec/packed_gemm.h's panel.
// `columnsOuterMaxA`: the largest A (bytes) of a GEMM that runs columns
// outer (exec/packed_gemm.h's packedColumnsOuter) packed rather than on
// BLAS (packedGemmPolicy). A streams once per block of a panel's columns,
// and each element of it feeds vectors x lanes products: 32 with
// AVX-512's blocks, one pass per 32-column panel; 16 with AVX2's, two
// passes. gemm_bench, one thread, against OpenBLAS: AVX2 code on a Zen 3
// (512 KB L2) 64x2048x1024 (A 512 KiB) 1.01x, 128x2048x512 (A 1 MiB)
// 0.90-0.92x, and on a Zen 4 (1 MB L2, --cpu haswell, OpenBLAS's Haswell
// kernels) 49x3072x768 (A 588 KiB) 1.09x, 128x2048x512 0.93x; AVX-512 code
// on the Zen 4 49x3072x768 1.61x, 196x1536x384 (A 1.15 MiB) 1.14x,
// 256x2048x512 and 128x4096x512 (A 2 MiB) 1.11x and 1.24x.
struct GemmTiling {
  int lanes = 8;
  int vectors = 2;
  int rows = 6;
  int64_t columnsOuterMaxA = int64_t{512} << 10;
};

// One of glibc's vector math (libmvec) variants: its ISA letter in the
// vector function ABI's mangling (_ZGV<isa>N<lanes>v_expf) and its lanes.
struct VectorMathVariant {
  char isa;  // 'b' SSE, 'c' AVX, 'd' AVX2, 'e' AVX-512
  int lanes;
};

struct CpuSubtarget {
  CpuTarget target;
  std::vector<std::string> features;  // every enabled feature, sorted (enabledFeatures)
  IsaLevel level = IsaLevel::Generic;
  int vectorBits = 128;  // the widest float vector registers: 128, 256 or 512
  int vectorRegisters = 16;
  bool fma = false;
  bool f16c = false;
  // The "prefer-vector-width" every kernel function carries, 0 for LLVM's
  // own choice. LLVM's x86 cost model prefers 256-bit vectors on AVX-512
  // CPUs (for the clock drops of older ones); kernels ask for 512: the
  // attention softmax of the encoder block went from 106 to 85 us (16-lane
  // exponentials), the MLP training step 3.95 to 3.81 ms (A/B).
  unsigned preferVectorWidth = 0;
  // The libmvec variants the vectorizer may call (empty: libm only).
  std::vector<VectorMathVariant> vectorMath;
  // Whether kernels compute f32 exponentials inline (inline_math.h) rather
  // than call libmvec's: AVX-512. A SiLU took twice as long through
  // libmvec's 16-lane expf (a call per vector, 36 cycles each on a Zen 4:
  // EfficientNet-B0 12.64 -> 11.42 ms inline, MobileViT-xxs 13.18 -> 12.27);
  // with AVX2's and SSE's, the calls were the faster (EfficientNet-B0 14.38
  // against 14.75 ms inline in AVX2 code, 37.8 against 38.8 in SSE code).
  bool inlineExp = false;
  // Whether kernels compute f32 erf inline (inline_math.h: a rational
  // function, within 6 ulp) rather than call libmvec's (within 4): AVX2 and
  // AVX-512, where it took half as long as libmvec's erff in a GELU
  // (0.35 against 0.70 ns an element with 16 lanes, 0.42 against 0.60 with
  // 8, Zen 4): ConvNeXt-tiny 94.65 -> 90.78 ms with AVX-512, 110.23 ->
  // 106.28 in AVX2 code, ViT-tiny 25.99 -> 25.25 (one thread). Unmeasured
  // without FMA, where libmvec's stay.
  bool inlineErf = false;
  ConvTiling conv;
  GemmTiling gemm;
  // Whether a strided first layer (few input channels: convPhasesPay,
  // passes/direct_conv.h) runs over its input's phases (the conv-phases
  // pass's first-layers option) or as a stride-2 direct convolution.
  // AVX-512 deinterleaves a vector of inputs with one two-source permute,
  // and its direct convolution was the faster (Zen 4, one thread, 6
  // alternated runs): MobileNetV2's 3x3 first layer 290 us against a 47 us
  // split and 274, EfficientNet-B0's 521 against 65 + 496, ResNet-18's 7x7
  // 2783 against 38 + 3005. With AVX2's deinterleaving shuffles the phases
  // were the faster (passes/direct_conv.h's measurements).
  bool firstLayerPhases = true;

  int floatLanes() const { return vectorBits / 32; }
  bool has(std::string_view feature) const;
  // "haswell (avx2: 256-bit vectors, fma, f16c)", for kernel listings and notes.
  std::string describe() const;
};

// Whether kernels for `triple` may call glibc's vector math library
// (libmvec, glibc 2.35+) once vectorised; whoever links or loads them must
// then provide it.
bool usesVectorMath(const llvm::Triple& triple);

// The one function that decides. Fails only when LLVM cannot read the
// target's CPU name or features.
Expected<CpuSubtarget> subtargetOf(const CpuTarget& target);

// Whether code for `code` runs on `machine`, whose feature string lists
// what it lacks as "-name" (as CpuTarget::host()'s does; a feature it does
// not mention is assumed): an error naming the missing features otherwise.
Status checkRunsOn(const CpuSubtarget& code, const CpuTarget& machine);
// checkRunsOn this machine: what the JIT checks before it compiles for a
// named CPU.
Status checkRunsHere(const CpuSubtarget& code);

}  // namespace kfuse::cpu
