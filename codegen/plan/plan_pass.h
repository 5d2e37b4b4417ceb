// Passes over a lowered function's plan. A standard pipeline is graph passes
// ending in `fuse,dce` (passes/pass_registry.h), then `lower` (the fused
// graph becomes a plan: kernels, GEMM and convolution steps, aliases), then
// these, in order: `inplace` (codegen/plan/inplace.h) and `plan-buffers`
// (codegen/plan/buffer_plan.h). They run on the plan rather than the graph
// because what they decide exists only after lowering: GEMM and convolution
// intermediates, convolution workspaces, reshape views as aliases, and the
// kernels' index maps that make an in-place write legal.
//
// `kfuse opt --passes=...,fuse,inplace,plan-buffers` runs them with the
// same instrumentation as graph passes (print before/after, numbered dumps).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "exec/plan.h"

namespace kfuse {

class PlanPass {
 public:
  virtual ~PlanPass() = default;
  virtual std::string_view name() const = 0;
  // Transforms `p`; returns whether anything changed, or why the plan is wrong.
  virtual Expected<bool> run(Plan& p) = 0;
};

struct PlanPassInfo {
  std::string name;
  std::string summary;
  std::unique_ptr<PlanPass> (*create)();
};

const std::vector<PlanPassInfo>& allPlanPasses();
const PlanPassInfo* findPlanPass(std::string_view name);

// Parses "inplace,plan-buffers"; an unknown name is an error listing the
// plan passes. Plan passes take no options.
Expected<std::vector<std::unique_ptr<PlanPass>>> parsePlanPipeline(std::string_view text);

// What every executor and package runs after lowering: `inplace` (unless
// --no-inplace), then `plan-buffers`, which gives every buffer its offset.
std::string standardPlanPipeline(bool inplace);

}  // namespace kfuse
