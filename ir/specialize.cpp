#include "ir/specialize.h"

#include <unordered_map>

#include "ir/builder.h"
#include "ir/support/strings.h"
#include "ir/value_names.h"
#include "ir/verifier.h"

namespace kfuse {

Status specializeArguments(Graph& g, const std::map<std::string, Shape>& shapes) {
  ValueNames names(g);
  std::unordered_map<const Value*, TensorType> types;  // the new type of each value, committed at the end
  auto typeOf = [&](const Value* v) {
    auto it = types.find(v);
    return it != types.end() ? it->second : v->type();
  };
  for (const auto& [name, shape] : shapes) {
    Value* a = g.findArgument(name);
    if (!a) return Error(str("function @", g.name(), " has no argument %", name));
    TensorType t = a->type();
    t.shape = shape;
    if (!layoutFitsRank(t.layout, t.rank())) t.layout = Layout::Plain;
    types[a] = t;
  }
  for (const auto& n : g.nodeList()) {
    std::vector<TensorType> in;
    for (const Value* v : n->operands()) in.push_back(typeOf(v));
    auto out = inferResultTypes(n->op(), n->attrs(), in, n.get());
    if (!out)
      return Error(str(locPrefix(*n), describeNode(*n, names), ": cannot be re-typed for the new input shapes: ",
                       out.error().message()));
    for (size_t i = 0; i < n->numResults(); ++i) types[n->result(i)] = (*out)[i];
  }
  for (const StateUpdate& u : g.stateUpdates())
    if (!(typeOf(u.value) == u.value->type()))
      return Error(str("the update of @", u.param, " would change type with the new input shapes"));
  for (auto& [v, t] : types) const_cast<Value*>(v)->setType(t);
  std::vector<TensorType> resultTypes;
  for (Value* r : g.results()) resultTypes.push_back(r->type());
  g.setDeclaredResultTypes(resultTypes);
  return verifyGraph(g);
}

Status specializeBatch(Graph& g, int64_t batch) {
  if (batch < 1) return Error(str("the batch size must be positive, got ", batch));
  std::map<std::string, Shape> shapes;
  for (const auto& a : g.arguments()) {
    if (a->type().rank() == 0) continue;
    Shape s = a->type().shape;
    s[0] = batch;
    shapes[a->name()] = s;
  }
  return specializeArguments(g, shapes);
}

}  // namespace kfuse
