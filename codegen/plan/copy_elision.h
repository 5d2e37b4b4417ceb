// Copy elision on a lowered plan. Ops whose result is assembled from
// blocks (ir/op_registry.h's Piece: constant pad, concat) lower to a step of
// block copies; a copy of a whole value into its block of the result is a
// pass over memory that the kernel computing the value can save by storing
// it there itself: SqueezeNet's fire modules copied both halves of every
// concat, 281 us of its 6.1 ms on a Xeon at one thread. Pads are left
// alone: ResNet-18's first layer writing its 64x112x112 output straight
// into the -inf border its max pool reads took 525 us longer, where the
// copy it saved took 229.
//
// A copy goes when all of these hold:
//   - it is a kernel of a step of block copies and fills into one result
//     (what a Piece op lowers to: disjoint blocks, none reading the result);
//   - it reads its source whole and in row-major order, and stores it
//     unchanged (same dtype) into one run of the result's elements, in the
//     same order (a concat along the result's first axis longer than 1;
//     not a pad, whose rows each end in the border: below);
//   - the source is a Temp that nothing else reads or views (no alias, not
//     an output), written by one element store of one kernel of an earlier
//     kernel bundle or convolution epilogue, in row-major order over that
//     kernel's space;
//   - nothing between that step and the copy touches the result.
// The writer's store then goes to the result, through the copy's map
// carried into the writer's space (kernel::restride); the copy is dropped,
// and so is its step once it holds no kernel (one launch fewer), and the
// source buffer (the plan's buffers renumbered: exec/plan.h's dropBuffers).
// Runs after lowering and before in-place rewriting and buffer planning.
#pragma once

#include "exec/plan.h"

namespace kfuse {

// Returns how many copies were elided.
size_t elideCopies(Plan& p);

}  // namespace kfuse
