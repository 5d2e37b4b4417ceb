// Lowering a function (after fusion) to an executable plan: every fused node
// and every other kernelizable node becomes a kernel launch, matmuls become
// GEMM steps (with their fused epilogue), reshapes become aliases, and ops
// with no kernel form yet run their reference implementation. Then the plan
// passes: in-place rewriting and buffer planning.
#pragma once

#include <functional>

#include "ir/graph.h"
#include "exec/packed_filter.h"
#include "exec/packed_gemm.h"
#include "exec/plan.h"

namespace kfuse {

// Whether a convolution step (of `dtype` results) gets a workspace buffer
// for im2col's patch matrix (runtime/cpu_conv.h), which only the cpu
// runner's im2col + GEMM path reads.
using ConvWorkspacePolicy = std::function<bool(const ConvSpec&, DType)>;

// No convolution gets one (the cuda target's: its convolutions are
// generated kernels).
inline ConvWorkspacePolicy noConvWorkspace() {
  return [](const ConvSpec&, DType) { return false; };
}

struct PlanOptions {
  // Let outputs write over inputs that die at their step (codegen/plan/inplace.h).
  bool inplace = true;
  // Null: every convolution gets one. Targets say which of theirs need one
  // (Backend::convWorkspace): the cpu target's direct convolutions and the
  // cuda target's convolutions do not.
  ConvWorkspacePolicy convWorkspace;
  // Which convolutions read their filter packed (exec/packed_filter.h's
  // markPackedFilters, run last by buildPlan); null: none. The cpu target's
  // says per CPU (Backend::packFilters).
  PackedFilterPolicy packFilters;
  // Which GEMMs run over a packed B (exec/packed_gemm.h's markPackedGemms,
  // run last by buildPlan); null: none. The cpu target's says per CPU
  // (Backend::packGemms).
  PackedGemmPolicy packGemms;
};

// `lower`: the plan of `g` before any plan pass (codegen/plan/plan_pass.h):
// buffers without offsets or lifetimes.
Expected<Plan> lowerToPlan(const Graph& g, const PlanOptions& opts = {});

// Lowers `g` and runs the standard plan pipeline: in-place rewriting (unless
// disabled), then buffer planning. The plan comes back with every offset
// set, its regions sized and verified.
Expected<Plan> buildPlan(const Graph& g, const PlanOptions& opts = {});

}  // namespace kfuse
