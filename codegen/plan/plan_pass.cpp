#include "codegen/plan/plan_pass.h"

#include <algorithm>

#include "codegen/plan/buffer_plan.h"
#include "codegen/plan/copy_elision.h"
#include "codegen/plan/inplace.h"
#include "exec/io/plan_io.h"
#include "ir/support/file_io.h"
#include "ir/support/strings.h"
#include "ir/weights.h"

namespace kfuse {
namespace {

class CopyElisionPass : public PlanPass {
 public:
  std::string_view name() const override { return "elide-copies"; }
  PassResult run(Plan& p, const PassContext&) override { return elideCopies(p) > 0; }
};

class InPlacePass : public PlanPass {
 public:
  std::string_view name() const override { return "inplace"; }
  PassResult run(Plan& p, const PassContext&) override { return rewriteInPlace(p) > 0; }
};

class PlanBuffersPass : public PlanPass {
 public:
  std::string_view name() const override { return "plan-buffers"; }
  PassResult run(Plan& p, const PassContext&) override {
    KF_RETURN_IF_ERROR(planBuffers(p).status());
    return true;
  }
};

template <class P>
std::unique_ptr<PlanPass> make() {
  return std::make_unique<P>();
}

}  // namespace

const std::vector<PlanPassInfo>& allPlanPasses() {
  static const std::vector<PlanPassInfo> passes = {
      {"elide-copies",
       "drops a concat's copy of a whole value, its writer storing it in place (plan)",
       make<CopyElisionPass>},
      {"inplace", "lets a step's output take over the storage of an input that dies there (plan)", make<InPlacePass>},
      {"plan-buffers",
       "lifetimes, arena offsets (best fit over four orders), the resident layout, and the verifier (plan)",
       make<PlanBuffersPass>},
  };
  return passes;
}

const PlanPassInfo* findPlanPass(std::string_view name) {
  for (const PlanPassInfo& p : allPlanPasses())
    if (p.name == name) return &p;
  return nullptr;
}

Expected<std::vector<std::unique_ptr<PlanPass>>> parsePlanPipeline(std::string_view text) {
  std::vector<std::unique_ptr<PlanPass>> out;
  for (size_t i = 0; i <= text.size();) {
    size_t end = std::min(text.find(',', i), text.size());
    std::string_view name = text.substr(i, end - i);
    i = end + 1;
    if (name.empty()) continue;
    const PlanPassInfo* info = findPlanPass(name);
    if (!info) {
      std::vector<std::string> known;
      for (const PlanPassInfo& p : allPlanPasses()) known.push_back(p.name);
      return Error(str("unknown plan pass '", name, "' (plan passes: ", join(known), ")"));
    }
    out.push_back(info->create());
  }
  return out;
}

std::string standardPlanPipeline(bool inplace) {
  return inplace ? "elide-copies,inplace,plan-buffers" : "elide-copies,plan-buffers";
}

Status runPlanPasses(Plan& plan, const std::vector<std::unique_ptr<PlanPass>>& passes, const PassContext& ctx,
                     const Instrumentation& instr, const std::string& inputLabel, int firstDump,
                     std::vector<PassRecord>& records) {
  std::vector<PipelineStep<Plan>> steps;
  for (const auto& pass : passes)
    steps.push_back({std::string(pass->name()), [&ctx, p = pass.get()](Plan& pl) { return p->run(pl, ctx); }});
  UnitHooks<Plan> hooks;
  hooks.what = str("plan @", plan.function);
  hooks.print = [](std::ostream& os, const Plan& p) { os << printPlan(p); };
  hooks.dump = [](Plan& p, const std::string& dir, int index, const std::string& label) -> Status {
    KF_ASSIGN_OR_RETURN(std::string base, dumpPath(dir, index, label, str(".", p.function, ".plan")));
    std::vector<std::pair<std::string, const Tensor*>> constants;
    std::string json = serializePlan(p, constants);
    if (!constants.empty()) KF_RETURN_IF_ERROR(writeWeightsFile(base + ".safetensors", constants));
    return writeFileAtomically(base + ".json", json);
  };
  return runInstrumented(plan, steps, instr, hooks, inputLabel, firstDump, records);
}

}  // namespace kfuse
