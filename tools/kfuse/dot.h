// Graphviz DOT of a function: one box per node, each fused node drawn as a
// coloured cluster of the nodes in its body (kfuse opt --dot).
#pragma once

#include <string>

#include "ir/graph.h"

namespace kfuse::cli {

std::string toDot(const Graph& g);

}  // namespace kfuse::cli
