// Re-typing a function for other argument shapes (another batch size): the
// IR is static, so every node's result types are inferred again from the new
// argument types. Nodes whose attributes pin a shape (a reshape to
// [256, 64]) make it fail, and the error names them.
#pragma once

#include <map>
#include <string>

#include "ir/graph.h"

namespace kfuse {

// Gives the named arguments the new shapes (dtype and layout kept) and
// re-infers every node and the signature. On error the graph is unchanged.
Status specializeArguments(Graph& g, const std::map<std::string, Shape>& shapes);

// The same with only the leading (batch) dimension of every argument of
// rank >= 1 set to `batch`.
Status specializeBatch(Graph& g, int64_t batch);

}  // namespace kfuse
