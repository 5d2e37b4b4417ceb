// nn::Module: the base of kfuse's PyTorch-style layers. A module owns named
// parameters (trainable) and buffers (running statistics), and named child
// modules; full names are dotted paths from the root ("layers.0.weight"),
// the keys of PyTorch's state_dict for the same structure, so weights move
// between the two by name. forward() traces the module's computation into
// the graph of its input (frontend/trace/tracer.h); traced parameters become
// `param`s of the kfuse module, buffers become `buffer`s.
//
// Modules are held by std::shared_ptr (a parent shares its children). A
// module has one parent: its name is the one under which it was first
// registered.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "frontend/trace/nn/init.h"
#include "frontend/trace/tracer.h"
#include "ir/weights.h"

namespace kfuse::nn {

using trace::Tensor;

// A pair of sizes (height, width) given as one number or two: `3` or `{3, 5}`.
struct Size2 {
  int64_t h = 0, w = 0;
  Size2(int64_t both) : h(both), w(both) {}  // NOLINT: implicit by design
  Size2(int64_t height, int64_t width) : h(height), w(width) {}
  bool operator==(const Size2&) const = default;
};

// A parameter or buffer with its full name (relative to the module asked).
struct NamedTensor {
  std::string name;
  std::shared_ptr<const kfuse::Tensor> data;
  bool trainable = true;  // false for buffers
};

struct LoadOptions {
  // As torch's load_state_dict(strict=True): every parameter and buffer
  // must be given and every given tensor must be one. With strict = false,
  // missing and unknown names are skipped; shapes must still match.
  bool strict = true;
};

class Module {
 public:
  explicit Module(std::string typeName);
  virtual ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Traces the module applied to x. The default fails with a message: a
  // module with several inputs has its own forward(...) instead.
  virtual Tensor forward(const Tensor& x);
  Tensor operator()(const Tensor& x) { return forward(x); }

  const std::string& typeName() const { return typeName_; }
  // Opens this module's scope on x's trace for as long as the result lives:
  // errors read "in <path> (<type>): ..." and nodes carry the path and type
  // as provenance. Every forward() starts with `auto s = scope(x);`.
  trace::Scope scope(const Tensor& x) const { return trace::Scope(x, path(), typeName_); }
  // The dotted path from the root module ("layers.0"); "" for the root.
  std::string path() const;

  // Training mode (the default) or evaluation mode, for this module and
  // every descendant: BatchNorm2d and Dropout trace differently in each.
  void train(bool on = true);
  void eval() { train(false); }
  bool isTraining() const { return training_; }

  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const { return children_; }

  // Parameters and buffers with names relative to this module, in
  // torch.nn.Module.state_dict() order: a module's parameters, then its
  // buffers, then each child's in registration order.
  std::vector<NamedTensor> namedTensors() const;
  std::vector<NamedTensor> namedParameters() const;  // trainable only
  std::vector<NamedTensor> namedBuffers() const;
  TensorMap stateDict() const;
  // The data of parameter or buffer `name` (relative to this module), or nullptr.
  const kfuse::Tensor* findTensor(std::string_view name) const;

  // Replaces parameters and buffers by name, all or nothing: on any problem
  // (a name the model does not have, one it needs and is not given, a dtype
  // or shape that differs) nothing changes and the Error lists every
  // problem, one line each. Loading weights from an ONNX model's
  // initializers is this call on the map the ONNX reader gives.
  Status loadStateDict(const TensorMap& tensors, const LoadOptions& opts = {});
  // loadStateDict from a kfuse weights file (safetensors).
  Status loadWeights(const std::string& path, const LoadOptions& opts = {});
  // Writes stateDict() as a weights file, names as in stateDict().
  Status saveWeights(const std::string& path) const;

  // Replaces the data of parameter or buffer `name` (relative to this
  // module); the new data must have the registered dtype and shape.
  Status setTensor(std::string_view name, kfuse::Tensor data);

  // Re-draws every parameter from `gen` with the modules' default schemes
  // (constructors draw from defaultGenerator()): children first, then this
  // module, as PyTorch's constructors order it.
  void resetParameters(Generator& gen);
  // A problem found while the module was built (a child registered under a
  // bad or duplicate name), in this module or a descendant; tracing and
  // loading report it.
  Status validate() const;

 protected:
  // Registration, in the constructor; names are local (no dots) and unique.
  void registerParameter(std::string name, kfuse::Tensor init);
  void registerBuffer(std::string name, kfuse::Tensor init);
  template <typename M>
  std::shared_ptr<M> registerModule(std::string name, std::shared_ptr<M> child) {
    addChild(std::move(name), child);
    return child;
  }
  // Draws this module's own parameters; the default has none to draw.
  virtual void initParameters(Generator& gen) {}

  // The value of registered parameter or buffer `name` in x's trace.
  Tensor param(const Tensor& x, std::string_view name) const;
  // The full name of a local parameter ("layers.0.weight").
  std::string fullName(std::string_view local) const;
  // Records a construction problem (a negative size, channels that do not
  // divide into groups): validate() reports it, and tracing fails with it.
  void reportProblem(const std::string& message);
  // The first problem reported, "" if none.
  const std::string& problem() const { return defect_; }

  // A failed Tensor with `message`, recorded in x's trace under this
  // module's scope (for checks a module makes itself, such as input rank).
  Tensor fail(const Tensor& x, const std::string& message) const;

 private:
  struct Slot {
    std::string name;
    std::shared_ptr<const kfuse::Tensor> data;
    bool trainable;
  };
  void addChild(std::string name, std::shared_ptr<Module> child);
  void addSlot(std::string name, kfuse::Tensor init, bool trainable);
  bool nameIsFree(const std::string& name, std::string_view what);
  const Slot* findSlot(std::string_view name) const;
  // "layers.0 (Linear)", or "Linear" for a root, for messages.
  std::string describe() const;
  void collect(const std::string& prefix, std::vector<NamedTensor>& out) const;

  std::string typeName_;
  Module* parent_ = nullptr;
  std::string nameInParent_;
  bool training_ = true;
  std::vector<Slot> slots_;  // registration order
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  std::string defect_;  // first construction problem, "" if none
};

// Traces model.forward on one input of the given type into a kfuse module.
Expected<std::unique_ptr<kfuse::Module>> trace(Module& model, const TensorType& input,
                                               const trace::TraceOptions& opts = {});

}  // namespace kfuse::nn
