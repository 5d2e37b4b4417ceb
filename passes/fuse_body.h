// Building a fused node's body from a group of nodes, and replacing the group
// by the fused node.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kfuse {

// A body computing the group's values: values from outside (parameters
// included) become arguments, in order of first use; splat constants are
// copied in rather than passed; values used outside the group (by other
// nodes, as results or state updates) are its results, in program order.
// `nodes` must be in program order.
std::unique_ptr<Graph> buildFusedBody(const Graph& g, const std::vector<const Node*>& nodes, std::string name);

// Replaces the group by one fused node named `name` at the end of g (sort g
// topologically afterwards).
void replaceWithFused(Graph& g, const std::vector<const Node*>& nodes, const std::string& name);

}  // namespace kfuse
