// What every code generator decides about a kernel before writing a line of
// it, decided once from the kernel alone: its index spaces, which
// reductions share a pass over the row, the accumulator types, which loads
// read one element for the whole kernel, whether the row's loads run across
// outer points rather than along the row, and which sum a store may keep.
// The LLVM and CUDA C emitters both read it (codegen/kernel/kernel_walk.h);
// what is only theirs (loop nests and vector widths for LLVM, the thread
// mapping for CUDA) they decide from it.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "codegen/kernel/kept_sum.h"
#include "exec/index_space.h"
#include "exec/kernel_ir.h"

namespace kfuse::kernel {

struct EmissionSchedule {
  KernelSpaces spaces;
  // The reductions as consecutive groups [first, last) that fold in one
  // pass over the row (reductionGroups).
  std::vector<std::pair<size_t, size_t>> groups;
  std::vector<DType> accumulators;  // per reduction: accumulatorType
  std::vector<DType> globals;       // per global, the prologue's first: accumulatorType
  // Per load: it reads the same element at every point, of a buffer no
  // store writes (a learning rate, a step count), so it can be read once.
  std::vector<bool> invariantLoads;
  // Per load: of a buffer no store writes, not gathered, so an emitter may
  // read it once per iteration of the innermost loop its index moves with
  // (a squeeze-excitation gate per channel, not per pixel).
  std::vector<bool> readOnlyLoads;
  // The loads that depend on the row walk it with a stride and sit side by
  // side across neighbouring outer points (a bias gradient: the sum over a
  // batch of each column). Folding many rows at once, each in its own
  // accumulator, reads memory contiguously; each row still folds in order.
  // Or a scatter-add whose store is contiguous across outer points: its
  // rows are added one after the other, each row's elements side by side.
  bool rowsAcross = false;
  // A sum an element store recomputes, which an emitter walking one row at
  // a time may keep in the output instead (kept_sum.h).
  std::optional<KeptSum> keptSum;
  bool elementStores = false, rowStores = false, finalStores = false;

  size_t numGlobals() const { return globals.size(); }
  // Whether anything happens once per outer point after the row: row
  // stores or main globals.
  bool rowLevel(const Kernel& k) const { return rowStores || !k.globals.empty(); }
};

// The schedule of a verified kernel.
EmissionSchedule scheduleEmission(const Kernel& k);

}  // namespace kfuse::kernel
