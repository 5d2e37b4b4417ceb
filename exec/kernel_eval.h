// The kernel interpreter: runs a kernel on host tensors with the semantics
// of kernel_ir.h, in double precision, element by element. It is the oracle
// the LLVM and CUDA code generators are tested against, and it checks that
// lowering a fused group to a kernel preserves the group's meaning.
#pragma once

#include <span>

#include "exec/kernel_ir.h"
#include "ir/tensor.h"

namespace kfuse::kernel {

// `buffers[i]` is kernel buffer i, with its exact type; outputs are written.
Status evaluateKernel(const Kernel& k, std::span<Tensor* const> buffers);

}  // namespace kfuse::kernel
