// In-place rewriting on a lowered plan: a step's output takes over the
// storage of one of its inputs (the output becomes an Alias marked inPlace)
// when all of these hold:
//   - the input's storage dies at that step (no later step, no later kernel
//     of the same step, no output or state update reads it);
//   - both have the same byte size and element size;
//   - the kernel writing the output is elementwise (no reduction, no row or
//     final stores) and reads the input only through the output's own store
//     map: each point reads element e and then writes element e, so no
//     point ever reads what another point wrote (never a partial overlap);
//     for reference steps the op's registry entry (OpDef::inPlace) says so;
//   - the input's storage is a Temp, or a parameter whose state update is
//     this very output (optimizer updates write weights and state in place);
//     graph inputs and constants are never overwritten.
// Runs after lowering and before buffer planning, on the same lifetimes.
#pragma once

#include "exec/plan.h"

namespace kfuse {

// Returns how many outputs now write over an input.
size_t rewriteInPlace(Plan& p);

}  // namespace kfuse
