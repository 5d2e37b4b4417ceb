// Reordering a graph's nodes so every node follows the producers of its
// operands, keeping the existing order wherever it already does (passes
// that replace groups of nodes can then insert anywhere).
#pragma once

#include "ir/graph.h"

namespace kfuse {

void sortTopologically(Graph& g);

}  // namespace kfuse
