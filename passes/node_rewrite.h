// A rewrite of one node into several: the new nodes are built before it,
// carrying its provenance, and either replace it together or are erased
// together when the rewrite gives up (pool-expand, conv-phases).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/builder.h"

namespace kfuse {

class NodeRewrite {
 public:
  NodeRewrite(Graph& g, Node* n) : g_(g), n_(n) {}

  // A node before n; null if it cannot be built (or an operand is null).
  Value* add(Op op, std::vector<Value*> operands, AttrMap attrs) {
    for (Value* v : operands)
      if (!v) return nullptr;
    auto node = buildNode(g_, op, operands, std::move(attrs), n_);
    if (!node) return nullptr;
    (*node)->copyProvenance(*n_);
    built_.push_back(*node);
    return (*node)->result();
  }
  // Erases what was built; returns `why`, the reason the rewrite gave up.
  std::string fail(std::string why) {
    for (auto it = built_.rbegin(); it != built_.rend(); ++it) g_.eraseNode(*it);
    built_.clear();
    return why;
  }
  // y takes n's name and uses, and n goes.
  void replaceWith(Value* y) {
    y->setName(n_->result()->name());
    g_.replaceAllUsesWith(n_->result(), y);
    g_.eraseNode(n_);
  }

 protected:
  Graph& g_;
  Node* n_;  // the node rewritten

 private:
  std::vector<Node*> built_;
};

}  // namespace kfuse
