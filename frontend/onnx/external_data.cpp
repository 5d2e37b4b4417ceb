#include "frontend/onnx/external_data.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>

#include "frontend/onnx/tensor_proto.h"
#include "ir/support/strings.h"
#include "onnx/onnx_pb.h"

namespace kfuse::onnx_import {
namespace {

namespace fs = std::filesystem;
using onnx::TensorProto;

struct ExternalRef {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;  // -1: not given
};

Expected<int64_t> parseCount(const std::string& key, const std::string& text) {
  int64_t v = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0)
    return Error(str("external data ", key, " '", text, "' is not a non-negative integer"));
  return v;
}

Expected<ExternalRef> readRef(const TensorProto& t) {
  ExternalRef ref;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") {
      ref.location = kv.value();
    } else if (kv.key() == "offset") {
      KF_ASSIGN_OR_RETURN(ref.offset, parseCount("offset", kv.value()));
    } else if (kv.key() == "length") {
      KF_ASSIGN_OR_RETURN(ref.length, parseCount("length", kv.value()));
    }
  }
  if (ref.location.empty()) return Error("external data has no location");
  return ref;
}

// The file `location` names, if it is inside `dir`; checked on the text
// first (no absolute paths, no ".."), then on the resolved path, so that a
// symlink cannot lead outside either.
Expected<fs::path> resolveInside(const fs::path& dir, const std::string& location) {
  fs::path loc(location);
  auto refuse = [&](const std::string& why) {
    return Error(str("external data location '", location, "' ", why, " (refused: only files inside the model's "
                     "folder are read)"));
  };
  if (loc.is_absolute() || loc.has_root_name() || loc.has_root_directory()) return refuse("is an absolute path");
  for (const fs::path& part : loc)
    if (part == "..") return refuse("climbs out of the model's folder with '..'");
  std::error_code ec;
  fs::path base = fs::canonical(dir, ec);
  if (ec) return Error(str("cannot resolve the model's folder '", dir.string(), "': ", ec.message()));
  fs::path file = fs::canonical(base / loc, ec);
  if (ec) return Error(str("external data file '", location, "' cannot be found: ", ec.message()));
  auto [b, f] = std::mismatch(base.begin(), base.end(), file.begin(), file.end());
  if (b != base.end()) return refuse(str("resolves to '", file.string(), "', outside the model's folder"));
  if (!fs::is_regular_file(file, ec)) return Error(str("external data file '", location, "' is not a regular file"));
  return file;
}

Status loadTensor(TensorProto& t, const fs::path& dir) {
  KF_ASSIGN_OR_RETURN(ExternalRef ref, readRef(t));
  KF_ASSIGN_OR_RETURN(fs::path file, resolveInside(dir, ref.location));
  // The size the tensor needs, from its own dtype and dims.
  auto dtype = dtypeFromOnnx(t.data_type());
  if (!dtype) return dtype.error();
  KF_ASSIGN_OR_RETURN(Shape shape, shapeOfProto(t, "the tensor"));
  auto need = static_cast<int64_t>(TensorType(*dtype, shape).byteSize());
  std::error_code ec;
  auto size = static_cast<int64_t>(fs::file_size(file, ec));
  if (ec) return Error(str("cannot read external data file '", ref.location, "': ", ec.message()));
  int64_t length = ref.length >= 0 ? ref.length : need;  // no length: exactly what the tensor needs
  if (ref.offset > size || length > size - ref.offset)
    return Error(str("external data range [", ref.offset, ", ", ref.offset + length, ") lies beyond the end of '",
                     ref.location, "' (", size, " bytes)"));
  if (length != need)
    return Error(str("external data in '", ref.location, "' has ", length, " bytes, the tensor's type ",
                     formatType(TensorType(*dtype, shape)), " needs ", need));
  std::ifstream in(file, std::ios::binary);
  std::string bytes(static_cast<size_t>(length), '\0');
  in.seekg(ref.offset);
  in.read(bytes.data(), length);
  if (!in) return Error(str("cannot read external data file '", ref.location, "'"));
  t.set_raw_data(std::move(bytes));
  t.clear_external_data();
  t.set_data_location(TensorProto::DEFAULT);
  return Status::ok();
}

Status inlineGraph(onnx::GraphProto& g, const fs::path& dir, const std::string& modelPath);

Status inlineTensor(TensorProto& t, const fs::path& dir, const std::string& modelPath, const std::string& what) {
  if (t.data_location() != TensorProto::EXTERNAL) return Status::ok();
  if (Status s = loadTensor(t, dir); !s) return s.error().context(str(modelPath, ": ", what));
  return Status::ok();
}

Status inlineNode(onnx::NodeProto& n, const fs::path& dir, const std::string& modelPath) {
  for (auto& a : *n.mutable_attribute()) {
    std::string what = str("attribute '", a.name(), "' of node '", n.name(), "'");
    if (a.has_t()) KF_RETURN_IF_ERROR(inlineTensor(*a.mutable_t(), dir, modelPath, what));
    for (auto& t : *a.mutable_tensors()) KF_RETURN_IF_ERROR(inlineTensor(t, dir, modelPath, what));
    if (a.has_g()) KF_RETURN_IF_ERROR(inlineGraph(*a.mutable_g(), dir, modelPath));
    for (auto& g : *a.mutable_graphs()) KF_RETURN_IF_ERROR(inlineGraph(g, dir, modelPath));
  }
  return Status::ok();
}

Status inlineGraph(onnx::GraphProto& g, const fs::path& dir, const std::string& modelPath) {
  for (auto& t : *g.mutable_initializer())
    KF_RETURN_IF_ERROR(inlineTensor(t, dir, modelPath, str("initializer '", t.name(), "'")));
  for (auto& n : *g.mutable_node()) KF_RETURN_IF_ERROR(inlineNode(n, dir, modelPath));
  return Status::ok();
}

}  // namespace

Status inlineExternalData(onnx::ModelProto& model, const std::string& modelDir, const std::string& modelPath) {
  if (!model.has_graph()) return Status::ok();
  return inlineGraph(*model.mutable_graph(), modelDir.empty() ? fs::path(".") : fs::path(modelDir), modelPath);
}

}  // namespace kfuse::onnx_import
