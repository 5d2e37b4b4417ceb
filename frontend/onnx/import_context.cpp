#include "frontend/onnx/import_context.h"

#include <algorithm>

#include "ir/builder.h"
#include "ir/interpreter.h"
#include "ir/support/strings.h"
#include "onnx/onnx_pb.h"

namespace kfuse::onnx_import {
namespace {

// Folding may always produce this many elements; beyond it only as many as
// its inputs hold (as the constant-fold pass: an expand of a scalar is not
// worth materialising).
constexpr int64_t kFoldLimit = int64_t{1} << 16;
// Constants with more elements are stored as parameters (buffers) rather
// than printed inline in the IR.
constexpr int64_t kMaxInlineElements = 64;
// Evaluating on demand walks producer chains; shape subgraphs are a few
// nodes deep, and a model whose shape depends on a chain this long is
// treated as not constant.
constexpr int kMaxEvalDepth = 256;
constexpr int64_t kMaxEvalElements = int64_t{1} << 22;

// Provenance of kfuse nodes made for an ONNX node: its name, or for an
// unnamed node its first output (what ONNX tools show for it).
std::string sourceNameOf(const onnx::NodeProto& node) {
  if (!node.name().empty() || node.output_size() == 0) return node.name();
  return node.output(0);
}

const Tensor* constantData(const Value* v) {
  const Node* p = v->producer();
  if (!p || p->opName() != "constant") return nullptr;
  return &p->attr("value").asTensor();
}

}  // namespace

// ------------------------------------------------------------------ ImportState

void ImportState::addInitializer(const std::string& name, Tensor t) {
  if (!initializers_.count(name)) initializerOrder_.push_back(name);
  initializers_[name] = std::move(t);
  inNodes_.erase(name);  // a redefinition is read from here again
}

Expected<Value*> ImportState::valueOf(const std::string& name) {
  if (auto it = values_.find(name); it != values_.end()) return it->second;
  auto init = initializers_.find(name);
  if (init == initializers_.end())
    return Error(str("'", name, "' is not produced by an earlier node, nor a graph input or initializer"));
  AttrMap attrs;  // (not an initializer list: its elements are copied)
  attrs.emplace("value", Attribute(std::move(init->second)));
  inNodes_.insert(name);
  Node* n = buildNode(graph_, "constant", {}, std::move(attrs)).value();
  n->result()->setName(name);
  initializerNodes_[n] = name;
  values_[name] = n->result();
  return n->result();
}

// Float initializers stay parameters (weights keep their identity); integer
// and bool ones (shapes, indices, axes) fold like any constant.
const Tensor* ImportState::foldableConstant(const Value* v) const {
  Node* p = v->producer();
  if (!p || (initializerNodes_.count(p) && isFloat(v->type().dtype))) return nullptr;
  return constantData(v);
}

Value* ImportState::makeConstant(Tensor t, const std::string& nameHint) {
  Node* n = buildNode(graph_, "constant", {}, AttrMap{{"value", Attribute(std::move(t))}}).value();
  if (!nameHint.empty()) n->result()->setName(nameHint);
  return n->result();
}

Expected<Tensor> ImportState::constantOf(const std::string& name, bool* runtime) {
  if (auto it = initializers_.find(name); it != initializers_.end() && !inNodes_.count(name)) return it->second;
  auto v = values_.find(name);
  if (v == values_.end()) return Error(str("'", name, "' is not defined"));
  bool dummy = false;
  return evaluate(v->second, 0, runtime ? runtime : &dummy);
}

Expected<Tensor> ImportState::evaluate(const Value* v, int depth, bool* runtime) {
  if (const Tensor* t = constantData(v)) return *t;
  if (auto it = evaluated_.find(v); it != evaluated_.end()) return it->second;
  if (v->kind() == Value::Kind::Argument) {
    *runtime = true;
    return Error(str("it is computed from the graph input '", v->name(), "' at run time"));
  }
  if (v->kind() == Value::Kind::Param) {
    const Param* p = module_.findParam(v->name());
    if (p && p->data) return *p->data;
    return Error(str("parameter '", v->name(), "' has no data"));
  }
  const Node* n = v->producer();
  if (depth > kMaxEvalDepth) return Error("it depends on too long a chain of nodes to compute at import");
  if (v->type().numElements() > kMaxEvalElements) return Error("it is too large to compute at import");
  std::vector<Tensor> operands;
  operands.reserve(n->numOperands());
  for (Value* o : n->operands()) {
    KF_ASSIGN_OR_RETURN(Tensor t, evaluate(o, depth + 1, runtime));
    operands.push_back(std::move(t));
  }
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : operands) ptrs.push_back(&t);
  auto outs = evaluateNode(*n, ptrs);
  if (!outs)
    return Error(str("evaluating ", n->sourceOp.empty() ? std::string(n->opName()) : n->sourceOp, " node '",
                     n->sourceName, "' fails: ", outs.error().message()));
  // Nodes are only erased when they are folded right after being built, or
  // in finish(), so a cached value never outlives its node during lowering.
  for (size_t i = 0; i < outs->size(); ++i) evaluated_[n->result(i)] = std::move((*outs)[i]);
  return evaluated_.at(v);
}

