// kfuse run: execute a module's function on inputs from files.
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>

#include "ir/interpreter.h"
#include "ir/npy.h"
#include "ir/parser.h"
#include "ir/support/strings.h"
#include "ir/value_names.h"
#include "tools/kfuse/commands.h"
#include "tools/kfuse/model_loader.h"

namespace kfuse::cli {
namespace {

struct RunArgs {
  std::string model;
  std::vector<std::string> inputs;  // NAME=FILE
  std::string outputDir;
  std::string function;
};

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
    KF_ASSIGN_OR_RETURN(Tensor t, readNpy(it->second));
    if (t.dtype() != a->type().dtype || t.shape() != a->type().shape)
      return Error(str("input ", sigilName('%', a->name()), " from '", it->second, "' is ", formatType(t.type()),
                       ", the model expects ", formatType(a->type())));
    args.push_back(std::move(t));
  }
  return args;
}

int runRun(const RunArgs& a) {
  auto module = loadModel(a.model);
  if (!module) return reportError("run", module.error());
  const Module& m = **module;
  if (m.functions().empty()) return reportError("run", Error(str("'", a.model, "' defines no function")));
  const Graph* g = a.function.empty() ? m.functions().front().get() : m.findFunction(a.function);
  if (!g) return reportError("run", Error(str("'", a.model, "' has no function @", a.function)));
  auto args = gatherInputs(*g, a.inputs);
  if (!args) return reportError("run", args.error());
  auto result = interpret(*g, *args);
  if (!result) return reportError("run", result.error());
  ValueNames names(*g);
  if (!a.outputDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.outputDir, ec);
    if (ec) return reportError("run", Error(str("cannot create output directory '", a.outputDir, "': ", ec.message())));
  }
  for (size_t i = 0; i < result->outputs.size(); ++i) {
    std::string name = names(g->results()[i]).substr(1);
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) name = str("output", i);
    std::cout << name << ": " << summarize(result->outputs[i]) << "\n";
    if (!a.outputDir.empty()) {
      std::string path = (std::filesystem::path(a.outputDir) / (name + ".npy")).string();
      if (auto s = writeNpy(path, result->outputs[i]); !s) return reportError("run", s.error());
      std::cout << "  written to " << path << "\n";
    }
  }
  return 0;
}

}  // namespace

Action addRunCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Run a model on inputs with the reference interpreter");
  auto a = std::make_shared<RunArgs>();
  cmd->add_option("model", a->model, "Model (.kir)")->required();
  cmd->add_option("--input", a->inputs, "NAME=FILE.npy for each input of the function");
  cmd->add_option("--output-dir", a->outputDir, "Write each output as NAME.npy into DIR");
  cmd->add_option("--function", a->function, "Function to run (default: the first)");
  return [a] { return runRun(*a); };
}

}  // namespace kfuse::cli
