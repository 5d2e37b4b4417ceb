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
#include "passes/pass_manager.h"

namespace kfuse {

// A plan pass has the graph passes' interface (passes/pass.h): run() says
// whether the plan changed or why it is wrong, and the same instrumented
// driver runs it (passes/pass_manager.h's runInstrumented).
using PlanPass = PassOn<Plan>;

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

// Runs `passes` over `plan` with `instr`'s printing (under "plan @F"),
// numbered dumps (`NN-<inputLabel>.F.plan.json` at `firstDump`, then
// `NN-after-P.F.plan.json`, the package plan format with its constants in
// .plan.safetensors), timing into `records` and --stop-after.
Status runPlanPasses(Plan& plan, const std::vector<std::unique_ptr<PlanPass>>& passes, const PassContext& ctx,
                     const Instrumentation& instr, const std::string& inputLabel, int firstDump,
                     std::vector<PassRecord>& records);

// What every executor and package runs after lowering: `inplace` (unless
// --no-inplace), then `plan-buffers`, which gives every buffer its offset.
std::string standardPlanPipeline(bool inplace);

}  // namespace kfuse
