// Stable, deterministic names for the values of a graph, shared by the
// printer and by every message that mentions a value. Arguments keep their
// names, parameters print as @name, results with a non-numeric name hint keep
// it (made unique with a suffix), and all others are numbered %0, %1, ... in
// program order. Parsing a printed graph and printing it again gives the same
// text, because numeric names are read back as "no hint".
#pragma once

#include <string>
#include <unordered_map>

#include "ir/graph.h"

namespace kfuse {

class ValueNames {
 public:
  explicit ValueNames(const Graph& g);
  // "%x", "%3", "@fc1.weight" (quoted when the name has unusual characters).
  std::string operator()(const Value* v) const;

 private:
  std::unordered_map<const Value*, std::string> names_;
};

// True when `name` can be printed without quotes after % or @.
bool isBareIdentifier(std::string_view name);
// "%name" / "@name" with quoting as needed.
std::string sigilName(char sigil, std::string_view name);
// A short description of a node for messages: "%3 = matmul" plus the
// source model's node name when known.
std::string describeNode(const Node& n, const ValueNames& names);

}  // namespace kfuse
