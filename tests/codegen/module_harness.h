// Whole modules through the cpu target against the reference interpreter,
// for tests of code generated per plan step (packed GEMMs and direct
// convolutions with their epilogues).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "codegen/backend.h"
#include "codegen/plan/plan_builder.h"
#include "ir/graph.h"
#include "ir/tensor.h"

namespace kfuse::testing {

// A tensor of sin(0.61 i + phase): deterministic, neighbours different.
Tensor waveTensor(const TensorType& t, double phase);

// `text` parsed and prepared for the cpu target (its pipeline, fusion
// included); null, with a test failure, when either fails.
std::unique_ptr<Module> preparedModule(const char* text);

// Runs the first function on the cpu target (buffers poisoned as they die,
// `threads` threads, 0: the default) and in the interpreter; "" when every
// output agrees to within `tol`, absolute and relative (f32 rounding of the
// sums on the way).
std::string cpuMatchesInterpreter(Module& m, const std::vector<Tensor>& args, int threads = 0, double tol = 1e-5);

// Each step of `kind` in the first function's plan for this machine's CPU
// (the cpu target's plan options) with the verdict of
// `rule` (packedEpilogue, convEpilogue: Expected<T>(const Plan&, size_t)) on
// it: "" where it holds, else its error.
template <typename Rule>
std::vector<std::string> verdicts(const Module& m, StepKind kind, Rule rule) {
  auto options = cpuPlanOptions("");
  EXPECT_TRUE(options) << options.error().message();
  auto plan = buildPlan(*m.functions().front(), options ? *options : PlanOptions{});
  EXPECT_TRUE(plan) << plan.error().message();
  std::vector<std::string> out;
  for (size_t s = 0; plan && s < plan->steps.size(); ++s) {
    if (plan->steps[s].kind() != kind) continue;
    auto e = rule(*plan, s);
    out.push_back(e ? "" : e.error().message());
  }
  return out;
}

}  // namespace kfuse::testing
