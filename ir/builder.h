// Creating nodes through the registry: attributes completed with defaults,
// arity checked, result types inferred. Frontends, the parser and passes all
// build nodes this way, so no caller re-implements an op's typing.
#pragma once

#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/op_registry.h"

namespace kfuse {

// Checks arity and infers result types for `op` applied to `inputs`.
// `body` is the body of an op that has one (fused); from a node, its own.
Expected<std::vector<TensorType>> inferResultTypes(const OpDef& op, const AttrMap& attrs,
                                                   std::span<const TensorType> inputs, const Node* node = nullptr,
                                                   const Graph* body = nullptr);

// "op 'add' takes 2 operands, got 3" or success.
Status checkArity(const OpDef& op, size_t numOperands);

// Builds a node of `op` at the end of `g` (or before `before`).
Expected<Node*> buildNode(Graph& g, Op op, const std::vector<Value*>& operands, AttrMap attrs = {},
                          Node* before = nullptr);
// The same by the op's name (the parser and the frontends, which read names).
Expected<Node*> buildNode(Graph& g, std::string_view opName, const std::vector<Value*>& operands, AttrMap attrs = {},
                          Node* before = nullptr);

}  // namespace kfuse
