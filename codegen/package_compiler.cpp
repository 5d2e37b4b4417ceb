#include "codegen/package_compiler.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <span>
#include <thread>

#include "codegen/backend.h"
#include "codegen/plan/plan_builder.h"
#include "codegen/plan/plan_pass.h"
#include "ir/support/file_io.h"
#include "ir/support/strings.h"
#include "exec/packed_gemm.h"

#if KFUSE_HAS_LLVM_JIT
#include "codegen/cpu/code_identity.h"
#include "codegen/cpu/compile.h"
#include "codegen/cpu/llvm_emitter.h"
#include "codegen/cpu/shared_object.h"
#include "codegen/cpu/target.h"
#endif
#if KFUSE_HAS_CUDA
#include "codegen/cuda/compiler.h"
#endif

#ifndef KFUSE_VERSION
#define KFUSE_VERSION "unknown"
#endif

namespace kfuse {
namespace {

std::vector<PackageTensor> signatureOf(const std::vector<const Value*>& values) {
  std::vector<PackageTensor> out;
  for (const Value* v : values) out.push_back({v->name(), v->type()});
  return out;
}

struct Signature {
  std::vector<PackageTensor> inputs, outputs;
};

Signature signatureOf(const Graph& g) {
  std::vector<const Value*> args, results;
  for (const auto& a : g.arguments()) args.push_back(a.get());
  for (const Value* r : g.results()) results.push_back(r);
  return {signatureOf(args), signatureOf(results)};
}

size_t threadCount(int requested) {
  if (requested > 0) return static_cast<size_t>(requested);
  return std::max<size_t>(1, std::thread::hardware_concurrency());
}

// Reports units as they finish, from any thread.
class Progress {
 public:
  Progress(const PackageCompileOptions& o, size_t total) : fn_(o.progress), total_(total) {}
  void done(const std::string& unit) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++done_;
    if (fn_) fn_(done_, total_, unit);
  }

