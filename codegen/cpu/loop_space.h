// The loops a kernel's index space becomes on the CPU. Dims of extent 1 are
// dropped (their index is always 0), and neighbouring dims that every access
// walks contiguously are merged into one longer loop (outer with outer,
// reduce with reduce, never across), so that an elementwise kernel over
// [1000, 3] runs one loop of 3000 the vectorizer can use. Merging keeps the
// row-major visiting order, so reductions and globals fold in the same order
// as kernel_ir.h defines; a dim an Index leaf reads is never merged, since
// its index would have to be recovered with a division.
#pragma once

#include <cstdint>
#include <vector>

#include "codegen/kernel/kernel_ir.h"

namespace kfuse::cpu {

// One loop. `strides` has one entry per access (Kernel::loads, then
// Kernel::stores), in elements.
struct LoopDim {
  int64_t extent = 1;
  std::vector<int64_t> strides;
  int kernelDim = -1;  // the kernel dim an Index leaf reads as this loop's
                       // counter; -1 for merged dims, which no leaf reads
};

struct LoopSpace {
  std::vector<LoopDim> dims;  // outermost first
  bool empty = false;         // some kernel dim has extent 0: no iterations
};

struct KernelLoops {
  LoopSpace outer;
  LoopSpace reduce;
};

// Number of accesses (loads + stores) whose strides a LoopDim carries.
inline size_t numAccesses(const kernel::Kernel& k) { return k.loads.size() + k.stores.size(); }

// Builds the loops of a verified kernel.
KernelLoops buildLoops(const kernel::Kernel& k);

}  // namespace kfuse::cpu
