// The state of one ONNX import and the interface every op lowering sees.
//
// ONNX value names map to kfuse values. Initializers stay data until a
// lowering needs them: as constant data (a Reshape's shape) they are read
// directly; as run-time operands they become `constant` nodes that the
// importer turns into module parameters at the end, once dead code is gone,
// so that initializers used only for shape arithmetic leave no trace.
//
// Constant folding happens as nodes are built: a node whose operands are all
// plain constants is evaluated with the reference interpreter's evaluateNode
// and replaced by a constant. A lowering that needs data at import time (a
// shape, axes, pads) asks for constantInput(i), which evaluates the value's
// producers on demand, through initializers too; this is what folds away the
// Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains exporters emit.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "frontend/onnx/attributes.h"
#include "ir/graph.h"

namespace onnx {
class NodeProto;
}

namespace kfuse::onnx_import {

class ImportState {
 public:
  ImportState(Module& m, Graph& g) : module_(m), graph_(g) {}

  Module& module() { return module_; }
  Graph& graph() { return graph_; }

  void addInitializer(const std::string& name, Tensor t);
  bool isInitializer(const std::string& name) const { return initializers_.count(name) != 0; }
  void define(const std::string& name, Value* v) { values_[name] = v; }
  bool isDefined(const std::string& name) const { return values_.count(name) || initializers_.count(name); }
  void poison(const std::string& name) { poisoned_.insert(name); }
  bool isPoisoned(const std::string& name) const { return poisoned_.count(name) != 0; }

  // The run-time value of an ONNX name (an initializer becomes a constant
  // node, turned into a parameter by finish()).
  Expected<Value*> valueOf(const std::string& name);
  // Data of an ONNX name known at import time, or an Error saying why not;
  // `runtime` is set when the reason is that the data depends on a graph
  // input (a data-dependent shape), which kfuse does not support.
  Expected<Tensor> constantOf(const std::string& name, bool* runtime = nullptr);
  // The data of v when it is a constant node that may be folded (not a
  // float initializer, which must stay a parameter).
  const Tensor* foldableConstant(const Value* v) const;
  // Value for a new constant; large ones become parameters in finish().
  Value* makeConstant(Tensor t, const std::string& nameHint);
  // Initializer `name` is state, not a trainable weight (running statistics).
  void markBuffer(const std::string& name) { buffers_.insert(name); }
  // The ONNX names some node reads or the graph returns (set before lowering).
  void setConsumed(std::set<std::string> names) { consumed_ = std::move(names); }
  bool isConsumed(const std::string& name) const { return consumed_.count(name) != 0; }

  // Removes dead nodes, then turns surviving initializer constants (and
  // large constants) into module parameters.
  void finish();

 private:
  Expected<Tensor> evaluate(const Value* v, int depth, bool* runtime);

  Module& module_;
  Graph& graph_;
  // An initializer's tensor moves into its constant node when a node first
  // reads it (valueOf): the node's is then the one copy (a ResNet-50's 100 MB
  // of weights were held twice and copied once more).
  std::map<std::string, Tensor, std::less<>> initializers_;
  std::set<std::string, std::less<>> inNodes_;  // initializers whose tensor their node holds
  std::vector<std::string> initializerOrder_;
  std::map<std::string, Value*, std::less<>> values_;
  std::set<std::string> poisoned_;
  // The constant nodes holding initializers used at run time, by the
  // initializer's name: finish() turns the live ones into parameters.
  std::unordered_map<Node*, std::string> initializerNodes_;
  std::set<std::string> buffers_;
  std::set<std::string> consumed_;
  std::unordered_map<const Value*, Tensor> evaluated_;
};

class LoweringContext {
 public:
  LoweringContext(ImportState& s, const onnx::NodeProto& node, int version);

  // ---- the ONNX node
  const std::string& opType() const;
  // The node's name, or its first output's when it has none (unique in a
  // well-formed graph either way).
  const std::string& nodeName() const;
  // The since_version of the op's schema at the model's opset (Softmax-1,
  // -11 and -13 differ in meaning).
  int version() const { return version_; }
  const NodeAttributes& attrs() const { return attrs_; }
  // ONNX marks an omitted optional input or output by an empty name.
  size_t numInputs() const;
  bool hasInput(size_t i) const;
  Expected<Value*> input(size_t i);
  // Input i's data, needed at import time: if it depends on a graph input,
  // the node is unsupported (kfuse shapes are static).
  Expected<Tensor> constantInput(size_t i);
  // Input i's data if known at import time, without judging the node.
  std::optional<Tensor> constantInputIfKnown(size_t i);
  // A constant integer input as a list (a scalar gives one element).
  Expected<std::vector<int64_t>> intsInput(size_t i);
  size_t numOutputs() const;
  bool hasOutput(size_t i) const;
  void setOutput(size_t i, Value* v);
  bool allOutputsSet() const;
  // Input i is non-trainable state (an initializer holding running stats).
  void markBuffer(size_t i);
  // Output i exists and some node reads it or the graph returns it.
  bool isOutputConsumed(size_t i) const;
  // When input i is an initializer: the function updates that parameter to
  // v when it returns (a state update, as a training step's); false if not.
  bool updateInitializer(size_t i, Value* v);

  // ---- building kfuse nodes: provenance set, all-constant nodes folded
  Expected<Value*> build(std::string_view op, const std::vector<Value*>& operands, AttrMap attrs = {});
  Expected<std::vector<Value*>> buildMulti(std::string_view op, const std::vector<Value*>& operands,
                                           AttrMap attrs = {});
  Value* constant(Tensor t);
  Value* scalar(DType dtype, double v) { return constant(Tensor::scalar(dtype, v)); }

  // ---- errors
  // A node kfuse cannot lower (a missing feature, not a broken model): the
  // test runner reports it as SKIP, and the importer lists all such nodes.
  Error unsupported(const std::string& why);
  bool isUnsupported() const { return unsupported_; }

 private:
  const std::string& inputName(size_t i) const;

  ImportState& state_;
  const onnx::NodeProto& node_;
  int version_;
  NodeAttributes attrs_;
  std::vector<bool> outputSet_;
  bool unsupported_ = false;
};

// "node '/fc1/Gemm' (Gemm)" or, for an unnamed node, "node #3 (Add, output 'y')".
std::string describeOnnxNode(const onnx::NodeProto& node, int index);

}  // namespace kfuse::onnx_import
