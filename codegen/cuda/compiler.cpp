#include "codegen/cuda/compiler.h"

#include <map>

#include "codegen/cuda/gemm_emitter.h"
#include "codegen/cuda/matmul_match.h"
#include "ir/op_registry.h"
#include "ir/support/strings.h"

namespace kfuse::cuda {
namespace {

constexpr size_t kScratchAlign = 256;

size_t alignUp(size_t v, size_t a) { return (v + a - 1) / a * a; }

double gemmFlops(const GemmSpec& g) {
  return 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) *
         static_cast<double>(numElements(g.batch));
}

// A unit's text without its first line (the comment naming the step), for
// recognising identical units of differently named steps.
std::string body(const std::string& source) {
  size_t nl = source.find('\n');
  return nl == std::string::npos ? source : source.substr(nl + 1);
}

class ProgramEmitter {
 public:
  ProgramEmitter(const Plan& plan, const CudaCompileOptions& opts, CudaCompileReport* report)
      : plan_(plan), opts_(opts), report_(report ? report : &ownReport_) {}

  Expected<EmittedProgram> run() {
    KF_RETURN_IF_ERROR(checkArch(opts_.arch).status());
    for (size_t i = 0; i < plan_.steps.size(); ++i) {
      auto step = emitStep(i);
      if (!step) return step.error().context(str("step ", i, " (", plan_.steps[i].name, ")"));
      out_.steps.push_back(std::move(*step));
    }
    out_.scratchBytes = scratch_;
    return std::move(out_);
  }

 private:
  // Adds a unit (or finds its twin) and places its scratch; returns its launches.
  void addUnit(StepSource unit, StepProgram& step) {
    std::string key = body(unit.source);
    auto it = unitIndex_.find(key);
    int module = 0;
    if (it == unitIndex_.end()) {
      module = static_cast<int>(out_.units.size());
      unitIndex_.emplace(key, module);
      out_.units.push_back(unit);
    } else {
      module = it->second;
    }
    size_t base = scratch_;
    scratch_ = alignUp(scratch_ + unit.scratchBytes, kScratchAlign);
    for (KernelLaunch& l : unit.launches) {
      l.module = module;
      if (l.scratch >= 0) l.scratch += static_cast<int64_t>(base);
      step.launches.push_back(std::move(l));
    }
    if (!unit.note.empty()) step.note = step.note.empty() ? unit.note : str(step.note, "; ", unit.note);
  }

  Expected<StepProgram> emitStep(size_t i) {
    const Step& s = plan_.steps[i];
    StepProgram step;
    switch (s.kind()) {
      case StepKind::Kernels: {
        KF_ASSIGN_OR_RETURN(StepSource unit, emitKernelStep(plan_, s, opts_.emit));
        addUnit(std::move(unit), step);
        return step;
      }
      case StepKind::Conv: {
        KF_ASSIGN_OR_RETURN(StepSource unit, emitConvStep(plan_, i, opts_.emit));
        addUnit(std::move(unit), step);
        return step;
      }
      case StepKind::Reference:
        step.mode = StepMode::Host;
        step.note = str("host: reference ", s.reference().op ? s.reference().op->name : std::string("op"),
                        " (no kernel form yet)");
        return step;
      case StepKind::Gemm: return emitGemm(i);
      case StepKind::Collective:
        step.mode = StepMode::Host;
        step.note = "host: all_reduce (the runner's communicator, on the stream)";
        return step;
    }
    return Error("unknown step kind");
  }

