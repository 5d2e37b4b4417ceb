// ONNX external data: tensors whose bytes live in files beside the model
// (onnx.save_model(..., save_as_external_data=True)). Only files inside the
// model's folder are ever opened: a location that is absolute, climbs out
// with "..", or resolves (through symlinks) to a path outside the folder is
// refused before anything is opened.
#pragma once

#include <string>

#include "ir/support/expected.h"

namespace onnx {
class ModelProto;
}

namespace kfuse::onnx_import {

// Reads the external data of every tensor in the model (initializers and
// tensor attributes, in subgraphs too) into raw_data and marks the tensors
// as stored inline, so that nothing downstream (the ONNX checker included)
// looks for files. `modelDir` is the folder of the model file; messages start
// with `modelPath`.
Status inlineExternalData(onnx::ModelProto& model, const std::string& modelDir, const std::string& modelPath);

}  // namespace kfuse::onnx_import
