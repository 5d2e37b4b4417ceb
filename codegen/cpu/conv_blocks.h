// What the CPU's convolution generators share (conv_emitter.cpp, pixels
// across the lanes; pointwise_conv_emitter.cpp, output channels across
// them).
#pragma once

#include <string>
#include <vector>

#include <llvm/IR/Function.h>
#include <llvm/IR/Module.h>

#include "codegen/cpu/conv_emitter.h"
#include "codegen/cpu/vector_code.h"

namespace kfuse::cpu {

// The buffers of a direct convolution's ABI (conv_emitter.h): x, w (the
// packed copy where conv.packedFilter), the bias (null without one), y,
// then the epilogue's, as byte pointers.
struct ConvArguments {
  llvm::Value *x = nullptr, *w = nullptr, *bias = nullptr, *y = nullptr;
  std::vector<llvm::Value*> epilogue;
};
ConvArguments convArguments(VectorCode& code, const DirectConv& conv);

// Calls conv's epilogue (exec/conv_epilogue.h) over output channels
// [o0, o0 + channels) of image n, rows [oy, oy + rows): the kernel cut to
// the block (one function per block shape, inlined), called with each of
// `buffers` (the epilogue's, as byte pointers) moved there.
// With ox0, the block is `cols` columns from column ox0 of one row, or of
// the flattened plane (a panel's unit: oy 0, the epilogue's rows walked
// as one, convBlocksOf).
Status callConvEpilogue(VectorCode& code, const DirectConv& conv, const std::vector<llvm::Value*>& buffers,
                        llvm::Value* n, llvm::Value* o0, llvm::Value* oy, int64_t channels, int64_t rows,
                        llvm::Value* ox0 = nullptr, int64_t cols = 0);

// How many of `count` things (input channels, periods of them) a chunk
// takes where `fit` fit at a time: all where they fit; else the largest
// divisor of count up to fit, so that every chunk's loops keep one constant
// count (conv_emitter.cpp's planeChunkChannels says why), if it is at
// least half of fit; else all, in one chunk.
int64_t chunkDividing(int64_t count, int64_t fit);

// The block a 1x1 convolution over panels (ConvSpec::pointwisePanels)
// keeps in registers: the tiling's for 1x1 rows, its vectors narrowed to
// divide a unit (ops::kPointwisePanelPixels); and the input channels its
// panel holds at a time: all, or a divisor of them whose panel fits 32 KB
// (all where no divisor of at least half that many does).
ConvTiling panelBlock(const ConvTiling& t);
int64_t pointwisePanelChunk(const ConvSpec& c);

// The function of a 1x1 convolution over panels (ConvSpec::pointwisePanels),
// named `symbol`, added to `module` (panel_conv_emitter.cpp).
Expected<llvm::Function*> emitPanelConv(const DirectConv& conv, llvm::Module& module, const std::string& symbol);

// The function of a convolution with a packed filter (DirectConv::packedFilter,
// exec/packed_filter.h), named `symbol`, added to `module`.
Expected<llvm::Function*> emitPointwiseConv(const DirectConv& conv, llvm::Module& module, const std::string& symbol);

}  // namespace kfuse::cpu
