// Walking a kernel's index spaces (codegen/kernel/index_space.h) in CUDA C,
// as linear indices: a thread takes a linear outer (or row) index and
// recovers the dims with divisions by compile-time extents.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/cuda/code_writer.h"
#include "codegen/kernel/index_space.h"

namespace kfuse::cuda {

// The spaces themselves are the kernel's (codegen/kernel/index_space.h).
using kernel::KernelSpaces;
using kernel::Space;
using kernel::SpaceDim;
using kernel::buildSpaces;
using kernel::numAccesses;

// Emits the decomposition of the linear index `linear` over `space` into
// one variable per dim (named `<prefix><d>`, of type `indexType`), and
// returns their names. The outermost dim needs no modulo.
std::vector<std::string> emitDecompose(CodeWriter& w, const Space& space, const std::string& linear,
                                       const std::string& prefix, const std::string& indexType);

// sum over dims of index[d] * strides[access]; "" when no dim moves the access.
std::string offsetTerm(const Space& space, const std::vector<std::string>& index, size_t access);

}  // namespace kfuse::cuda
