// kfuse opt: parse a module, run a pipeline with instrumentation, print or write it.
#include <algorithm>
#include <iostream>

#include "codegen/backend.h"
#include "codegen/kernel/lower.h"
#include "codegen/plan/plan_builder.h"
#include "codegen/plan/plan_pass.h"
#include "tools/kfuse/dot.h"
#include "ir/module_io.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/support/strings.h"
#include "ir/support/file_io.h"
#include "passes/layout_cost.h"
#include "passes/pass_manager.h"
#include "passes/pass_registry.h"
#include "tools/kfuse/commands.h"
#include "tools/kfuse/instrumentation_flags.h"
#include "tools/kfuse/model_loader.h"
#include "tools/kfuse/plan_stage.h"

namespace kfuse::cli {
namespace {

struct OptArgs {
  std::string input;
  std::string passes;
  std::string output;
  InstrumentationFlags instr;
  bool remarks = false;
  bool splitInputFile = false;
  std::string dot, dotFunction;
  bool printKernels = false;
  std::string layout;  // --layout: mode of a `layout` pass without mode=
  bool noInplace = false;
  std::string target = defaultTarget();  // fusion legality and --print-kernels' code
  std::string cpu;                       // --cpu: the CPU --print-kernels describes ("": this machine)
};

// Every function's plan (its launches: kernel bundles, library calls with
// their epilogues, reference ops) and its kernels as the target generates
// them (kernel IR for cpu, CUDA C for cuda). `plans`: the plan stage's, or
// empty for the standard plan pipeline's.
Status printKernels(const Module& m, const Backend& backend, bool inplace, std::vector<Plan> plans) {
  if (plans.empty())
    for (const auto& f : m.functions()) {
      KF_ASSIGN_OR_RETURN(Plan plan, buildPlan(*f, backend.planOptions(inplace)));
      plans.push_back(std::move(plan));
    }
  for (const Plan& plan : plans) {
    size_t launches = plan.launches();
    std::cout << "// ----- kernels of @" << plan.function << ": " << launches << (launches == 1 ? " launch" : " launches")
              << " -----\n";
    std::cout << printPlan(plan) << "\n";
    KF_ASSIGN_OR_RETURN(std::string source, backend.kernelSource(plan));
    std::cout << source;
  }
  return Status::ok();
}

int optimizeModule(const OptArgs& a, Expected<std::unique_ptr<Module>> module) {
  if (!module) return reportError("opt", module.error());
  auto split = splitPipeline(a.passes);
  if (!split) return reportError("opt", split.error());
  auto& [graphPasses, planPasses] = *split;
  auto passes = parsePipeline(graphPasses);
  if (!passes) return reportError("opt", passes.error());
  auto namedGraphPass = [&](const std::string& p) {
    for (const auto& pass : *passes)
      if (pass->name() == p) return true;
    return false;
  };
  auto planList = parsePlanPipeline(planPasses);
  if (!planList) return reportError("opt", planList.error());
  auto named = [&](const std::string& p) {
    for (const auto& pass : *planList)
      if (pass->name() == p) return true;
    return namedGraphPass(p);
  };
  if (!planPasses.empty() && !a.output.empty())
    return reportError("opt", Error("-o writes a module, but the pipeline ends in plan passes (" + planPasses + ")"));
  if (auto v = a.instr.validate(); !v) return reportError("opt", v.error());
  auto backend = backendFor(a.target, {.cpu = a.cpu});
  if (!backend) return reportError("opt", backend.error());
  if (a.printKernels && !backend->kernelSource)
    return reportError("opt", Error(str("--print-kernels: target ", a.target, " generates no kernels")));
  if (!a.instr.stopAfter.empty() && !named(a.instr.stopAfter))
    return reportError("opt", Error("--stop-after=" + a.instr.stopAfter + " names no pass of the pipeline"));
  Instrumentation instr = a.instr.toInstrumentation();
  bool instrumentedPrint = a.instr.printsIR();
  PassManager pm(instr);
  pm.add(std::move(*passes));
  Diagnostics diag;
  PassContext ctx;
  ctx.diag = &diag;
  ctx.remarks = a.remarks;
  ctx.canFormLaunch = backend->canFormLaunch;
  ctx.layoutMode = a.layout;
  Status s = pm.run(**module, ctx);
  if (!s) return reportError("opt", s.error());
  for (const auto& r : diag.remarks()) std::cerr << "remark: [" << r.pass << "] " << r.message << "\n";
  // The plan stage, unless --stop-after ended the pipeline among the graph passes.
  std::vector<Plan> plans;
  bool planStage = !planPasses.empty() && !namedGraphPass(a.instr.stopAfter);
  if (planStage) {
    int firstDump = static_cast<int>(pm.records().size()) + 1;
    auto ran = runPlanStage(**module, planPasses, backend->planOptions(!a.noInplace), a.instr, firstDump, std::cout);
    if (!ran) return reportError("opt", ran.error());
    plans = std::move(*ran);
  }
  if (!a.dot.empty()) {
    const Module& m = **module;
    const Graph* f = a.dotFunction.empty() ? (m.functions().empty() ? nullptr : m.functions().front().get())
                                           : m.findFunction(a.dotFunction);
    if (!f) return reportError("opt", Error("--dot: the module has no function " + (a.dotFunction.empty() ? std::string("to draw") : "@" + a.dotFunction)));
    if (auto w = writeFileAtomically(a.dot, cli::toDot(*f)); !w) return reportError("opt", w.error());
  }
  if (a.printKernels) {
    if (auto s = printKernels(**module, *backend, !a.noInplace, std::move(plans)); !s)
      return reportError("opt", s.error());
  } else if (planStage) {
    if (!instrumentedPrint)
      for (const Plan& p : plans) std::cout << printPlan(p) << "\n";
  } else if (!a.output.empty()) {
    if (auto w = writeModuleFile(**module, a.output); !w) return reportError("opt", w.error());
  } else if (!instrumentedPrint) {
    printModule(std::cout, **module);
  }
  return 0;
}

// --split-input-file: each chunk between "// -----" lines is a separate
// module, processed independently (errors in one do not stop the others).
// Chunks are padded with blank lines so that messages carry the line numbers
// of the original file.
int runSplit(const OptArgs& a) {
  auto text = a.input == "-" ? Expected<std::string>(Error("--split-input-file needs a file, not -"))
                             : readFile(a.input);
  if (!text) return reportError("opt", text.error());
  int status = 0;
  size_t start = 0;
  int line = 0;
  bool first = true;
  while (start <= text->size()) {
    size_t sep = text->find("\n// -----", start);
    size_t end = sep == std::string::npos ? text->size() : sep + 1;
    std::string chunk(static_cast<size_t>(line), '\n');
    chunk += text->substr(start, end - start);
    if (!first) std::cout << "// -----\n";
    first = false;
    ParseOptions popts;
    status |= optimizeModule(a, parseModule(chunk, a.input, popts));
    std::cout.flush();
    line += static_cast<int>(std::count(text->begin() + static_cast<std::ptrdiff_t>(start),
                                        text->begin() + static_cast<std::ptrdiff_t>(end), '\n'));
    if (sep == std::string::npos) break;
    size_t next = text->find('\n', end);
    line += 1;
    start = next == std::string::npos ? text->size() + 1 : next + 1;
  }
  return status;
}

int runOpt(const OptArgs& a) {
  // Check the flags before reading any input.
  auto split = splitPipeline(a.passes);
  if (!split) return reportError("opt", split.error());
  if (auto p = parsePipeline(split->first); !p) return reportError("opt", p.error());
  if (auto p = parsePlanPipeline(split->second); !p) return reportError("opt", p.error());
  if (!a.layout.empty())
    if (auto m = parseLayoutMode(a.layout); !m) return reportError("opt", m.error());
  if (a.splitInputFile) return runSplit(a);
  return optimizeModule(a, loadModel(a.input));
}

}  // namespace

Action addOptCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("opt", "Run passes over a .kir module and print or write the result");
  auto a = std::make_shared<OptArgs>();
  cmd->add_option("input", a->input, "Input module (.kir, or - for standard input)")->required();
  cmd->add_option("--passes", a->passes,
                  "Comma-separated pipeline, e.g. canonicalize,cse,dce; plan passes (inplace, plan-buffers) may end "
                  "it: each function is then lowered to a plan, and the plans are printed");
  cmd->add_option("-o,--output", a->output, "Write the result to this .kir file (weights beside it when needed)");
  addInstrumentationFlags(cmd, a->instr);
  cmd->add_flag("--split-input-file", a->splitInputFile,
                "Treat each chunk between '// -----' lines as a separate module");
  cmd->add_option("--dot", a->dot, "Write a function as Graphviz DOT, fused groups as clusters");
  cmd->add_option("--dot-function", a->dotFunction, "The function --dot draws (default: the first)");
  cmd->add_flag("--print-kernels", a->printKernels,
                "Print every function's plan and its kernels as the target generates them (kernel IR for cpu, "
                "CUDA C for cuda) instead of the module");
  cmd->add_option("--target", a->target,
                  str("Target whose fusion legality and kernels to use: ", join(availableTargets(), ", "),
                      " (default ", defaultTarget(), ")"));
  cmd->add_flag("--no-inplace", a->noInplace, "With --print-kernels: plan without in-place rewriting");
  addCpuFlag(cmd, a->cpu);
  cmd->add_option("--layout", a->layout,
                  "Mode of the layout pass (auto, nchw, nhwc) where the pipeline gives it none");
  cmd->add_flag("--remarks", a->remarks, "Print the passes' explanations of their decisions (on stderr)");
  return [a] { return runOpt(*a); };
}

}  // namespace kfuse::cli
