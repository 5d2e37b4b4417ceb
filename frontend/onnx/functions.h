// Model-local functions (ModelProto.functions, FunctionProto): every call is
// replaced by the function's body, with the call's inputs, outputs and
// attributes substituted, before anything else reads the graph. Exporters
// write functions for modules they keep whole (the dynamo exporter's
// `export_modules_as_functions`, onnxscript functions); kfuse lowers ops, so
// it inlines them all, recursively, as onnxruntime does without a kernel
// for the function.
#pragma once

#include <string>

#include "ir/support/expected.h"

namespace onnx {
class ModelProto;
}

namespace kfuse::onnx_import {

// Errors name the file and the calling node: a body reading a name it does
// not define, functions nested too deep (a cycle), a function importing
// another version of an opset the model imports, an attribute reference of
// the wrong type.
Status inlineFunctions(onnx::ModelProto& model, const std::string& path);

}  // namespace kfuse::onnx_import
