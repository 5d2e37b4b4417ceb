// Writing a module as a .kir file plus, when needed, its weights file.
#pragma once

#include <string>

#include "ir/graph.h"

namespace kfuse {

struct WriteOptions {
  // The module moves to the written file: its weights reference is updated
  // to the file written (kfuse opt -o). When false (IR dumps), the module is
  // left exactly as it was.
  bool adopt = true;
  // Parameter data not held by the module's weights file (created by a pass)
  // is written inline when it totals at most this many elements; above it,
  // every parameter goes to a new "<stem>.safetensors" beside the .kir file.
  int64_t maxInlineElements = 4096;
};

// Writes `m` to `kirPath` (atomically). Parameters whose data the module's
// weights file already holds are referenced through a path relative to the
// new file.
Status writeModuleFile(Module& m, const std::string& kirPath, const WriteOptions& opts = {});

}  // namespace kfuse
