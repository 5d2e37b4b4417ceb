// Lowering a fused group (a fused node's body, or any graph of kernelizable
// nodes) to one kernel. The body's arguments become the input buffers and
// its results the output buffers, in order.
#pragma once

#include <string>

#include "exec/kernel_ir.h"
#include "ir/graph.h"

namespace kfuse::kernel {

// Why `n` cannot be part of a kernel, or "" when it can: elementwise ops
// with a scalar expression, data movement that is an affine index map
// (transpose, expand, slice, identity, reshapes that only add or remove
// extent-1 axes), row ops (registry RowSpec), and splat constants.
std::string notKernelizable(const Node& n);

// The kernel computing `body`. Errors name the node that does not fit:
// row ops with different loop structures, a value read through an index map
// the lowering cannot express, an op that is not kernelizable.
Expected<Kernel> lowerToKernel(const Graph& body, const std::string& name);

// Where a kernel buffer comes from, in terms of the group's body.
struct BufferRef {
  enum class Kind : uint8_t { Argument, Result, Gemm } kind;
  size_t index = 0;  // argument or result index (unused for Gemm)
};

// A fused group as one launch: an optional GEMM first (matmul; its result
// feeds the kernels as the buffer BufferRef::Gemm), then one kernel per
// independent part of the rest (horizontal fusion: every parameter's
// optimizer update in one launch).
struct LoweredGroup {
  const Node* gemm = nullptr;   // a node of the body: matmul or a convolution (forward or backward)
  int gemmResult = -1;          // body result the GEMM's output is, if exported
  std::vector<Kernel> kernels;
  std::vector<std::vector<BufferRef>> buffers;  // per kernel, per kernel buffer
};

Expected<LoweredGroup> lowerGroup(const Graph& body, const std::string& name);

// A node whose op describes its result as blocks (OpDef::pieces: constant
// pad, concat) as one launch of one copy or fill kernel per block, in
// order; its operands are the arguments, its result result 0.
Expected<LoweredGroup> lowerPieces(const Node& n, const std::string& name);

// A gather's gradient (OpDef::scatterAxis) as two kernels to run one after
// the other: zeros over the result, then dy's rows added where the indices
// point (an accumulating gathered store, one outer point per element of a
// row, its rows in order); operands are the arguments, the result result 0.
Expected<LoweredGroup> lowerScatterAdd(const Node& n, const std::string& name);

// "" if `body` can be one launch (lowerGroup succeeds), else why not.
std::string checkGroup(const Graph& body);

}  // namespace kfuse::kernel
