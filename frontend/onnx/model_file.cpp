#include "frontend/onnx/model_file.h"

#include <climits>
#include <filesystem>

#include "frontend/onnx/external_data.h"
#include "frontend/onnx/functions.h"
#include "ir/support/file_io.h"
#include "ir/support/strings.h"
#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/onnx_pb.h"

namespace kfuse::onnx_import {
namespace {

// The default domain's opset. ONNX spells it "" or "ai.onnx".
Expected<int64_t> defaultOpset(const onnx::ModelProto& m, const std::string& path, ImportReport* report) {
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") {
      int64_t v = o.version();
      if (v >= kMinOpset && v <= kMaxOpset) return v;
      std::string why = str("opset ", v, " is outside the supported range ", kMinOpset, " to ", kMaxOpset,
                            v > kMaxOpset ? str(" (", kMaxOpset, " is the newest kfuse reads); re-export with opset ",
                                                kMaxOpset, " or older")
                                          : "");
      if (report) report->unsupported.push_back(why);
      return Error(str(path, ": ", why));
    }
  // A model of other domains only (training ops, custom ops): its nodes are
  // judged one by one.
  return int64_t{0};
}

}  // namespace

Expected<OnnxModel> parseModel(const std::string& bytes, const std::string& path, const std::string& dir,
                               ImportReport* report) {
  if (bytes.empty()) return Error(str(path, ": the file is empty, not an ONNX model"));
  if (bytes.size() > static_cast<size_t>(INT_MAX))
    return Error(str(path, ": the file is larger than 2 GiB, the protobuf limit; such models keep their weights "
                           "in external data files"));
  auto proto = std::make_shared<onnx::ModelProto>();
  if (!proto->ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return Error(str(path, ": not an ONNX model: the protobuf data is corrupt or truncated"));
  // Protobuf parses many byte strings as some message; a model must at least
  // say which IR version it is and hold a graph.
  if (proto->ir_version() <= 0 || !proto->has_graph())
    return Error(str(path, ": not an ONNX model: ",
                     proto->ir_version() <= 0 ? "it has no ir_version" : "it has no graph"));
  if (proto->graph().node_size() == 0 && proto->graph().output_size() == 0)
    return Error(str(path, ": not an ONNX model: its graph has no nodes and no outputs"));
  if (proto->ir_version() > kMaxIrVersion) {
    std::string why = str("IR version ", proto->ir_version(), " is newer than ", kMaxIrVersion,
                          ", the newest kfuse reads");
    if (report) report->unsupported.push_back(why);
    return Error(str(path, ": ", why));
  }
  OnnxModel m;
  m.path = path;
  KF_ASSIGN_OR_RETURN(m.opset, defaultOpset(*proto, path, report));
  KF_RETURN_IF_ERROR(inlineExternalData(*proto, dir, path));
  KF_RETURN_IF_ERROR(inlineFunctions(*proto, path));
  m.proto = std::move(proto);
  return m;
}

Expected<OnnxModel> loadModelFile(const std::string& path, ImportReport* report) {
  KF_ASSIGN_OR_RETURN(std::string bytes, readFile(path));
  return parseModel(bytes, path, std::filesystem::path(path).parent_path().string(), report);
}

Status checkWithOnnxChecker(const OnnxModel& m) {
  // The library's checker refuses what it does not know; kfuse's own checks
  // stand in for newer models.
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto range = ranges.find(onnx::ONNX_DOMAIN);
  if (m.proto->ir_version() > onnx::Version::IR_VERSION || range == ranges.end() || m.opset > range->second.second)
    return Status::ok();
  try {
    onnx::checker::check_model(*m.proto);
  } catch (const std::exception& e) {
    // The checker's messages span lines ("...\n\n==> Context: ..."); keep one.
    std::string msg;
    for (char ch : std::string(e.what())) {
      if (ch != '\n') msg += ch;
      else if (!msg.empty() && msg.back() != ' ') msg += ' ';
    }
    while (!msg.empty() && msg.back() == ' ') msg.pop_back();
    return Error(str(m.path, ": not a valid ONNX model: ", msg));
  }
  return Status::ok();
}

}  // namespace kfuse::onnx_import
