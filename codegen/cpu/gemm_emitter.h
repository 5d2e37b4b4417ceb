// Packed GEMMs for the cpu target: a plan's Gemm step whose B never changes
// while the plan runs (exec/packed_gemm.h's rule) as one generated
// function, specialised to its shapes, reading B from the copy the runner
// packed once.
//
// The function walks C in blocks of `rows` rows times `vectors` vectors of
// `lanes` columns, kept in vector registers: per step of k, one packed row
// of B per vector and one broadcast element of A per row, folded with fused
// multiply-adds. Rows go outermost: a block's rows of A stay in the
// first-level cache while it passes over every panel of packed B. Where B
// is too large for that (exec/packed_gemm.h's packedColumnsOuter), panels
// go outermost instead: each block of a panel's columns stays in cache
// while every block of rows passes over it. C is written once, never
// cleared first; columns past n are masked off (the packed panel's padding
// is zero).
//
// With an epilogue (exec/packed_gemm.h's packedEpilogue), the function
// runs it over each block of rows as soon as the block is complete, while
// those rows are in cache: the epilogue kernel cut to the block
// (exec/row_blocks.h), emitted beside the GEMM and inlined.
//
// ABI: llvm_emitter.h's `void <symbol>(void** buffers, int64_t begin, int64_t end)`, the
// work units rows, or panels when columns go outermost (exec/parallel.h's
// packedGemmWork), with buffers
// {a, packed b, c} (f32), then the epilogue kernel's buffers in its order.
#pragma once

#include <string>
#include <vector>

#include <llvm/IR/Function.h>
#include <llvm/IR/Module.h>

#include "codegen/cpu/subtarget.h"
#include "exec/packed_gemm.h"
#include "exec/row_blocks.h"
#include "ir/support/expected.h"
#include "exec/plan.h"

namespace kfuse::cpu {

// One GEMM to generate: the step's spec, the name its function is emitted
// under (symbolName(name)) and its tiling (any valid tiling gives the same
// bits; the subtarget's is the fast one).
struct PackedGemm {
  std::string name;
  GemmSpec spec;
  GemmTiling tiling;
  // The step's epilogue when the GEMM runs it (packedEpilogue), else null.
  const kernel::Kernel* epilogue = nullptr;
  kernel::RowBlocks blocks;
};

// GEMM step `step` of `plan` (packedGemmFits) to generate, with its
// epilogue where packedEpilogue says the GEMM runs it.
PackedGemm packedGemmOf(const Plan& plan, size_t step, std::string name, const GemmTiling& t);

// The plan-building policy that packs the GEMMs `t` runs faster than BLAS
// (exec/packed_gemm.h's PackedGemmPolicy): every one that runs rows outer,
// and those that run columns outer over an A of at most
// GemmTiling::columnsOuterMaxA.
PackedGemmPolicy packedGemmPolicy(const GemmTiling& t);

// Adds the function to `module`. Fails, naming the GEMM, when the spec has
// no packed form (a batch, a transposed A, an empty dim), the tiling does
// not divide the panel, or the symbol is taken.
Expected<llvm::Function*> emitPackedGemm(const PackedGemm& gemm, llvm::Module& module);

// One line for kernel listings ("packed B, blocks of 12 rows x 2x16
// columns, epilogue per block of rows"; "packed B, columns outer, ...").
std::string describePackedGemm(const GemmSpec& g, const GemmTiling& t, bool epilogue);

}  // namespace kfuse::cpu
