#include "tools/kfuse/plan_stage.h"

#include <algorithm>
#include <ostream>

#include "codegen/plan/plan_builder.h"
#include "codegen/plan/plan_pass.h"
#include "ir/support/file_io.h"
#include "ir/support/strings.h"
#include "ir/weights.h"
#include "passes/pass_manager.h"
#include "exec/io/plan_io.h"

namespace kfuse::cli {
namespace {

// The pipeline's top-level entries: commas inside {options} do not split.
std::vector<std::string> entries(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : text) {
    if (c == ',' && depth == 0) {
      out.push_back(std::move(cur));
      cur.clear();
      continue;
    }
    depth += c == '{' ? 1 : c == '}' ? -1 : 0;
    cur += c;
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

std::string passName(const std::string& entry) { return entry.substr(0, entry.find('{')); }

}  // namespace

Expected<std::pair<std::string, std::string>> splitPipeline(std::string_view text) {
  std::vector<std::string> graph, plan;
  for (const std::string& e : entries(text)) {
    bool isPlan = findPlanPass(passName(e)) != nullptr;
    if (!isPlan && !plan.empty())
      return Error(str("pipeline: graph pass '", passName(e), "' after plan pass '", passName(plan.back()),
                       "' (plan passes run on the lowered plan, after every graph pass)"));
    (isPlan ? plan : graph).push_back(e);
  }
  return std::make_pair(join(graph, ","), join(plan, ","));
}

Expected<std::vector<Plan>> runPlanStage(const Module& m, std::string_view planPasses, const PlanOptions& lowering,
                                         const InstrumentationFlags& instr, int firstDump, std::ostream& out) {
  std::vector<Plan> plans;
  KF_ASSIGN_OR_RETURN(auto passes, parsePlanPipeline(planPasses));  // stateless: one set for every function
  Instrumentation instrumentation = instr.toInstrumentation();
  instrumentation.out = &out;
  std::vector<PassRecord> records;
  for (const auto& f : m.functions()) {
    KF_ASSIGN_OR_RETURN(Plan plan, lowerToPlan(*f, lowering));
    Status s = runPlanPasses(plan, passes, PassContext{}, instrumentation, "lower", firstDump, records);
    if (!s) return s.error().context(str("@", f->name()));
    plans.push_back(std::move(plan));
  }
  if (instrumentation.timePasses) printPassTiming(records, "Plan pass");
  return plans;
}

}  // namespace kfuse::cli
