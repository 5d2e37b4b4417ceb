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

Status dumpPlan(const Plan& p, const std::string& dir, int index, const std::string& label) {
  KF_ASSIGN_OR_RETURN(std::string base, dumpPath(dir, index, label, str(".", p.function, ".plan")));
  std::vector<std::pair<std::string, const Tensor*>> constants;
  std::string json = serializePlan(p, constants);
  if (!constants.empty()) KF_RETURN_IF_ERROR(writeWeightsFile(base + ".safetensors", constants));
  return writeFileAtomically(base + ".json", json);
}

void printPlanText(std::ostream& out, const Plan& p, std::string_view pass, bool after, bool changed) {
  out << "// ----- plan @" << p.function << (after ? " after " : " before ") << pass;
  if (after) out << (changed ? " (changed)" : " (unchanged)");
  out << " -----\n" << printPlan(p) << "\n";
}

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
  for (const auto& f : m.functions()) {
    KF_ASSIGN_OR_RETURN(Plan plan, lowerToPlan(*f, lowering));
    int index = firstDump;
    if (!instr.dumpDir.empty()) KF_RETURN_IF_ERROR(dumpPlan(plan, instr.dumpDir, index, "lower"));
    for (const auto& pass : passes) {
      std::string name(pass->name());
      auto named = [&](const std::vector<std::string>& list) {
        return std::find(list.begin(), list.end(), name) != list.end();
      };
      if (instr.printBeforeAll || named(instr.printBefore)) printPlanText(out, plan, name, false, false);
      auto changed = pass->run(plan);
      if (!changed) return changed.error().context(str("plan pass '", name, "' on @", f->name()));
      if (instr.printAfterAll || named(instr.printAfter) || (instr.printAfterChange && *changed))
        printPlanText(out, plan, name, true, *changed);
      if (!instr.dumpDir.empty()) KF_RETURN_IF_ERROR(dumpPlan(plan, instr.dumpDir, ++index, "after-" + name));
      if (name == instr.stopAfter) break;
    }
    plans.push_back(std::move(plan));
  }
  return plans;
}

}  // namespace kfuse::cli
