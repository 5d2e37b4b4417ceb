#include "frontend/trace/tracer.h"

#include "frontend/trace/trace_state.h"
#include "ir/builder.h"
#include "ir/support/strings.h"
#include "ir/verifier.h"

namespace kfuse::trace {

using detail::TraceState;

// ---------------------------------------------------------------- Tensor

Tensor::Tensor(std::shared_ptr<TraceState> state, Value* value)
    : state_(std::move(state)), value_(value), type_(value->type()) {}

Tensor::Tensor(std::shared_ptr<TraceState> state, std::shared_ptr<const Error> error)
    : state_(std::move(state)), error_(std::move(error)) {}

bool Tensor::ok() const { return value_ != nullptr && error_ == nullptr && state_ && !state_->finished; }

Value* Tensor::value() const { return ok() ? value_ : nullptr; }

Tracer Tensor::tracer() const { return Tracer(state_); }

const Tensor& Tensor::named(std::string name) const {
  if (ok()) value_->setName(std::move(name));
  return *this;
}

// ---------------------------------------------------------------- TraceState

namespace detail {

std::string TraceState::scopePrefix() const {
  if (scopes.empty()) return "";
  const ModuleScope& s = scopes.back();
  return s.path.empty() ? str("in ", s.type, ": ") : str("in ", s.path, " (", s.type, "): ");
}

Tensor TraceState::fail(const Error& e) {
  auto err = std::make_shared<const Error>(scopePrefix() + e.message());
  if (!firstError) firstError = err;
  return Tensor(shared_from_this(), err);
}

Tensor TraceState::wrap(Value* v) { return Tensor(shared_from_this(), v); }

std::vector<Tensor> TraceState::build(Op op, const std::vector<Value*>& operands, AttrMap attrs,
                                      size_t failedResults) {
  auto node = buildNode(*graph, op, operands, std::move(attrs));
  if (!node) return std::vector<Tensor>(failedResults, fail(node.error()));
  if (!scopes.empty()) {
    const ModuleScope& s = scopes.back();
    (*node)->sourceName = s.path.empty() ? s.type : s.path;
    (*node)->sourceOp = s.type;
  }
  std::vector<Tensor> out;
  for (Value* v : (*node)->results()) out.push_back(wrap(v));
  return out;
}

namespace {

// n failed Tensors for an error found before building: recorded by `state`
// when there is one (it may be null when every operand is empty).
std::vector<Tensor> failAll(const std::shared_ptr<TraceState>& state, const Error& e, size_t n) {
  if (state) return std::vector<Tensor>(n, state->fail(e));
  return std::vector<Tensor>(n, TraceState::failed(nullptr, std::make_shared<const Error>(e)));
}

}  // namespace

std::vector<Tensor> apply(Op op, const std::vector<Tensor>& operands, AttrMap attrs,
                          size_t numResults) {
  std::shared_ptr<TraceState> state;
  for (const Tensor& t : operands)
    if (TraceState::of(t)) {
      state = TraceState::of(t);
      break;
    }
  // A failed operand's error was recorded where it happened; pass it on
  // (recording it here too if it came from elsewhere).
  for (const Tensor& t : operands) {
    const auto& err = TraceState::errorOf(t);
    if (!err) continue;
    if (state && !state->firstError) state->firstError = err;
    return std::vector<Tensor>(numResults, TraceState::failed(state, err));
  }
  for (size_t i = 0; i < operands.size(); ++i) {
    const auto& s = TraceState::of(operands[i]);
    if (!s)
      return failAll(state, Error(str("op '", opName(op), "': operand ", i, " is an empty Tensor (default-constructed)")),
                     numResults);
    if (s != state)
      return failAll(state, Error(str("op '", opName(op), "': operand ", i, " belongs to another trace")), numResults);
  }
  if (!state) return failAll(nullptr, Error(str("op '", opName(op), "': called without operands")), numResults);
  if (state->finished) {
    // Not recorded: the finished trace's module belongs to its caller now.
    auto err = std::make_shared<const Error>(str("op '", opName(op), "': the trace has already finished"));
    return std::vector<Tensor>(numResults, TraceState::failed(state, err));
  }
  std::vector<Value*> values;
  for (const Tensor& t : operands) values.push_back(t.value());
  return state->build(op, values, std::move(attrs), numResults);
}

Tensor apply1(Op op, const std::vector<Tensor>& operands, AttrMap attrs) {
  return apply(op, operands, std::move(attrs), 1).front();
}

}  // namespace detail

// ---------------------------------------------------------------- Tracer

Tracer::Tracer(std::string moduleName, std::string functionName) : state_(std::make_shared<TraceState>()) {
  state_->module = std::make_unique<Module>(std::move(moduleName));
  state_->graph = state_->module->addFunction(std::move(functionName));
}

namespace {

// The handle's state if it can take new nodes, else an Error saying why.
Expected<TraceState*> live(const std::shared_ptr<TraceState>& s, std::string_view what) {
  if (!s) return Error(str(what, ": no trace (the Tensor is empty)"));
  if (s->finished) return Error(str(what, ": the trace has already finished"));
  return s.get();
}

Tensor failed(const std::shared_ptr<TraceState>& s, const Error& e) {
  if (s && !s->finished) return s->fail(e);
  return TraceState::failed(s, std::make_shared<const Error>(e));
}

}  // namespace

Tensor Tracer::input(std::string name, TensorType type) {
  auto s = live(state_, "input");
  if (!s) return failed(state_, s.error());
  std::string what = str("input '", name, "'");
  if (name.empty()) return state_->fail(Error("an input needs a name"));
  if (state_->graph->findArgument(name)) return state_->fail(Error(str(what, " is declared twice")));
  if (type.rank() > static_cast<size_t>(kMaxRank))
    return state_->fail(Error(str(what, " has rank ", type.rank(), ", above the maximum of ", kMaxRank)));
  if (Status st = checkShapeBounds(type.shape, str(what, ": shape")); !st) return state_->fail(st.error());
  if (!layoutFitsRank(type.layout, type.rank()))
    return state_->fail(Error(str(what, ": layout tag #", layoutName(type.layout), " needs a rank-4 type")));
  return state_->wrap(state_->graph->addArgument(std::move(name), std::move(type)));
}

Tensor Tracer::constant(kfuse::Tensor value) {
  auto s = live(state_, "constant");
  if (!s) return failed(state_, s.error());
  return state_->build(Op::Constant, {}, {{"value", Attribute(std::move(value))}}, 1).front();
}

Tensor Tracer::scalar(double value, DType dtype) { return constant(kfuse::Tensor::scalar(dtype, value)); }

Tensor Tracer::parameter(const std::string& name, std::shared_ptr<const kfuse::Tensor> data, bool trainable) {
  auto s = live(state_, str("parameter '", name, "'"));
  if (!s) return failed(state_, s.error());
  if (name.empty()) return state_->fail(Error("a parameter needs a name"));
  if (!data) return state_->fail(Error(str("parameter '", name, "' has no data")));
  Module& m = *state_->module;
  if (const Param* p = m.findParam(name)) {
    if (p->data != data)
      return state_->fail(Error(str("parameter '", name,
                                    "' is already bound to another tensor in this trace (are two modules traced under "
                                    "the same name? register them under one parent so that their names differ)")));
    auto pending = state_->updates.find(name);
    if (pending != state_->updates.end()) return state_->wrap(pending->second);
    return state_->wrap(state_->graph->paramValue(name));
  }
  Param* p = m.addParam(name, data->type(), trainable);
  p->data = std::move(data);
  return state_->wrap(state_->graph->paramValue(name));
}

void Tracer::update(const std::string& name, const Tensor& value) {
  auto s = live(state_, str("update of parameter '", name, "'"));
  if (!s) return;
  if (value.error()) {
    if (!state_->firstError) state_->firstError = TraceState::errorOf(value);
    return;
  }
  if (!value.ok() || TraceState::of(value) != state_) {
    state_->fail(Error(str("update of parameter '", name, "': the value is not a Tensor of this trace")));
    return;
  }
  const Param* p = state_->module->findParam(name);
  if (!p) {
    state_->fail(Error(str("update of '", name, "': no such parameter in this trace")));
    return;
  }
  if (!(p->type == value.type())) {
    state_->fail(Error(str("update of parameter '", name, "' : ", formatType(p->type), " with a value of type ",
                           formatType(value.type()))));
    return;
  }
  if (!state_->updates.count(name)) state_->updateOrder.push_back(name);
  state_->updates[name] = value.value();
}

Tensor Tracer::fail(const std::string& message) { return failed(state_, Error(message)); }

const Error* Tracer::firstError() const { return state_ ? state_->firstError.get() : nullptr; }

int64_t Tracer::seedFor(const void* key, int64_t base) {
  if (!state_) return base;
  int64_t uses = state_->seedUses[key]++;
  if (uses == 0) return base;
  // splitmix64's finaliser: a different, well-mixed seed for every later use.
  uint64_t z = static_cast<uint64_t>(base) + static_cast<uint64_t>(uses) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<int64_t>(z ^ (z >> 31));
}

Expected<std::unique_ptr<Module>> Tracer::finish(const std::vector<Tensor>& outputs) {
  auto s = live(state_, "finish");
  if (!s) return s.error();
  if (state_->firstError) return *state_->firstError;
  std::vector<Value*> results;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& t = outputs[i];
    if (t.error()) return *t.error();
    if (!TraceState::of(t)) return Error(str("output ", i, " is an empty Tensor (default-constructed)"));
    if (TraceState::of(t) != state_) return Error(str("output ", i, " belongs to another trace"));
    results.push_back(t.value());
  }
  Graph& g = *state_->graph;
  g.setResults(std::move(results));
  for (const std::string& name : state_->updateOrder) g.addStateUpdate(name, state_->updates.at(name));
  // Every node went through buildNode, so this only fails on a kfuse bug.
  if (Status st = verifyModule(*state_->module); !st)
    return Error("internal error: the traced module does not verify: " + st.message());
  state_->finished = true;
  return std::move(state_->module);
}

