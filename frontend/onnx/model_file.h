// Reading an ONNX model file: the bytes, the protobuf parse, the checks that
// tell an ONNX model from anything else, the opset range, and external data.
// What the model computes is the importer's business (importer.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/support/expected.h"

namespace onnx {
class ModelProto;
}

namespace kfuse::onnx_import {

// The ai.onnx opsets and IR versions kfuse reads: those of the ONNX release
// its schema table comes from (onnx 1.23: opset 28, IR 14), whatever ONNX
// library the machine has, since nodes resolve through that table
// (schema_table.h). Each op is lowered for the schema versions the op table
// lists (op_table.h): a model of any opset is read exactly when its ops'
// versions are supported, and a node of a version kfuse does not lower is
// reported as such.
inline constexpr int64_t kMinOpset = 1;
inline constexpr int64_t kMaxOpset = 28;
inline constexpr int64_t kMaxIrVersion = 14;

// What made a load or import fail, beyond the message.
struct ImportReport {
  // One entry per unsupported construct (an op kfuse cannot lower, an
  // unsupported element type, an opset outside the range): the model may be
  // valid, kfuse lacks the feature. Empty when the model itself is at fault.
  std::vector<std::string> unsupported;
};

struct OnnxModel {
  std::shared_ptr<onnx::ModelProto> proto;  // external data already inlined
  std::string path;                          // for messages
  int64_t opset = 0;                         // of the default (ai.onnx) domain
};

// Every error starts with the path and says what is wrong: unreadable, not
// ONNX (corrupt, truncated, or some other format), opset out of range,
// external data missing or outside the model's folder.
Expected<OnnxModel> loadModelFile(const std::string& path, ImportReport* report = nullptr);
// The same from bytes; `dir` is where external data files are looked for.
Expected<OnnxModel> parseModel(const std::string& bytes, const std::string& path, const std::string& dir,
                               ImportReport* report = nullptr);

// Runs ONNX's own checker (onnx::checker::check_model) where the ONNX
// library knows the model's IR version and opset, and returns its complaint
// as an Error instead of an exception. Newer models are checked by kfuse's
// own node checks alone (schema_table.h), which the importer runs on every
// model.
Status checkWithOnnxChecker(const OnnxModel& m);

}  // namespace kfuse::onnx_import
