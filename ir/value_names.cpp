#include "ir/value_names.h"

#include <cctype>
#include <unordered_set>

#include "ir/support/strings.h"

namespace kfuse {

bool isBareIdentifier(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$' || c == '-')) return false;
  return true;
}

std::string sigilName(char sigil, std::string_view name) {
  return std::string(1, sigil) + (isBareIdentifier(name) ? std::string(name) : quoteString(name));
}

namespace {
bool isNumeric(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}
}  // namespace

ValueNames::ValueNames(const Graph& g) {
  std::unordered_set<std::string> taken;
  auto claim = [&](const Value* v, std::string base) {
    std::string name = base;
    for (int k = 1; taken.count(name); ++k) name = str(base, "_", k);
    taken.insert(name);
    names_[v] = sigilName('%', name);
  };
  for (const auto& a : g.arguments()) claim(a.get(), a->name());
  // Hinted names are claimed before numbering so that a number never collides
  // with a later hint.
  for (const auto& n : g.nodeList())
    for (size_t i = 0; i < n->numResults(); ++i)
      if (!n->result(i)->name().empty() && !isNumeric(n->result(i)->name())) claim(n->result(i), n->result(i)->name());
  int counter = 0;
  for (const auto& n : g.nodeList())
    for (size_t i = 0; i < n->numResults(); ++i) {
      const Value* v = n->result(i);
      if (names_.count(v)) continue;
      while (taken.count(std::to_string(counter))) ++counter;
      claim(v, std::to_string(counter++));
    }
}

std::string ValueNames::operator()(const Value* v) const {
  if (v->kind() == Value::Kind::Param) return sigilName('@', v->name());
  auto it = names_.find(v);
  return it != names_.end() ? it->second : std::string("%<unnamed>");
}

std::string describeNode(const Node& n, const ValueNames& names) {
  std::string s;
  if (n.numResults() > 0) {
    std::vector<std::string> rs;
    for (size_t i = 0; i < n.numResults(); ++i) rs.push_back(names(n.result(i)));
    s = str(join(rs), " = ");
  }
  s += std::string(n.opName());
  if (!n.sourceName.empty()) s += str(" (", n.sourceOp.empty() ? "" : n.sourceOp + " ", quoteString(n.sourceName), ")");
  return s;
}

}  // namespace kfuse
