// The shared state behind Tracer and Tensor handles. Internal to
// frontend/trace: ops.cpp builds nodes through it.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "frontend/trace/tracer.h"
#include "ir/attribute.h"

namespace kfuse::trace::detail {

struct ModuleScope {
  std::string path;  // "layers.0"; "" for a root module
  std::string type;  // "Linear"
};

struct TraceState : std::enable_shared_from_this<TraceState> {
  std::unique_ptr<Module> module;
  Graph* graph = nullptr;
  bool finished = false;
  std::shared_ptr<const Error> firstError;
  std::vector<ModuleScope> scopes;
  // Pending state updates, in the order they were first set.
  std::vector<std::string> updateOrder;
  std::map<std::string, Value*, std::less<>> updates;
  std::map<const void*, int64_t> seedUses;

  // "in layers.0 (Linear): " for the innermost scope, "" outside modules.
  std::string scopePrefix() const;
  // Records `e` (prefixed with the scope) as the first error if there is
  // none yet, and returns a Tensor failed with it.
  Tensor fail(const Error& e);
  // An ok Tensor over `v`.
  Tensor wrap(Value* v);
  // Builds one node of `op` over `operands` (which must be ok Tensors of
  // this trace) and returns its results, or a failed Tensor per result.
  std::vector<Tensor> build(Op op, const std::vector<Value*>& operands, AttrMap attrs,
                            size_t failedResults);

  // Access to the private parts of the handles.
  static const std::shared_ptr<TraceState>& of(const Tensor& t) { return t.state_; }
  static const std::shared_ptr<TraceState>& of(const Tracer& t) { return t.state_; }
  static const std::shared_ptr<const Error>& errorOf(const Tensor& t) { return t.error_; }
  static Tensor failed(std::shared_ptr<TraceState> state, std::shared_ptr<const Error> e) {
    return Tensor(std::move(state), std::move(e));
  }
};

// Validates the operands of a call of `op` and, if they are all ok and of
// one live trace, builds it. Otherwise returns `numResults` failed Tensors:
// the first failed operand's error is passed along unchanged; an empty
// operand, a finished trace or operands of two traces are new errors.
std::vector<Tensor> apply(Op op, const std::vector<Tensor>& operands, AttrMap attrs = {},
                          size_t numResults = 1);
Tensor apply1(Op op, const std::vector<Tensor>& operands, AttrMap attrs = {});

}  // namespace kfuse::trace::detail
