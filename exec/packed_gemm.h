// GEMMs whose B operand never changes while a plan runs (an inference
// plan's weights, constants) run on the cpu target as generated code
// (codegen/cpu/gemm_emitter.h) reading a copy of B packed once, instead of
// BLAS packing it again on every call. One rule, read by code generation,
// packages and the runner, says which.
//
// The packed layout is the same for every target: B (k x n, or n x k for a
// transposed B) as panels of kPackedPanel columns, panel after panel, each
// k rows of kPackedPanel contiguous floats, the last panel's columns past n
// zero. A kernel's block of columns then reads one contiguous row of its
// panel per step of k.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/row_blocks.h"
#include "exec/plan.h"

namespace kfuse {

inline constexpr int64_t kPackedPanel = 32;

// Whether GEMM step `step` of `plan` runs packed: f32 A, B and C, one
// matrix (no batch), A not transposed, B's storage a parameter or constant
// that no step of the plan writes (a training step's weights are rewritten
// every step and keep going to BLAS), and, where the GEMM runs columns
// outer, A at most kColumnsOuterMaxA bytes.
//
// Rows go outermost while every block of rows can stream all of B from the
// second-level cache: at most kPackedMaxK rows and kPackedMaxBytes packed
// (one thread, 2 MB L2: 128x1024x512 1.03x faster than OpenBLAS, 128x784x512
// 1.17x, the transformer benchmark's 256x128x512 1.10x). Past either,
// columns go outermost (packedColumnsOuter, codegen/cpu/gemm_emitter.h):
// each panel of B stays in cache while every block of rows passes over it,
// so A is what streams, from the second-level cache, and must fit there.
// Work units are then panels, not rows, and there is no epilogue (a row of
// C is complete only at the end). gemm_bench, one thread, AVX2, against
// OpenBLAS: an LM head 128x256x50257 1.04-1.12x, 128x768x3072 1.03-1.06x;
// classifier heads 1x1280x1000 3.2x and 1x2048x1000 3.4-4.3x (OpenBLAS
// packs their whole B on every call); 32x2048x1024 1.16-1.26x, 64x2048x1024
// (A 512 KiB) 1.01x, 128x2048x512 (A 1 MiB) 0.90-0.92x, where BLAS stays.
inline constexpr int64_t kPackedMaxK = 1024;
inline constexpr int64_t kPackedMaxBytes = int64_t{2} << 20;
inline constexpr int64_t kColumnsOuterMaxA = int64_t{512} << 10;
bool packedGemmFits(const Plan& plan, size_t step);
bool packedColumnsOuter(const GemmSpec& g);

// The Gemm steps of `plan` that packedGemmFits, in step order.
std::vector<size_t> packedGemmSteps(const Plan& plan);

// Whether packed GEMM step `step` also runs its epilogue, a block of rows
// at a time right after computing them (exec/row_blocks.h), and
// how; the error says why not. The product and everything the epilogue
// writes must stay inside the block, and the epilogue must not write over
// A, whose later rows the GEMM has yet to read.
Expected<kernel::RowBlocks> packedEpilogue(const Plan& plan, size_t step);

// Floats the packed copy of B takes, and the bytes a runner allocates for
// the packed copies of `steps`.
int64_t packedBElements(const GemmSpec& g);
uint64_t packedBytes(const Plan& plan, const std::vector<size_t>& steps);

// Packs B (row-major, k x n, or n x k when g.transB) into `out`
// (packedBElements floats).
void packB(const GemmSpec& g, const float* b, float* out);

}  // namespace kfuse
