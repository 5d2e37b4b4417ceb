#include "ir/topo_sort.h"

#include <map>
#include <queue>

namespace kfuse {

void sortTopologically(Graph& g) {
  std::vector<Node*> nodes = g.nodes();
  std::map<const Node*, size_t> position, pending;
  for (size_t i = 0; i < nodes.size(); ++i) position[nodes[i]] = i;
  // Kahn's algorithm, always taking the ready node that came first.
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (Node* n : nodes) {
    size_t deps = 0;
    for (const Value* v : n->operands())
      if (v->producer() && position.count(v->producer())) ++deps;
    pending[n] = deps;
    if (deps == 0) ready.push(position[n]);
  }
  std::vector<Node*> order;
  while (!ready.empty()) {
    Node* n = nodes[ready.top()];
    ready.pop();
    order.push_back(n);
    for (size_t r = 0; r < n->numResults(); ++r)
      for (const Use& u : n->result(r)->uses())
        if (--pending[u.user] == 0) ready.push(position[u.user]);
  }
  for (Node* n : order) g.moveNode(n, nullptr);  // append in order
}

}  // namespace kfuse
