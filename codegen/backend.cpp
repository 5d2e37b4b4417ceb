#include "codegen/backend.h"

#include <cassert>
#include <map>

#include "codegen/kernel/lower.h"
#include "codegen/plan/plan_builder.h"
#include "ir/support/strings.h"
#include "passes/layout_cost.h"
#include "passes/pass_registry.h"
#include "runtime/cpu_conv.h"
#include "runtime/cpu_runner.h"
#include "runtime/threads.h"
#include "exec/conv_epilogue.h"
#include "exec/packed_filter.h"
#include "exec/packed_gemm.h"

#if KFUSE_HAS_LLVM_JIT
#include "codegen/cpu/jit.h"
#endif
#if KFUSE_HAS_CUDA
#include "codegen/cuda/compiler.h"
#include "codegen/cuda/executor.h"
#include "codegen/cuda/target.h"
#endif

namespace kfuse {
namespace {

constexpr const char* kSimplify = "constant-fold,canonicalize,cse,dce";

class InterpreterExecutor : public Executor {
 public:
  std::string_view target() const override { return "interpreter"; }
  Expected<InterpreterResult> run(const Graph& fn, const std::vector<Tensor>& args) override {
    return interpret(fn, args);
  }
};

// Plans each function once (fused nodes and lone kernelizable ops become
// kernels, matmuls GEMM steps) and runs it on the CPU.
class CpuExecutor : public Executor {
 public:
  CpuExecutor(const ExecutionOptions& opts, PlanOptions planning) : opts_(opts), planning_(std::move(planning)) {
    planning_.inplace = opts_.inplace;
  }
  std::string_view target() const override { return "cpu"; }
  Expected<InterpreterResult> run(const Graph& fn, const std::vector<Tensor>& args) override {
    KF_ASSIGN_OR_RETURN(CpuRunner * runner, runnerFor(fn));
    return runner->run(*fn.module(), args);
  }
  // The state stays in the runner when the loss can be checked before any
  // launch writes a parameter (the plans of the suite's models, batch-norm
  // statistics included, write them all after the loss) or is not checked;
  // otherwise the step runs as run() does, and a non-finite loss leaves the
  // module's old values to be uploaded again (CpuRunner::runTrainingStep).
  Expected<InterpreterResult> runTrainingStep(const Graph& fn, const std::vector<Tensor>& args, int guard,
                                              bool& kept) override {
    KF_ASSIGN_OR_RETURN(CpuRunner * runner, runnerFor(fn));
    return runner->runTrainingStep(*fn.module(), args, guard, kept);
  }
  void syncState(const Graph& fn, Module& m) override {
    if (auto it = runners_.find(&fn); it != runners_.end()) {
      [[maybe_unused]] Status s = it->second->syncState(m);
      assert(s && "the CPU's copies out of its own memory do not fail");
    }
  }
  uint64_t launches() const override {
    uint64_t total = 0;
    for (const auto& [fn, runner] : runners_) total += runner->launches();
    return total;
  }
  uint64_t deviceBytesAllocated() const override {
    uint64_t total = 0;
    for (const auto& [fn, runner] : runners_) total += runner->bytesAllocated();
    return total;
  }
  const Plan* planFor(const Graph& fn) override {
    auto r = runnerFor(fn);
    return r ? &(*r)->plan() : nullptr;
  }
  Expected<StepTimes> stepTimes(const Graph& fn) const override {
    if (!opts_.profile) return Error("profiling is off (ExecutionOptions::profile)");
    auto it = runners_.find(&fn);
    if (it == runners_.end()) return Error(str("@", fn.name(), " has not run on the cpu target"));
    return it->second->stepTimes();
  }

