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
Status callConvEpilogue(VectorCode& code, const DirectConv& conv, const std::vector<llvm::Value*>& buffers,
                        llvm::Value* n, llvm::Value* o0, llvm::Value* oy, int64_t channels, int64_t rows);

// The function of a convolution with a packed filter (DirectConv::packedFilter,
// exec/packed_filter.h), named `symbol`, added to `module`.
Expected<llvm::Function*> emitPointwiseConv(const DirectConv& conv, llvm::Module& module, const std::string& symbol);

}  // namespace kfuse::cpu
