#include "ir/support/file_io.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "ir/support/strings.h"

namespace kfuse {

Expected<std::string> readFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return Error(str("cannot read '", path, "': it is a directory"));
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(str("cannot read '", path, "': ", std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Error(str("cannot read '", path, "': read error"));
  return ss.str();
}

Status writeFileAtomically(const std::string& path, std::string_view contents) {
  // Unique per process and thread: the compile caches store entries from
  // several threads at once, possibly the same entry.
  std::string tmp = str(path, ".tmp.", ::getpid(), ".", std::hash<std::thread::id>()(std::this_thread::get_id()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Error(str("cannot write '", path, "': ", std::strerror(errno)));
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return Error(str("cannot write '", path, "': write failed (disk full?)"));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    return Error(str("cannot write '", path, "': ", std::strerror(err)));
  }
  return Status::ok();
}

}  // namespace kfuse
