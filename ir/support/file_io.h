// Whole-file reads and atomic writes. A write goes to a temporary file in the
// same directory (named by process and thread) and is renamed over the
// target only when complete, so a failure never leaves a half-written file
// behind and concurrent writers of one path never share a temporary.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "ir/support/expected.h"

namespace kfuse {

// Error: "cannot read 'PATH': No such file or directory".
Expected<std::string> readFile(const std::string& path);
Status writeFileAtomically(const std::string& path, std::string_view contents);
// The same, the contents handed over in pieces to `sink` by `write`: a large
// file (a package's weights) is written from where its parts lie instead of
// first being assembled in memory.
using ByteSink = std::function<void(std::string_view)>;
Status writeFileAtomically(const std::string& path, const std::function<void(const ByteSink&)>& write);

}  // namespace kfuse
