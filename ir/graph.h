// The graph IR: SSA values, nodes, graphs (functions) and modules.
//
// A Module owns named parameters (tensors with data) and functions (Graphs).
// A Graph has typed arguments, an ordered list of Nodes, and results; it may
// also assign new values to module parameters ("state updates": optimizer
// steps, batch-norm running statistics). Every Value is defined once: as a
// graph argument, as a reference to a module parameter, or as a node result.
// Nodes appear in the list after the definitions of their operands.
#pragma once

#include <list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attribute.h"
#include "ir/op.h"
#include "ir/types.h"

namespace kfuse {

class Graph;
class Module;
class Node;
struct OpDef;

// Where a node came from, for messages: a position in a .kir file, and the
// name and op type of the source model's node (ONNX) when imported.
struct SourceLoc {
  std::string file;
  int line = 0;
  int col = 0;
  bool valid() const { return line > 0; }
};

// Which part of a training step a node belongs to (set by the training
// transformation; forward for everything else), for per-phase statistics.
enum class Phase : uint8_t { Forward, Loss, Backward, Optimizer };
std::string_view phaseName(Phase p);

struct Use {
  Node* user;
  int operandIndex;
};

class Value {
 public:
  enum class Kind : uint8_t { Argument, Param, Result };

  Kind kind() const { return kind_; }
  const TensorType& type() const { return type_; }
  void setType(TensorType t) { type_ = std::move(t); }
  // Argument name, parameter name, or a result's name hint ("" for none).
  const std::string& name() const { return name_; }
  void setName(std::string n) { name_ = std::move(n); }

  Node* producer() const { return producer_; }  // Result only
  int resultIndex() const { return resultIndex_; }
  Graph* graph() const { return graph_; }

  const std::vector<Use>& uses() const { return uses_; }
  // Uses as a graph result or state update.
  int graphUses() const { return graphUses_; }
  bool hasUses() const { return !uses_.empty() || graphUses_ > 0; }

 private:
  friend class Graph;
  friend class Node;
  Value(Kind k, TensorType t, std::string name, Graph* g) : kind_(k), type_(std::move(t)), name_(std::move(name)), graph_(g) {}

  Kind kind_;
  TensorType type_;
  std::string name_;
  Graph* graph_;
  Node* producer_ = nullptr;
  int resultIndex_ = -1;
  std::vector<Use> uses_;
  int graphUses_ = 0;
};

class Node {
 public:
  const OpDef& op() const { return *op_; }
  std::string_view opName() const;
  // Whether this node is an `op` (ir/op.h): how code asks what a node is.
  bool is(Op op) const;

  size_t numOperands() const { return operands_.size(); }
  Value* operand(size_t i) const { return operands_[i]; }
  const std::vector<Value*>& operands() const { return operands_; }
  void setOperand(size_t i, Value* v);

  size_t numResults() const { return results_.size(); }
  Value* result(size_t i = 0) const { return results_[i].get(); }
  std::vector<Value*> results() const;

  const AttrMap& attrs() const { return attrs_; }
  // Attribute value, falling back to the op's declared default.
  const Attribute& attr(std::string_view name) const;
  bool hasAttr(std::string_view name) const { return attrs_.count(name) != 0; }
  void setAttr(const std::string& name, Attribute a) { attrs_[name] = std::move(a); }

  // The body of an op that has one (fused): a graph whose arguments are
  // this node's operands and whose results are its results.
  Graph* body() const { return body_.get(); }
  void setBody(std::unique_ptr<Graph> body);

  // Provenance, for messages and dumps.
  SourceLoc loc;
  std::string sourceName;  // e.g. the ONNX node name "/fc1/Gemm"
  std::string sourceOp;    // e.g. the ONNX op type "Gemm"
  Phase phase = Phase::Forward;
  // Copies loc, source name and op, and phase from `from` (for passes that
  // replace a node by another).
  void copyProvenance(const Node& from);

  Graph* graph() const { return graph_; }

 private:
  friend class Graph;
  Node(const OpDef* op, Graph* g) : op_(op), graph_(g) {}

  const OpDef* op_;
  Graph* graph_;
  std::vector<Value*> operands_;
  std::vector<std::unique_ptr<Value>> results_;
  AttrMap attrs_;
  std::unique_ptr<Graph> body_;
  std::list<std::unique_ptr<Node>>::iterator self_;
};

struct StateUpdate {
  std::string param;  // module parameter written
  Value* value;       // its new value at the end of the function
};

class Graph {
 public:
  Graph(std::string name, Module* module) : name_(std::move(name)), module_(module) {}
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  Module* module() const { return module_; }
  // The node whose body this graph is (null for a module's functions).
  Node* parentNode() const { return parent_; }

