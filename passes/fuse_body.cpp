#include "passes/fuse_body.h"

#include <algorithm>
#include <map>
#include <set>

#include "ir/kernel_form.h"
#include "ir/op_registry.h"

namespace kfuse {
namespace {

struct GroupIO {
  std::vector<Value*> inputs;   // outside values read, in first-use order
  std::vector<Value*> outputs;  // group values used outside, in program order
};

bool usedOutside(const Graph& g, const Value* v, const std::set<const Node*>& group) {
  for (const Use& u : v->uses())
    if (!group.count(u.user)) return true;
  return v->graphUses() > 0;
}

GroupIO groupIO(const Graph& g, const std::vector<const Node*>& nodes) {
  std::set<const Node*> group(nodes.begin(), nodes.end());
  GroupIO io;
  std::set<const Value*> seen;
  for (const Node* n : nodes)
    for (Value* v : n->operands()) {
      bool inside = v->producer() && group.count(v->producer());
      bool copied = v->producer() && isSplatConstant(*v->producer());
      if (!inside && !copied && seen.insert(v).second) io.inputs.push_back(v);
    }
  for (const Node* n : nodes)
    for (size_t r = 0; r < n->numResults(); ++r)
      if (usedOutside(g, n->result(r), group)) io.outputs.push_back(n->result(r));
  return io;
}

std::unique_ptr<Graph> build(const Graph& g, const std::vector<const Node*>& nodes, std::string name,
                             const GroupIO& io) {
  auto body = std::make_unique<Graph>(std::move(name), g.module());
  std::map<const Value*, Value*> map;
  std::set<std::string> taken;
  for (size_t i = 0; i < io.inputs.size(); ++i) {
    // The outer value's name (a parameter's, or a hint) reads best; numbered
    // and repeated names fall back to in<i>.
    Value* v = io.inputs[i];
    std::string name = v->name();
    bool numeric = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) { return std::isdigit(c); });
    if (name.empty() || numeric || taken.count(name)) name = "in" + std::to_string(i);
    taken.insert(name);
    map[v] = body->addArgument(name, v->type());
  }
  auto lookup = [&](Value* v) -> Value* {
    if (auto it = map.find(v); it != map.end()) return it->second;
    // A splat constant from outside: copy it in.
    const Node* c = v->producer();
    Node* copy = body->createNode(c->op(), {}, {v->type()}, c->attrs());
    map[v] = copy->result();
    return copy->result();
  };
  for (const Node* n : nodes) {
    std::vector<Value*> operands;
    for (Value* v : n->operands()) operands.push_back(lookup(v));
    std::vector<TensorType> types;
    for (size_t i = 0; i < n->numResults(); ++i) types.push_back(n->result(i)->type());
    Node* c = body->createNode(n->op(), operands, types, n->attrs());
    c->copyProvenance(*n);
    for (size_t i = 0; i < n->numResults(); ++i) {
      c->result(i)->setName(n->result(i)->name());
      map[n->result(i)] = c->result(i);
    }
  }
  std::vector<Value*> results;
  for (Value* v : io.outputs) results.push_back(map.at(v));
  body->setResults(results);
  return body;
}

}  // namespace

std::unique_ptr<Graph> buildFusedBody(const Graph& g, const std::vector<const Node*>& nodes, std::string name) {
  return build(g, nodes, std::move(name), groupIO(g, nodes));
}

void replaceWithFused(Graph& g, const std::vector<const Node*>& nodes, const std::string& name) {
  GroupIO io = groupIO(g, nodes);
  std::unique_ptr<Graph> body = build(g, nodes, name, io);
  std::vector<TensorType> types;
  for (const Value* v : io.outputs) types.push_back(v->type());
  Node* fused = g.createNode(OpRegistry::global().get(Op::Fused), io.inputs, types);
  fused->setBody(std::move(body));
  // The launch belongs to the phase of the work it starts with.
  fused->copyProvenance(*nodes.front());
  for (size_t i = 0; i < io.outputs.size(); ++i) {
    fused->result(i)->setName(io.outputs[i]->name());
    g.replaceAllUsesWith(io.outputs[i], fused->result(i));
  }
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) g.eraseNode(const_cast<Node*>(*it));
}

}  // namespace kfuse
