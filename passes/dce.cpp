// dce: removes nodes none of whose results are used. All ops are pure (state
// changes are explicit state updates, which count as uses), so an unused node
// can always go.
#include "passes/pass_registry.h"

namespace kfuse {
namespace {

class DCEPass : public Pass {
 public:
  std::string_view name() const override { return "dce"; }
  PassResult run(Graph& g, const PassContext&) override {
    bool changed = false;
    std::vector<Node*> nodes = g.nodes();
    // Reverse order: erasing a user can make its producers dead in the same sweep.
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      Node* n = *it;
      bool used = false;
      for (size_t i = 0; i < n->numResults(); ++i) used |= n->result(i)->hasUses();
      if (used) continue;
      g.eraseNode(n);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> createDCEPass() { return std::make_unique<DCEPass>(); }

}  // namespace kfuse
