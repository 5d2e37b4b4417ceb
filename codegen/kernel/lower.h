// Lowering a fused group (a fused node's body, or any graph of kernelizable
// nodes) to one kernel. The body's arguments become the input buffers and
// its results the output buffers, in order.
#pragma once

#include <string>

#include "codegen/kernel/kernel_ir.h"
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

}  // namespace kfuse::kernel
