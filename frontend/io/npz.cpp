#include "frontend/io/npz.h"

#include <set>

#include "ir/npy.h"
#include "ir/support/file_io.h"
#include "ir/support/strings.h"

namespace kfuse::io {

Expected<TensorMap> parseNpz(std::string_view bytes, const std::string& path) {
  KF_ASSIGN_OR_RETURN(std::vector<ZipMember> members, readZip(bytes, path));
  TensorMap out;
  for (const ZipMember& m : members) {
    std::string what = str(".npz file '", path, "': member '", m.name, "'");
    const std::string suffix = ".npy";
    if (m.name.size() <= suffix.size() || m.name.compare(m.name.size() - suffix.size(), suffix.size(), suffix) != 0)
      return Error(str(what, " is not a .npy array"));
    std::string name = m.name.substr(0, m.name.size() - suffix.size());
    if (out.count(name)) return Error(str(what, " appears twice"));
    KF_ASSIGN_OR_RETURN(Tensor t, parseNpy(m.data, str(path, ":", m.name)));
    out.emplace(std::move(name), std::move(t));
  }
  return out;
}

Expected<TensorMap> readNpz(const std::string& path) {
  KF_ASSIGN_OR_RETURN(std::string bytes, readFile(path));
  return parseNpz(bytes, path);
}

Expected<std::string> serializeNpz(const std::vector<std::pair<std::string, const Tensor*>>& arrays,
                                   const NpzWriteOptions& opts) {
  std::set<std::string> seen;
  std::vector<std::string> npys;
  npys.reserve(arrays.size());
  for (const auto& [name, t] : arrays) {
    if (name.empty()) return Error("an .npz array needs a non-empty name");
    if (!seen.insert(name).second) return Error(str("the .npz array name '", name, "' is given twice"));
    npys.push_back(serializeNpy(*t));
  }
  std::vector<std::pair<std::string, std::string_view>> members;
  for (size_t i = 0; i < arrays.size(); ++i) members.emplace_back(arrays[i].first + ".npy", npys[i]);
  return writeZip(members, {opts.compress ? ZipMethod::Deflate : ZipMethod::Stored, opts.forceZip64});
}

Status writeNpz(const std::string& path, const std::vector<std::pair<std::string, const Tensor*>>& arrays,
                const NpzWriteOptions& opts) {
  KF_ASSIGN_OR_RETURN(std::string bytes, serializeNpz(arrays, opts));
  return writeFileAtomically(path, bytes);
}

}  // namespace kfuse::io
