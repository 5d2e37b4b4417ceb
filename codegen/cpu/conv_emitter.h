// Direct convolutions for the CPU: a plan's Conv step as one generated
// function, specialised to its shapes, instead of im2col + BLAS.
//
// The function keeps a block of output values in vector registers (some
// output channels times one or two vectors of one output row) and folds
// every filter tap and input channel into it, reading input rows and filter
// values where they lie: no patch matrix is written, packed or read back.
// Taps that fall into horizontal padding are masked loads whose masks are
// constants (block positions are known when the code is generated); rows
// that fall into vertical padding are skipped.
//
// Small "same" planes (ConvSpec::wholePlanes: stride 1, rows as wide in as
// out, at most ops::kWholePlanePixels, or ops::kDenseWholePlanePixels for
// ungrouped filters of more than one tap) are taken whole: the block's vectors
// run across rows of the flattened plane, each tap one load at a fixed
// offset. The blocks at the plane's edges, whose loads would leave the
// plane, are straight-line code with constant masks; those between run as
// one loop whose loads are whole and whose padding lanes are zeroed by
// masks read from a constant table (a block's lanes meet row ends at
// different places). Work units are then output planes.
//
// Taps ConvSpec::liveTaps marks dead (the zeros of a filter conv-phases
// regrouped over its input's phases) are left out: the channel loops run
// over the pattern's periods, one period's channels unrolled, and rows
// unroll the rows of short filters as well.
//
// It covers NCHW convolutions with horizontal stride 1 or 2 (any kernel
// size, padding, dilation, vertical stride and group count), in f32. The
// runtime runs the others with im2col + GEMM (runtime/cpu_conv.h).
//
// With an epilogue (exec/conv_epilogue.h's convEpilogue), the function runs
// it over each block of output channels as soon as the block is complete
// (a row of them, or their whole planes; chunked planes after the last
// chunk), while the block is in cache: the epilogue kernel cut to the
// block, emitted beside the convolution and inlined. Otherwise the runner
// runs it afterwards, a second pass over the whole output.
//
// ABI: llvm_emitter.h's `void <symbol>(void** buffers, int64_t begin, int64_t end)`, the
// work units output rows, (image, group, row) row-major, or for whole
// planes (image, output channel) row-major (exec/parallel.h),
// with buffers {x, w, bias (unused when the spec has none), y}, f32, NCHW / OIHW (or OHWI
// when filterLast), then the epilogue kernel's buffers in its order.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <llvm/IR/Function.h>
#include <llvm/IR/Module.h>

#include "codegen/cpu/subtarget.h"
#include "exec/conv_epilogue.h"
#include "ir/support/expected.h"
#include "exec/packed_filter.h"
#include "exec/plan.h"

namespace kfuse::cpu {

// Whether the generated code can compute `c` at all: NCHW, unit horizontal
// stride, channels divisible by the groups.
bool directConvSupports(const ConvSpec& c);

// Whether `c` runs as a direct convolution with `t`: supported, f32
// computation (half storage is widened to f32 before), and output rows that
// fill the lanes they take (passes/direct_conv.h's rule), or a strided
// layer whose filter the CPU packs (ConvTiling::packedTaps and
// exec/packed_filter.h's packedFilterShape).
bool directConvFits(const ConvSpec& c, DType storage, const ConvTiling& t);

// The plan-building policy that gives exactly the convolutions that do not
// fit `t` an im2col workspace (codegen/plan/plan_builder.h's
// ConvWorkspacePolicy).
std::function<bool(const ConvSpec&, DType)> im2colWorkspaces(const ConvTiling& t);

// The plan-building policy that packs the filters of the convolutions `t`
// runs faster so (exec/packed_filter.h's PackedFilterPolicy): 1x1 ones
// always, those with taps where ConvTiling::packedTaps.
PackedFilterPolicy packedFilterPolicy(const ConvTiling& t);

// The Conv steps of `plan` that directConvFits, in step order.
std::vector<size_t> directConvSteps(const Plan& plan, const ConvTiling& t);

// One convolution to generate: the step's spec, the kernel name its
// function is emitted under (symbolName(name)) and its tiling (any tiling
// gives the same results; the subtarget's is the fast one).
struct DirectConv {
  std::string name;
  ConvSpec spec;
  ConvTiling tiling;
  // The step's epilogue when the convolution runs it (convEpilogue), else null.
  const kernel::Kernel* epilogue = nullptr;
  ConvBlocks blocks;
  // Whether the function reads the filter packed (exec/packed_filter.h's
  // packedFilterFits): w is then packFilter's copy, and the code has
  // output channels across the lanes.
  bool packedFilter = false;
};

// Conv step `step` of `plan` (directConvFits) to generate, with its
// epilogue where convEpilogue says the convolution runs it.
DirectConv directConvOf(const Plan& plan, size_t step, std::string name, const ConvTiling& t);

// Adds the function to `module`. Fails, naming the convolution, when the
// spec is not supported or the symbol is taken.
Expected<llvm::Function*> emitDirectConv(const DirectConv& conv, llvm::Module& module);

// One line describing what the generated code does with `c` ("direct:
// blocks of 8 channels x 2x16 pixels, epilogue per block"; with a packed
// filter, "direct, packed filter, blocks of 7 pixels x 3x16 channels"), for
// kernel listings.
std::string describeDirectConv(const ConvSpec& c, const ConvTiling& t, bool epilogue = false,
                               bool packedFilter = false);

}  // namespace kfuse::cpu
