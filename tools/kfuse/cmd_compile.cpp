// kfuse compile: a model into an AOT package (runtime/package/package.h)
// that kfuse run, kfuse train, kfuse-run and programs linking the runtime
// library execute without the compiler.
#include <unistd.h>

#include <iostream>

#include "codegen/package_compiler.h"
#include "ir/specialize.h"
#include "ir/support/file_io.h"
#include "ir/support/strings.h"
#include "tools/kfuse/commands.h"
#include "tools/kfuse/instrumentation_flags.h"
#include "tools/kfuse/model_loader.h"
#include "tools/kfuse/train_flags.h"

namespace kfuse::cli {
namespace {

struct CompileArgs {
  std::string model, output, target = "cpu", arch = "sm_90";
  PlanningFlags planning;
  bool train = false, keepLLVMIR = false;
  int64_t batch = 0;
  int threads = 0;
  uint64_t seed = 0;
  std::vector<std::string> shapes;
  OptimizerFlags opt;
  InstrumentationFlags instr;
};

// What the meta records as "options": the choices that shaped the code.
std::string describeOptions(const CompileArgs& a) {
  std::string s = str("--target=", a.target, " --layout=", a.planning.layout);
  if (a.planning.noFuse) s += " --no-fuse";
  if (a.planning.noInplace) s += " --no-inplace";
  if (a.target == "cpu" && !a.planning.cpu.empty()) s += " --cpu=" + a.planning.cpu;
  if (a.target == "cuda") s += " --arch=" + a.arch;
  if (a.batch > 0) s += str(" --batch=", a.batch);
  for (const std::string& sh : a.shapes) s += " --shape " + sh;
  if (a.train) s += str(" --train --loss=", a.opt.loss, " --optimizer=", a.opt.optimizer);
  if (a.train && a.opt.ignoreIndex != -100) s += str(" --ignore-index=", a.opt.ignoreIndex);
  if (a.train && a.seed) s += str(" --seed=", a.seed);
  return s;
}

// A bar redrawn in place on a terminal; one line per unit otherwise (logs).
void showProgress(size_t done, size_t total, const std::string& unit) {
  if (isatty(STDERR_FILENO)) {
    constexpr size_t kWidth = 30;
    size_t filled = total ? done * kWidth / total : kWidth;
    std::cerr << "\r[" << std::string(filled, '#') << std::string(kWidth - filled, ' ') << "] " << done << "/" << total
              << " " << unit << "\033[K" << (done == total ? "\n" : "") << std::flush;
  } else {
    std::cerr << "compiled " << done << "/" << total << ": " << unit << "\n";
  }
}

Expected<std::unique_ptr<Module>> loadForCompile(const CompileArgs& a) {
  ModelOptions mo;
  KF_RETURN_IF_ERROR(parseShapeSpecs(a.shapes, mo));
  KF_ASSIGN_OR_RETURN(std::unique_ptr<Module> m, loadModel(a.model, mo));
  if (m->functions().empty()) return Error(str("'", a.model, "' defines no function"));
  if (a.batch > 0) {
    Graph& g = *m->functions().front();
    if (g.arguments().empty() || g.argument(0)->type().rank() == 0)
      return Error(str("--batch: @", g.name(), " has no batch dimension to set"));
    if (g.argument(0)->type().shape[0] != a.batch)
      KF_RETURN_IF_ERROR(specializeBatch(g, a.batch));
  }
  return m;
}

int runCompile(const CompileArgs& a) {
  auto fail = [](const Error& e) { return reportError("compile", e); };
  if (Status v = a.instr.validate(); !v) return fail(v.error());
  if (a.output == a.model) return fail(Error("-o names the model itself; choose another file for the package"));
  PackageCompileOptions o;
  o.target = a.target;
  o.fuse = !a.planning.noFuse;
  o.layout = a.planning.layout;
  o.inplace = !a.planning.noInplace;
  o.cpu = a.planning.cpu;
  o.arch = a.arch;
  o.keepLLVMIR = a.keepLLVMIR;
  o.threads = a.threads;
  o.model = a.model;
  o.commandLine = describeOptions(a);
  o.instrumentation = a.instr.toInstrumentation();
  o.progress = showProgress;
  if (a.train) {
    auto training = trainingOptions(a.opt);
    if (!training) return fail(training.error());
    o.train = true;
    o.training.training = *training;
    o.training.training.dropoutSeed = a.seed;
    o.loss = a.opt.loss;
    o.optimizer = a.opt.optimizer;
  }
  auto model = loadForCompile(a);
  if (!model) return fail(model.error());
  auto compiled = compilePackage(std::move(*model), o);
  if (!compiled) return fail(compiled.error());
  // Written whole or not at all: a failed write leaves any old package as it was.
  if (Status s = compiled->write(a.output); !s) return fail(s.error());
  auto count = [](size_t n, const std::string& one, const std::string& many) { return str(n, " ", n == 1 ? one : many); };
  std::cout << "wrote " << a.output << ": " << a.target << " package, " << count(compiled->functions, "function", "functions")
            << ", " << count(compiled->kernels, "kernel", "kernels")
            << (compiled->directConvs ? ", " + count(compiled->directConvs, "direct convolution", "direct convolutions") : "")
            << (compiled->packedGemms ? ", " + count(compiled->packedGemms, "packed GEMM", "packed GEMMs") : "")
            << " in "
            << (a.target == "cpu" ? count(compiled->units, "LLVM module", "LLVM modules")
                                : count(compiled->units, "NVRTC program", "NVRTC programs"))
            << (compiled->shared ? str(" (", compiled->shared, " sharing another's code)") : "") << ", "
            << count(compiled->launches, "launch", "launches")
            << " per run of every function, " << compiled->size() << " bytes\n";
  return 0;
}

}  // namespace

Action addCompileCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("compile", "Compile a model ahead of time into a package (.kfpkg) that runs without "
                                            "the compiler");
  auto a = std::make_shared<CompileArgs>();
  cmd->add_option("model", a->model, "Model (.kir, or .onnx when built with ONNX support)")->required();
  cmd->add_option("-o,--output", a->output, "The package file to write (.kfpkg)")->required();
  cmd->add_option("--target", a->target, "cpu or cuda (default cpu)");
  cmd->add_flag("--train", a->train, "A training package: the forward and @train_step (loss, backward, optimizer)");
  addOptimizerFlags(cmd, a->opt);
  cmd->add_option("--seed", a->seed, "With --train: mixed into every dropout's seed, as kfuse train --seed does");
  cmd->add_option("--batch", a->batch, "Set the batch dimension of the first input (packages have static shapes)");
  cmd->add_option("--shape", a->shapes, "NAME=D0,D1,...: binds an ONNX input's dynamic dimensions");
  addPlanningFlags(cmd, a->planning);
  cmd->add_option("--arch", a->arch, "cuda: the GPU architecture of the CUBIN: sm_80, sm_89 or sm_90 (default)");
  cmd->add_flag("--keep-llvm-ir", a->keepLLVMIR, "cpu: keep the kernels' optimised LLVM IR in the package");
  cmd->add_option("--threads", a->threads, "Compile threads (default: one per hardware thread)");
  addInstrumentationFlags(cmd, a->instr);
  return [a] { return runCompile(*a); };
}

}  // namespace kfuse::cli
