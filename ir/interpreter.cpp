#include "ir/interpreter.h"

#include <unordered_map>

#include "ir/op_registry.h"
#include "ir/support/strings.h"
#include "ir/value_names.h"
#include "ir/verifier.h"

namespace kfuse {

Expected<std::vector<Tensor>> evaluateNode(const Node& n, const std::vector<const Tensor*>& inputs) {
  std::vector<TensorType> inputTypes, outputTypes;
  for (Value* v : n.operands()) inputTypes.push_back(v->type());
  for (size_t i = 0; i < n.numResults(); ++i) outputTypes.push_back(n.result(i)->type());
  OpCall call{n.op(), n.attrs(), inputTypes, &n, n.body()};
  auto outs = n.op().reference(call, inputs, outputTypes);
  if (!outs) return outs.error();
  if (outs->size() != n.numResults())
    return Error(str("internal error: reference implementation of '", n.opName(), "' returned ", outs->size(),
                     " results, expected ", n.numResults()));
  for (size_t i = 0; i < n.numResults(); ++i)
    if (!((*outs)[i].type() == outputTypes[i]))
      return Error(str("internal error: reference implementation of '", n.opName(), "' produced ",
                       formatType((*outs)[i].type()), " for result ", i, ", expected ", formatType(outputTypes[i])));
  return outs;
}

Expected<InterpreterResult> interpret(const Graph& g, const std::vector<Tensor>& args) {
  ValueNames names(g);
  if (args.size() != g.arguments().size())
    return Error(str("function @", g.name(), " takes ", g.arguments().size(), " inputs, got ", args.size()));
  std::unordered_map<const Value*, Tensor> env;
  for (size_t i = 0; i < args.size(); ++i) {
    const Value* a = g.argument(i);
    if (!(args[i].type() == a->type()) &&
        !(args[i].dtype() == a->type().dtype && args[i].shape() == a->type().shape))
      return Error(str("input ", names(a), " must be ", formatType(a->type()), ", got ", formatType(args[i].type())));
    env[a] = args[i].withType(a->type());
  }
  for (Value* p : g.paramValues()) {
    const Param* param = g.module()->findParam(p->name());
    if (!param || !param->data)
      return Error(str("parameter ", names(p), " has no data (load its weights file or give it inline)"));
    env[p] = *param->data;
  }
  // Remaining uses per value, so intermediates are freed after their last use.
  std::unordered_map<const Value*, size_t> remaining;
  for (const auto& n : g.nodeList())
    for (Value* v : n->operands()) ++remaining[v];

  for (const auto& nodePtr : g.nodeList()) {
    const Node& n = *nodePtr;
    std::vector<const Tensor*> inputs;
    for (Value* v : n.operands()) inputs.push_back(&env.at(v));
    auto outs = evaluateNode(n, inputs);
    if (!outs) return Error(str(locPrefix(n), describeNode(n, names), ": ", outs.error().message()));
    for (size_t i = 0; i < n.numResults(); ++i) env[n.result(i)] = std::move((*outs)[i]);
    for (Value* v : n.operands())
      if (--remaining[v] == 0 && v->kind() == Value::Kind::Result && v->graphUses() == 0) env.erase(v);
  }
  InterpreterResult r;
  for (Value* v : g.results()) r.outputs.push_back(env.at(v));
  for (const StateUpdate& u : g.stateUpdates())
    r.updates.emplace(u.param, std::make_shared<const Tensor>(env.at(u.value)));
  return r;
}

void applyUpdates(Module& m, const InterpreterResult& r) {
  for (const auto& [name, t] : r.updates) m.setParamData(name, t);
}

}  // namespace kfuse
