// Running a kernel one block of rows at a time, interleaved with the code
// that produces those rows: a packed GEMM (codegen/cpu/gemm_emitter.h) runs
// its epilogue after each block of product rows, while they are still in
// the first-level cache, instead of in a second pass over the whole product.
//
// A kernel qualifies when its iteration visits the rows of an m-row matrix
// in order: after merging (index_space.h) its first outer dim has m * q
// points, q per row. Buffers the block must not reach past (the product
// being produced, everything the kernel writes: "confined") are walked in
// row-major order from their first element, so block r touches only rows
// of block r. Every other buffer is read through whatever map it has; its
// pointer moves by a fixed stride per row. No globals, no final stores, no
// Index leaves.
#pragma once

#include <vector>

#include "exec/kernel_ir.h"
#include "ir/support/expected.h"

namespace kfuse::kernel {

struct RowBlocks {
  int64_t pointsPerRow = 1;           // q: points of the first merged outer dim per row
  std::vector<int64_t> rowStrides;    // per kernel buffer: elements its pointer moves per row
};

// Whether `k` runs in blocks of the rows of an m-row iteration, and how;
// the error says why not. confined[i] is for kernel buffer i.
Expected<RowBlocks> rowBlocksOf(const Kernel& k, int64_t rows, const std::vector<bool>& confined);

// `k` over its first `count` rows: run at row r0 with every buffer i's
// pointer moved by blocks.rowStrides[i] * r0 elements, it does what `k`
// does for rows [r0, r0 + count).
Kernel rowBlockKernel(const Kernel& k, const RowBlocks& blocks, int64_t count);

}  // namespace kfuse::kernel
