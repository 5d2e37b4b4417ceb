// cse: when two nodes apply the same op with the same attributes to the same
// operands, the later one's results are replaced by the earlier one's. Every
// op is deterministic (dropout's mask is a function of seed, step and index),
// so this is always sound.
#include <map>

#include "ir/support/strings.h"
#include "passes/pass_registry.h"

namespace kfuse {
namespace {

// A key identifying what a node computes: op, operands, attributes.
std::string nodeKey(const Node& n) {
  std::string key(n.opName());
  for (Value* v : n.operands()) key += str("|", static_cast<const void*>(v));
  for (const auto& [name, a] : n.attrs()) key += str("|", name, "=", formatAttribute(a));
  return key;
}

class CSEPass : public Pass {
 public:
  std::string_view name() const override { return "cse"; }
  PassResult run(Graph& g, const PassContext&) override {
    bool changed = false;
    std::map<std::string, Node*> seen;
    for (Node* n : g.nodes()) {
      auto [it, inserted] = seen.emplace(nodeKey(*n), n);
      if (inserted) continue;
      Node* first = it->second;
      for (size_t i = 0; i < n->numResults(); ++i) {
        Value* keep = first->result(i);
        if (keep->name().empty()) keep->setName(n->result(i)->name());
        g.replaceAllUsesWith(n->result(i), keep);
      }
      g.eraseNode(n);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> createCSEPass() { return std::make_unique<CSEPass>(); }

}  // namespace kfuse
