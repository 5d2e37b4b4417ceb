#include "runtime/executor.h"

#include "ir/support/strings.h"

namespace kfuse {
namespace {

class InterpreterExecutor : public Executor {
 public:
  std::string_view target() const override { return "interpreter"; }
  Expected<InterpreterResult> run(const Graph& fn, const std::vector<Tensor>& args) override {
    return interpret(fn, args);
  }
};

}  // namespace

std::vector<std::string> availableTargets() { return {"interpreter"}; }

Expected<std::unique_ptr<Executor>> createExecutor(std::string_view target) {
  if (target == "interpreter") return std::unique_ptr<Executor>(new InterpreterExecutor());
  return Error(str("unknown target '", target, "' (available: ", join(availableTargets()), ")"));
}

}  // namespace kfuse