void ImportState::finish() {
  evaluated_.clear();
  std::vector<Node*> nodes = graph_.nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    bool used = false;
    for (size_t i = 0; i < (*it)->numResults(); ++i) used |= (*it)->result(i)->hasUses();
    if (!used) {
      initializerNodes_.erase(*it);
      graph_.eraseNode(*it);
    }
  }
  std::set<std::string> taken(initializerOrder_.begin(), initializerOrder_.end());
  auto toParam = [&](Node* n, const std::string& name, bool trainable) {
    const Tensor& t = n->attr("value").asTensor();
    module_.addParam(name, t.type(), trainable);
    module_.setParamData(name, t);
    graph_.replaceAllUsesWith(n->result(), graph_.paramValue(name));
    graph_.eraseNode(n);
  };
  // Initializers first, in the model's order, so parameters read like the model.
  std::map<std::string, Node*> byName;
  for (const auto& [node, name] : initializerNodes_) byName[name] = node;
  for (const std::string& name : initializerOrder_) {
    auto it = byName.find(name);
    if (it == byName.end()) continue;
    DType dt = it->second->result()->type().dtype;
    toParam(it->second, name, isFloat(dt) && !buffers_.count(name));
  }
  initializerNodes_.clear();
  for (Node* n : graph_.nodes()) {
    if (n->opName() != "constant" || n->result()->type().numElements() <= kMaxInlineElements) continue;
    std::string base = !n->result()->name().empty() ? n->result()->name()
                       : !n->sourceName.empty()     ? n->sourceName + ".value"
                                                    : std::string("constant");
    std::string name = base;
    for (int k = 1; taken.count(name); ++k) name = str(base, "_", k);
    taken.insert(name);
    toParam(n, name, false);
  }
}

// ------------------------------------------------------------------ LoweringContext

LoweringContext::LoweringContext(ImportState& s, const onnx::NodeProto& node, int version)
    : state_(s), node_(node), version_(version), attrs_(node), outputSet_(static_cast<size_t>(node.output_size())) {}

const std::string& LoweringContext::opType() const { return node_.op_type(); }

const std::string& LoweringContext::nodeName() const {
  return node_.name().empty() && node_.output_size() > 0 ? node_.output(0) : node_.name();
}

size_t LoweringContext::numInputs() const { return static_cast<size_t>(node_.input_size()); }

bool LoweringContext::hasInput(size_t i) const { return i < numInputs() && !node_.input(static_cast<int>(i)).empty(); }

const std::string& LoweringContext::inputName(size_t i) const { return node_.input(static_cast<int>(i)); }

Expected<Value*> LoweringContext::input(size_t i) {
  if (!hasInput(i)) return Error(str("input ", i, " is missing"));
  return state_.valueOf(inputName(i));
}

Expected<Tensor> LoweringContext::constantInput(size_t i) {
  if (!hasInput(i)) return Error(str("input ", i, " is missing"));
  bool runtime = false;
  auto t = state_.constantOf(inputName(i), &runtime);
  if (t) return t;
  std::string msg = str("input ", i, " ('", inputName(i), "') must be known at import time, but ", t.error().message());
  if (runtime) return unsupported(msg + " (kfuse needs static shapes; data-dependent ones are not supported)");
  return Error(msg);
}

std::optional<Tensor> LoweringContext::constantInputIfKnown(size_t i) {
  if (!hasInput(i)) return std::nullopt;
  auto t = state_.constantOf(inputName(i));
  if (!t) return std::nullopt;
  return std::move(*t);
}

