#include "ir/graph.h"

#include <algorithm>
#include <cassert>

#include "ir/op_registry.h"

namespace kfuse {

// ---------------------------------------------------------------- Node

std::string_view phaseName(Phase p) {
  switch (p) {
    case Phase::Forward: return "forward";
    case Phase::Loss: return "loss";
    case Phase::Backward: return "backward";
    case Phase::Optimizer: return "optimizer";
  }
  return "?";
}

void Node::copyProvenance(const Node& from) {
  loc = from.loc;
  sourceName = from.sourceName;
  sourceOp = from.sourceOp;
  phase = from.phase;
}

std::string_view Node::opName() const { return op_->name; }
bool Node::is(Op op) const { return op_->id == op; }

void Node::setOperand(size_t i, Value* v) {
  Value* old = operands_[i];
  if (old == v) return;
  auto& uses = old->uses_;
  auto it = std::find_if(uses.begin(), uses.end(),
                         [&](const Use& u) { return u.user == this && u.operandIndex == static_cast<int>(i); });
  assert(it != uses.end());
  uses.erase(it);
  operands_[i] = v;
  v->uses_.push_back({this, static_cast<int>(i)});
}

std::vector<Value*> Node::results() const {
  std::vector<Value*> out;
  for (const auto& r : results_) out.push_back(r.get());
  return out;
}

void Node::setBody(std::unique_ptr<Graph> body) {
  body_ = std::move(body);
  if (body_) body_->parent_ = this;
}

const Attribute& Node::attr(std::string_view name) const {
  auto it = attrs_.find(name);
  if (it != attrs_.end()) return it->second;
  const AttrSpec* spec = op_->findAttr(name);
  assert(spec && spec->defaultValue && "attribute neither set nor defaulted");
  return *spec->defaultValue;
}

// ---------------------------------------------------------------- Graph

// Nodes are destroyed before values they use go away: clear in reverse so
// no use list is touched after its value is gone.
Graph::~Graph() {
  while (!nodes_.empty()) nodes_.pop_back();
}

Value* Graph::addArgument(std::string name, TensorType type) {
  args_.push_back(std::unique_ptr<Value>(new Value(Value::Kind::Argument, std::move(type), std::move(name), this)));
  return args_.back().get();
}

Value* Graph::findArgument(std::string_view name) const {
  for (const auto& a : args_)
    if (a->name() == name) return a.get();
  return nullptr;
}

Value* Graph::paramValue(std::string_view name) {
  auto it = params_.find(name);
  if (it != params_.end()) return it->second.get();
  const Param* p = module_ ? module_->findParam(name) : nullptr;
  if (!p) return nullptr;
  auto v = std::unique_ptr<Value>(new Value(Value::Kind::Param, p->type, p->name, this));
  Value* raw = v.get();
  params_.emplace(p->name, std::move(v));
  return raw;
}

std::vector<Value*> Graph::paramValues() const {
  std::vector<Value*> out;
  for (const auto& [_, v] : params_) out.push_back(v.get());
  return out;
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.get());
  return out;
}

Node* Graph::createNode(const OpDef& op, const std::vector<Value*>& operands, const std::vector<TensorType>& resultTypes,
                        AttrMap attrs, Node* before) {
  auto node = std::unique_ptr<Node>(new Node(&op, this));
  Node* n = node.get();
  n->attrs_ = std::move(attrs);
  for (size_t i = 0; i < operands.size(); ++i) {
    n->operands_.push_back(operands[i]);
    operands[i]->uses_.push_back({n, static_cast<int>(i)});
  }
  for (size_t i = 0; i < resultTypes.size(); ++i) {
    auto v = std::unique_ptr<Value>(new Value(Value::Kind::Result, resultTypes[i], "", this));
    v->producer_ = n;
    v->resultIndex_ = static_cast<int>(i);
    n->results_.push_back(std::move(v));
  }
  auto pos = before ? before->self_ : nodes_.end();
  n->self_ = nodes_.insert(pos, std::move(node));
  return n;
}

