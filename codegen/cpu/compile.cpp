#include "codegen/cpu/compile.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/OptimizationLevel.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>

#include "codegen/cpu/llvm_emitter.h"
#include "ir/support/strings.h"

namespace kfuse::cpu {
namespace {

llvm::OptimizationLevel toLLVM(OptLevel level) {
  switch (level) {
    case OptLevel::O0: return llvm::OptimizationLevel::O0;
    case OptLevel::O1: return llvm::OptimizationLevel::O1;
    case OptLevel::O2: return llvm::OptimizationLevel::O2;
    case OptLevel::O3: return llvm::OptimizationLevel::O3;
  }
  return llvm::OptimizationLevel::O3;
}

// glibc's vector math (libmvec, glibc 2.35+) for the f32 functions kernels
// call, with 4 (SSE), 8 (AVX2) and 16 (AVX-512) lanes: LLVM 14's own LIBMVEC table lacks
// tanh, erf, expm1 and log1p, and maps powf, whose vector form is off by up
// to 33 ulp. Each of these is within 4 ulp of the exact result over all
// floats (CpuElementwise.VectorMathIsWithinFourUlp).
#define KFUSE_VECTOR_MATH(scalar, name)                                          \
  {scalar, "_ZGVbN4v_" name, llvm::ElementCount::getFixed(4)},                   \
  {scalar, "_ZGVdN8v_" name, llvm::ElementCount::getFixed(8)},                   \
  {                                                                              \
    scalar, "_ZGVeN16v_" name, llvm::ElementCount::getFixed(16)                  \
  }
const llvm::VecDesc kVectorMath[] = {
    KFUSE_VECTOR_MATH("llvm.exp.f32", "expf"), KFUSE_VECTOR_MATH("llvm.log.f32", "logf"),
    KFUSE_VECTOR_MATH("sinf", "sinf"),         KFUSE_VECTOR_MATH("cosf", "cosf"),
    KFUSE_VECTOR_MATH("tanhf", "tanhf"),       KFUSE_VECTOR_MATH("erff", "erff"),
    KFUSE_VECTOR_MATH("expm1f", "expm1f"),     KFUSE_VECTOR_MATH("log1pf", "log1pf"),
};
#undef KFUSE_VECTOR_MATH

}  // namespace

bool usesVectorMath(const llvm::Triple& triple) {
  return triple.getArch() == llvm::Triple::x86_64 && triple.isOSLinux() && triple.isGNUEnvironment();
}

void optimizeModule(llvm::Module& module, llvm::TargetMachine& tm, OptLevel level) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = level >= OptLevel::O2;
  tuning.SLPVectorization = level >= OptLevel::O2;
  llvm::PassBuilder pb(&tm, tuning);
  // Registered before the defaults, so this one is used: the loop vectorizer
  // may then call vector math instead of libm once per element (softmax's
  // exponentials were 16% of a transformer block's inference).
  llvm::TargetLibraryInfoImpl tlii(tm.getTargetTriple());
  if (usesVectorMath(tm.getTargetTriple())) tlii.addVectorizableFunctions(kVectorMath);
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = level == OptLevel::O0 ? pb.buildO0DefaultPipeline(llvm::OptimizationLevel::O0)
                                                      : pb.buildPerModuleDefaultPipeline(toLLVM(level));
  mpm.run(module, mam);
}

Expected<std::unique_ptr<llvm::Module>> buildKernelModule(const CodeBatch& batch, llvm::LLVMContext& ctx,
                                                          llvm::TargetMachine& tm, OptLevel level) {
  auto module = std::make_unique<llvm::Module>("kfuse_kernels", ctx);
  module->setTargetTriple(tm.getTargetTriple().str());
  module->setDataLayout(tm.createDataLayout());
  // LLVM's x86 cost model prefers 256-bit vectors on AVX-512 CPUs (for the
  // clock drops of older ones); kernels ask for 512: the attention softmax
  // step of the encoder block went from 106 to 85 us (16-lane exponentials),
  // the MLP training step 3.95 to 3.81 ms, the CNN unchanged (A/B).
  const bool avx512 = tm.getTargetFeatureString().contains("+avx512f");
  auto forTarget = [&](llvm::Function* fn) {
    fn->addFnAttr("target-cpu", tm.getTargetCPU());
    fn->addFnAttr("target-features", tm.getTargetFeatureString());
    if (avx512) fn->addFnAttr("prefer-vector-width", "512");
  };
  for (const kernel::Kernel& k : batch.kernels) {
    KF_ASSIGN_OR_RETURN(llvm::Function * fn, emitKernel(k, ctx, *module));
    forTarget(fn);
  }
  for (const DirectConv& c : batch.convs) {
    KF_ASSIGN_OR_RETURN(llvm::Function * fn, emitDirectConv(c, *module));
    forTarget(fn);
  }
  for (const PackedGemm& g : batch.gemms) {
    KF_ASSIGN_OR_RETURN(llvm::Function * fn, emitPackedGemm(g, *module));
    forTarget(fn);
  }
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*module, &os)) return Error("generated LLVM module does not verify: " + os.str());
  optimizeModule(*module, tm, level);
  return module;
}

Expected<ObjectCode> emitObject(const CodeBatch& batch, const CpuTarget& target, const CompileOptions& options) {
  KF_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> tm, createTargetMachine(target, /*pic=*/true));
  llvm::LLVMContext ctx;
  KF_ASSIGN_OR_RETURN(std::unique_ptr<llvm::Module> module, buildKernelModule(batch, ctx, *tm, options.optLevel));
  ObjectCode out;
  if (options.keepOptimizedIR) out.optimizedIR = printModule(*module);
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager codegen;  // LLVM 14's code generator still runs on the legacy pass manager
  if (tm->addPassesToEmitFile(codegen, os, nullptr, llvm::CGFT_ObjectFile))
    return Error(str("LLVM cannot emit object files for ", target.triple));
  codegen.run(*module);
  out.bytes.assign(buffer.begin(), buffer.end());
  return out;
}

std::string printModule(const llvm::Module& module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, nullptr);
  return os.str();
}

}  // namespace kfuse::cpu
