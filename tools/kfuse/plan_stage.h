// kfuse opt's plan stage: the plan passes at the end of a --passes pipeline
// (codegen/plan/plan_pass.h: inplace, plan-buffers) run on each function's
// lowered plan with the graph passes' instrumentation. --print-ir-before/
// after print the plan's text; --dump-ir-dir continues the numbering with
// NN-lower.FUNC.plan.json and NN-after-PASS.FUNC.plan.json, the plan as
// packages store it (exec/io/plan_io.h; `kfuse inspect` reads it),
// its constants beside it in .plan.safetensors.
#pragma once

#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "codegen/plan/plan_builder.h"
#include "ir/graph.h"
#include "exec/plan.h"
#include "tools/kfuse/instrumentation_flags.h"

namespace kfuse::cli {

// "cse,fuse{exclude=a,b},inplace,plan-buffers" -> {"cse,fuse{exclude=a,b}",
// "inplace,plan-buffers"}. A graph pass after a plan pass is an error.
Expected<std::pair<std::string, std::string>> splitPipeline(std::string_view text);

// Lowers every function of `m` and runs `planPasses` on each plan with the
// instrumentation; dumps are numbered from `firstDump`. Printed plans go to
// `out`. Returns the plans, one per function.
// `lowering` says how functions are lowered (the target's plan options).
Expected<std::vector<Plan>> runPlanStage(const Module& m, std::string_view planPasses, const PlanOptions& lowering,
                                         const InstrumentationFlags& instr, int firstDump, std::ostream& out);

}  // namespace kfuse::cli
