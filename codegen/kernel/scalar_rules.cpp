#include "codegen/kernel/scalar_rules.h"

#include <unordered_set>
#include <vector>

#include "ir/support/strings.h"

namespace kfuse::kernel {

// The kind follows the operand count, which ir/scalar_expr.h defines.
ScalarKind kindOf(ScalarOp op) { return static_cast<ScalarKind>(scalarArity(op)); }

size_t arity(ScalarKind k) { return static_cast<size_t>(k); }

bool isComputeType(DType t) { return t == DType::F32 || t == DType::F64 || t == DType::I64 || t == DType::Bool; }
bool isFloatType(DType t) { return t == DType::F32 || t == DType::F64; }
bool isComparison(ScalarOp op) { return op >= ScalarOp::Lt && op <= ScalarOp::Ne; }

namespace {

// Result types an op is implemented for, its operands sharing that type
// (comparisons: any operand type, bool result).
bool typeSupported(ScalarOp op, DType t) {
  switch (op) {
    case ScalarOp::Const:
    case ScalarOp::Input:
    case ScalarOp::Index:
    case ScalarOp::Cast:
    case ScalarOp::Select: return true;
    case ScalarOp::Neg:
    case ScalarOp::Abs:
    case ScalarOp::Floor:
    case ScalarOp::Ceil:
    case ScalarOp::Add:
    case ScalarOp::Sub:
    case ScalarOp::Div:
    case ScalarOp::Pow: return t != DType::Bool;
    case ScalarOp::Mul:
    case ScalarOp::Max:
    case ScalarOp::Min: return true;
    case ScalarOp::Not:
    case ScalarOp::And:
    case ScalarOp::Or: return t == DType::Bool;
    case ScalarOp::Philox: return t == DType::I64;
    default:
      if (isComparison(op)) return t == DType::Bool;
      return isFloatType(t);  // exp, log, tanh, ...: no i64 or bool holds their results
  }
}

// Operands that must have the node's own type.
bool operandsShareResultType(ScalarOp op) {
  return kindOf(op) != ScalarKind::Leaf && op != ScalarOp::Cast && op != ScalarOp::Not && op != ScalarOp::And &&
         op != ScalarOp::Or && op != ScalarOp::Select && !isComparison(op);
}

Status checkNode(const ScalarNode& n, std::string_view backend) {
  auto where = [&] { return str(scalarOpName(n.op), " of type ", dtypeName(n.type)); };
  if (n.args.size() != arity(kindOf(n.op)))
    return Error(str(where(), " has ", n.args.size(), " operands, expected ", arity(kindOf(n.op))));
  if (!isComputeType(n.type)) return Error(str(where(), ": not a compute type"));
  if (!typeSupported(n.op, n.type)) return Error(str("the ", backend, " backend does not implement ", where()));
  for (size_t i = 0; i < n.args.size(); ++i) {
    if (!n.args[i]) return Error(str(where(), ": operand ", i, " is null"));
    DType a = n.args[i]->type;
    bool mustMatch = operandsShareResultType(n.op) || (n.op == ScalarOp::Select && i > 0);
    if (mustMatch && a != n.type) return Error(str(where(), ": operand ", i, " has type ", dtypeName(a)));
  }
  if (isComparison(n.op) && n.args[0]->type != n.args[1]->type)
    return Error(str(where(), ": operands have types ", dtypeName(n.args[0]->type), " and ",
                     dtypeName(n.args[1]->type)));
  return Status::ok();
}

}  // namespace

Status checkScalarProgram(const ScalarNode& root, std::string_view backend) {
  std::unordered_set<const ScalarNode*> seen;
  std::vector<const ScalarNode*> work{&root};
  while (!work.empty()) {
    const ScalarNode* n = work.back();
    work.pop_back();
    if (!seen.insert(n).second) continue;
    KF_RETURN_IF_ERROR(checkNode(*n, backend));
    for (const ScalarRef& a : n->args) work.push_back(a.get());
  }
  return Status::ok();
}

Status checkKernelScalars(const Kernel& k, std::string_view backend) {
  auto check = [&](const ScalarRef& e, const std::string& what) -> Status {
    if (Status s = checkScalarProgram(*e, backend); !s) return Error(str(what, ": ", s.message()));
    return Status::ok();
  };
  for (size_t i = 0; i < k.reductions.size(); ++i) KF_RETURN_IF_ERROR(check(k.reductions[i].value, str("reduction ", i)));
  for (size_t i = 0; i < k.prologue.size(); ++i) KF_RETURN_IF_ERROR(check(k.prologue[i].value, str("prologue ", i)));
  for (size_t i = 0; i < k.globals.size(); ++i) KF_RETURN_IF_ERROR(check(k.globals[i].value, str("global ", i)));
  for (size_t i = 0; i < k.stores.size(); ++i) KF_RETURN_IF_ERROR(check(k.stores[i].value, str("store ", i)));
  return Status::ok();
}

DType accumulatorType(Combiner c, DType value) { return c == Combiner::Sum && value == DType::Bool ? DType::I64 : value; }

}  // namespace kfuse::kernel
