// A row kernel whose element store recomputes what one of its sums added up
// (softmax: acc = sum exp(x - max), store exp(x - max) / acc). A code
// generator may store each summed value into the output element while it
// sums, and read it back for the store, instead of computing it twice
// (codegen/cpu/llvm_emitter.cpp does; libmvec's exponentials were a
// quarter of an attention softmax).
#pragma once

#include <optional>

#include "exec/kernel_ir.h"

namespace kfuse::kernel {

struct KeptSum {
  size_t reduction = 0;                 // a Sum of the last reduction group
  size_t store = 0;                     // the Element store that recomputes it
  const ScalarNode* inStore = nullptr;  // the store's node computing the same
  // The store's whole value is the summed one (a squeeze-excitation block's
  // SiLU, also averaged over the plane): kept, the element is stored, and
  // a code generator need not pass over the row again.
  bool whole = false;
};

// Only where nothing can read the output's memory between the sum's write
// and the store: the kernel has reduce dims, one Element store (moving
// with every reduce dim of extent above 1: an element per reduce point)
// and otherwise Row stores only (a row's results, written after its sums,
// to buffers the size of the outer space, so none is the element output or
// in place over a load along the row), no globals (a prologue, folded
// before any row, may be there), and
// the store reads no load that moves along the row but through the kept
// value (so an output written in place over an input replaces each element
// after that input's last read); the output's storage is the value's own
// type, so keeping it rounds nothing. A cross-entropy's gradient qualifies:
// besides exp(x - max) it reads only the row's label and the scalar dloss.
std::optional<KeptSum> findKeptSum(const Kernel& k);

// Whether two expressions compute the same (equal ops, types, constants and
// leaves, recursively): a kernel's reductions and stores are lowered
// separately and share no nodes.
bool sameExpr(const ScalarNode& a, const ScalarNode& b);

}  // namespace kfuse::kernel
