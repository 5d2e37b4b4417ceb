// The C++ tracing frontend: models written as ordinary C++ calls on traced
// Tensors become kfuse graph IR, the way torch.jit.trace records PyTorch.
//
// A trace::Tensor is a handle on a value of the graph being built. Every op
// call (ops.h) appends exactly one registry node through buildNode, so
// shapes and dtypes are inferred by the op registry as the trace grows.
//
// Errors: a call that cannot be built (shapes that do not broadcast, a wrong
// dtype, a missing attribute) does not throw or abort. It returns a failed
// Tensor carrying the error, and the trace records it if it is the first.
// Calls on failed Tensors build nothing and pass the error along, so a model
// function runs to its end, and trace() / Tracer::finish() return the first
// error as an Expected. Messages name the op and the operand types:
//   in fc2 (Linear): op 'matmul': contraction sizes differ: operand 0 f32[8,64] gives K = 64, ...
//
// A trace belongs to one thread at a time; separate traces are independent.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ir/support/expected.h"
#include "ir/tensor.h"

namespace kfuse::trace {

// The IR's type vocabulary, so that `using namespace kfuse::trace;` is all a
// model file needs. (kfuse::Tensor, host data, is deliberately not brought
// in: inside this namespace Tensor is the traced handle.)
using kfuse::DType;
using kfuse::Layout;
using kfuse::Shape;
using kfuse::TensorType;

namespace detail {
struct TraceState;
}

class Tracer;

// A value of a graph being traced, or the error that prevented it. Cheap to
// copy (two shared pointers and a type). A default-constructed Tensor is
// "empty": using it in an op is an error, not a crash.
class Tensor {
 public:
  Tensor() = default;

  // True when this Tensor is a value of a live trace: not empty, not
  // failed, and its trace not yet finished.
  bool ok() const;
  // The error that made this Tensor fail; nullptr when ok() or empty.
  const Error* error() const { return error_.get(); }

  // The value's type. Empty and failed Tensors report a rank-0 f32 type.
  const TensorType& type() const { return type_; }
  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }
  int64_t rank() const { return static_cast<int64_t>(type_.shape.size()); }

  // The IR value (nullptr unless ok()). Valid while the trace is running.
  Value* value() const;
  // The trace this Tensor belongs to (a null handle for an empty Tensor).
  Tracer tracer() const;

  // Names the IR value, so that the printed IR reads %name instead of %7.
  // Returns *this for chaining: `Tensor h = relu(x).named("h");`.
  const Tensor& named(std::string name) const;

 private:
  friend class Tracer;
  friend struct detail::TraceState;
  Tensor(std::shared_ptr<detail::TraceState> state, Value* value);
  Tensor(std::shared_ptr<detail::TraceState> state, std::shared_ptr<const Error> error);

  std::shared_ptr<detail::TraceState> state_;
  Value* value_ = nullptr;
  TensorType type_{DType::F32, {}};
  std::shared_ptr<const Error> error_;
};

// A trace in progress: the module and function being built, the first
// error, and the stack of nn modules being traced (for messages). It is a
// handle: copies refer to the same trace. This is also the "builder form"
// of tracing:
//   Tracer t("mlp");
//   Tensor x = t.input("x", TensorType(DType::F32, {8, 2}));
//   auto module = t.finish({relu(x)});
class Tracer {
 public:
  explicit Tracer(std::string moduleName = "model", std::string functionName = "forward");

  // A new function argument. Names must be unique.
  Tensor input(std::string name, TensorType type);
  // A `constant` node holding `value`.
  Tensor constant(kfuse::Tensor value);
  // A rank-0 constant of the given dtype (rounded to it), for scalar operands.
  Tensor scalar(double value, DType dtype);

  // The value of module parameter `name`, declared on first use with `data`
  // (shared, not copied). A later request for the same name must pass the
  // same data; if `name` has a pending update in this trace, that value is
  // returned instead, so a parameter read after an update sees the new value.
  Tensor parameter(const std::string& name, std::shared_ptr<const kfuse::Tensor> data, bool trainable = true);
  // Sets the value parameter `name` takes when the function returns (a
  // state update: batch-norm running statistics). `name` must have been
  // declared through parameter(), and `value` must have its type.
  void update(const std::string& name, const Tensor& value);

