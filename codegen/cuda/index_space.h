// The index spaces a CUDA kernel walks, as linear indices: a thread takes a
// linear outer (or row) index and recovers the dims with divisions by
// compile-time extents. Dims of extent 1 vanish and neighbouring dims every
// access walks contiguously merge (as codegen/cpu/loop_space.h does), so an
// elementwise kernel over [1000, 3] is one dim of 3000 and costs no division
// at all; a dim an Index leaf reads is never merged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/cuda/code_writer.h"
#include "codegen/kernel/kernel_ir.h"

namespace kfuse::cuda {

// One dim; `strides` has one entry per access (Kernel::loads, then
// Kernel::stores), in elements.
struct SpaceDim {
  int64_t extent = 1;
  std::vector<int64_t> strides;
  int kernelDim = -1;  // the kernel dim an Index leaf reads as this index; -1 when merged
};

struct Space {
  std::vector<SpaceDim> dims;  // outermost first
  int64_t points = 1;          // product of extents (0 when some kernel dim is 0)
};

struct KernelSpaces {
  Space outer;
  Space reduce;
};

// Number of accesses (loads + stores) whose strides a SpaceDim carries.
inline size_t numAccesses(const kernel::Kernel& k) { return k.loads.size() + k.stores.size(); }

KernelSpaces buildSpaces(const kernel::Kernel& k);

// Kernel dims some Index leaf reads.
std::vector<bool> dimsReadByIndexLeaves(const kernel::Kernel& k);

// Emits the decomposition of the linear index `linear` over `space` into
// one variable per dim (named `<prefix><d>`, of type `indexType`), and
// returns their names. The outermost dim needs no modulo.
std::vector<std::string> emitDecompose(CodeWriter& w, const Space& space, const std::string& linear,
                                       const std::string& prefix, const std::string& indexType);

// sum over dims of index[d] * strides[access]; "" when no dim moves the access.
std::string offsetTerm(const Space& space, const std::vector<std::string>& index, size_t access);

}  // namespace kfuse::cuda
