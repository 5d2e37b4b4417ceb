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
  // A regular file in one read into a buffer of its size: streamed into a
  // growing string, a ResNet-50's 100 MB were copied several times over, a
  // third of a warm `kfuse run`'s time. Other files (pipes, /proc) stream.
  if (std::filesystem::is_regular_file(path, ec)) {
    const std::uintmax_t size = std::filesystem::file_size(path, ec);
    if (!ec && size > 0) {
      std::string data(static_cast<size_t>(size), '\0');
      in.read(data.data(), static_cast<std::streamsize>(size));
      if (in.gcount() != static_cast<std::streamsize>(size)) return Error(str("cannot read '", path, "': read error"));
      return data;
    }
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Error(str("cannot read '", path, "': read error"));
  return ss.str();
}

Status writeFileAtomically(const std::string& path, std::string_view contents) {
  return writeFileAtomically(path, [&](const ByteSink& sink) { sink(contents); });
}

Status writeFileAtomically(const std::string& path, const std::function<void(const ByteSink&)>& write) {
  // Unique per process and thread: the compile caches store entries from
  // several threads at once, possibly the same entry.
  std::string tmp = str(path, ".tmp.", ::getpid(), ".", std::hash<std::thread::id>()(std::this_thread::get_id()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Error(str("cannot write '", path, "': ", std::strerror(errno)));
    write([&](std::string_view piece) { out.write(piece.data(), static_cast<std::streamsize>(piece.size())); });
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
