// Reverse-mode differentiation over the graph IR.
#pragma once

#include <map>
#include <vector>

#include "ir/graph.h"

namespace kfuse {

using GradientMap = std::map<const Value*, Value*>;

// Appends to g the nodes computing d(loss)/d(v) for every v in `wrt`
// (arguments, parameters or results of g), using each op's gradient rule from
// the registry. Gradients reaching a value along several paths are summed.
// The forward values the backward reads are ordinary values of the graph, so
// later passes see exactly what is kept alive for the backward.
// `loss` must be a rank-0 floating-point value; `seed` (same type) scales
// the result, 1 when null. The map has an entry for each v of `wrt` that
// the loss depends on. Errors name the forward node: an op without a
// gradient rule on a path from `wrt` to the loss, or a rule that failed.
Expected<GradientMap> buildBackward(Graph& g, Value* loss, const std::vector<Value*>& wrt, Value* seed = nullptr);

}  // namespace kfuse
