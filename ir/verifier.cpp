#include "ir/verifier.h"

#include <set>
#include <unordered_set>

#include "ir/builder.h"
#include "ir/support/strings.h"
#include "ir/value_names.h"

namespace kfuse {

std::string locPrefix(const Node& n) {
  if (!n.loc.valid()) return "";
  return str(n.loc.file, ":", n.loc.line, ":", n.loc.col, ": ");
}

namespace {

constexpr size_t kMaxReported = 20;

class GraphVerifier {
 public:
  explicit GraphVerifier(const Graph& g) : g_(g), names_(g) {}

  Status run() {
    checkArguments();
    for (const auto& n : g_.nodeList()) {
      checkNode(*n);
      for (size_t i = 0; i < n->numResults(); ++i) defined_.insert(n->result(i));
    }
    checkResults();
    checkUpdates();
    if (errors_.empty()) return Status::ok();
    if (errors_.size() > kMaxReported) {
      size_t more = errors_.size() - kMaxReported;
      errors_.resize(kMaxReported);
      errors_.push_back(str("... and ", more, " more"));
    }
    return Error(join(errors_, "\n"));
  }

 private:
  void fail(std::string msg) { errors_.push_back(str("in func ", sigilName('@', g_.name()), ": ", msg)); }
  void failAt(const Node& n, const std::string& msg) {
    errors_.push_back(str(locPrefix(n), "in func ", sigilName('@', g_.name()), ": ", describeNode(n, names_), ": ", msg));
  }

  void checkType(const TensorType& t, const std::string& what) {
    if (t.rank() > static_cast<size_t>(kMaxRank)) fail(str(what, " has rank ", t.rank(), " (maximum ", kMaxRank, ")"));
    if (!layoutFitsRank(t.layout, t.rank()))
      fail(str(what, " has layout ", layoutName(t.layout), " but rank ", t.rank(), " (layouts need rank 4)"));
    for (int64_t d : t.shape)
      if (d < 0) fail(str(what, " has a negative dimension in ", formatType(t)));
  }

  void checkArguments() {
    std::set<std::string> seen;
    for (const auto& a : g_.arguments()) {
      if (!seen.insert(a->name()).second) fail(str("argument ", names_(a.get()), " is declared twice"));
      checkType(a->type(), str("argument ", names_(a.get())));
      defined_.insert(a.get());
    }
  }

  bool checkOperand(const Node& n, size_t i) {
    const Value* v = n.operand(i);
    if (v->graph() != &g_) {
      failAt(n, str("operand ", i, " belongs to another function"));
      return false;
    }
    if (v->kind() == Value::Kind::Param) {
      const Param* p = g_.module() ? g_.module()->findParam(v->name()) : nullptr;
      if (!p) {
        failAt(n, str("operand ", i, " refers to unknown parameter ", names_(v)));
        return false;
      }
      if (!(p->type == v->type())) failAt(n, str("parameter ", names_(v), " is used with a stale type"));
      return true;
    }
    if (!defined_.count(v)) {
      failAt(n, str("operand ", i, " (", names_(v), ") is used before it is defined"));
      return false;
    }
    return true;
  }

  void checkNode(const Node& n) {
    bool operandsOk = true;
    for (size_t i = 0; i < n.numOperands(); ++i) operandsOk &= checkOperand(n, i);
    if (auto s = checkArity(n.op(), n.numOperands()); !s) {
      failAt(n, s.message());
      return;
    }
    auto full = completeAttrs(n.op(), n.attrs());
    if (!full) {
      failAt(n, full.error().message());
      return;
    }
    if (full->size() != n.attrs().size()) failAt(n, "node is missing defaulted attributes (build nodes with buildNode)");
    if (!operandsOk) return;
    if (!checkBody(n)) return;
    std::vector<TensorType> inputs;
    for (Value* v : n.operands()) inputs.push_back(v->type());
    auto inferred = inferResultTypes(n.op(), *full, inputs, &n);
    if (!inferred) {
      failAt(n, inferred.error().message());
      return;
    }
    if (inferred->size() != n.numResults()) {
      failAt(n, str("has ", n.numResults(), " results, the op produces ", inferred->size()));
      return;
    }
    for (size_t i = 0; i < n.numResults(); ++i) {
      const TensorType& declared = n.result(i)->type();
      if (!(declared == (*inferred)[i]))
        failAt(n, str("result ", i, " is declared ", formatType(declared), " but the op produces ",
                      formatType((*inferred)[i])));
    }
  }

