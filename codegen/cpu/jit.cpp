#include "codegen/cpu/jit.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/Support/Error.h>

#include "ir/support/strings.h"

namespace kfuse::cpu {
namespace {

Error fromLLVM(llvm::Error e, const std::string& what) { return Error(what + ": " + llvm::toString(std::move(e))); }

llvm::orc::JITTargetMachineBuilder machineBuilder(const CpuTarget& target) {
  llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(target.triple)};
  jtmb.setCPU(target.cpu);
  jtmb.setFeatures(target.features);
  jtmb.setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
  return jtmb;
}

}  // namespace

CpuJit::CpuJit(CpuSubtarget subtarget, std::unique_ptr<llvm::orc::LLJIT> jit, std::unique_ptr<llvm::TargetMachine> tm)
    : subtarget_(std::move(subtarget)), jit_(std::move(jit)), tm_(std::move(tm)) {}

CpuJit::~CpuJit() = default;

Expected<std::unique_ptr<CpuJit>> CpuJit::create(const CpuTarget& target) {
  initializeNativeTarget();
  KF_ASSIGN_OR_RETURN(CpuSubtarget subtarget, subtargetOf(target));
  KF_RETURN_IF_ERROR(checkRunsHere(subtarget));
  auto tm = machineBuilder(target).createTargetMachine();
  if (!tm) return fromLLVM(tm.takeError(), "cannot create the host target machine");
  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(machineBuilder(target)).create();
  if (!jit) return fromLLVM(jit.takeError(), "cannot create the LLVM JIT");
  // Kernels call libm and, after some optimisations, libc (memset).
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process) return fromLLVM(process.takeError(), "cannot search the process for symbols");
  (*jit)->getMainJITDylib().addGenerator(std::move(*process));
  // Vectorised kernels call glibc's vector math, which kfuse itself does not
  // link (subtarget.h's vectorMath).
  if (!subtarget.vectorMath.empty()) {
    auto mvec = llvm::orc::DynamicLibrarySearchGenerator::Load("libmvec.so.1", (*jit)->getDataLayout().getGlobalPrefix());
    if (!mvec) return fromLLVM(mvec.takeError(), "cannot load glibc's vector math library");
    (*jit)->getMainJITDylib().addGenerator(std::move(*mvec));
  }
  return std::unique_ptr<CpuJit>(new CpuJit(std::move(subtarget), std::move(*jit), std::move(*tm)));
}

Expected<CompiledKernels> CpuJit::compile(const CodeBatch& batch, const CompileOptions& options) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto ctx = std::make_unique<llvm::LLVMContext>();
  KF_ASSIGN_OR_RETURN(std::unique_ptr<llvm::Module> module, buildKernelModule(batch, *ctx, *tm_, subtarget_, options.optLevel));
  CompiledKernels out;
  if (options.keepOptimizedIR) out.optimizedIR = printModule(*module);

  auto dylib = jit_->createJITDylib(str("kfuse_batch_", batches_++));
  if (!dylib) return fromLLVM(dylib.takeError(), "cannot create a JITDylib");
  dylib->addToLinkOrder(jit_->getMainJITDylib());
  llvm::orc::ThreadSafeModule tsm(std::move(module), std::move(ctx));
  if (llvm::Error e = jit_->addIRModule(*dylib, std::move(tsm))) return fromLLVM(std::move(e), "cannot add kernels");
  auto lookup = [&](const std::string& name, const char* what, std::vector<KernelFn>& into) -> Status {
    auto symbol = jit_->lookup(*dylib, symbolName(name));
    if (!symbol) return fromLLVM(symbol.takeError(), str(what, " @", name));
    into.push_back(reinterpret_cast<KernelFn>(static_cast<uintptr_t>(symbol->getAddress())));
    return Status::ok();
  };
  for (const kernel::Kernel& k : batch.kernels) KF_RETURN_IF_ERROR(lookup(k.name, "kernel", out.functions));
  for (const DirectConv& c : batch.convs) KF_RETURN_IF_ERROR(lookup(c.name, "convolution", out.convs));
  for (const PackedGemm& g : batch.gemms) KF_RETURN_IF_ERROR(lookup(g.name, "GEMM", out.gemms));
  return out;
}

}  // namespace kfuse::cpu
