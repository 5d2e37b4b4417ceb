#include "codegen/cpu/compile.h"

#include <algorithm>
#include <mutex>
#include <set>

#include <llvm/ADT/SmallVector.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/OptimizationLevel.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Passes/StandardInstrumentations.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/IPO/AlwaysInliner.h>
#include <llvm/Transforms/InstCombine/InstCombine.h>
#include <llvm/Transforms/Scalar/EarlyCSE.h>
#include <llvm/Transforms/Scalar/LICM.h>
#include <llvm/Transforms/Scalar/LoopPassManager.h>
#include <llvm/Transforms/Scalar/LoopUnrollPass.h>
#include <llvm/Transforms/Scalar/LowerExpectIntrinsic.h>
#include <llvm/Transforms/Scalar/SROA.h>
#include <llvm/Transforms/Scalar/SimplifyCFG.h>

#include "codegen/cpu/inline_math.h"
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

// The f32 functions kernels call that glibc's vector math (libmvec) has,
// in every variant the subtarget allows: LLVM 14's own LIBMVEC table lacks
// tanh, erf, expm1 and log1p, and maps powf, whose vector form is off by up
// to 33 ulp. Each of these is within 4 ulp of the exact result over all
// floats (CpuElementwise.VectorMathIsWithinFourUlp). Where the subtarget
// computes exponentials inline, emitFunctions has replaced them first.
struct VectorFunction {
  const char* scalar;  // as the IR calls it
  const char* name;    // libmvec's base name
};
constexpr VectorFunction kVectorMath[] = {
    {"llvm.exp.f32", "expf"}, {"llvm.log.f32", "logf"}, {"sinf", "sinf"},     {"cosf", "cosf"},
    {"tanhf", "tanhf"},       {"erff", "erff"},         {"expm1f", "expm1f"}, {"log1pf", "log1pf"},
};

// The table handed to LLVM: its entries reference these names, so they live
// as long as the process (one per variant and function, built once).
std::vector<llvm::VecDesc> vectorMathTable(const CpuSubtarget& subtarget) {
  static std::mutex mutex;
  static std::set<std::string> names;
  std::lock_guard<std::mutex> lock(mutex);
  std::vector<llvm::VecDesc> out;
  for (const VectorMathVariant& v : subtarget.vectorMath)
    for (const VectorFunction& f : kVectorMath) {
      const std::string& name = *names.insert(str("_ZGV", v.isa, "N", v.lanes, "v_", f.name)).first;
      out.push_back({f.scalar, name, llvm::ElementCount::getFixed(static_cast<unsigned>(v.lanes))});
    }
  return out;
}

// LLVM's four analysis managers, given `pb`'s default analyses and proxied
// to each other. An analysis a caller registers first (fam.registerPass)
// takes the place of the default.
struct AnalysisManagers {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;

  void registerWith(llvm::PassBuilder& pb) {
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
  }
};

}  // namespace

void optimizeModule(llvm::Module& module, llvm::TargetMachine& tm, const CpuSubtarget& subtarget, OptLevel level) {
  AnalysisManagers am;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = level >= OptLevel::O2;
  tuning.SLPVectorization = level >= OptLevel::O2;
  // Functions marked optnone are left alone (optimizeEpilogues holds the
  // hand-blocked code back that way); the new pass manager skips them only
  // through this instrumentation.
  llvm::PassInstrumentationCallbacks instrumentation;
  llvm::OptNoneInstrumentation optNone(/*DebugLogging=*/false);
  optNone.registerCallbacks(instrumentation);
  llvm::PassBuilder pb(&tm, tuning, llvm::None, &instrumentation);
  // Registered before the defaults, so this one is used: the loop vectorizer
  // may then call vector math instead of libm once per element (softmax's
  // exponentials were 16% of a transformer block's inference).
  llvm::TargetLibraryInfoImpl tlii(tm.getTargetTriple());
  tlii.addVectorizableFunctions(vectorMathTable(subtarget));
  am.fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  am.registerWith(pb);
  if (level == OptLevel::O0) {
    pb.buildO0DefaultPipeline(llvm::OptimizationLevel::O0).run(module, am.mam);
    return;
  }
  // The per-module default pipeline less its interprocedural passes: a
  // module holds kernels that call nothing but vector math and a packed
  // GEMM's epilogue, which is always inlined first. The inliner's walk of
  // the call graph, function attributes, IPSCCP and the like took a quarter
  // of the optimisation time of MobileNetV2's training kernels and changed
  // none of them: kernels, direct convolutions and packed GEMMs came out the
  // same, instruction for instruction (value names aside). The function
  // passes are the default pipeline's, in its order (LLVM 14's
  // buildModuleSimplificationPipeline, then its inliner's simplification).
  const llvm::OptimizationLevel llvmLevel = toLLVM(level);
  llvm::ModulePassManager mpm;
  mpm.addPass(llvm::AlwaysInlinerPass(/*InsertLifetimeIntrinsics=*/false));
  llvm::FunctionPassManager early;
  early.addPass(llvm::LowerExpectIntrinsicPass());
  early.addPass(llvm::SimplifyCFGPass());
  early.addPass(llvm::SROAPass());
  early.addPass(llvm::EarlyCSEPass());
  early.addPass(llvm::InstCombinePass());
  early.addPass(llvm::SimplifyCFGPass(llvm::SimplifyCFGOptions().convertSwitchRangeToICmp(true)));
  mpm.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(early)));
  mpm.addPass(llvm::createModuleToFunctionPassAdaptor(
      pb.buildFunctionSimplificationPipeline(llvmLevel, llvm::ThinOrFullLTOPhase::None)));
  mpm.addPass(pb.buildModuleOptimizationPipeline(llvmLevel));
  mpm.run(module, am.mam);
}

