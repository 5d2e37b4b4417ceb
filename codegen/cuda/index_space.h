// A kernel's index spaces (exec/index_space.h) as the CUDA C
// emitter uses them: a thread takes a linear outer (or row) index, recovers
// the dims with divisions by compile-time extents (kernel_emitter.cpp), and
// forms each access's offset from them (offsetTerm).
#pragma once

#include <string>
#include <vector>

#include "exec/index_space.h"

namespace kfuse::cuda {

// The spaces themselves are the kernel's (exec/index_space.h).
using kernel::KernelSpaces;
using kernel::Space;
using kernel::SpaceDim;
using kernel::buildSpaces;
using kernel::numAccesses;

// sum over dims of index[d] * strides[access]; "" when no dim moves the access.
std::string offsetTerm(const Space& space, const std::vector<std::string>& index, size_t access);

}  // namespace kfuse::cuda