// ---------------------------------------------------------------- Scope

Scope::Scope(const Tensor& x, std::string path, std::string type) {
  const auto& s = TraceState::of(x);
  if (!s || s->finished) return;
  state_ = s;
  state_->scopes.push_back({std::move(path), std::move(type)});
}

Scope::~Scope() {
  if (state_ && !state_->scopes.empty()) state_->scopes.pop_back();
}

// ---------------------------------------------------------------- trace()

namespace detail {

Expected<std::unique_ptr<Module>> traceBody(const TraceBody& body, int arity, const std::vector<TensorType>& inputs,
                                            const TraceOptions& opts) {
  if (arity >= 0 && static_cast<size_t>(arity) != inputs.size())
    return Error(str("trace: the function takes ", arity, " Tensor argument", arity == 1 ? "" : "s", ", but ",
                     inputs.size(), " input type", inputs.size() == 1 ? " was" : "s were", " given"));
  if (!opts.inputNames.empty() && opts.inputNames.size() != inputs.size())
    return Error(str("trace: ", opts.inputNames.size(), " input names for ", inputs.size(), " inputs"));
  Tracer t(opts.moduleName, opts.functionName);
  std::vector<Tensor> args;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string name = !opts.inputNames.empty() ? opts.inputNames[i] : inputs.size() == 1 ? "x" : str("x", i);
    args.push_back(t.input(std::move(name), inputs[i]));
  }
  return t.finish(body(args));
}

}  // namespace detail

}  // namespace kfuse::trace
