#include "codegen/cpu/target.h"

#include <mutex>
#include <set>

#include <llvm/ADT/StringMap.h>
#include <llvm/ADT/Triple.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/SubtargetFeature.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/X86TargetParser.h>

#include "ir/support/strings.h"

namespace kfuse::cpu {

CpuTarget CpuTarget::host() {
  llvm::SubtargetFeatures features;
  llvm::StringMap<bool> hostFeatures;
  if (llvm::sys::getHostCPUFeatures(hostFeatures))
    for (const auto& f : hostFeatures) features.AddFeature(f.getKey(), f.getValue());
  return {llvm::sys::getProcessTriple(), llvm::sys::getHostCPUName().str(), features.getString()};
}

Expected<CpuTarget> CpuTarget::named(const std::string& cpu) {
  CpuTarget t{llvm::sys::getProcessTriple(), cpu, ""};
  KF_ASSIGN_OR_RETURN(auto tm, createTargetMachine(t, /*pic=*/false));
  if (!tm->getMCSubtargetInfo()->isCPUStringValid(cpu))
    return Error(str("unknown CPU '", cpu, "' for ", t.triple, " (llc-14 -mcpu=help lists the names)"));
  return t;
}

Expected<std::vector<std::string>> enabledFeatures(const CpuTarget& target) {
  std::set<std::string> on;
  if (llvm::Triple(target.triple).isX86()) {
    llvm::SmallVector<llvm::StringRef, 64> implied;
    llvm::X86::getFeaturesForCPU(target.cpu, implied);
    for (llvm::StringRef f : implied) on.insert(f.str());
  }
  // The feature string wins over the CPU name: "+avx2" adds, "-avx512f" removes.
  // (Named: getFeatures() returns a reference into the object, which a
  // temporary in the range-for would free before the loop ran.)
  llvm::SubtargetFeatures parsed(target.features);
  for (const std::string& f : parsed.getFeatures()) {
    if (f.size() < 2) continue;
    if (f[0] == '+') on.insert(f.substr(1));
    if (f[0] == '-') on.erase(f.substr(1));
  }
  return std::vector<std::string>(on.begin(), on.end());
}

void initializeNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

Expected<std::unique_ptr<llvm::TargetMachine>> createTargetMachine(const CpuTarget& target, bool pic) {
  initializeNativeTarget();
  std::string problem;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(target.triple, problem);
  if (!t) return Error(str("no LLVM target for ", target.triple, ": ", problem));
  llvm::TargetOptions options;
  llvm::Optional<llvm::Reloc::Model> reloc;
  if (pic) reloc = llvm::Reloc::PIC_;
  std::unique_ptr<llvm::TargetMachine> tm(t->createTargetMachine(target.triple, target.cpu, target.features, options,
                                                                 reloc, llvm::None, llvm::CodeGenOpt::Aggressive));
  if (!tm) return Error(str("LLVM cannot create a target machine for ", target.triple, " (", target.cpu, ")"));
  return tm;
}

}  // namespace kfuse::cpu
