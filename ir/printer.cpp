#include "ir/printer.h"

#include <sstream>

#include "ir/op_registry.h"
#include "ir/support/strings.h"
#include "ir/value_names.h"

namespace kfuse {
namespace {

std::string attrDict(const Node& n) {
  std::vector<std::string> parts;
  for (const AttrSpec& spec : n.op().attrs) {
    auto it = n.attrs().find(spec.name);
    if (it == n.attrs().end()) continue;
    if (spec.defaultValue && *spec.defaultValue == it->second) continue;  // defaults are implied
    parts.push_back(str(spec.name, " = ", formatAttribute(it->second)));
  }
  return parts.empty() ? std::string() : str(" {", join(parts), "}");
}

void printBody(std::ostream& os, const Node& n, const ValueNames& names, const PrintOptions& opts,
               const std::string& pad);

void printNode(std::ostream& os, const Node& n, const ValueNames& names, const PrintOptions& opts,
               const std::string& pad) {
  if (n.body()) {
    printBody(os, n, names, opts, pad);
    return;
  }
  os << pad;
  std::vector<std::string> results, types, operands;
  for (size_t i = 0; i < n.numResults(); ++i) {
    results.push_back(names(n.result(i)));
    types.push_back(formatType(n.result(i)->type()));
  }
  for (Value* v : n.operands()) operands.push_back(names(v));
  if (!results.empty()) os << join(results) << " = ";
  os << n.opName();
  if (!operands.empty()) os << " " << join(operands);
  os << attrDict(n) << " : " << join(types);
  if (opts.printLocs && !n.sourceName.empty()) {
    os << " loc(" << quoteString(n.sourceName);
    if (!n.sourceOp.empty()) os << ", " << quoteString(n.sourceOp);
    os << ")";
  }
  os << "\n";
}

// %r = fused @name(%a, @w) : t { ^bb(%x: t, ...): ... yield %y }
void printBody(std::ostream& os, const Node& n, const ValueNames& names, const PrintOptions& opts,
               const std::string& pad) {
  const Graph& body = *n.body();
  std::vector<std::string> results, types, operands, args, yields;
  for (size_t i = 0; i < n.numResults(); ++i) {
    results.push_back(names(n.result(i)));
    types.push_back(formatType(n.result(i)->type()));
  }
  for (Value* v : n.operands()) operands.push_back(names(v));
  ValueNames inner(body);
  for (const auto& a : body.arguments()) args.push_back(str(inner(a.get()), ": ", formatType(a->type())));
  for (Value* v : body.results()) yields.push_back(inner(v));
  os << pad << join(results) << " = " << n.opName() << " " << sigilName('@', body.name()) << "(" << join(operands)
     << ")" << attrDict(n) << " : " << join(types) << " {\n";
  os << pad << "^bb(" << join(args) << "):\n";
  for (const auto& inside : body.nodeList()) printNode(os, *inside, inner, opts, pad + "  ");
  os << pad << "  yield " << join(yields) << "\n" << pad << "}";
  if (opts.printLocs && !n.sourceName.empty()) os << " loc(" << quoteString(n.sourceName) << ")";
  os << "\n";
}

}  // namespace

void printGraph(std::ostream& os, const Graph& g, const PrintOptions& opts, int indent) {
  std::string pad(static_cast<size_t>(indent), ' ');
  ValueNames names(g);
  std::vector<std::string> args, resultTypes;
  for (const auto& a : g.arguments()) args.push_back(str(names(a.get()), ": ", formatType(a->type())));
  for (const TensorType& t : g.resultTypes()) resultTypes.push_back(formatType(t));
  os << pad << "func " << sigilName('@', g.name()) << "(" << join(args) << ") -> (" << join(resultTypes) << ") {\n";
  std::string inner = pad + "  ";
  for (const auto& n : g.nodeList()) printNode(os, *n, names, opts, inner);
  for (const StateUpdate& u : g.stateUpdates())
    os << inner << "update " << sigilName('@', u.param) << " = " << names(u.value) << "\n";
  std::vector<std::string> rets;
  for (Value* v : g.results()) rets.push_back(names(v));
  os << inner << "return" << (rets.empty() ? "" : " " + join(rets)) << "\n";
  os << pad << "}\n";
}

void printModule(std::ostream& os, const Module& m, const PrintOptions& opts) {
  os << "module " << sigilName('@', m.name()) << " {\n";
  if (!m.weightsPath().empty()) os << "  weights " << quoteString(m.weightsPath()) << "\n";
  for (const auto& p : m.params()) {
    os << "  " << (p->trainable ? "param " : "buffer ") << sigilName('@', p->name) << " : " << formatType(p->type);
    if (p->data && !p->backedByFile && opts.inlineUnbackedParams)
      os << " = " << formatAttribute(Attribute(*p->data));
    os << "\n";
  }
  bool first = m.weightsPath().empty() && m.params().empty();
  for (const auto& f : m.functions()) {
    if (!first) os << "\n";  // a blank line separates functions from what precedes them
    first = false;
    printGraph(os, *f, opts, 2);
  }
  os << "}\n";
}

std::string printModule(const Module& m, const PrintOptions& opts) {
  std::ostringstream os;
  printModule(os, m, opts);
  return os.str();
}

}  // namespace kfuse
