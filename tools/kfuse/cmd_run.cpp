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
  std::string target = defaultTarget();
  bool noFuse = false;
  std::string layout = "auto";
  bool noInplace = false, poison = false;
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

// Output names become file names: characters that are not safe in one
// (ONNX names like "/fc/Gemm_output_0") become '_'.
std::string fileStem(const std::string& name) {
  std::string out = name;
  for (char& ch : out)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.')) ch = '_';
  if (out.empty() || out[0] == '.') out = "_" + out;
  return out;
}

std::string summarize(const Tensor& t) {
  std::vector<double> v = t.toDoubles();
  std::ostringstream os;
  os << formatType(t.type());
  if (v.empty()) return os.str();
  double lo = v[0], hi = v[0], sum = 0;
  for (double x : v) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    sum += x;
  }
  os << std::setprecision(6) << "  min " << lo << "  max " << hi << "  mean " << sum / static_cast<double>(v.size())
     << "  [";
  for (size_t i = 0; i < std::min<size_t>(v.size(), 6); ++i) os << (i ? ", " : "") << v[i];
  os << (v.size() > 6 ? ", ...]" : "]");
  return os.str();
}

Expected<std::vector<Tensor>> gatherInputs(const Graph& g, const std::vector<std::string>& specs) {
  std::map<std::string, std::string> files;
  for (const std::string& s : specs) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
      return Error(str("--input expects NAME=FILE, got '", s, "'"));
    std::string name = s.substr(0, eq);
    if (!name.empty() && name[0] == '%') name = name.substr(1);
    if (!g.findArgument(name)) {
      std::vector<std::string> known;
      for (const auto& a : g.arguments()) known.push_back(a->name());
      return Error(str("--input names '", name, "', which is not an input of @", g.name(), " (inputs: ", join(known), ")"));
    }
    files[name] = s.substr(eq + 1);
  }
  std::vector<Tensor> args;
  for (const auto& a : g.arguments()) {
    auto it = files.find(a->name());
    if (it == files.end())
      return Error(str("missing --input for ", sigilName('%', a->name()), " : ", formatType(a->type())));
    KF_ASSIGN_OR_RETURN(Tensor t, readTensorArg(it->second));
    if (t.dtype() != a->type().dtype || t.shape() != a->type().shape)
      return Error(str("input ", sigilName('%', a->name()), " from '", it->second, "' is ", formatType(t.type()),
                       ", the model expects ", formatType(a->type())));
    args.push_back(std::move(t));
  }
  return args;
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
  auto backend = backendFor(a.target, !a.noFuse, a.layout);
  if (!backend) return reportError("run", backend.error());
  ExecutionOptions exec;
  exec.inplace = !a.noInplace;
  exec.poison = a.poison;
  auto executor = createExecutor(a.target, exec);
  if (!executor) return reportError("run", executor.error());
  auto module = loadModel(a.model, opts);
  if (!module) return reportError("run", module.error());
  Module& m = **module;
  if (m.functions().empty()) return reportError("run", Error(str("'", a.model, "' defines no function")));
  // Inputs are checked against the function as written, before the
  // target's passes run.
  const Graph* g = a.function.empty() ? m.functions().front().get() : m.findFunction(a.function);
  if (!g) return reportError("run", Error(str("'", a.model, "' has no function @", a.function)));
  auto args = gatherInputs(*g, a.inputs);
  if (!args) return reportError("run", args.error());
  // Output names too: the passes may replace a result (an identity of an
  // input, say) by a value with another name.
  std::vector<std::string> outputNames;
  for (const Value* r : g->results()) outputNames.push_back(r->name());
  if (Status s = prepareModule(m, *backend, a.instr.toInstrumentation()); !s) return reportError("run", s.error());
  auto result = (*executor)->run(*g, *args);
  if (!result) return reportError("run", result.error());
  if (!a.outputDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.outputDir, ec);
    if (ec) return reportError("run", Error(str("cannot create output directory '", a.outputDir, "': ", ec.message())));
  }
  std::set<std::string> stems;
  for (size_t i = 0; i < result->outputs.size(); ++i) {
    std::string name = outputNames[i];
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) name = str("output", i);
    std::cout << name << ": " << summarize(result->outputs[i]) << "\n";
    if (!a.outputDir.empty()) {
      std::string stem = fileStem(name);
      if (!stems.insert(stem).second) stem = str(stem, "_", i);
      std::string path = (std::filesystem::path(a.outputDir) / (stem + "." + format)).string();
      if (auto s = writeTensorArg(path, result->outputs[i], name); !s) return reportError("run", s.error());
      std::cout << "  written to " << path << "\n";
    }
  }
  if (const Plan* plan = (*executor)->planFor(*g)) std::cerr << "target " << a.target << ": " << plan->launches() << (plan->launches() == 1 ? " launch\n" : " launches\n");
  return 0;
}

}  // namespace

Action addRunCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Run a model on inputs, compiled for a target (default cpu) or interpreted");
  auto a = std::make_shared<RunArgs>();
  cmd->add_option("model", a->model, "Model (.kir, or .onnx when built with ONNX support)")->required();
  cmd->add_option("--input", a->inputs, "NAME=FILE for each input of the function (.npy, or ONNX TensorProto .pb)");
  cmd->add_option("--shape", a->shapes, "NAME=D0,D1,...: the shape of ONNX input NAME (binds symbolic dimensions)");
  cmd->add_option("--output-dir", a->outputDir, "Write each output as NAME.npy (or NAME.pb) into DIR");
  cmd->add_option("--output-format", a->outputFormat,
                  "npy or pb (default: pb when every input is a .pb file, else npy)");
  cmd->add_option("--function", a->function, "Function to run (default: the first)");
  cmd->add_option("--target", a->target, str("Where to run: ", join(availableTargets(), ", "), " (default ", defaultTarget(), ")"));
  cmd->add_flag("--no-fuse", a->noFuse, "Compile without the fusion pass: one launch per op");
  cmd->add_option("--layout", a->layout, "Image layout: auto (the target's cost model chooses per region), nchw or nhwc");
  cmd->add_flag("--no-inplace", a->noInplace, "Never let a step write its output over an input");
  cmd->add_flag("--poison", a->poison,
                "Debug: fill each buffer with NaN (or 0xAB bytes) when its lifetime ends");
  addInstrumentationFlags(cmd, a->instr);
  return [a] { return runRun(*a); };
}

}  // namespace kfuse::cli