void Graph::eraseNode(Node* n) {
  for (const auto& r : n->results_) {
    (void)r;
    assert(!r->hasUses() && "erasing a node whose results are still used");
  }
  for (size_t i = 0; i < n->operands_.size(); ++i) {
    auto& uses = n->operands_[i]->uses_;
    auto it = std::find_if(uses.begin(), uses.end(),
                           [&](const Use& u) { return u.user == n && u.operandIndex == static_cast<int>(i); });
    assert(it != uses.end());
    uses.erase(it);
  }
  nodes_.erase(n->self_);
}

void Graph::moveNode(Node* n, Node* before) {
  auto pos = before ? before->self_ : nodes_.end();
  nodes_.splice(pos, nodes_, n->self_);
}

void Graph::replaceAllUsesWith(Value* from, Value* to) {
  if (from == to) return;
  std::vector<Use> uses = from->uses_;
  for (const Use& u : uses) u.user->setOperand(static_cast<size_t>(u.operandIndex), to);
  if (from->graphUses_ > 0) {
    for (Value*& r : results_)
      if (r == from) r = to;
    for (StateUpdate& u : updates_)
      if (u.value == from) u.value = to;
    to->graphUses_ += from->graphUses_;
    from->graphUses_ = 0;
  }
}

void Graph::setResults(std::vector<Value*> values) {
  for (Value* r : results_) --r->graphUses_;
  results_ = std::move(values);
  resultTypes_.clear();
  for (Value* r : results_) {
    ++r->graphUses_;
    resultTypes_.push_back(r->type());
  }
}

void Graph::addStateUpdate(std::string param, Value* value) {
  ++value->graphUses_;
  updates_.push_back({std::move(param), value});
}

void Graph::clearStateUpdates() {
  for (const StateUpdate& u : updates_) --u.value->graphUses_;
  updates_.clear();
}

// ---------------------------------------------------------------- Module

Param* Module::addParam(std::string name, TensorType type, bool trainable) {
  if (findParam(name)) return nullptr;
  auto p = std::make_unique<Param>();
  p->name = std::move(name);
  p->type = std::move(type);
  p->trainable = trainable;
  params_.push_back(std::move(p));
  return params_.back().get();
}

Param* Module::findParam(std::string_view name) {
  for (auto& p : params_)
    if (p->name == name) return p.get();
  return nullptr;
}

const Param* Module::findParam(std::string_view name) const {
  return const_cast<Module*>(this)->findParam(name);
}

bool Module::isUpdated(std::string_view param) const {
  for (const auto& f : functions_)
    for (const StateUpdate& u : f->stateUpdates())
      if (u.param == param) return true;
  return false;
}

const Tensor* fixedData(const Value& v) {
  if (const Node* p = v.producer(); p && p->is(Op::Constant)) return &p->attr("value").asTensor();
  const Module* m = v.graph() ? v.graph()->module() : nullptr;
  if (v.kind() != Value::Kind::Param || !m) return nullptr;
  const Param* p = m->findParam(v.name());
  return p && p->data && !m->isUpdated(v.name()) ? p->data.get() : nullptr;
}

void Module::setParamData(std::string_view name, Tensor data, bool backedByFile) {
  Param* p = findParam(name);
  assert(p && data.type().byteSize() == p->type.byteSize());
  p->data = std::make_shared<const Tensor>(data.type() == p->type ? std::move(data) : data.withType(p->type));
  p->backedByFile = backedByFile;
}

void Module::setParamData(std::string_view name, std::shared_ptr<const Tensor> data) {
  Param* p = findParam(name);
  assert(p && data && data->type().byteSize() == p->type.byteSize());
  p->data = data->type() == p->type ? std::move(data) : std::make_shared<const Tensor>(data->withType(p->type));
  p->backedByFile = false;
}

Graph* Module::addFunction(std::string name) {
  functions_.push_back(std::make_unique<Graph>(std::move(name), this));
  return functions_.back().get();
}

Graph* Module::findFunction(std::string_view name) const {
  for (const auto& f : functions_)
    if (f->name() == name) return f.get();
  return nullptr;
}

}  // namespace kfuse
