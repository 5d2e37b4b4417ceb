// kfuse inspect: what a package holds, read with the runtime's own loader
// (so a package inspect accepts is one the runtime accepts).
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "codegen/plan/plan_stats.h"
#include "ir/support/strings.h"
#include "ir/support/file_io.h"
#include "ir/weights.h"
#include "runtime/package/package.h"
#include "exec/io/plan_io.h"
#include "exec/packed_filter.h"
#include "exec/packed_gemm.h"
#include "tools/kfuse/commands.h"

namespace kfuse::cli {
namespace {

struct InspectArgs {
  std::string package;
  bool source = false, plan = false;
};

std::string signature(const std::vector<PackageTensor>& ts) {
  std::vector<std::string> parts;
  for (const PackageTensor& t : ts) parts.push_back(str("%", t.name, " : ", formatType(t.type)));
  return parts.empty() ? "(none)" : join(parts);
}

std::string phases(const Plan& p) {
  PlanStats s = planStats(p);
  std::vector<std::string> parts;
  for (Phase ph : {Phase::Forward, Phase::Loss, Phase::Backward, Phase::Optimizer})
    if (uint64_t n = s.phases[static_cast<size_t>(ph)].launches) parts.push_back(str(phaseName(ph), " ", n));
  return str(s.launches(), " (", join(parts), "; ", s.fusedKernels, " fused, ", s.libraryCalls, " library calls, ",
             s.referenceOps, " reference ops)");
}

void printHeader(const Package& pkg) {
  const PackageMeta& m = pkg.meta();
  std::cout << "package " << pkg.name() << ": format " << m.formatVersion << ", written by kfuse " << m.kfuseVersion
            << ", " << pkg.fileBytes() << " bytes\n";
  if (m.target == "cpu")
    std::cout << "target: cpu (" << m.cpuTriple << ", " << m.cpuName << ", " << m.cpuFeatures.size() << " features)\n";
  else
    std::cout << "target: cuda (" << m.cudaArch << ")\n";
  std::cout << "model: " << m.model << "\noptions: " << m.options << "\npipeline: " << m.pipeline << "\n";
  if (m.training)
    std::cout << "training: @" << m.training->step << " (loss " << m.training->loss << ", optimizer "
              << m.training->optimizer << "), evaluation @" << m.training->forward << "\n";
  size_t trainable = 0, bytes = 0;
  for (const PackageParam& p : m.params) {
    trainable += p.trainable;
    bytes += p.type.byteSize();
  }
  std::cout << "parameters: " << m.params.size() << " (" << trainable << " trainable), " << bytes << " bytes\n";
  std::cout << "sections:\n";
  for (const auto& [name, size] : pkg.sections()) std::cout << "  " << std::left << std::setw(20) << name << size << " bytes\n";
}

void printFunction(const Package& pkg, const PackageFunction& f, const InspectArgs& a) {
  const Plan& p = *f.plan;
  std::cout << "\nfunction @" << f.name << "\n  inputs:  " << signature(f.inputs) << "\n  outputs: "
            << signature(f.outputs) << "\n  launches per run: " << phases(p) << "\n  memory: arena " << p.arenaBytes
            << " bytes, resident " << p.residentBytes << " bytes (" << p.buffers.size() << " buffers)"
            << (f.packedGemms.empty() ? "" : str(", packed GEMM weights ", packedBytes(p, f.packedGemms), " bytes"))
            << (f.packedFilters.empty() ? "" : str(", packed filters ", packedFilterBytes(p, f.packedFilters), " bytes"))
            << "\n";
  std::vector<std::string> names;
  for (const kernel::Kernel& k : p.kernels) names.push_back(k.name);
  std::cout << "  kernels (" << names.size() << "): " << join(names) << "\n";
  if (pkg.meta().target == "cpu") {
    std::vector<std::string> convs;
    for (size_t s : f.directConvs) {
      const bool inside = std::find(f.convEpilogues.begin(), f.convEpilogues.end(), s) != f.convEpilogues.end();
      const bool packed = std::find(f.packedFilters.begin(), f.packedFilters.end(), s) != f.packedFilters.end();
      convs.push_back(
          str("step ", s, " (", p.steps[s].name, packed ? ", packed filter" : "", inside ? ", epilogue inside" : "", ")"));
    }
    std::cout << "  direct convolutions (" << convs.size() << ")" << (convs.empty() ? "" : ": " + join(convs)) << "\n";
    std::vector<std::string> gemms;
    for (size_t s : f.packedGemms)
      gemms.push_back(str("step ", s, " (", p.steps[s].name, packedEpilogue(p, s) ? ", epilogue inside" : "", ")"));
    std::cout << "  packed GEMMs (" << gemms.size() << ")" << (gemms.empty() ? "" : ": " + join(gemms)) << "\n";
  }
  if (f.cuda) std::cout << "  " << cuda::describeProgram(*f.cuda);
  if (a.plan) std::cout << printPlan(p);
  if (!a.source) return;
  if (f.cuda) {
    std::cout << "  CUDA C:\n" << f.source << "\n";
    return;
  }
  for (const kernel::Kernel& k : p.kernels) std::cout << kernel::printKernel(k) << "\n";
}

// A plan dump of `kfuse opt --dump-ir-dir` (tools/kfuse/plan_stage.h): the
// plan read back with the package reader, offsets optional, printed with
// its kernels.
int inspectPlanDump(const std::string& path) {
  auto json = readFile(path);
  if (!json) return reportError("inspect", json.error());
  std::string weights = path.substr(0, path.size() - std::string_view(".json").size()) + ".safetensors";
  TensorMap constants;
  if (std::filesystem::exists(weights)) {
    auto read = readWeightsFile(weights);
    if (!read) return reportError("inspect", read.error());
    constants = std::move(*read);
  }
  auto plan = parsePlan(*json, constants, PlanOffsets::Optional);
  if (!plan) return reportError("inspect", plan.error().context(path));
  std::cout << printPlan(*plan);
  for (const kernel::Kernel& k : plan->kernels) std::cout << "\n" << kernel::printKernel(k) << "\n";
  return 0;
}

int runInspect(const InspectArgs& a) {
  if (a.package.ends_with(".plan.json")) return inspectPlanDump(a.package);
  auto pkg = Package::load(a.package);
  if (!pkg) return reportError("inspect", pkg.error());
  printHeader(**pkg);
  for (const PackageFunction& f : (*pkg)->functions()) printFunction(**pkg, f, a);
  if (a.source && !(*pkg)->cpuLLVMIR().empty()) std::cout << "\nLLVM IR (optimised):\n" << (*pkg)->cpuLLVMIR() << "\n";
  return 0;
}

}  // namespace

Action addInspectCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "inspect",
      "Show what a package (.kfpkg) holds: target, functions, plans, kernels; or read back a plan dump (.plan.json)");
  auto a = std::make_shared<InspectArgs>();
  cmd->add_option("package", a->package, "The package, or a plan dump of kfuse opt --dump-ir-dir")->required();
  cmd->add_flag("--plan", a->plan, "Print each plan: buffers with offsets, sizes and lifetimes, then steps");
  cmd->add_flag("--source", a->source,
                "Print each kernel's code: kernel IR (and LLVM IR when kept) for cpu, CUDA C for cuda");
  return [a] { return runInspect(*a); };
}

}  // namespace kfuse::cli