Expected<std::vector<int64_t>> LoweringContext::intsInput(size_t i) {
  KF_ASSIGN_OR_RETURN(Tensor t, constantInput(i));
  if (t.shape().size() > 1 || (t.dtype() != DType::I64 && t.dtype() != DType::I32))
    return Error(str("input ", i, " ('", inputName(i), "') must be a 1-D list of integers, got ",
                     formatType(t.type())));
  std::vector<int64_t> out;
  // Read the raw elements: i64 values like INT64_MAX (Slice's "to the end")
  // do not survive a round trip through double.
  for (int64_t k = 0; k < t.numElements(); ++k)
    out.push_back(t.dtype() == DType::I64 ? t.as<int64_t>()[k] : t.as<int32_t>()[k]);
  return out;
}

size_t LoweringContext::numOutputs() const { return static_cast<size_t>(node_.output_size()); }

bool LoweringContext::hasOutput(size_t i) const {
  return i < numOutputs() && !node_.output(static_cast<int>(i)).empty();
}

void LoweringContext::setOutput(size_t i, Value* v) {
  if (!hasOutput(i)) return;
  state_.define(node_.output(static_cast<int>(i)), v);
  outputSet_[i] = true;
}

bool LoweringContext::allOutputsSet() const {
  for (size_t i = 0; i < numOutputs(); ++i)
    if (hasOutput(i) && !outputSet_[i]) return false;
  return true;
}

void LoweringContext::markBuffer(size_t i) {
  if (hasInput(i) && state_.isInitializer(inputName(i))) state_.markBuffer(inputName(i));
}

bool LoweringContext::isOutputConsumed(size_t i) const {
  return hasOutput(i) && state_.isConsumed(node_.output(static_cast<int>(i)));
}

bool LoweringContext::updateInitializer(size_t i, Value* v) {
  if (!hasInput(i) || !state_.isInitializer(inputName(i))) return false;
  state_.graph().addStateUpdate(inputName(i), v);
  return true;
}

Expected<std::vector<Value*>> LoweringContext::buildMulti(std::string_view op, const std::vector<Value*>& operands,
                                                          AttrMap attrs) {
  KF_ASSIGN_OR_RETURN(Node* n, buildNode(state_.graph(), op, operands, std::move(attrs)));
  n->sourceName = sourceNameOf(node_);
  n->sourceOp = node_.op_type();
  // A dropout stays a node even over constants: a training step built from
  // the function gives it the step, and it draws a new mask every step.
  if (n->is(Op::Dropout)) return n->results();
  std::vector<const Tensor*> inputs;
  int64_t inElems = 0, outElems = 0;
  for (Value* v : operands) {
    const Tensor* t = state_.foldableConstant(v);
    if (!t) return n->results();
    inputs.push_back(t);
    inElems += t->numElements();
  }
  for (Value* r : n->results()) outElems += r->type().numElements();
  if (operands.empty() || outElems > std::max(kFoldLimit, inElems)) return n->results();
  auto outs = evaluateNode(*n, inputs);
  if (!outs) return Error(str(op, " cannot be evaluated on its constant operands: ", outs.error().message()));
  std::vector<Value*> folded;
  for (size_t i = 0; i < outs->size(); ++i) {
    Value* c = constant(std::move((*outs)[i]));
    state_.graph().moveNode(c->producer(), n);
    state_.graph().replaceAllUsesWith(n->result(i), c);
    folded.push_back(c);
  }
  state_.graph().eraseNode(n);
  return folded;
}

Expected<Value*> LoweringContext::build(std::string_view op, const std::vector<Value*>& operands, AttrMap attrs) {
  KF_ASSIGN_OR_RETURN(auto results, buildMulti(op, operands, std::move(attrs)));
  return results.front();
}

Value* LoweringContext::constant(Tensor t) {
  Value* v = state_.makeConstant(std::move(t), "");
  v->producer()->sourceName = sourceNameOf(node_);
  v->producer()->sourceOp = node_.op_type();
  return v;
}

Error LoweringContext::unsupported(const std::string& why) {
  unsupported_ = true;
  return Error(why);
}

std::string describeOnnxNode(const onnx::NodeProto& node, int index) {
  if (!node.name().empty()) return str("node '", node.name(), "' (", node.op_type(), ")");
  std::string out = node.output_size() > 0 ? str(", output '", node.output(0), "'") : "";
  return str("node #", index, " (", node.op_type(), out, ")");
}

}  // namespace kfuse::onnx_import
