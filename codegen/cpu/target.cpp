#include "codegen/cpu/target.h"

#include <iostream>
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

namespace {

CpuTarget detectHost() {
  const std::string triple = llvm::sys::getProcessTriple();
  llvm::StringMap<bool> hostFeatures;
  if (!llvm::sys::getHostCPUFeatures(hostFeatures) || hostFeatures.empty()) {
    const char* baseline = llvm::Triple(triple).isX86() ? "x86-64" : "generic";
    std::cerr << "kfuse: note: LLVM cannot read this CPU's features; generating code for the " << baseline
              << " baseline (--cpu names a CPU)\n";
    return {triple, baseline, ""};
  }
  llvm::SubtargetFeatures features;
  for (const auto& f : hostFeatures) features.AddFeature(f.getKey(), f.getValue());
  return {triple, llvm::sys::getHostCPUName().str(), features.getString()};
}

}  // namespace

CpuTarget CpuTarget::host() {
  static const CpuTarget host = detectHost();  // once per process: the CPU does not change
  return host;
}

Expected<CpuTarget> cpuTargetFor(std::string_view cpu) {
  if (cpu.empty() || cpu == "native") return CpuTarget::host();
  return CpuTarget::named(std::string(cpu));
}

Expected<CpuTarget> CpuTarget::named(const std::string& cpu) {
  CpuTarget t{llvm::sys::getProcessTriple(), cpu, ""};
  initializeNativeTarget();
  std::string problem;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(t.triple, problem);
  if (!target) return Error(str("no LLVM target for ", t.triple, ": ", problem));
  // Asked of the generic subtarget: one made for an unknown name warns on
  // stderr before it can be asked.
  std::unique_ptr<llvm::MCSubtargetInfo> generic(target->createMCSubtargetInfo(t.triple, "", ""));
  if (!generic || !generic->isCPUStringValid(cpu))
    return Error(str("unknown CPU '", cpu, "' for ", t.triple, " (llc-14 -mcpu=help lists the names)"));
  return t;
}

Expected<std::vector<std::string>> enabledFeatures(const CpuTarget& target) {
  const bool x86 = llvm::Triple(target.triple).isX86();
  // A feature and, as LLVM applies feature flags, everything it implies
  // (enabled: avx2 brings avx, sse4.2, ...; disabled: avx512f takes
  // avx512bw, avx512vl, ... with it). getFeaturesForCPU lists a CPU's
  // features without what they imply (x86-64-v4: avx512bw, no avx512f).
  llvm::StringMap<bool> state;
  auto apply = [&](llvm::StringRef f, bool enable) {
    state[f] = enable;
    if (x86) llvm::X86::updateImpliedFeatures(f, enable, state);
  };
  if (x86) {
    llvm::SmallVector<llvm::StringRef, 64> named;
    llvm::X86::getFeaturesForCPU(target.cpu, named);
    for (llvm::StringRef f : named) apply(f, true);
  }
  // The feature string, in order, wins over the CPU name: "+avx2" adds,
  // "-avx512f" removes. (Named: getFeatures() returns a reference into the
  // object, which a temporary in the range-for would free before the loop
  // ran.)
  llvm::SubtargetFeatures parsed(target.features);
  for (const std::string& f : parsed.getFeatures())
    if (f.size() >= 2 && (f[0] == '+' || f[0] == '-')) apply(llvm::StringRef(f).drop_front(), f[0] == '+');
  std::set<std::string> on;
  for (const auto& entry : state)
    if (entry.getValue()) on.insert(entry.getKey().str());
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
