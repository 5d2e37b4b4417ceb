// kfuse stats: launches and bytes moved per phase, without fusion and with
// it, read off the plans the runtime executes.
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "codegen/backend.h"
#include "codegen/plan/plan_builder.h"
#include "codegen/plan/plan_stats.h"
#include "ir/specialize.h"
#include "ir/support/strings.h"
#include "codegen/trainer.h"
#include "tools/kfuse/commands.h"
#include "tools/kfuse/model_loader.h"
#include "tools/kfuse/plan_args.h"

namespace kfuse::cli {
namespace {

struct StatsArgs : PlanModelArgs {
  int64_t batch = 0;
};

// The plan of the model's inference forward, or of its training step.
Expected<PlanStats> statsOf(const StatsArgs& a, bool fuse) {
  KF_ASSIGN_OR_RETURN(CompiledPlan c, compileModelPlan(a, a.batch, fuse));
  return planStats(c.plan);
}

std::string mb(uint64_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(3) << static_cast<double>(bytes) / 1e6 << " MB";
  return os.str();
}

nlohmann::json toJson(const PlanStats& s) {
  nlohmann::json phases;
  for (Phase p : {Phase::Forward, Phase::Loss, Phase::Backward, Phase::Optimizer}) {
    const PhaseStats& ps = s.phases[static_cast<size_t>(p)];
    phases[std::string(phaseName(p))] = {{"launches", ps.launches}, {"bytes_moved", ps.bytesMoved}};
  }
  return {{"phases", phases},
          {"launches", s.launches()},
          {"kernel_launches", s.kernelLaunches},
          {"fused_kernels", s.fusedKernels},
          {"library_calls", s.libraryCalls},
          {"reference_ops", s.referenceOps},
          {"collectives", s.collectives},
          {"collective_bytes", s.collectiveBytes},
          {"bytes_moved", s.bytesMoved()}};
}

void printTable(const StatsArgs& a, const PlanStats& unfused, const PlanStats& fused) {
  std::cout << a.model << (a.train ? " (training step" : " (inference") << ", target " << a.target << ")\n";
  std::cout << std::left << std::setw(12) << "phase" << std::right << std::setw(10) << "unfused" << std::setw(8)
            << "fused" << "\n";
  for (Phase p : {Phase::Forward, Phase::Loss, Phase::Backward, Phase::Optimizer}) {
    if (!a.train && p != Phase::Forward) continue;
    std::cout << std::left << std::setw(12) << phaseName(p) << std::right << std::setw(10)
              << unfused.phases[static_cast<size_t>(p)].launches << std::setw(8)
              << fused.phases[static_cast<size_t>(p)].launches << "\n";
  }
  double ratio = fused.launches() ? static_cast<double>(unfused.launches()) / static_cast<double>(fused.launches()) : 0;
  std::cout << std::left << std::setw(12) << "total" << std::right << std::setw(10) << unfused.launches() << std::setw(8)
            << fused.launches() << "   (" << std::fixed << std::setprecision(2) << ratio << "x fewer launches)\n"
            << std::defaultfloat;
  std::cout << "fused plan: " << fused.kernelLaunches << " kernel bundles, " << fused.libraryCalls
            << " library calls (GEMMs and convolutions, with their epilogues; on cpu either may be generated\n"
            << "code instead: kfuse opt --print-kernels says which), " << fused.referenceOps << " reference ops; "
            << fused.fusedKernels << " launches compute fused groups\n"
            << "(a fused launch counts in the phase of the first op it computes)\n";
  if (fused.collectives > 0)
    std::cout << "data parallel: " << fused.collectives << " all-reduce buckets (a start and a wait step each), "
              << mb(fused.collectiveBytes) << " exchanged per rank and step\n";
  double bytesRatio = fused.bytesMoved() ? static_cast<double>(unfused.bytesMoved()) / static_cast<double>(fused.bytesMoved()) : 0;
  std::cout << "bytes moved (estimate): " << mb(unfused.bytesMoved()) << " unfused, " << mb(fused.bytesMoved())
            << " fused (" << std::fixed << std::setprecision(2) << bytesRatio << "x less)\n" << std::defaultfloat;
}

int runStats(const StatsArgs& a) {
  auto unfused = statsOf(a, false);
  if (!unfused) return reportError("stats", unfused.error());
  auto fused = statsOf(a, true);
  if (!fused) return reportError("stats", fused.error());
  if (a.json) {
    std::cout << nlohmann::json{{"model", a.model}, {"train", a.train}, {"target", a.target},
                                {"unfused", toJson(*unfused)}, {"fused", toJson(*fused)}}
                     .dump(2)
              << "\n";
    return 0;
  }
  printTable(a, *unfused, *fused);
  return 0;
}

}  // namespace

Action addStatsCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("stats", "Launches and bytes moved per phase, without fusion and with it");
  auto a = std::make_shared<StatsArgs>();
  addPlanModelOptions(cmd, *a, "is counted");
  cmd->add_option("--batch", a->batch, "Re-type the model for this batch size first");
  return [a] { return runStats(*a); };
}

}  // namespace kfuse::cli
