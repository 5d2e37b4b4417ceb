#include "ir/clone.h"

#include <unordered_map>

namespace kfuse {

namespace {
void copyInto(const Graph& src, Graph* dst);
}  // namespace

Graph* cloneFunction(const Graph& src, std::string name) {
  Module* m = src.module();
  if (!m || m->findFunction(name)) return nullptr;
  Graph* dst = m->addFunction(std::move(name));
  copyInto(src, dst);
  return dst;
}

std::unique_ptr<Graph> cloneBody(const Graph& src) {
  auto dst = std::make_unique<Graph>(src.name(), src.module());
  copyInto(src, dst.get());
  return dst;
}

namespace {
void copyInto(const Graph& src, Graph* dst) {
  std::unordered_map<const Value*, Value*> map;
  auto lookup = [&](Value* v) -> Value* {
    if (v->kind() == Value::Kind::Param) return dst->paramValue(v->name());
    return map.at(v);
  };
  for (const auto& a : src.arguments()) map[a.get()] = dst->addArgument(a->name(), a->type());
  for (const auto& n : src.nodeList()) {
    std::vector<Value*> operands;
    for (Value* v : n->operands()) operands.push_back(lookup(v));
    std::vector<TensorType> types;
    for (size_t i = 0; i < n->numResults(); ++i) types.push_back(n->result(i)->type());
    Node* c = dst->createNode(n->op(), operands, types, n->attrs());
    if (n->body()) c->setBody(cloneBody(*n->body()));
    c->copyProvenance(*n);
    for (size_t i = 0; i < n->numResults(); ++i) {
      c->result(i)->setName(n->result(i)->name());
      map[n->result(i)] = c->result(i);
    }
  }
  std::vector<Value*> results;
  for (Value* v : src.results()) results.push_back(lookup(v));
  dst->setResults(results);
  dst->setDeclaredResultTypes(src.resultTypes());
  for (const StateUpdate& u : src.stateUpdates()) dst->addStateUpdate(u.param, lookup(u.value));
}
}  // namespace

}  // namespace kfuse