 private:
  std::function<void(size_t, size_t, const std::string&)> fn_;
  size_t total_, done_ = 0;
  std::mutex mutex_;
};

#if KFUSE_HAS_LLVM_JIT
// The machine a cpu package is compiled for: --cpu's, or this one.
Expected<cpu::CpuSubtarget> cpuSubtargetOf(const PackageCompileOptions& o) {
  KF_ASSIGN_OR_RETURN(cpu::CpuTarget target, cpu::cpuTargetFor(o.cpu));
  return cpu::subtargetOf(target);
}

// Every kernel, direct convolution and packed GEMM of every plan, named by
// kernelSymbol and stepSymbol, in units compiled in parallel (one LLVM module each),
// linked into one shared object. A function whose code an earlier one has
// (code_identity.h: a transformer's layers, the forward kernels @main and
// @train_step share) is not compiled again: its symbol is an alias.
Status compileCpu(std::vector<PackageFunction>& fns, const PackageCompileOptions& o,
                  const cpu::CpuSubtarget& subtarget, PackageContents& out, CompiledPackage& stats) {
  out.meta.cpuFeatures = subtarget.features;
  out.meta.cpuTriple = subtarget.target.triple;
  out.meta.cpuName = subtarget.target.cpu;
  std::vector<kernel::Kernel> kernels;
  std::vector<cpu::DirectConv> convs;
  std::vector<cpu::PackedGemm> gemms;
  std::map<std::string, std::string> compiledAs;          // code name -> the symbol that has it
  std::vector<std::pair<std::string, std::string>> aliases;  // symbol -> the symbol whose code it shares
  auto fresh = [&](const std::string& code, std::string_view kind, const std::string& name) {
    auto [at, inserted] = compiledAs.emplace(cpu::codeName(kind, code), cpu::symbolName(name));
    if (!inserted) aliases.emplace_back(cpu::symbolName(name), at->second);
    return inserted;
  };
  const cpu::ConvTiling& tiling = subtarget.conv;
  const cpu::GemmTiling& gemmTiling = subtarget.gemm;
  for (size_t f = 0; f < fns.size(); ++f) {
    const Plan& plan = *fns[f].plan;
    for (size_t k = 0; k < plan.kernels.size(); ++k) {
      kernel::Kernel named = plan.kernels[k];
      named.name = packageKernelName(f, k);
      stats.kernels++;
      if (fresh(cpu::codeOf(named), "kernel", named.name)) kernels.push_back(std::move(named));
    }
    fns[f].directConvs = cpu::directConvSteps(plan, tiling);
    for (size_t s : fns[f].directConvs) {
      cpu::DirectConv conv = cpu::directConvOf(plan, s, packageStepName(f, s), tiling);
      if (conv.epilogue) fns[f].convEpilogues.push_back(s);
      if (conv.packedFilter) fns[f].packedFilters.push_back(s);
      stats.directConvs++;
      if (fresh(cpu::codeOf(conv), "conv", conv.name)) convs.push_back(std::move(conv));
    }
    fns[f].packedGemms = packedGemmSteps(plan);
    for (size_t s : fns[f].packedGemms) {
      cpu::PackedGemm gemm = cpu::packedGemmOf(plan, s, packageStepName(f, s), gemmTiling);
      if (gemm.epilogue) fns[f].packedEpilogues.push_back(s);
      stats.packedGemms++;
      if (fresh(cpu::codeOf(gemm), "gemm", gemm.name)) gemms.push_back(std::move(gemm));
    }
  }
  stats.shared = aliases.size();
  // Units of a few kernels each: enough to keep every thread busy, few
  // enough that each LLVM module is worth its fixed cost. Convolutions and
  // GEMMs, far larger once generated, go one per unit.
  size_t threads = threadCount(o.threads);
  size_t chunks = std::clamp<size_t>((kernels.size() + 3) / 4, 1, 4 * threads);
  std::vector<cpu::CodeBatch> parts;
  for (size_t c = 0, begin = 0; c < chunks; ++c) {
    size_t end = kernels.size() * (c + 1) / chunks;
    if (end > begin) parts.push_back({std::span<const kernel::Kernel>(kernels.data() + begin, end - begin), {}});
    begin = end;
  }
  for (const cpu::DirectConv& c : convs) parts.push_back({{}, std::span<const cpu::DirectConv>(&c, 1)});
  for (const cpu::PackedGemm& g : gemms) parts.push_back({{}, {}, std::span<const cpu::PackedGemm>(&g, 1)});
  if (parts.empty()) parts.push_back({});
  std::vector<Expected<cpu::ObjectCode>> objects(parts.size(), Error("not compiled"));
  Progress progress(o, parts.size());
  cpu::CompileOptions co;
  co.keepOptimizedIR = o.keepLLVMIR;
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < parts.size();) {
      objects[i] = cpu::emitObject(parts[i], subtarget, co);
      const cpu::CodeBatch& p = parts[i];
      progress.done(!p.convs.empty()   ? str("LLVM module ", i + 1, " (direct convolution @", p.convs[0].name, ")")
                    : !p.gemms.empty() ? str("LLVM module ", i + 1, " (packed GEMM @", p.gemms[0].name, ")")
                                       : str("LLVM module ", i + 1, " (", p.kernels.size(), " kernels)"));
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 0; t < std::min(threads, parts.size()); ++t) pool.emplace_back(work);
  for (std::thread& t : pool) t.join();
  std::vector<std::string> bytes;
  for (auto& obj : objects) {
    if (!obj) return obj.error();
    bytes.push_back(std::move(obj->bytes));
    out.cpuLLVMIR += obj->optimizedIR;
  }
  KF_ASSIGN_OR_RETURN(out.cpuSharedObject, cpu::linkSharedObject(bytes, aliases));
  stats.units = parts.size();
  return Status::ok();
}
#endif

#if KFUSE_HAS_CUDA
Status compileCuda(std::vector<PackageFunction>& fns, const PackageCompileOptions& o, PackageContents& out,
                   CompiledPackage& stats) {
  cuda::CudaCompileOptions co;
  co.arch = o.arch;
  co.compileThreads = o.threads;
  out.meta.cudaArch = o.arch;
  Progress progress(o, fns.size());
  for (PackageFunction& f : fns) {
    KF_ASSIGN_OR_RETURN(cuda::EmittedProgram emitted, cuda::emitProgram(*f.plan, co));
    f.source = cuda::programSource(emitted);
    KF_ASSIGN_OR_RETURN(cuda::CudaProgram program, cuda::compileEmitted(std::move(emitted), co));
    stats.kernels += f.plan->kernels.size();
    stats.units += program.modules.size();
    f.cuda = std::move(program);
    progress.done(str("@", f.name, " (", f.cuda->modules.size(), " NVRTC programs)"));
  }
  return Status::ok();
}
#endif