 private:
  Expected<CpuRunner*> runnerFor(const Graph& fn) {
    auto it = runners_.find(&fn);
    if (it != runners_.end()) return it->second.get();
    KF_ASSIGN_OR_RETURN(Plan plan, buildPlan(fn, planning_));
    KF_ASSIGN_OR_RETURN(CpuFunctions compiled, compile(plan));
    CpuRunnerOptions ro;
    ro.poison = opts_.poison;
    ro.profile = opts_.profile;
    ro.threads = opts_.threads;
    ro.communicator = opts_.communicator;
    auto runner = std::make_unique<CpuRunner>(std::make_shared<const Plan>(std::move(plan)), std::move(compiled), ro);
    return runners_.emplace(&fn, std::move(runner)).first->second.get();
  }

#if KFUSE_HAS_LLVM_JIT
  // All of a plan's kernels, direct convolutions and packed GEMMs in one
  // LLVM module, compiled once.
  Expected<CpuFunctions> compile(const Plan& plan) {
    if (!jit_) {
      KF_ASSIGN_OR_RETURN(cpu::CpuTarget target, cpu::cpuTargetFor(opts_.cpu));
      KF_ASSIGN_OR_RETURN(jit_, cpu::CpuJit::create(target));
    }
    const cpu::ConvTiling& convTiling = jit_->subtarget().conv;
    const cpu::GemmTiling& gemmTiling = jit_->subtarget().gemm;
    std::vector<size_t> convSteps = cpu::directConvSteps(plan, convTiling);
    std::vector<size_t> gemmSteps = packedGemmSteps(plan);
    std::vector<cpu::DirectConv> convs;
    for (size_t s : convSteps) convs.push_back(cpu::directConvOf(plan, s, str("conv_step", s), convTiling));
    std::vector<cpu::PackedGemm> gemms;
    for (size_t s : gemmSteps) gemms.push_back(cpu::packedGemmOf(plan, s, str("gemm_step", s), gemmTiling));
    if (plan.kernels.empty() && convs.empty() && gemms.empty()) return CpuFunctions{};
    KF_ASSIGN_OR_RETURN(cpu::CompiledKernels compiled, jit_->compile(cpu::CodeBatch{plan.kernels, convs, gemms}));
    CpuFunctions code{std::move(compiled.functions), std::vector<KernelFn>(plan.steps.size(), nullptr)};
    for (size_t i = 0; i < convSteps.size(); ++i) code.steps[convSteps[i]] = compiled.convs[i];
    for (size_t i = 0; i < gemmSteps.size(); ++i) code.steps[gemmSteps[i]] = compiled.gemms[i];
    return code;
  }
  std::unique_ptr<cpu::CpuJit> jit_;
#else
  // Without LLVM the kernel interpreter runs every kernel.
  Expected<CpuFunctions> compile(const Plan&) { return CpuFunctions{}; }
#endif

