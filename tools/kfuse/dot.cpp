#include "tools/kfuse/dot.h"

#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "ir/support/strings.h"
#include "ir/value_names.h"

namespace kfuse::cli {
namespace {

// Pastel fills, one per cluster in turn.
constexpr const char* kColours[] = {"#cfe2f3", "#d9ead3", "#fce5cd", "#ead1dc", "#fff2cc", "#d0e0e3", "#f4cccc"};

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) out += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return out;
}

std::string id(const void* p) { return str("n", reinterpret_cast<uintptr_t>(p)); }

// Nodes and clusters are declared first; edges are written last, once every
// value's producing box is known.
class DotWriter {
 public:
  explicit DotWriter(const Graph& g) : g_(g), names_(g) {}

  std::string run() {
    os_ << "digraph \"" << escape(g_.name()) << "\" {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n";
    for (const auto& a : g_.arguments()) {
      os_ << "  " << id(a.get()) << " [shape=ellipse, label=\"" << escape(names_(a.get())) << "\\n"
          << escape(formatType(a->type())) << "\"];\n";
      box_[a.get()] = id(a.get());
    }
    int cluster = 0;
    for (const auto& n : g_.nodeList()) {
      if (n->body()) {
        declareCluster(*n, cluster++);
        continue;
      }
      os_ << "  " << id(n.get()) << " [label=\"" << escape(std::string(n->opName())) << "\\n"
          << escape(formatType(n->result()->type())) << "\"];\n";
      for (size_t i = 0; i < n->numResults(); ++i) box_[n->result(i)] = id(n.get());
      for (const Value* v : n->operands()) edges_.push_back({v, id(n.get())});
    }
    for (const Edge& e : edges_) writeEdge(e);
    os_ << "}\n";
    return os_.str();
  }

 private:
  struct Edge {
    const Value* from;
    std::string to;
  };

  // A fused node: its body's nodes inside a cluster labelled with the kernel
  // name. Outer operands feed the body nodes reading the matching argument;
  // the node's results come from the body's yielded values.
  void declareCluster(const Node& n, int index) {
    const Graph& body = *n.body();
    os_ << "  subgraph cluster_" << index << " {\n    style=filled; color=\"" << kColours[index % 7] << "\"; label=\""
        << escape(body.name()) << "\";\n";
    std::map<const Value*, std::string> inner;
    for (const auto& b : body.nodeList()) {
      os_ << "    " << id(b.get()) << " [label=\"" << escape(std::string(b->opName())) << "\"];\n";
      for (size_t i = 0; i < b->numResults(); ++i) inner[b->result(i)] = id(b.get());
    }
    for (const auto& b : body.nodeList())
      for (const Value* v : b->operands())
        if (inner.count(v)) os_ << "    " << inner[v] << " -> " << id(b.get()) << ";\n";
    os_ << "  }\n";
    for (size_t i = 0; i < n.numOperands(); ++i)
      for (const Use& u : body.argument(i)->uses()) edges_.push_back({n.operand(i), id(u.user)});
    for (size_t i = 0; i < n.numResults(); ++i) box_[n.result(i)] = inner.at(body.results()[i]);
  }

  void writeEdge(const Edge& e) {
    if (e.from->kind() == Value::Kind::Param) {
      if (params_.insert(e.from).second)
        os_ << "  " << id(e.from) << " [shape=note, label=\"" << escape(names_(e.from)) << "\"];\n";
      os_ << "  " << id(e.from) << " -> " << e.to << ";\n";
      return;
    }
    if (auto it = box_.find(e.from); it != box_.end()) os_ << "  " << it->second << " -> " << e.to << ";\n";
  }

  const Graph& g_;
  ValueNames names_;
  std::ostringstream os_;
  std::map<const Value*, std::string> box_;
  std::set<const Value*> params_;
  std::vector<Edge> edges_;
};

}  // namespace

std::string toDot(const Graph& g) { return DotWriter(g).run(); }

}  // namespace kfuse::cli
