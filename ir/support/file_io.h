// Whole-file reads and atomic writes. A write goes to a temporary file in the
// same directory (named by process and thread) and is renamed over the
// target only when complete, so a failure never leaves a half-written file
// behind and concurrent writers of one path never share a temporary.
#pragma once

#include <string>
#include <string_view>

#include "ir/support/expected.h"

namespace kfuse {

// Error: "cannot read 'PATH': No such file or directory".
Expected<std::string> readFile(const std::string& path);
Status writeFileAtomically(const std::string& path, std::string_view contents);

}  // namespace kfuse
