// From object files (compile.h's emitObject) to one shared object, with the
// system's C compiler driver as the linker: what an AOT package carries as
// its cpu kernels (runtime/package/cpu_code.h loads it).
#pragma once

#include <span>
#include <string>
#include <utility>

#include "ir/support/expected.h"

namespace kfuse::cpu {

// Links `objects` (ELF bytes) into a shared object that needs libm and libc
// only, with each alias (symbol, the defined symbol it names) exported too.
// Temporary files live in a private directory, removed on return. Errors
// quote the linker's output.
Expected<std::string> linkSharedObject(std::span<const std::string> objects,
                                       std::span<const std::pair<std::string, std::string>> aliases = {});

}  // namespace kfuse::cpu
