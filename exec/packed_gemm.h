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
#include <functional>
#include <vector>

#include "exec/row_blocks.h"
#include "exec/plan.h"

namespace kfuse {

inline constexpr int64_t kPackedPanel = 32;

// Whether GEMM `g`'s shape may run packed: one matrix (no batch), A not
// transposed, every dimension at least 1.
bool packedGemmShape(const GemmSpec& g);

// Whether GEMM step `step` of `plan` may run packed: packedGemmShape, f32
// A, B and C, and B's storage a parameter or constant that no step of the
// plan writes (a training step's weights are rewritten every step and keep
// going to BLAS).
bool packedGemmAllowed(const Plan& plan, size_t step);

// Whether it does: allowed, and marked so (GemmSpec::packedB) when the plan
// was built. Read by code generation, packages and the runner.
bool packedGemmFits(const Plan& plan, size_t step);

// Rows go outermost while every block of rows can stream all of B from the
// second-level cache: at most kPackedMaxK rows and kPackedMaxBytes packed
// (one thread, 2 MB L2: 128x1024x512 1.03x faster than OpenBLAS, 128x784x512
// 1.17x, the transformer benchmark's 256x128x512 1.10x). Past either,
// columns go outermost (packedColumnsOuter, codegen/cpu/gemm_emitter.h):
// each group of panels of B stays in cache while every block of rows
// passes over it, so A is what streams, and how large an A still pays is
// the CPU's tiling's to say (codegen/cpu/subtarget.h's
// GemmTiling::columnsOuterMaxA). Work
// units are then panels, not rows, and there is no epilogue (a row of C is
// complete only at the end). gemm_bench, one thread, AVX2, against
// OpenBLAS: an LM head 128x256x50257 1.04-1.12x, 128x768x3072 1.03-1.06x;
// classifier heads 1x1280x1000 3.2x and 1x2048x1000 3.4-4.3x (OpenBLAS
// packs their whole B on every call); 32x2048x1024 1.16-1.26x.
inline constexpr int64_t kPackedMaxK = 1024;
inline constexpr int64_t kPackedMaxBytes = int64_t{2} << 20;
bool packedColumnsOuter(const GemmSpec& g);

// Which of the allowed GEMMs a target packs (the cpu target's
// codegen/cpu/gemm_emitter.h: packedGemmPolicy, per CPU); null: none.
using PackedGemmPolicy = std::function<bool(const GemmSpec&)>;

// Marks the Gemm steps of `plan` that are allowed and that `policy` packs
// (GemmSpec::packedB), and unmarks the others.
void markPackedGemms(Plan& plan, const PackedGemmPolicy& policy);

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