namespace {

// The batch's functions in a new module of `ctx` for `tm`, verified.
Expected<std::unique_ptr<llvm::Module>> emitFunctions(const CodeBatch& batch, llvm::LLVMContext& ctx,
                                                      llvm::TargetMachine& tm, const CpuSubtarget& subtarget) {
  auto module = std::make_unique<llvm::Module>("kfuse_kernels", ctx);
  module->setTargetTriple(tm.getTargetTriple().str());
  module->setDataLayout(tm.createDataLayout());
  auto forTarget = [&](llvm::Function* fn) {
    fn->addFnAttr("target-cpu", tm.getTargetCPU());
    fn->addFnAttr("target-features", tm.getTargetFeatureString());
    if (subtarget.preferVectorWidth) fn->addFnAttr("prefer-vector-width", std::to_string(subtarget.preferVectorWidth));
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
  for (llvm::Function& fn : *module)
    if (fn.hasFnAttribute(kEpilogueAttribute)) forTarget(&fn);  // optimised on their own first
  if (subtarget.inlineExp) inlineExponentials(*module);
  if (subtarget.inlineErf) inlineErfs(*module);
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*module, &os)) return Error("generated LLVM module does not verify: " + os.str());
  return module;
}

// Direct convolutions and packed GEMMs are blocked and vectorised as
// emitted: they need their accumulators in registers, their address
// arithmetic simplified and hoisted and their short constant loops
// unrolled, not loop vectorisation or unrolling, whose analyses of their
// straight-line blocks took most of a model's compile time
// (optimizeHandBlocked).
bool handBlocked(const CodeBatch& batch) { return batch.kernels.empty(); }

// A packed GEMM's or direct convolution's epilogue is an ordinary kernel
// (marked kEpilogueAttribute): it needs the loop vectoriser (at O1 GPT-2's
// GELU ran as a scalar tanhf per element, 2.6 of its MLP GEMM's 3.4 ms).
// So the epilogues are optimised first, alone, at `level` (every other
// function held back by optnone), and then inlined into the hand-blocked
// code, which the module's own pipeline optimises.
void optimizeEpilogues(llvm::Module& module, llvm::TargetMachine& tm, const CpuSubtarget& subtarget, OptLevel level) {
  std::vector<llvm::Function*> epilogues, others;
  for (llvm::Function& fn : module)
    if (!fn.isDeclaration()) (fn.hasFnAttribute(kEpilogueAttribute) ? epilogues : others).push_back(&fn);
  if (epilogues.empty()) return;
  for (llvm::Function* fn : others) {
    fn->addFnAttr(llvm::Attribute::OptimizeNone);
    fn->addFnAttr(llvm::Attribute::NoInline);
  }
  optimizeModule(module, tm, subtarget, level);
  for (llvm::Function* fn : others) {
    fn->removeFnAttr(llvm::Attribute::OptimizeNone);
    fn->removeFnAttr(llvm::Attribute::NoInline);
  }
  for (llvm::Function* fn : epilogues) fn->addFnAttr(llvm::Attribute::AlwaysInline);
}