  // --- arguments and parameters
  Value* addArgument(std::string name, TensorType type);
  const std::vector<std::unique_ptr<Value>>& arguments() const { return args_; }
  Value* argument(size_t i) const { return args_[i].get(); }
  Value* findArgument(std::string_view name) const;
  // The value that reads module parameter `name` (created on first request);
  // nullptr if the module has no such parameter.
  Value* paramValue(std::string_view name);
  // Parameter values referenced so far, in name order.
  std::vector<Value*> paramValues() const;

  // --- nodes, in execution order
  const std::list<std::unique_ptr<Node>>& nodeList() const { return nodes_; }
  // Snapshot of the node order; safe to iterate while erasing.
  std::vector<Node*> nodes() const;
  size_t numNodes() const { return nodes_.size(); }

  // Creates a node with the given result types at the end, or before `before`.
  // Attributes are stored as given (defaults are filled by the op's builder).
  Node* createNode(const OpDef& op, const std::vector<Value*>& operands, const std::vector<TensorType>& resultTypes,
                   AttrMap attrs = {}, Node* before = nullptr);
  // Erases a node whose results have no uses.
  void eraseNode(Node* n);
  // Moves `n` to just before `before` (nullptr: to the end).
  void moveNode(Node* n, Node* before);

  // Redirects every use of `from` (operands, results, state updates) to `to`.
  void replaceAllUsesWith(Value* from, Value* to);

  // --- results and state updates
  const std::vector<Value*>& results() const { return results_; }
  const std::vector<TensorType>& resultTypes() const { return resultTypes_; }
  void setResults(std::vector<Value*> values);
  // The signature's declared result types (checked by the verifier against
  // the returned values). setResults sets them from the values.
  void setDeclaredResultTypes(std::vector<TensorType> types) { resultTypes_ = std::move(types); }
  const std::vector<StateUpdate>& stateUpdates() const { return updates_; }
  void addStateUpdate(std::string param, Value* value);
  void clearStateUpdates();

 private:
  friend class Node;
  std::string name_;
  Module* module_;
  Node* parent_ = nullptr;
  std::vector<std::unique_ptr<Value>> args_;
  std::map<std::string, std::unique_ptr<Value>, std::less<>> params_;
  std::list<std::unique_ptr<Node>> nodes_;
  std::vector<Value*> results_;
  std::vector<TensorType> resultTypes_;
  std::vector<StateUpdate> updates_;
};

// A named tensor the module owns. Trainable parameters get gradients in
// training; buffers (batch-norm running statistics, optimizer moments) are
// state that is read and updated but never differentiated.
struct Param {
  std::string name;
  TensorType type;
  bool trainable = true;
  std::shared_ptr<const Tensor> data;  // null until weights are loaded
  // True when `data` holds exactly what the module's weights file holds for
  // this name, so that printing can refer to the file instead of writing it.
  bool backedByFile = false;
};

class Module {
 public:
  explicit Module(std::string name = "module") : name_(std::move(name)) {}
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& name() const { return name_; }
  void setName(std::string n) { name_ = std::move(n); }

  // Path of the weights file as written in the IR (relative to the IR file).
  const std::string& weightsPath() const { return weightsPath_; }
  void setWeightsPath(std::string p) { weightsPath_ = std::move(p); }
  // Directory a relative weightsPath is resolved against (the IR file's).
  const std::string& weightsDir() const { return weightsDir_; }
  void setWeightsDir(std::string d) { weightsDir_ = std::move(d); }

  // Adds a parameter (declaration order is kept); returns nullptr if the name exists.
  Param* addParam(std::string name, TensorType type, bool trainable = true);
  Param* findParam(std::string_view name);
  const Param* findParam(std::string_view name) const;
  const std::vector<std::unique_ptr<Param>>& params() const { return params_; }
  // Whether some function of the module updates the parameter (a training
  // step's optimizer, batch-norm statistics).
  bool isUpdated(std::string_view param) const;
  void setParamData(std::string_view name, Tensor data, bool backedByFile = false);
  // Shares `data` (no copy) when its type is the parameter's, else retypes a
  // copy (same bytes, the declared shape and layout).
  void setParamData(std::string_view name, std::shared_ptr<const Tensor> data);

  Graph* addFunction(std::string name);
  Graph* findFunction(std::string_view name) const;
  const std::vector<std::unique_ptr<Graph>>& functions() const { return functions_; }

 private:
  std::string name_;
  std::string weightsPath_;
  std::string weightsDir_;
  std::vector<std::unique_ptr<Param>> params_;
  std::vector<std::unique_ptr<Graph>> functions_;
};

// The data of `v` when it is fixed as its module compiles: a constant's
// value, or the data of a parameter no function of the module updates (an
// inference module's weights; a training step updates its trainable
// parameters, so theirs are not fixed). Null otherwise. Passes that rewrite
// by a weight's value (a transposed copy, pow by a constant exponent) ask
// this, and nothing else.
const Tensor* fixedData(const Value& v);

}  // namespace kfuse
