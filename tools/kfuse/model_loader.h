// Loading a model from any supported file, for every subcommand that takes
// one: textual IR (.kir) always; ONNX (.onnx) when built with KFUSE_WITH_ONNX.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kfuse::cli {

struct ModelOptions {
  // --shape NAME=D0,D1,...: binds the dynamic dimensions of an input.
  std::map<std::string, std::vector<int64_t>> shapes;
};

Expected<std::unique_ptr<Module>> loadModel(const std::string& path, const ModelOptions& opts = {});

// True for paths loadModel reads as ONNX models (*.onnx).
bool isOnnxPath(const std::string& path);

// Parses --shape specs ("x=1,3,64,64") into opts.shapes.
Status parseShapeSpecs(const std::vector<std::string>& specs, ModelOptions& opts);

}  // namespace kfuse::cli
