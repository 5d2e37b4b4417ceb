// The textual IR parser. Every error is "file:line:col: error: what was
// expected / what is wrong"; the parser never aborts or hangs on bad input.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "ir/graph.h"

namespace kfuse {

struct ParseOptions {
  // Load the module's weights file (relative to the IR file's directory).
  bool loadWeights = true;
};

Expected<std::unique_ptr<Module>> parseModule(std::string_view text, const std::string& filename,
                                              const ParseOptions& opts = {});
Expected<std::unique_ptr<Module>> parseModuleFile(const std::string& path, const ParseOptions& opts = {});

// Attaches data from the module's weights file to every parameter not given
// inline; a relative weights path is resolved against m.weightsDir().
Status loadModuleWeights(Module& m);

}  // namespace kfuse