  ExecutionOptions opts_;
  PlanOptions planning_;  // the subtarget's: the JIT's tilings decide which steps run generated code, and how
  std::map<const Graph*, std::unique_ptr<CpuRunner>> runners_;
};

}  // namespace

std::vector<std::string> availableTargets() {
#if KFUSE_HAS_CUDA
  return {"cpu", "cuda", "interpreter"};
#else
  return {"cpu", "interpreter"};
#endif
}
std::string defaultTarget() { return "cpu"; }

namespace {

#if KFUSE_HAS_LLVM_JIT
Expected<cpu::CpuSubtarget> cpuSubtargetFor(std::string_view cpu) {
  KF_ASSIGN_OR_RETURN(cpu::CpuTarget target, cpu::cpuTargetFor(cpu));
  return cpu::subtargetOf(target);
}
#endif

// The kernels, then how the CPU runs each GEMM and convolution.
Expected<std::string> kernelIR(const Plan& plan, std::string_view cpu) {
  std::string out;
  for (const kernel::Kernel& k : plan.kernels) out += kernel::printKernel(k) + "\n";
#if KFUSE_HAS_LLVM_JIT
  KF_ASSIGN_OR_RETURN(cpu::CpuSubtarget subtarget, cpuSubtargetFor(cpu));
  const cpu::ConvTiling& tiling = subtarget.conv;
  const cpu::GemmTiling& gemmTiling = subtarget.gemm;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& step = plan.steps[s];
    if (step.kind() == StepKind::Gemm) {
      out += str("gemm step ", s, " (", step.name, "): ");
      if (!packedGemmFits(plan, s)) {
        out += "BLAS\n";
        continue;
      }
      auto epilogue = packedEpilogue(plan, s);
      out += cpu::describePackedGemm(step.gemm(), gemmTiling, static_cast<bool>(epilogue));
      if (!step.kernels.empty() && !epilogue) out += str("; epilogue after the GEMM: ", epilogue.error().message());
      out += "\n";
      continue;
    }
    if (step.kind() != StepKind::Conv) continue;
    DType dt = plan.buffers[static_cast<size_t>(step.conv().y)].type.dtype;
    out += str("conv step ", s, " (", step.name, "): ");
    if (!cpu::directConvFits(step.conv(), dt, tiling)) {
      out += step.conv().direction == ConvDirection::Forward
                 ? std::string("im2col + GEMM\n")
                 : str("im2col + GEMM, ", convDirectionName(step.conv().direction), "\n");
      continue;
    }
    auto epilogue = convEpilogue(plan, s);
    out += cpu::describeDirectConv(step.conv(), tiling, static_cast<bool>(epilogue), packedFilterFits(plan, s));
    if (!step.kernels.empty() && !epilogue) out += str("; epilogue after the convolution: ", epilogue.error().message());
    out += "\n";
  }
#endif
  return out;
}

#if KFUSE_HAS_CUDA
// Every compilation unit of the plan, before NVRTC (so it works without a
// GPU), for the default architecture.
Expected<std::string> cudaSource(const Plan& plan) {
  KF_ASSIGN_OR_RETURN(cuda::EmittedProgram program, cuda::emitProgram(plan, cuda::CudaCompileOptions{}));
  return cuda::programSource(program);
}

// The CudaRunner's one allocation (runtime/cuda/program.h), from the
// emitted program.
Expected<DeviceBytes> cudaDeviceBytes(const Plan& plan) {
  KF_ASSIGN_OR_RETURN(cuda::EmittedProgram program, cuda::emitProgram(plan, cuda::CudaCompileOptions{}));
  cuda::DeviceAllocation a = cuda::deviceAllocation(plan.residentBytes + plan.arenaBytes, program.scratchBytes,
                                                    cuda::kMatmulWorkspaceBytes, program.steps);
  return DeviceBytes{a.workspaceOffset - a.scratchOffset, a.workspaceBytes, a.total};
}
#endif

}  // namespace

Expected<PlanOptions> cpuPlanOptions(std::string_view cpu) {
#if KFUSE_HAS_LLVM_JIT
  KF_ASSIGN_OR_RETURN(cpu::CpuSubtarget subtarget, cpuSubtargetFor(cpu));
  PlanOptions o;
  o.convWorkspace = cpu::im2colWorkspaces(subtarget.conv);
  o.packFilters = cpu::packedFilterPolicy(subtarget.conv);
  o.packGemms = cpu::packedGemmPolicy(subtarget.gemm);
  return o;
#else
  if (!cpu.empty() && cpu != "native") return Error(str("--cpu=", cpu, " needs the LLVM backend, which this kfuse lacks"));
  return PlanOptions{};
#endif
}

Expected<DeviceBytes> cpuDeviceBytes(const Plan& plan, int threads) {
  DeviceBytes d;
#if KFUSE_HAS_LLVM_JIT
  d.packedWeights = packedBytes(plan, packedGemmSteps(plan)) + packedFilterBytes(plan, packedFilterSteps(plan));
#endif
  for (uint64_t slot : convScratchSlots(plan, threads > 0 ? threads : availableCpus())) d.convScratch += alignedBytes(slot);
  d.exchangeStaging = exchangeStagingBytes(plan);
  d.total = plan.deviceBytes() + d.packedWeights + d.convScratch + d.exchangeStaging;
  return d;
}

