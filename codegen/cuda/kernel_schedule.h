// How a kernel's index space maps onto CUDA threads, decided once per
// kernel from its shapes and access strides (all known at plan-compile time):
//
//   Elementwise  no reduce dims: a grid-stride loop over outer points; when
//                every access walks the innermost dim with stride 1 (or 0,
//                broadcast) and offsets are multiples of `vec`, a fast path
//                moves `vec` elements per thread with 16-byte loads/stores
//                (guarded at run time by the pointers' alignment), the
//                remainder element by element.
//   Row*         reduce dims: each outer point (row) belongs to a team of
//                threads that folds the row's points in a fixed order
//                (every thread a strided subset, then a fixed tree):
//                  RowThread  one thread per row (rows of at most 16 points),
//                  RowWarp    a warp per row, shuffles,
//                  RowBlock   the whole block per row (long rows),
//                  Column     32 rows side by side across the lanes, the
//                             warps splitting the row: coalesced when rows
//                             are strided and neighbouring rows contiguous
//                             (bias gradients, batch-norm statistics).
//
// Globals fold per thread, then per block, then across blocks with the
// last-block protocol (prelude.h): reproducible bits, no float atomics.
// Prologue globals are folded by every block over all outer points (the
// same order in every block), which is why kernels with a prologue get at
// most `maxBlocksWithPrologue` blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "codegen/cuda/index_space.h"
#include "codegen/kernel/emission_schedule.h"
#include "codegen/kernel/scalar_rules.h"

namespace kfuse::cuda {

struct EmitOptions {
  int threads = 256;  // per block; a multiple of 64
  int maxBlocks = 2048;
  int maxBlocksWithPrologue = 32;
  // When set, the kernel runs on exactly this many blocks (at most): an
  // epilogue sharing a cooperative GEMM's grid.
  int64_t fixedBlocks = 0;
};

enum class Strategy : uint8_t { Elementwise, RowThread, RowWarp, RowBlock, Column };
std::string_view strategyName(Strategy s);

struct KernelSchedule {
  Strategy strategy = Strategy::Elementwise;
  int64_t blocks = 1;       // at least 1 (Final stores need a last block)
  int vec = 1;              // Elementwise fast-path width; 1: none
  bool vecTail = false;     // the fast path leaves a remainder (1-D spaces only)
  bool wideIndex = false;   // kf_i64 index arithmetic (else int)
  int teamX = 1, teamY = 1;  // Row*: rows per block-step, threads per row
  size_t smemBytes = 0;     // dynamic shared memory
  size_t scratchBytes = 0;  // global memory the kernel keeps between blocks (zeroed once)
  std::vector<size_t> globalOffsets;  // per main global: its partials in the scratch
};

// The thread mapping of a kernel from its backend-neutral schedule
// (codegen/kernel/emission_schedule.h: the spaces, and whether rows run
// across outer points, which makes it Column).
KernelSchedule scheduleKernel(const kernel::Kernel& k, const kernel::EmissionSchedule& emission, const EmitOptions& opts);

// (Accumulator types: codegen/kernel/scalar_rules.h's accumulatorType.)
using kernel::accumulatorType;

}  // namespace kfuse::cuda
