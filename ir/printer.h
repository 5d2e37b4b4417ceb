// The textual IR printer. Output is deterministic and parses back to a module
// that prints identically (see docs/ir.md for the grammar).
#pragma once

#include <ostream>
#include <string>

#include "ir/graph.h"

namespace kfuse {

struct PrintOptions {
  // Parameters whose data is not in the module's weights file (created by a
  // pass, or loaded from elsewhere) are written inline as dense literals, so
  // the printed module is complete.
  bool inlineUnbackedParams = true;
  // Print loc(...) provenance of imported nodes.
  bool printLocs = true;
};

void printModule(std::ostream& os, const Module& m, const PrintOptions& opts = {});
std::string printModule(const Module& m, const PrintOptions& opts = {});
void printGraph(std::ostream& os, const Graph& g, const PrintOptions& opts = {}, int indent = 0);

}  // namespace kfuse
