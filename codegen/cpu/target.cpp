#include "codegen/cpu/target.h"

#include <mutex>

#include <llvm/ADT/StringMap.h>
#include <llvm/MC/SubtargetFeature.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/TargetSelect.h>

#include "ir/support/strings.h"

namespace kfuse::cpu {

CpuTarget CpuTarget::host() {
  llvm::SubtargetFeatures features;
  llvm::StringMap<bool> hostFeatures;
  if (llvm::sys::getHostCPUFeatures(hostFeatures))
    for (const auto& f : hostFeatures) features.AddFeature(f.getKey(), f.getValue());
  return {llvm::sys::getProcessTriple(), llvm::sys::getHostCPUName().str(), features.getString()};
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
