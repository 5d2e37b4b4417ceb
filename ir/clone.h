// Copying a function within its module (e.g. @forward -> @train_step, so
// that training rewrites a copy and the forward stays for evaluation).
#pragma once

#include <memory>
#include <string>

#include "ir/graph.h"

namespace kfuse {

// Adds to src's module a copy of `src` named `name`: arguments, nodes with
// attributes, names and provenance, results and state updates. Returns null
// if the module already has a function of that name.
Graph* cloneFunction(const Graph& src, std::string name);

// A deep copy of a node's body (for a copied fused node).
std::unique_ptr<Graph> cloneBody(const Graph& src);

}  // namespace kfuse
