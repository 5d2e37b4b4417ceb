#include "ir/builder.h"

#include "ir/support/strings.h"

namespace kfuse {

Status checkArity(const OpDef& op, size_t n) {
  auto count = static_cast<int>(n);
  if (count >= op.minInputs && (op.maxInputs < 0 || count <= op.maxInputs)) return Status::ok();
  std::string expected;
  if (op.maxInputs < 0)
    expected = str("at least ", op.minInputs);
  else if (op.minInputs == op.maxInputs)
    expected = str(op.minInputs);
  else
    expected = str(op.minInputs, " to ", op.maxInputs);
  return Error(str("op '", op.name, "' takes ", expected, " operand", expected == "1" ? "" : "s", ", got ", n));
}

Expected<std::vector<TensorType>> inferResultTypes(const OpDef& op, const AttrMap& attrs,
                                                   std::span<const TensorType> inputs, const Node* node,
                                                   const Graph* body) {
  KF_RETURN_IF_ERROR(checkArity(op, inputs.size()));
  OpCall call{op, attrs, inputs, node, body ? body : (node ? node->body() : nullptr)};
  auto types = op.infer(call);
  if (!types) return types.error().context(str("op '", op.name, "'"));
  for (const TensorType& t : *types) {
    if (t.rank() > static_cast<size_t>(kMaxRank))
      return Error(str("op '", op.name, "': result rank ", t.rank(), " exceeds the maximum of ", kMaxRank));
  }
  return types;
}

namespace {

Expected<Node*> build(Graph& g, const OpDef& op, const std::vector<Value*>& operands, AttrMap attrs, Node* before) {
  KF_ASSIGN_OR_RETURN(AttrMap full, completeAttrs(op, std::move(attrs)));
  std::vector<TensorType> inputTypes;
  for (Value* v : operands) inputTypes.push_back(v->type());
  KF_ASSIGN_OR_RETURN(auto resultTypes, inferResultTypes(op, full, inputTypes));
  return g.createNode(op, operands, resultTypes, std::move(full), before);
}

}  // namespace

Expected<Node*> buildNode(Graph& g, Op op, const std::vector<Value*>& operands, AttrMap attrs, Node* before) {
  return build(g, OpRegistry::global().get(op), operands, std::move(attrs), before);
}

Expected<Node*> buildNode(Graph& g, std::string_view opName, const std::vector<Value*>& operands, AttrMap attrs,
                          Node* before) {
  const OpDef* op = OpRegistry::global().find(opName);
  if (!op) return Error(str("unknown op '", opName, "'"));
  return build(g, *op, operands, std::move(attrs), before);
}

}  // namespace kfuse
