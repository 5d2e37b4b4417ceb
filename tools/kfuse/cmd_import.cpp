// kfuse import: an ONNX model to textual IR plus its weights file.
#include <iostream>

#include "frontend/onnx/importer.h"
#include "ir/module_io.h"
#include "ir/printer.h"
#include "ir/support/strings.h"
#include "tools/kfuse/commands.h"
#include "tools/kfuse/model_loader.h"

namespace kfuse::cli {
namespace {

struct ImportArgs {
  std::string model;
  std::string output;
  std::vector<std::string> shapes;
  bool listOps = false;
};

int runImport(const ImportArgs& a) {
  if (a.listOps) {
    std::cout << onnx_import::supportedOpsMarkdown();
    return 0;
  }
  if (a.model.empty()) return reportError("import", Error("a model file is required (kfuse import MODEL.onnx)"));
  if (!isOnnxPath(a.model))
    return reportError("import", Error(str("'", a.model, "' is not an .onnx file; kfuse import reads ONNX models")));
  ModelOptions opts;
  if (Status s = parseShapeSpecs(a.shapes, opts); !s) return reportError("import", s.error());
  auto module = loadModel(a.model, opts);
  if (!module) return reportError("import", module.error());
  if (a.output.empty()) {
    // The IR alone, without parameter data: for reading, not for running.
    PrintOptions print;
    print.inlineUnbackedParams = false;
    printModule(std::cout, **module, print);
    return 0;
  }
  WriteOptions write;
  write.maxInlineElements = 0;  // parameters always go to the weights file
  if (Status s = writeModuleFile(**module, a.output, write); !s) return reportError("import", s.error());
  size_t nodes = 0;
  for (const auto& f : (*module)->functions()) nodes += f->numNodes();
  std::cout << "wrote " << a.output << " (" << nodes << " nodes, " << (*module)->params().size() << " parameters";
  if (!(*module)->weightsPath().empty()) std::cout << " in " << (*module)->weightsPath();
  std::cout << ")\n";
  return 0;
}

}  // namespace

Action addImportCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("import", "Import an ONNX model: write its textual IR and weights file");
  auto a = std::make_shared<ImportArgs>();
  cmd->add_option("model", a->model, "ONNX model (.onnx)");
  cmd->add_option("-o,--output", a->output,
                  "Write the IR to this .kir file and the parameters beside it (OUT.safetensors); "
                  "without it, print the IR (without parameter data)");
  cmd->add_option("--shape", a->shapes, "NAME=D0,D1,...: the shape of input NAME, binding its symbolic dimensions");
  cmd->add_flag("--list-ops", a->listOps, "Print the supported ONNX ops as Markdown table rows and exit");
  return [a] { return runImport(*a); };
}

}  // namespace kfuse::cli
