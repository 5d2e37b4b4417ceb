#include "frontend/trace/nn/module.h"

#include <algorithm>

#include "frontend/trace/ops.h"
#include "ir/support/strings.h"

namespace kfuse::nn {

Module::Module(std::string typeName) : typeName_(std::move(typeName)) {}

Module::~Module() {
  // Children shared elsewhere outlive this module: they become roots.
  for (auto& [name, child] : children_)
    if (child && child->parent_ == this) child->parent_ = nullptr;
}

Tensor Module::forward(const Tensor& x) {
  auto s = scope(x);
  return fail(x, "this module has no forward(x) taking one input");
}

std::string Module::path() const {
  if (!parent_) return "";
  std::string up = parent_->path();
  return up.empty() ? nameInParent_ : up + "." + nameInParent_;
}

std::string Module::fullName(std::string_view local) const {
  std::string p = path();
  return p.empty() ? std::string(local) : str(p, ".", local);
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

// ---------------------------------------------------------------- registration

bool Module::nameIsFree(const std::string& name, std::string_view what) {
  std::string problem;
  if (name.empty() || name.find('.') != std::string::npos)
    problem = str(what, " name '", name, "' must be non-empty and contain no '.'");
  else if (findSlot(name) || std::any_of(children_.begin(), children_.end(), [&](const auto& c) { return c.first == name; }))
    problem = str(what, " name '", name, "' is already taken in this module");
  if (problem.empty()) return true;
  reportProblem(problem);
  return false;
}

void Module::addSlot(std::string name, kfuse::Tensor init, bool trainable) {
  if (!nameIsFree(name, trainable ? "parameter" : "buffer")) return;
  slots_.push_back({std::move(name), std::make_shared<const kfuse::Tensor>(std::move(init)), trainable});
}

void Module::registerParameter(std::string name, kfuse::Tensor init) { addSlot(std::move(name), std::move(init), true); }

void Module::registerBuffer(std::string name, kfuse::Tensor init) { addSlot(std::move(name), std::move(init), false); }

void Module::addChild(std::string name, std::shared_ptr<Module> child) {
  if (!child) return reportProblem(str("child module '", name, "' is null"));
  if (!nameIsFree(name, "module")) return;
  if (!child->parent_) {
    child->parent_ = this;
    child->nameInParent_ = name;
  }
  children_.emplace_back(std::move(name), std::move(child));
}

const Module::Slot* Module::findSlot(std::string_view name) const {
  for (const Slot& s : slots_)
    if (s.name == name) return &s;
  return nullptr;
}

void Module::reportProblem(const std::string& message) {
  if (defect_.empty()) defect_ = message;
}

std::string Module::describe() const {
  std::string p = path();
  return p.empty() ? typeName_ : str(p, " (", typeName_, ")");
}

Status Module::validate() const {
  if (!defect_.empty()) return Error(str(describe(), ": ", defect_));
  for (const auto& [name, child] : children_) KF_RETURN_IF_ERROR(child->validate());
  return Status::ok();
}

// ---------------------------------------------------------------- state

void Module::collect(const std::string& prefix, std::vector<NamedTensor>& out) const {
  for (bool params : {true, false})
    for (const Slot& s : slots_)
      if (s.trainable == params) out.push_back({prefix + s.name, s.data, s.trainable});
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out);
}

std::vector<NamedTensor> Module::namedTensors() const {
  std::vector<NamedTensor> out;
  collect("", out);
  return out;
}

std::vector<NamedTensor> Module::namedParameters() const {
  std::vector<NamedTensor> out;
  for (NamedTensor& t : namedTensors())
    if (t.trainable) out.push_back(std::move(t));
  return out;
}

std::vector<NamedTensor> Module::namedBuffers() const {
  std::vector<NamedTensor> out;
  for (NamedTensor& t : namedTensors())
    if (!t.trainable) out.push_back(std::move(t));
  return out;
}

TensorMap Module::stateDict() const {
  TensorMap out;
  for (const NamedTensor& t : namedTensors()) out.emplace(t.name, *t.data);
  return out;
}

const kfuse::Tensor* Module::findTensor(std::string_view name) const {
  for (const NamedTensor& t : namedTensors())
    if (t.name == name) return t.data.get();
  return nullptr;
}

namespace {

// A loaded tensor fits when dtype and shape match (layout tags are not stored
// in weights files; the parameter keeps its own).
bool fits(const kfuse::Tensor& have, const kfuse::Tensor& given) {
  return have.dtype() == given.dtype() && have.shape() == given.shape();
}

std::string kindOf(const NamedTensor& t) { return t.trainable ? "parameter" : "buffer"; }

}  // namespace

Status Module::loadStateDict(const TensorMap& tensors, const LoadOptions& opts) {
  KF_RETURN_IF_ERROR(validate());
  std::vector<NamedTensor> entries = namedTensors();
  std::vector<std::string> problems;
  for (const NamedTensor& e : entries) {
    auto it = tensors.find(e.name);
    if (it == tensors.end()) {
      if (opts.strict)
        problems.push_back(str("missing ", kindOf(e), " '", e.name, "' (", formatType(e.data->type()), ")"));
    } else if (!fits(*e.data, it->second)) {
      problems.push_back(str(kindOf(e), " '", e.name, "' is ", formatType(e.data->type()), " in the model but ",
                             formatType(it->second.type()), " in the weights"));
    }
  }
  if (opts.strict)
    for (const auto& [name, t] : tensors)
      if (std::none_of(entries.begin(), entries.end(), [&](const NamedTensor& e) { return e.name == name; }))
        problems.push_back(str("unknown tensor '", name, "' (", formatType(t.type()),
                               "): the model has no parameter or buffer of that name"));
  if (problems.size() == 1) return Error(problems[0]);
  if (!problems.empty()) return Error(str(problems.size(), " problems:\n  ", join(problems, "\n  ")));
  for (const NamedTensor& e : entries) {
    auto it = tensors.find(e.name);
    if (it != tensors.end()) (void)setTensor(e.name, it->second);
  }
  return Status::ok();
}

Status Module::loadWeights(const std::string& path, const LoadOptions& opts) {
  auto tensors = readWeightsFile(path);
  if (!tensors) return tensors.error();
  Status s = loadStateDict(*tensors, opts);
  if (!s) return s.error().context(str("loading '", path, "'"));
  return Status::ok();
}

Status Module::saveWeights(const std::string& path) const {
  KF_RETURN_IF_ERROR(validate());
  std::vector<NamedTensor> entries = namedTensors();
  std::vector<std::pair<std::string, const kfuse::Tensor*>> named;
  for (const NamedTensor& e : entries) named.emplace_back(e.name, e.data.get());
  return writeWeightsFile(path, named);
}

Status Module::setTensor(std::string_view name, kfuse::Tensor data) {
  auto dot = name.find('.');
  if (dot != std::string_view::npos) {
    std::string_view head = name.substr(0, dot);
    for (auto& [childName, child] : children_)
      if (childName == head) return child->setTensor(name.substr(dot + 1), std::move(data));
    return Error(str(typeName_, " has no child module '", head, "'"));
  }
  for (Slot& s : slots_) {
    if (s.name != name) continue;
    if (!fits(*s.data, data))
      return Error(str("'", name, "' of ", typeName_, " is ", formatType(s.data->type()), ", not ",
                       formatType(data.type())));
    s.data = std::make_shared<const kfuse::Tensor>(data.withType(s.data->type()));
    return Status::ok();
  }
  return Error(str(typeName_, " has no parameter or buffer '", name, "'"));
}

void Module::resetParameters(Generator& gen) {
  for (auto& [name, child] : children_) child->resetParameters(gen);
  initParameters(gen);
}

// ---------------------------------------------------------------- tracing

Tensor Module::param(const Tensor& x, std::string_view name) const {
  if (!x.ok()) return x;
  for (const Module* m = this; m; m = m->parent_)
    if (!m->defect_.empty()) return fail(x, m == this ? defect_ : str(m->describe(), ": ", m->defect_));
  const Slot* s = findSlot(name);
  if (!s) return fail(x, str("no parameter or buffer '", name, "'"));
  return x.tracer().parameter(fullName(name), s->data, s->trainable);
}

Tensor Module::fail(const Tensor& x, const std::string& message) const {
  if (x.error()) return x;
  return x.tracer().fail(message);
}

Expected<std::unique_ptr<kfuse::Module>> trace(Module& model, const TensorType& input,
                                               const trace::TraceOptions& opts) {
  KF_RETURN_IF_ERROR(model.validate());
  return trace::trace(
      [&](const Tensor& x) {
        // The root's own ops (a user module's forward) are marked with its type too.
        auto s = model.scope(x);
        return model.forward(x);
      },
      {input}, opts);
}

}  // namespace kfuse::nn
