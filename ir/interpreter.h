// The reference interpreter: runs a verified graph node by node with each
// op's reference implementation. It is the oracle every backend is tested
// against, so it does nothing clever: no fusion, no in-place updates.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kfuse {

struct InterpreterResult {
  std::vector<Tensor> outputs;
  // New values of parameters the function updates (state updates), by name.
  // Shared, so that applying them costs no copy and a device can tell that
  // a parameter still holds the value it produced (runtime/cpu_runner.h).
  std::map<std::string, std::shared_ptr<const Tensor>> updates;
};

// Evaluates one node on concrete operands with its op's reference
// implementation (used by the interpreter and by constant folding).
Expected<std::vector<Tensor>> evaluateNode(const Node& n, const std::vector<const Tensor*>& inputs);

// `args` must match the function's argument types exactly; parameters are
// read from the module (an Error names any parameter without data).
Expected<InterpreterResult> interpret(const Graph& g, const std::vector<Tensor>& args);

// Writes each state update back into the module's parameters.
void applyUpdates(Module& m, const InterpreterResult& r);

}  // namespace kfuse
