// The imported function's signature: ONNX graph inputs become arguments
// (symbolic dimensions bound by --shape), graph outputs become results,
// checked against the types the model declares for them.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "frontend/onnx/import_context.h"

namespace onnx {
class GraphProto;
}

namespace kfuse::onnx_import {

using ShapeBindings = std::map<std::string, std::vector<int64_t>>;

// Adds an argument per graph input that is not an initializer. Inputs kfuse
// cannot represent (sequences, unsupported element types) are appended to
// `unsupported`; problems with the model or the bindings are the Error,
// naming every input whose shape is unknown or symbolic and unbound.
Status addGraphInputs(const onnx::GraphProto& g, const ShapeBindings& shapes, ImportState& s,
                      std::vector<std::string>& unsupported);

// Sets the function's results to the graph outputs, each named as in the
// model, and checks them against the declared element types and static dims.
Status setGraphOutputs(const onnx::GraphProto& g, ImportState& s);

}  // namespace kfuse::onnx_import
