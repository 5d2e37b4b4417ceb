// The ONNX importer: an ONNX model in, a verified kfuse module out.
//
//   auto m = onnx_import::importModelFile("model.onnx", {.shapes = {{"x", {1, 3, 64, 64}}}});
//
// The module has one function, @main, whose arguments are the graph inputs
// that are not initializers and whose results are the graph outputs, named as
// in the model. Initializers used at run time become parameters with their
// data; Constant nodes and shape computations are folded at import. Every
// imported node carries the ONNX node's name and op type (loc(...) in the IR).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "frontend/onnx/model_file.h"
#include "ir/graph.h"

namespace kfuse::onnx_import {

struct ImportOptions {
  // --shape NAME=D0,D1,...: the full shape of input NAME, needed when the
  // model leaves some of its dimensions symbolic (a dynamic batch).
  std::map<std::string, std::vector<int64_t>> shapes;
};

Expected<std::unique_ptr<Module>> importModel(const OnnxModel& model, const ImportOptions& opts = {},
                                              ImportReport* report = nullptr);
Expected<std::unique_ptr<Module>> importModelFile(const std::string& path, const ImportOptions& opts = {},
                                                  ImportReport* report = nullptr);

// Names of the graph inputs that are not initializers: the function's
// arguments, in order (ONNX backend tests number their input files so).
std::vector<std::string> runtimeInputNames(const OnnxModel& model);

// The table of supported ONNX ops as Markdown rows (docs/onnx-support.md).
std::string supportedOpsMarkdown();

}  // namespace kfuse::onnx_import