  // A body is a self-contained graph: no parameters (they come in as
  // operands), no state updates, verified like a function.
  bool checkBody(const Node& n) {
    if (n.op().hasBody != (n.body() != nullptr)) {
      failAt(n, n.body() ? "has a body, but its op takes none" : "needs a body");
      return false;
    }
    if (!n.body()) return true;
    const Graph& body = *n.body();
    bool ok = true;
    if (!body.paramValues().empty()) {
      failAt(n, "its body refers to parameters directly; pass them as operands");
      ok = false;
    }
    if (!body.stateUpdates().empty()) {
      failAt(n, "its body updates parameters");
      ok = false;
    }
    if (Status s = verifyGraph(body); !s) {
      failAt(n, str("in its body:\n", s.message()));
      ok = false;
    }
    return ok;
  }

  void checkResults() {
    if (g_.results().size() != g_.resultTypes().size()) {
      fail(str("returns ", g_.results().size(), " values but the signature declares ", g_.resultTypes().size()));
      return;
    }
    for (size_t i = 0; i < g_.results().size(); ++i) {
      const Value* v = g_.results()[i];
      if (v->kind() != Value::Kind::Param && !defined_.count(v)) fail(str("result ", i, " is not defined"));
      if (!(v->type() == g_.resultTypes()[i]))
        fail(str("result ", i, " (", names_(v), ") has type ", formatType(v->type()), " but the signature declares ",
                 formatType(g_.resultTypes()[i])));
    }
  }

  void checkUpdates() {
    std::set<std::string> seen;
    for (const StateUpdate& u : g_.stateUpdates()) {
      const Param* p = g_.module() ? g_.module()->findParam(u.param) : nullptr;
      std::string target = sigilName('@', u.param);
      if (!p) {
        fail(str("update of unknown parameter ", target));
        continue;
      }
      if (!seen.insert(u.param).second) fail(str("parameter ", target, " is updated twice"));
      if (!(u.value->type() == p->type))
        fail(str("update of ", target, " : ", formatType(p->type), " with a value of type ", formatType(u.value->type())));
      if (u.value->kind() != Value::Kind::Param && !defined_.count(u.value))
        fail(str("update of ", target, " uses an undefined value"));
    }
  }

  const Graph& g_;
  ValueNames names_;
  std::unordered_set<const Value*> defined_;
  std::vector<std::string> errors_;
};

}  // namespace

Status verifyGraph(const Graph& g) { return GraphVerifier(g).run(); }

Status verifyModule(const Module& m) {
  std::vector<std::string> errors;
  std::set<std::string> names;
  for (const auto& p : m.params()) {
    if (p->type.rank() > static_cast<size_t>(kMaxRank))
      errors.push_back(str("parameter ", sigilName('@', p->name), " has rank ", p->type.rank()));
    if (p->data && !(p->data->type() == p->type))
      errors.push_back(str("parameter ", sigilName('@', p->name), " : ", formatType(p->type), " holds data of type ",
                           formatType(p->data->type())));
  }
  for (const auto& f : m.functions()) {
    if (!names.insert(f->name()).second) errors.push_back(str("function ", sigilName('@', f->name()), " is defined twice"));
    if (auto s = verifyGraph(*f); !s) errors.push_back(s.message());
  }
  if (errors.empty()) return Status::ok();
  return Error(join(errors, "\n"));
}

}  // namespace kfuse
