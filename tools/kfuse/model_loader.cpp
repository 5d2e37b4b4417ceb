#include "tools/kfuse/model_loader.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "ir/support/strings.h"
#include "tools/kfuse/commands.h"

#if KFUSE_WITH_ONNX
#include "frontend/onnx/importer.h"
#endif

namespace kfuse::cli {

bool isOnnxPath(const std::string& path) {
  if (path.size() < 5) return false;
  std::string ext = path.substr(path.size() - 5);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".onnx";
}

Expected<std::unique_ptr<Module>> loadModel(const std::string& path, const ModelOptions& opts) {
  if (isOnnxPath(path)) {
#if KFUSE_WITH_ONNX
    onnx_import::ImportOptions io;
    io.shapes = opts.shapes;
    return onnx_import::importModelFile(path, io);
#else
    return Error(str("'", path, "' is an ONNX model, but this kfuse was built without ONNX support "
                     "(configure with -DKFUSE_WITH_ONNX=ON)"));
#endif
  }
  if (!opts.shapes.empty())
    return Error(str("--shape applies to ONNX models only; the shapes of '", path, "' are fixed in its IR"));
  return loadModuleArg(path);
}

Status parseShapeSpecs(const std::vector<std::string>& specs, ModelOptions& opts) {
  for (const std::string& spec : specs) {
    auto bad = [&] { return Error(str("--shape expects NAME=D0,D1,... with non-negative sizes, got '", spec, "'")); };
    auto eq = spec.rfind('=');
    if (eq == std::string::npos || eq == 0) return bad();
    std::vector<int64_t> dims;
    std::string text = spec.substr(eq + 1);
    size_t start = 0;
    while (!text.empty() && start <= text.size()) {
      size_t comma = std::min(text.find(',', start), text.size());
      int64_t d = -1;
      auto [end, ec] = std::from_chars(text.data() + start, text.data() + comma, d);
      if (ec != std::errc() || end != text.data() + comma || d < 0) return bad();
      dims.push_back(d);
      start = comma + 1;
    }
    std::string name = spec.substr(0, eq);
    if (opts.shapes.count(name)) return Error(str("--shape gives input '", name, "' twice"));
    opts.shapes[name] = dims;
  }
  return Status::ok();
}

}  // namespace kfuse::cli
