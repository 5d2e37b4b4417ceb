// Lowering a function (after fusion) to an executable plan: every fused node
// and every other kernelizable node becomes a kernel launch, matmuls become
// GEMM steps (with their fused epilogue), reshapes become aliases, and ops
// with no kernel form yet run their reference implementation. Then the plan
// passes: in-place rewriting and buffer planning.
#pragma once

#include "ir/graph.h"
#include "runtime/plan.h"

namespace kfuse {

struct PlanOptions {
  // Let outputs write over inputs that die at their step (codegen/plan/inplace.h).
  bool inplace = true;
};

// `lower`: the plan of `g` before any plan pass (codegen/plan/plan_pass.h):
// buffers without offsets or lifetimes.
Expected<Plan> lowerToPlan(const Graph& g);

// Lowers `g` and runs the standard plan pipeline: in-place rewriting (unless
// disabled), then buffer planning. The plan comes back with every offset
// set, its regions sized and verified.
Expected<Plan> buildPlan(const Graph& g, const PlanOptions& opts = {});

}  // namespace kfuse