  Expected<StepProgram> emitGemm(size_t i) {
    const Step& s = plan_.steps[i];
    StepProgram step;
    MatmulMatch match = opts_.gemm == GemmPolicy::Generated ? MatmulMatch{std::nullopt, "generated GEMMs requested"}
                                                             : matchMatmul(plan_, i);
    if (match.call) {
      step.matmul = match.call;
      step.note = str("cuBLASLt, epilogue ", match.call->epilogueName);
      ++report_->libraryGemms;
      if (!s.kernels.empty()) ++report_->matchedEpilogues;
      return step;
    }
    auto plain = plainMatmul(plan_, s.gemm());
    bool generated = opts_.gemm == GemmPolicy::Generated || !plain ||
                     (opts_.gemm == GemmPolicy::Auto && gemmFlops(s.gemm()) <= opts_.generatedGemmMaxFlops);
    if (generated) {
      KF_ASSIGN_OR_RETURN(StepSource unit, emitGemmStep(plan_, i, opts_.emit));
      addUnit(std::move(unit), step);
      ++report_->generatedGemms;
      if (!s.kernels.empty()) step.note += str(" (cuBLASLt: ", match.why, ")");
      return step;
    }
    step.matmul = *plain;
    step.note = str("cuBLASLt, epilogue kernel after it (", match.why, ")");
    ++report_->libraryGemms;
    if (!s.kernels.empty()) {
      KF_ASSIGN_OR_RETURN(StepSource unit, emitKernelStep(plan_, s, opts_.emit));
      addUnit(std::move(unit), step);
    }
    return step;
  }

  const Plan& plan_;
  const CudaCompileOptions& opts_;
  CudaCompileReport ownReport_;
  CudaCompileReport* report_;
  EmittedProgram out_;
  std::map<std::string, int> unitIndex_;
  size_t scratch_ = 0;
};

}  // namespace

Expected<EmittedProgram> emitProgram(const Plan& plan, const CudaCompileOptions& opts, CudaCompileReport* report) {
  return ProgramEmitter(plan, opts, report).run();
}

Expected<CudaProgram> compileProgram(const Plan& plan, const CudaCompileOptions& opts, CudaCompileReport* report) {
  CudaCompileReport local;
  CudaCompileReport* r = report ? report : &local;
  KF_ASSIGN_OR_RETURN(EmittedProgram emitted, emitProgram(plan, opts, r));
  return compileEmitted(std::move(emitted), opts, &r->nvrtc);
}

Expected<CudaProgram> compileEmitted(EmittedProgram emitted, const CudaCompileOptions& opts, CompileStats* stats) {
  std::vector<CompileJob> jobs;
  for (const StepSource& u : emitted.units) {
    std::vector<std::string> what, entries;
    for (const KernelLaunch& l : u.launches) {
      what.push_back(l.what);
      entries.push_back(l.entry);
    }
    jobs.push_back({u.source, str("step ", u.name, " (", join(what, "; "), ")"), std::move(entries)});
  }
  UnitCompiler compiler;
  if (opts.simulate) {
    KF_ASSIGN_OR_RETURN(compiler.identity, hostCompilerIdentity(opts.host));
    compiler.compile = [host = opts.host](const CompileJob& j) {
      return compileHostUnit(j.source, j.entries, j.what, host);
    };
  } else {
    NvrtcOptions nv;
    nv.arch = opts.arch;
    nv.lineInfo = opts.lineInfo;
    compiler = nvrtcUnitCompiler(nv);
  }
  KF_ASSIGN_OR_RETURN(std::vector<CompiledUnit> compiled,
                      compileAll(jobs, compiler, CompileCache(opts.cacheDir), opts.compileThreads, stats));
  CudaProgram p;
  p.arch = opts.simulate ? kSimulatorArch : opts.arch;
  for (size_t i = 0; i < compiled.size(); ++i)
    p.modules.push_back({emitted.units[i].name, std::move(compiled[i].cubin), std::move(compiled[i].ptx)});
  p.steps = std::move(emitted.steps);
  p.scratchBytes = emitted.scratchBytes;
  return p;
}

std::string programSource(const EmittedProgram& p) {
  std::string out;
  for (size_t i = 0; i < p.units.size(); ++i)
    out += str("// ===== module ", i, ": step ", p.units[i].name, " =====\n", p.units[i].source, "\n");
  return out;
}

}  // namespace kfuse::cuda
