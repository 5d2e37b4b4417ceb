#include "ir/module_io.h"

#include <filesystem>

#include "ir/printer.h"
#include "ir/support/file_io.h"
#include "ir/weights.h"

namespace kfuse {

namespace fs = std::filesystem;

namespace {
// The module's weights file as seen from directory `dir`.
std::string weightsRelativeTo(const Module& m, const fs::path& dir) {
  fs::path resolved(m.weightsPath());
  if (resolved.is_relative()) resolved = fs::path(m.weightsDir()) / resolved;
  return fs::relative(fs::absolute(resolved), dir).string();
}
}  // namespace

Status writeModuleFile(Module& m, const std::string& kirPath, const WriteOptions& opts) {
  fs::path out = fs::absolute(kirPath);
  int64_t unbacked = 0;
  for (const auto& p : m.params())
    if (p->data && !p->backedByFile) unbacked += p->data->numElements();

  std::string text;
  if (unbacked > opts.maxInlineElements) {
    fs::path weights = out.parent_path() / (out.stem().string() + ".safetensors");
    std::vector<std::pair<std::string, const Tensor*>> tensors;
    for (const auto& p : m.params())
      if (p->data) tensors.emplace_back(p->name, p->data.get());
    KF_RETURN_IF_ERROR(writeWeightsFile(weights.string(), tensors));
    std::string savedPath = m.weightsPath(), savedDir = m.weightsDir();
    std::vector<bool> savedBacked;
    for (const auto& p : m.params()) {
      savedBacked.push_back(p->backedByFile);
      if (p->data) p->backedByFile = true;
    }
    m.setWeightsPath(weights.filename().string());
    m.setWeightsDir(out.parent_path().string());
    text = printModule(m);
    if (!opts.adopt) {
      m.setWeightsPath(savedPath);
      m.setWeightsDir(savedDir);
      for (size_t i = 0; i < m.params().size(); ++i) m.params()[i]->backedByFile = savedBacked[i];
    }
  } else if (!m.weightsPath().empty()) {
    std::string savedPath = m.weightsPath();
    m.setWeightsPath(weightsRelativeTo(m, out.parent_path()));
    text = printModule(m);
    if (opts.adopt)
      m.setWeightsDir(out.parent_path().string());
    else
      m.setWeightsPath(savedPath);
  } else {
    text = printModule(m);
  }
  return writeFileAtomically(out.string(), text);
}

}  // namespace kfuse
