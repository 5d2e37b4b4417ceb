// Lowering a function (after fusion) to an executable plan: every fused node
// and every other kernelizable node becomes a kernel launch, matmuls become
// GEMM steps (with their fused epilogue), reshapes become aliases, and ops
// with no kernel form yet run their reference implementation.
#pragma once

#include "ir/graph.h"
#include "runtime/plan.h"

namespace kfuse {

Expected<Plan> buildPlan(const Graph& g);

}  // namespace kfuse
