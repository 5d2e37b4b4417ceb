// The index spaces a kernel's code walks, shared by the CPU and CUDA
// emitters. Dims of extent 1 are dropped (their index is always 0), and
// neighbouring dims that every access walks contiguously merge (outer with
// outer, reduce with reduce, never across), so an elementwise kernel over
// [1000, 3] is one dim of 3000: one loop the LLVM vectorizer can use on the
// CPU, no division on the GPU. Merging keeps the row-major visiting order,
// so reductions and globals fold in the order kernel_ir.h defines; a dim an
// Index leaf reads is never merged, since its index would have to be
// recovered with a division.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "exec/kernel_ir.h"

namespace kfuse::kernel {

// One dim. `strides` has one entry per access (Kernel::loads, then
// Kernel::stores), in elements.
struct SpaceDim {
  int64_t extent = 1;
  std::vector<int64_t> strides;
  int kernelDim = -1;  // the kernel dim an Index leaf reads as this index; -1 when merged
  // The generated function's loop over this dim runs the range of units it
  // is called with, not the whole extent (exec/parallel.h).
  bool ranged = false;
};

struct Space {
  std::vector<SpaceDim> dims;  // outermost first
  int64_t points = 1;          // product of extents (0 when some kernel dim is 0)
  bool empty() const { return points == 0; }
};

struct KernelSpaces {
  Space outer;
  Space reduce;
};

// Number of accesses (loads + stores) whose strides a SpaceDim carries.
inline size_t numAccesses(const Kernel& k) { return k.loads.size() + k.stores.size(); }

// The spaces of a verified kernel.
KernelSpaces buildSpaces(const Kernel& k);

// Kernel dims some Index leaf reads, anywhere in the kernel.
std::vector<bool> dimsReadByIndexLeaves(const Kernel& k);

// The reductions as consecutive groups [first, last) that can share one
// pass over the row: a reduction joins the previous one's group unless it
// reads an accumulator of that group, which is final only after it.
std::vector<std::pair<size_t, size_t>> reductionGroups(const Kernel& k);

// The strides along `to`'s dims (0 for dims of extent 1) of an access
// walking `from` with `strides`, both shapes factorising one row-major
// index; nullopt where the access is not affine in `to`'s indices (a dim
// of `to` spanning parts of `from`'s dims whose strides do not chain).
// Read where one kernel's access moves into another's space (a
// convolution's epilogue cut into blocks, exec/conv_epilogue.h; a copy's
// destination given to the step computing its source,
// codegen/plan/copy_elision.h).
std::optional<std::vector<int64_t>> restride(const Shape& from, const std::vector<int64_t>& strides, const Shape& to);

}  // namespace kfuse::kernel