  // Records `message` as an error of the current module scope (the first
  // one is what finish() reports) and returns a failed Tensor carrying it.
  Tensor fail(const std::string& message);
  // The first error recorded so far, or nullptr.
  const Error* firstError() const;
  // Distinct for every call in one trace, for ops that need a seed per use
  // (dropout): mixes `base` with how often `key` asked before.
  int64_t seedFor(const void* key, int64_t base);

  // Ends the trace: the function returns `outputs`, state updates are
  // attached, and the module is verified. Returns the first error instead if
  // any call failed. Tensors of a finished trace fail when used again.
  Expected<std::unique_ptr<Module>> finish(const std::vector<Tensor>& outputs);

  // False for the null handle of an empty Tensor.
  bool valid() const { return state_ != nullptr; }

 private:
  friend class Tensor;
  friend class Scope;
  friend struct detail::TraceState;
  explicit Tracer(std::shared_ptr<detail::TraceState> state) : state_(std::move(state)) {}
  std::shared_ptr<detail::TraceState> state_;
};

// Marks the calls made while it lives as belonging to an nn module: their
// errors read "in <path> (<type>): ..." and their nodes carry the path and
// type as provenance (printed as loc("layers.0", "Linear")). nn modules open
// one in forward(); user code may too. Does nothing for a failed `x`.
class Scope {
 public:
  Scope(const Tensor& x, std::string path, std::string type);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  std::shared_ptr<detail::TraceState> state_;
};

struct TraceOptions {
  std::string moduleName = "model";
  std::string functionName = "forward";
  // Argument names; by default "x" for one input, "x0", "x1", ... otherwise.
  std::vector<std::string> inputNames;
};

namespace detail {

using TraceBody = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
// arity < 0: the body takes all inputs as one vector.
Expected<std::unique_ptr<Module>> traceBody(const TraceBody& body, int arity, const std::vector<TensorType>& inputs,
                                            const TraceOptions& opts);

template <typename R>
std::vector<Tensor> asOutputs(R&& r) {
  if constexpr (std::is_convertible_v<R, Tensor>)
    return {Tensor(std::forward<R>(r))};
  else
    return std::vector<Tensor>(std::forward<R>(r));
}

template <size_t>
using TensorArg = const Tensor&;

template <typename Fn, size_t... I>
constexpr bool invocableWith(std::index_sequence<I...>) {
  return std::is_invocable_v<Fn&, TensorArg<I>...>;
}

// The number of Tensor arguments fn takes (0 to 8), or -1.
template <typename Fn>
constexpr int tensorArity() {
  int found = -1;
  [&]<size_t... N>(std::index_sequence<N...>) {
    ((found < 0 && invocableWith<Fn>(std::make_index_sequence<N>()) ? (found = static_cast<int>(N)) : 0), ...);
  }(std::make_index_sequence<9>());
  return found;
}

template <typename Fn, size_t... I>
std::vector<Tensor> spread(Fn& fn, const std::vector<Tensor>& args, std::index_sequence<I...>) {
  return asOutputs(fn(args[I]...));
}

}  // namespace detail

// A callable trace() accepts: f(Tensor, ...) with up to 8 Tensors, or
// f(const std::vector<Tensor>&); returning a Tensor or a std::vector<Tensor>.
// Parameters must be typed (const Tensor&), not auto: the arity is read
// from the signature.
template <typename Fn>
concept TraceableFn = std::is_invocable_v<Fn&, const std::vector<Tensor>&> || (detail::tensorArity<Fn>() >= 0);

// Traces fn on inputs of the given types into a one-function module:
//   auto m = trace([&](const Tensor& x) { return model.forward(x); }, {TensorType(DType::F32, {8, 2})});
// The number of types must match fn's Tensor parameters.
template <TraceableFn Fn>
Expected<std::unique_ptr<Module>> trace(Fn&& fn, const std::vector<TensorType>& inputs, const TraceOptions& opts = {}) {
  if constexpr (std::is_invocable_v<Fn&, const std::vector<Tensor>&>) {
    return detail::traceBody([&](const std::vector<Tensor>& a) { return detail::asOutputs(fn(a)); }, -1, inputs,
                             opts);
  } else {
    constexpr int n = detail::tensorArity<Fn>();
    return detail::traceBody(
        [&](const std::vector<Tensor>& a) { return detail::spread(fn, a, std::make_index_sequence<n>()); }, n, inputs,
        opts);
  }
}

}  // namespace kfuse::trace
