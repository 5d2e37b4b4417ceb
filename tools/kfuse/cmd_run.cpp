// kfuse run: execute a module's function on inputs from files.
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>

#include "codegen/backend.h"
#include "ir/npy.h"
#include "ir/parser.h"
#include "ir/support/strings.h"
#include "ir/value_names.h"
#include "runtime/package/package_runner.h"
#include "tools/common/tensor_args.h"
#include "tools/kfuse/commands.h"
#include "tools/kfuse/instrumentation_flags.h"
#include "tools/kfuse/model_loader.h"

#if KFUSE_WITH_ONNX
#include "frontend/onnx/tensor_proto.h"
#endif

namespace kfuse::cli {
namespace {

struct RunArgs {
  std::string model;
  std::vector<std::string> inputs;  // NAME=FILE
  std::vector<std::string> shapes;  // NAME=D0,D1,... (ONNX models)
  std::string outputDir;
  std::string outputFormat;  // npy or pb; default: pb when every input is .pb
  std::string function;
  std::string target;  // default: defaultTarget(), or a package's own
  PlanningFlags planning;
  bool poison = false;
  int threads = 0;
  CudaFlags cuda;
  InstrumentationFlags instr;
};

bool isPbPath(const std::string& path) { return path.size() > 3 && path.substr(path.size() - 3) == ".pb"; }

// An input file: NumPy .npy, or an ONNX TensorProto .pb.
Expected<Tensor> readTensorArg(const std::string& path) {
  if (!isPbPath(path)) return readNpy(path);
#if KFUSE_WITH_ONNX
  return onnx_import::readTensorFile(path);
#else
  return Error(str("'", path, "' is an ONNX TensorProto file, but this kfuse was built without ONNX support"));
#endif
}

Status writeTensorArg(const std::string& path, const Tensor& t, const std::string& name) {
  if (!isPbPath(path)) return writeNpy(path, t);
#if KFUSE_WITH_ONNX
  return onnx_import::writeTensorFile(path, t, name);
#else
  return Error("writing .pb outputs needs ONNX support (configure with -DKFUSE_WITH_ONNX=ON)");
#endif
}

bool isPackagePath(const std::string& path) { return std::filesystem::path(path).extension() == ".kfpkg"; }

std::vector<NamedType> signatureOf(const Graph& g) {
  std::vector<NamedType> out;
  for (const auto& a : g.arguments()) out.push_back({a->name(), a->type()});
  return out;
}

std::vector<NamedType> signatureOf(const std::vector<PackageTensor>& ts) {
  std::vector<NamedType> out;
  for (const PackageTensor& t : ts) out.push_back({t.name, t.type});
  return out;
}

// A package runs as compiled: its target, pipeline and layout are fixed.
int runPackage(const RunArgs& a, const std::string& format) {
  auto pkg = Package::load(a.model);
  if (!pkg) return reportError("run", pkg.error());
  if (!a.target.empty() && a.target != (*pkg)->meta().target)
    return reportError("run", Error(str("'", a.model, "' is compiled for target ", (*pkg)->meta().target,
                                        ", not ", a.target)));
  const PackageFunction* fn = a.function.empty() ? &(*pkg)->functions().front() : (*pkg)->function(a.function);
  if (!fn) return reportError("run", Error(str("'", a.model, "' has no function @", a.function)));
  auto args = gatherInputs(signatureOf(fn->inputs), fn->name, a.inputs, readTensorArg);
  if (!args) return reportError("run", args.error());
  if (!a.cuda.arch.empty())
    return reportError("run", Error("--arch: a package is compiled for its architecture (kfuse compile --arch)"));
  if (!a.planning.cpu.empty())
    return reportError("run", Error("--cpu: a package is compiled for its CPU (kfuse compile --cpu)"));
  if (a.cuda.simulate)
    return reportError("run", Error("--simulate runs models, not packages (a package holds code for a GPU)"));
  if (a.cuda.cudaGraph && (*pkg)->meta().target != "cuda")
    return reportError("run", Error(str("--cuda-graph applies to cuda packages, not ", (*pkg)->meta().target)));
  PackageRunnerOptions ro;
  ro.poison = a.poison;
  ro.cudaGraph = a.cuda.cudaGraph;
  ro.threads = a.threads;
  auto runner = PackageRunner::create(*pkg, ro);
  if (!runner) return reportError("run", runner.error());
  auto outputs = (*runner)->run(fn->name, *args);
  if (!outputs) return reportError("run", outputs.error());
  std::vector<std::string> names;
  for (const PackageTensor& t : fn->outputs) names.push_back(t.name);
  if (Status s = reportOutputs(*outputs, names, a.outputDir, format, writeTensorArg); !s) return reportError("run", s.error());
  std::cerr << "package " << a.model << " (" << (*pkg)->meta().target << "): " << (*runner)->launches()
            << ((*runner)->launches() == 1 ? " launch\n" : " launches\n");
  return 0;
}

int runRun(const RunArgs& a) {
  ModelOptions opts;
  if (Status s = parseShapeSpecs(a.shapes, opts); !s) return reportError("run", s.error());
  std::string format = a.outputFormat;
  if (format.empty()) {
    bool allPb = !a.inputs.empty();
    for (const std::string& in : a.inputs) allPb &= isPbPath(in);
    format = allPb ? "pb" : "npy";
  }
  if (format != "npy" && format != "pb")
    return reportError("run", Error(str("--output-format must be npy or pb, got '", format, "'")));
  if (Status v = a.instr.validate(); !v) return reportError("run", v.error());
  if (isPackagePath(a.model)) return runPackage(a, format);
  std::string target = a.target.empty() ? defaultTarget() : a.target;
  auto backend = backendFor(target, backendOptions(a.planning));
  if (!backend) return reportError("run", backend.error());
  ExecutionOptions exec;
  exec.inplace = !a.planning.noInplace;
  exec.cpu = a.planning.cpu;
  exec.poison = a.poison;
  exec.threads = a.threads;
  if (Status s = applyCudaFlags(a.cuda, target, exec); !s) return reportError("run", s.error());
  auto executor = createExecutor(target, exec);
  if (!executor) return reportError("run", executor.error());
  auto module = loadModel(a.model, opts);
  if (!module) return reportError("run", module.error());
  Module& m = **module;
  if (m.functions().empty()) return reportError("run", Error(str("'", a.model, "' defines no function")));
  // Inputs are checked against the function as written, before the
  // target's passes run.
  const Graph* g = a.function.empty() ? m.functions().front().get() : m.findFunction(a.function);
  if (!g) return reportError("run", Error(str("'", a.model, "' has no function @", a.function)));
  auto args = gatherInputs(signatureOf(*g), g->name(), a.inputs, readTensorArg);
  if (!args) return reportError("run", args.error());
  // Output names too: the passes may replace a result (an identity of an
  // input, say) by a value with another name.
  std::vector<std::string> outputNames;
  for (const Value* r : g->results()) outputNames.push_back(r->name());
  if (Status s = prepareModule(m, *backend, a.instr.toInstrumentation()); !s) return reportError("run", s.error());
  auto result = (*executor)->run(*g, *args);
  if (!result) return reportError("run", result.error());
  if (Status s = reportOutputs(result->outputs, outputNames, a.outputDir, format, writeTensorArg); !s)
    return reportError("run", s.error());
  if (const Plan* plan = (*executor)->planFor(*g)) std::cerr << "target " << target << ": " << plan->launches() << (plan->launches() == 1 ? " launch\n" : " launches\n");
  return 0;
}

}  // namespace

Action addRunCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Run a model on inputs, compiled for a target (default cpu) or interpreted");
  auto a = std::make_shared<RunArgs>();
  cmd->add_option("model", a->model, "Model (.kir, .kfpkg package, or .onnx when built with ONNX support)")->required();
  cmd->add_option("--input", a->inputs, "NAME=FILE for each input of the function (.npy, or ONNX TensorProto .pb)");
  cmd->add_option("--shape", a->shapes, "NAME=D0,D1,...: the shape of ONNX input NAME (binds symbolic dimensions)");
  cmd->add_option("--output-dir", a->outputDir, "Write each output as NAME.npy (or NAME.pb) into DIR");
  cmd->add_option("--output-format", a->outputFormat,
                  "npy or pb (default: pb when every input is a .pb file, else npy)");
  cmd->add_option("--function", a->function, "Function to run (default: the first)");
  cmd->add_option("--target", a->target, str("Where to run: ", join(availableTargets(), ", "), " (default ", defaultTarget(), ")"));
  addPlanningFlags(cmd, a->planning);
  addPoisonFlag(cmd, a->poison);
  addThreadsFlag(cmd, a->threads);
  addCudaFlags(cmd, a->cuda);
  addInstrumentationFlags(cmd, a->instr);
  return [a] { return runRun(*a); };
}

}  // namespace kfuse::cli
