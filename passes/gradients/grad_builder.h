// What an op's gradient rule builds with. A rule receives the forward node
// and the gradients of its results, and returns one gradient per operand
// (nullptr where none flows: integer operands, indices, non-differentiable
// ones). Rules are internal code, so instead of threading Expected through
// every line the builder keeps the first error ("sticky"): a failed build
// returns nullptr, later builds with a nullptr operand return nullptr too, and
// the autodiff pass reports the error once, naming the forward node.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kfuse {

class GradBuilder {
 public:
  // New nodes go before `before` (nullptr: at the end of g).
  GradBuilder(Graph& g, Node* before = nullptr) : g_(g), before_(before) {}

  Graph& graph() { return g_; }
  // Provenance given to the nodes built from now on (the forward node's
  // source name, and its op with a ".grad" suffix).
  void setProvenance(const Node& fwd);

  Value* op(Op op, const std::vector<Value*>& operands, AttrMap attrs = {});
  std::vector<Value*> ops(Op op, const std::vector<Value*>& operands, AttrMap attrs = {});
  // A constant of the given dtype and shape filled with v.
  Value* constant(double v, DType dtype, const Shape& shape = {});
  Value* scalarLike(double v, const Value* like) { return like ? constant(v, like->type().dtype) : nullptr; }
  Value* reshape(Value* v, const Shape& shape);
  // Sums a broadcast gradient back to `target` (the operand's shape before
  // NumPy broadcasting): leading axes and axes of extent 1 are summed away.
  Value* sumToShape(Value* grad, const Shape& target);
  // Broadcasts v to `shape` (NumPy rules).
  Value* expandTo(Value* v, const Shape& shape);
  // v relabelled with layout tag `layout` (same shape, no data movement):
  // shape ops yield plain values, and a gradient must carry its operand's tag.
  Value* withLayout(Value* v, Layout layout);

  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }
  void fail(std::string msg) {
    if (error_.empty()) error_ = std::move(msg);
  }

 private:
  Graph& g_;
  Node* before_;
  std::string sourceName_, sourceOp_;
  std::string error_;
};

// Gradients of the operands of `fwd` given those of its results (`dys`, one
// per result, nullptr where the result has no gradient).
using GradFn = std::function<std::vector<Value*>(GradBuilder& b, const Node& fwd, std::span<Value* const> dys)>;

}  // namespace kfuse
