// The fused op: a group of nodes the fusion pass made one kernel. Its body is
// ordinary IR whose arguments are the node's operands and whose results are
// its results, so it prints, parses, verifies and interprets like any graph.
#include "ir/interpreter.h"
#include "ir/ops/op_helpers.h"
#include "ir/value_names.h"

namespace kfuse {

void registerFusedOps(OpRegistry& r) {
  OpDef d;
  d.name = "fused";
  d.summary = "a fused group (one kernel); its body computes the results from the operands";
  d.minInputs = 0;
  d.maxInputs = -1;
  d.fusion = FusionClass::Opaque;
  d.hasBody = true;
  d.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> {
    if (!c.body) return Error("a fused node needs a body");
    const Graph& body = *c.body;
    if (body.arguments().size() != c.inputs.size())
      return Error(str("the body takes ", body.arguments().size(), " arguments, but the node has ", c.inputs.size(),
                       " operands"));
    for (size_t i = 0; i < c.inputs.size(); ++i)
      if (!(body.argument(i)->type() == c.inputs[i]))
        return Error(str("operand ", i, " is ", formatType(c.inputs[i]), " but the body's argument ",
                         sigilName('%', body.argument(i)->name()), " is ", formatType(body.argument(i)->type())));
    return body.resultTypes();
  };
  d.reference = [](const OpCall& c, std::span<const Tensor* const> in,
                   std::span<const TensorType>) -> Expected<std::vector<Tensor>> {
    std::vector<Tensor> args;
    for (const Tensor* t : in) args.push_back(*t);
    KF_ASSIGN_OR_RETURN(InterpreterResult r, interpret(*c.body, args));
    return r.outputs;
  };
  r.add(std::move(d));
}

}  // namespace kfuse