Expected<Backend> backendFor(std::string_view target, const BackendOptions& o) {
  KF_RETURN_IF_ERROR(parseLayoutMode(o.layout).status());
  if (target != "cpu" && !o.cpu.empty()) return Error(str("--cpu applies to --target=cpu, not ", target));
  // Layout selection after simplification and before fusion, with the
  // target's measured cost model (passes/layout_cost.cpp); on the cpu,
  // strided layers over their input's phases first (passes/direct_conv.h),
  // so that the layout pass prices what runs: first layers where the CPU's
  // subtarget says they pay, and no layer its packed filters run strided.
  std::string phases;
  if (target == "cpu") {
    phases = ",conv-phases";
#if KFUSE_HAS_LLVM_JIT
    KF_ASSIGN_OR_RETURN(cpu::CpuSubtarget subtarget, cpuSubtargetFor(o.cpu));
    std::vector<std::string> options;
    if (!subtarget.firstLayerPhases) options.push_back("first-layers=false");
    if (subtarget.conv.packedTaps) options.push_back("strided-packed=true");
    if (!options.empty()) phases += str("{", join(options, " "), "}");
#endif
  }
  std::string prepare = str(kSimplify, phases, ",layout{mode=", o.layout, " target=", target, "}");
  // Targets that generate kernels expand what they would otherwise run as
  // reference steps (pool-expand) before fusion, after layout selection.
  std::string fused = o.fuse ? str(prepare, ",pool-expand,fuse,dce") : prepare;
  if (target == "interpreter") return Backend{"interpreter", "", prepare, {}, {}, {}};
  if (target == "cpu") {
    KF_ASSIGN_OR_RETURN(PlanOptions planning, cpuPlanOptions(o.cpu));
    auto source = [cpu = o.cpu](const Plan& plan) { return kernelIR(plan, cpu); };
    auto deviceBytes = [threads = o.threads](const Plan& plan) { return cpuDeviceBytes(plan, threads); };
    return Backend{"cpu", o.cpu, fused, kernel::checkGroup, source, deviceBytes, std::move(planning)};
  }
#if KFUSE_HAS_CUDA
  if (target == "cuda")
    return Backend{"cuda", "", fused, cuda::checkGroup, cudaSource, cudaDeviceBytes,
                   PlanOptions{.convWorkspace = noConvWorkspace()}};
#endif
  return Error(str("unknown target '", target, "' (available: ", join(availableTargets()), ")"));
}

Status prepareModule(Module& m, const Backend& backend, const Instrumentation& instr) {
  PassManager pm(instr);
  KF_ASSIGN_OR_RETURN(auto passes, parsePipeline(backend.pipeline));
  pm.add(std::move(passes));
  PassContext ctx;
  ctx.canFormLaunch = backend.canFormLaunch;
  return pm.run(m, ctx);
}

Expected<std::unique_ptr<Executor>> createExecutor(std::string_view target, const ExecutionOptions& opts) {
  if (opts.profile && target == "interpreter")
    return Error("the interpreter target runs no plan; profile needs cpu or cuda");
  if (opts.profile && opts.cudaGraph)
    return Error("per-step times cannot be measured with --cuda-graph: a CUDA Graph replays the whole plan as one launch");
  if (target == "interpreter") return std::unique_ptr<Executor>(new InterpreterExecutor());
  if (target != "cpu" && !opts.cpu.empty()) return Error(str("--cpu applies to --target=cpu, not ", target));
  if (target == "cpu") {
    // The CPU is checked here, before anything compiles: an unknown name,
    // or one whose features this machine lacks, fails at once.
    KF_ASSIGN_OR_RETURN(PlanOptions planning, cpuPlanOptions(opts.cpu));
#if KFUSE_HAS_LLVM_JIT
    KF_ASSIGN_OR_RETURN(cpu::CpuSubtarget subtarget, cpuSubtargetFor(opts.cpu));
    KF_RETURN_IF_ERROR(cpu::checkRunsHere(subtarget));
#endif
    return std::unique_ptr<Executor>(new CpuExecutor(opts, std::move(planning)));
  }
#if KFUSE_HAS_CUDA
  if (target == "cuda") {
    cuda::CudaExecutorOptions co;
    co.compile.arch = opts.cudaArch;
    co.cudaGraph = opts.cudaGraph;
    co.simulate = opts.cudaSimulate;
    KF_ASSIGN_OR_RETURN(co.schedule, cuda::sim::parseSchedule(opts.cudaSimSchedule));
    co.inplace = opts.inplace;
    co.profile = opts.profile;
    co.poison = opts.poison;
    co.communicator = opts.communicator;
    return cuda::createCudaExecutor(std::move(co));
  }
#endif
  return Error(str("unknown target '", target, "' (available: ", join(availableTargets()), ")"));
}

}  // namespace kfuse
