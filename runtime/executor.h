// Runs functions of a module on a target. Today the only target is the
// reference interpreter; the compiled CPU and CUDA backends implement the
// same interface.
#pragma once

#include <memory>
#include <string_view>

#include "ir/interpreter.h"

namespace kfuse {

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string_view target() const = 0;
  // Runs `fn` on `args` with the parameters its module holds now. State
  // updates are returned, not applied: the caller decides (applyUpdates).
  virtual Expected<InterpreterResult> run(const Graph& fn, const std::vector<Tensor>& args) = 0;
};

// The names accepted by --target.
std::vector<std::string> availableTargets();
// An Error lists the available targets.
Expected<std::unique_ptr<Executor>> createExecutor(std::string_view target);

}  // namespace kfuse