// The module's parameters (optimizer state included) with their data.
Status collectParams(const Module& m, PackageContents& out) {
  for (const auto& p : m.params()) {
    if (!p->data) return Error(str("parameter @", p->name, " has no data (give the model its weights)"));
    out.meta.params.push_back({p->name, p->type, p->trainable});
    out.params.emplace_back(p->name, p->data.get());
  }
  return Status::ok();
}

}  // namespace

Status CompiledPackage::write(const std::string& path) const {
  return writeFileAtomically(path, [&](const ByteSink& sink) { file->write(sink); });
}

std::string CompiledPackage::bytes() const { return file->finish(); }

uint64_t CompiledPackage::size() const { return file->size(); }

Expected<CompiledPackage> compilePackage(std::unique_ptr<Module> model, const PackageCompileOptions& o) {
  if (o.target != "cpu" && o.target != "cuda")
    return Error(str("kfuse compile makes cpu and cuda packages, not '", o.target, "'"));
  Module& m = *model;
  if (m.functions().empty()) return Error("the model defines no function");
  PackageContents out;
  out.meta.kfuseVersion = KFUSE_VERSION;
  out.meta.target = o.target;
  out.meta.model = o.model;
  out.meta.options = o.commandLine;
  KF_ASSIGN_OR_RETURN(Backend backend, backendFor(o.target, {.fuse = o.fuse, .layout = o.layout, .cpu = o.cpu}));
  // The whole pipeline, plan passes included: `kfuse opt --passes=` runs it.
  out.meta.pipeline = str(backend.pipeline, ",", standardPlanPipeline(o.inplace));
  // Signatures as written, before passes rename values.
  std::vector<std::pair<std::string, Signature>> functions;
  for (const auto& g : m.functions()) functions.emplace_back(g->name(), signatureOf(*g));
  if (o.train) {
    TrainerOptions t = o.training;
    t.target = o.target;
    t.fuse = o.fuse;
    t.layout = o.layout;
    t.instrumentation = o.instrumentation;
    KF_ASSIGN_OR_RETURN(TrainingFunctions fns, buildTrainingStep(m, t));
    // The forward keeps its signature as written; @train_step's is autodiff's.
    auto fwd = std::find_if(functions.begin(), functions.end(),
                            [&](const auto& f) { return f.first == fns.forward->name(); });
    Signature forwardSig = fwd != functions.end() ? fwd->second : signatureOf(*fns.forward);
    functions.clear();
    functions.emplace_back(fns.forward->name(), std::move(forwardSig));
    functions.emplace_back(fns.step->name(), signatureOf(*fns.step));
    out.meta.pipeline = "autodiff," + out.meta.pipeline;
    out.meta.training = PackageTraining{fns.step->name(), fns.forward->name(), o.loss, o.optimizer,
                                        o.training.training.loss != LossKind::None};
  } else {
    KF_RETURN_IF_ERROR(prepareModule(m, backend, o.instrumentation));
  }
  // Planned for the machine the package is for (the backend's --cpu): its
  // direct convolutions need no im2col workspace.
  PlanOptions planning = backend.planOptions(o.inplace);
  CompiledPackage stats;
  for (auto& [name, sig] : functions) {
    const Graph* g = m.findFunction(name);
    KF_ASSIGN_OR_RETURN(Plan plan, buildPlan(*g, planning));
    stats.launches += plan.launches();
    out.functions.push_back({name, std::move(sig.inputs), std::move(sig.outputs),
                             std::make_shared<const Plan>(std::move(plan)), std::nullopt, ""});
  }
  KF_RETURN_IF_ERROR(collectParams(m, out));
  if (o.target == "cpu") {
#if KFUSE_HAS_LLVM_JIT
    KF_ASSIGN_OR_RETURN(cpu::CpuSubtarget subtarget, cpuSubtargetOf(o));
    KF_RETURN_IF_ERROR(compileCpu(out.functions, o, subtarget, out, stats));
#else
    return Error("cpu packages need the LLVM backend (configure with -DKFUSE_WITH_LLVM=ON)");
#endif
  } else {
#if KFUSE_HAS_CUDA
    KF_RETURN_IF_ERROR(compileCuda(out.functions, o, out, stats));
#else
    return Error("cuda packages need the CUDA toolkit (configure with -DKFUSE_WITH_CUDA=ON)");
#endif
  }
  stats.functions = out.functions.size();
  stats.model = std::move(model);
  stats.contents = std::make_shared<const PackageContents>(std::move(out));
  stats.file = std::make_shared<const package::ContainerWriter>(packageWriter(*stats.contents));
  return stats;
}

}  // namespace kfuse