// Hand-blocked code after its epilogues are inlined: accumulators to
// registers (SROA), address arithmetic folded and hoisted (EarlyCSE,
// InstCombine, LICM), short loops of constant count unrolled (a 3x3
// filter's rows), the blocks merged. LLVM's O1 function pipeline ran these
// and a dozen more passes (loop rotation, induction variables, reassociation,
// several InstCombines) that left the same code to within the noise, and
// took two thirds of such a module's optimisation: MobileViT-xxs compiled
// in 2.07 s on both cores with O1, 1.32 so; ResNet-50 1.78 and 1.19,
// ResNet-18 1.59 and 1.03, SqueezeNet 1.13 and 0.64; one thread, ResNet-18
// ran 32.54 and 32.49 ms, MobileNetV2 7.45 and 7.34, BERT 17.57 and 17.46
// (Zen 4, medians of 3-8 alternated runs).
void optimizeHandBlocked(llvm::Module& module, llvm::TargetMachine& tm) {
  AnalysisManagers am;
  llvm::PassBuilder pb(&tm);
  am.registerWith(pb);
  llvm::FunctionPassManager fpm;
  fpm.addPass(llvm::SROAPass());
  fpm.addPass(llvm::EarlyCSEPass(/*UseMemorySSA=*/true));
  fpm.addPass(llvm::InstCombinePass());
  fpm.addPass(llvm::SimplifyCFGPass());
  fpm.addPass(llvm::createFunctionToLoopPassAdaptor(llvm::LICMPass(), /*UseMemorySSA=*/true));
  fpm.addPass(llvm::createFunctionToLoopPassAdaptor(llvm::LoopFullUnrollPass(/*OptLevel=*/2)));
  fpm.addPass(llvm::SROAPass());
  fpm.addPass(llvm::InstCombinePass());
  fpm.addPass(llvm::SimplifyCFGPass());
  llvm::ModulePassManager mpm;
  mpm.addPass(llvm::AlwaysInlinerPass(/*InsertLifetimeIntrinsics=*/false));
  mpm.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(fpm)));
  mpm.run(module, am.mam);
}

void optimizeFor(llvm::Module& module, llvm::TargetMachine& tm, const CpuSubtarget& subtarget, bool handBlocked,
                 OptLevel level) {
  if (handBlocked) {
    optimizeEpilogues(module, tm, subtarget, level);
  } else {  // one pipeline for all: inlined first
    for (llvm::Function& fn : module)
      if (fn.hasFnAttribute(kEpilogueAttribute)) fn.addFnAttr(llvm::Attribute::AlwaysInline);
  }
  if (handBlocked && level != OptLevel::O0) return optimizeHandBlocked(module, tm);
  optimizeModule(module, tm, subtarget, level);
}

}  // namespace

Expected<std::unique_ptr<llvm::Module>> buildKernelModule(const CodeBatch& batch, llvm::LLVMContext& ctx,
                                                          llvm::TargetMachine& tm, const CpuSubtarget& subtarget,
                                                          OptLevel level) {
  KF_ASSIGN_OR_RETURN(std::unique_ptr<llvm::Module> module, emitFunctions(batch, ctx, tm, subtarget));
  optimizeFor(*module, tm, subtarget, handBlocked(batch), level);
  return module;
}

Expected<EmittedModule> emitModule(const CodeBatch& batch, const CpuSubtarget& subtarget) {
  EmittedModule out;
  KF_ASSIGN_OR_RETURN(out.tm, createTargetMachine(subtarget.target, /*pic=*/true));
  out.ctx = std::make_unique<llvm::LLVMContext>();
  KF_ASSIGN_OR_RETURN(out.module, emitFunctions(batch, *out.ctx, *out.tm, subtarget));
  out.handBlocked = handBlocked(batch);
  return out;
}

Expected<ObjectCode> emitObject(const CodeBatch& batch, const CpuSubtarget& subtarget, const CompileOptions& options) {
  KF_ASSIGN_OR_RETURN(EmittedModule emitted, emitModule(batch, subtarget));
  return emitObject(std::move(emitted), subtarget, options);
}

Expected<ObjectCode> emitObject(EmittedModule emitted, const CpuSubtarget& subtarget, const CompileOptions& options) {
  llvm::Module& module = *emitted.module;
  llvm::TargetMachine& tm = *emitted.tm;
  optimizeFor(module, tm, subtarget, emitted.handBlocked, options.optLevel);
  ObjectCode out;
  if (options.keepOptimizedIR) out.optimizedIR = printModule(module);
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager codegen;  // LLVM 14's code generator still runs on the legacy pass manager
  if (tm.addPassesToEmitFile(codegen, os, nullptr, options.assembly ? llvm::CGFT_AssemblyFile : llvm::CGFT_ObjectFile))
    return Error(str("LLVM cannot emit object files for ", subtarget.target.triple));
  codegen.run(module);
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
