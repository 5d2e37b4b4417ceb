// The IR verifier: types, shapes, SSA order and uses. Every message names the
// node (with its source location when parsed or imported), its op, and what
// is wrong; all problems found are reported at once.
#pragma once

#include "ir/graph.h"

namespace kfuse {

Status verifyGraph(const Graph& g);
Status verifyModule(const Module& m);

// "file:line:col: " when the node has a location, else "".
std::string locPrefix(const Node& n);

}  // namespace kfuse
