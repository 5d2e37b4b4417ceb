// Tensor types, attributes and kernel IR as JSON, for plans in packages
// (kernel_io.h).
#include "exec/io/kernel_io.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "ir/support/strings.h"

namespace kfuse::package {
using namespace json_read;

namespace {

using Wide = __int128;  // products of sizes and strides, never overflowing

constexpr int64_t kMaxMapValue = int64_t{1} << 48;  // |base|, |stride| of an index map
// Scalar expressions are evaluated and printed recursively as trees: bound
// the depth (the stack) and the unfolded size (the time) of each node.
constexpr int64_t kMaxExprDepth = 256;
constexpr int64_t kMaxExprTree = int64_t{1} << 20;

constexpr std::array<std::string_view, 3> kScopes = {"element", "row", "final"};
constexpr size_t kScalarOps = static_cast<size_t>(ScalarOp::Philox) + 1;

}  // namespace

// ---- types, as the IR spells them: "f32[256,64]", "f32[1,8,8,3]#nhwc"

void checkShape(const Shape& s, std::string_view what) {
  if (s.size() > static_cast<size_t>(kMaxRank)) fail(str(what, " ", formatDims(s), " has rank above ", kMaxRank));
  if (Status st = checkShapeBounds(s, what); !st) fail(st.message());
  if (numElements(s) > kMaxTensorElements) fail(str(what, " ", formatDims(s), " has more than 2^40 elements"));
}

TensorType readType(const json& j) {
  std::string s = toString(j, "a type");
  size_t open = s.find('['), close = s.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) fail(str("malformed type '", s, "'"));
  std::optional<DType> dt = parseDType(std::string_view(s).substr(0, open));
  if (!dt) fail(str("unknown dtype in type '", s, "'"));
  TensorType t;
  t.dtype = *dt;
  const char* p = s.data() + open + 1;
  const char* end = s.data() + close;
  while (p < end) {
    if (t.shape.size() > static_cast<size_t>(kMaxRank)) fail(str("type '", s, "' has rank above ", kMaxRank));
    int64_t d = 0;
    auto [next, ec] = std::from_chars(p, end, d);
    if (ec != std::errc()) fail(str("malformed shape in type '", s, "'"));
    t.shape.push_back(d);
    if (next == end) break;
    if (*next != ',' || next + 1 == end) fail(str("malformed shape in type '", s, "'"));
    p = next + 1;
  }
  std::string_view rest = std::string_view(s).substr(close + 1);
  if (!rest.empty()) {
    std::optional<Layout> l = rest[0] == '#' ? parseLayout(rest.substr(1)) : std::nullopt;
    if (!l) fail(str("malformed layout in type '", s, "'"));
    t.layout = *l;
  }
  checkShape(t.shape, str("type ", s));
  if (!layoutFitsRank(t.layout, t.rank())) fail(str("type '", s, "': the layout does not fit its rank"));
  return t;
}

// ---- attributes: {"int": 3}, {"floats": [0.5]}, {"tensor": {"type": .., "data": hex}}

namespace {

constexpr std::array<std::string_view, 7> kAttrKinds = {"int", "float", "bool", "string", "ints", "floats", "tensor"};

std::string hexOf(const std::byte* p, size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[static_cast<uint8_t>(p[i]) >> 4];
    out[2 * i + 1] = digits[static_cast<uint8_t>(p[i]) & 15];
  }
  return out;
}

Tensor readTensor(const json& j) {
  TensorType t = readType(at(j, "type"));
  std::string hex = stringAt(j, "data");
  // Checked before allocating: the data, not the declared shape, bounds the size.
  if (hex.size() != 2 * t.byteSize()) fail(str("tensor data of ", hex.size(), " hex digits for ", formatType(t)));
  Tensor out(t);
  for (size_t i = 0; i < t.byteSize(); ++i) {
    uint8_t byte = 0;
    auto [end, ec] = std::from_chars(hex.data() + 2 * i, hex.data() + 2 * i + 2, byte, 16);
    if (ec != std::errc() || end != hex.data() + 2 * i + 2) fail("tensor data is not hexadecimal");
    out.data()[i] = static_cast<std::byte>(byte);
  }
  return out;
}

}  // namespace

ojson writeAttr(const Attribute& a) {
  ojson v;
  switch (a.kind()) {
    case AttrKind::Int: v = a.asInt(); break;
    case AttrKind::Float: v = writeDouble(a.asFloat()); break;
    case AttrKind::Bool: v = a.asBool(); break;
    case AttrKind::String: v = a.asString(); break;
    case AttrKind::Ints: v = a.asInts(); break;
    case AttrKind::Floats:
      v = ojson::array();
      for (double d : a.asFloats()) v.push_back(writeDouble(d));
      break;
    case AttrKind::Tensor: {
      const Tensor& t = a.asTensor();
      v = ojson{{"type", formatType(t.type())}, {"data", hexOf(t.data(), t.byteSize())}};
      break;
    }
  }
  return ojson{{nameOf(a.kind(), kAttrKinds), std::move(v)}};
}

Attribute readAttr(const json& j) {
  if (!j.is_object() || j.size() != 1) fail("an attribute must be an object with one field, its kind");
  const std::string& kind = j.begin().key();
  const json& v = j.begin().value();
  constexpr int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  switch (enumNamed<AttrKind>(kind, kAttrKinds, "attribute kind")) {
    case AttrKind::Int: return toInt(v, "an int attribute", lo, hi);
    case AttrKind::Float: return readDouble(v, "a float attribute");
    case AttrKind::Bool:
      if (!v.is_boolean()) fail("a bool attribute must be a boolean");
      return v.get<bool>();
    case AttrKind::String: return toString(v, "a string attribute");
    case AttrKind::Ints: {
      std::vector<int64_t> out;
      for (const json& e : arrayOf(v, "an int list attribute")) out.push_back(toInt(e, "an int list element", lo, hi));
      return out;
    }
    case AttrKind::Floats: {
      std::vector<double> out;
      for (const json& e : arrayOf(v, "a float list attribute")) out.push_back(readDouble(e, "a float list element"));
      return out;
    }
    case AttrKind::Tensor: return readTensor(v);
  }
  fail("unknown attribute kind");
}

// ---- kernels

namespace {

ojson writeAccess(int buffer, const kernel::IndexMap& m) {
  return ojson{{"buffer", buffer}, {"base", m.base}, {"strides", m.strides}};
}

// Scalar DAG nodes in post-order (arguments first), each shared node once.
class NodeWriter {
 public:
  int add(const ScalarRef& n) {
    if (!n) return -1;
    if (auto it = ids_.find(n.get()); it != ids_.end()) return it->second;
    std::vector<int> args;
    for (const ScalarRef& a : n->args) args.push_back(add(a));
    ojson row = ojson::array({std::string(scalarOpName(n->op)), std::string(dtypeName(n->type))});
    switch (n->op) {
      case ScalarOp::Const: row.push_back(writeDouble(n->constant)); break;
      case ScalarOp::Input:
      case ScalarOp::Index: row.push_back(n->input); break;
      default: row.push_back(args); break;
    }
    nodes_.push_back(std::move(row));
    return ids_[n.get()] = static_cast<int>(nodes_.size() - 1);
  }
  ojson take() { return std::move(nodes_); }

 private:
  std::unordered_map<const ScalarNode*, int> ids_;
  ojson nodes_ = ojson::array();
};

class KernelReader {
 public:
  explicit KernelReader(const json& j) : j_(j) {}

  kernel::Kernel run() {
    k_.name = stringAt(j_, "name");
    k_.outer = intsAt(j_, "outer", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    k_.reduce = intsAt(j_, "reduce", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    checkShape(k_.outer, "outer space");
    checkShape(k_.reduce, "reduce space");
    for (const json& b : arrayAt(j_, "buffers"))
      k_.buffers.push_back({stringAt(b, "name"), readType(at(b, "type")), boolAt(b, "output")});
    const json &loads = arrayAt(j_, "loads"), &prologue = arrayAt(j_, "prologue"),
               &reductions = arrayAt(j_, "reductions"), &globals = arrayAt(j_, "globals");
    readNodes(arrayAt(j_, "nodes"), loads.size() + reductions.size() + prologue.size() + globals.size());
    for (size_t i = 0; i < loads.size(); ++i)
      within(str("load ", i), [&] { k_.loads.push_back({bufferAt(loads[i]), readMap(loads[i]), readGathered(loads[i])}); });
    auto readGlobals = [&](const json& list, std::vector<kernel::Global>& out, std::string_view what) {
      for (size_t i = 0; i < list.size(); ++i)
        within(str(what, " ", i), [&] { out.push_back({combinerAt(list[i]), valueAt(list[i])}); });
    };
    readGlobals(prologue, k_.prologue, "prologue");
    for (size_t i = 0; i < reductions.size(); ++i)
      within(str("reduction ", i), [&] {
        k_.reductions.push_back({combinerAt(reductions[i]), valueAt(reductions[i])});
      });
    readGlobals(globals, k_.globals, "global");
    const json& stores = arrayAt(j_, "stores");
    for (size_t i = 0; i < stores.size(); ++i)
      within(str("store ", i), [&] {
        const json& s = stores[i];
        k_.stores.push_back({bufferAt(s), readMap(s),
                             enumNamed<kernel::StoreScope>(stringAt(s, "scope"), kScopes, "store scope"), valueAt(s),
                             readGathered(s), s.contains("accumulate") && boolAt(s, "accumulate")});
      });
    checkMaps();
    if (Status s = kernel::verifyKernel(k_); !s) {
      std::string m = s.message(), prefix = str("kernel @", k_.name, ": ");
      fail(m.compare(0, prefix.size(), prefix) == 0 ? m.substr(prefix.size()) : m);
    }
    return std::move(k_);
  }

 private:
  // Leaves are checked here for every node, reachable or not; verifyKernel
  // then checks which leaves each expression may read.
  void readNodes(const json& list, size_t leaves) {
    struct Cost {
      int64_t depth, tree;
    };
    std::vector<Cost> cost;
    for (size_t i = 0; i < list.size(); ++i)
      within(str("scalar node ", i), [&] {
        const json& row = arrayOf(list[i], "a node");
        if (row.size() != 3) fail("a node must be [op, type, operand]");
        auto op = enumNamed<ScalarOp>(toString(row[0], "the op"), kScalarOps, scalarOpName, "scalar op");
        std::optional<DType> type = parseDType(toString(row[1], "the type"));
        if (!type) fail(str("unknown dtype '", row[1].get<std::string>(), "'"));
        ScalarNode n{op, *type, 0, -1, {}};
        Cost c{1, 1};
        if (op == ScalarOp::Const) {
          n.constant = readDouble(row[2], "the constant");
        } else if (op == ScalarOp::Input) {
          n.input = static_cast<int>(toInt(row[2], "input leaf", 0, static_cast<int64_t>(leaves) - 1));
        } else if (op == ScalarOp::Index) {
          n.input = static_cast<int>(toInt(row[2], "iteration dim", 0, static_cast<int64_t>(k_.numDims()) - 1));
        } else {
          size_t arity = scalarArity(op);
          const json& args = arrayOf(row[2], "the arguments");
          if (args.size() != arity) fail(str(scalarOpName(op), " takes ", arity, " arguments, not ", args.size()));
          for (const json& a : args) {
            // Earlier nodes only: the list is a topological order, so no cycle.
            auto at = static_cast<size_t>(toInt(a, "argument (an earlier node)", 0, static_cast<int64_t>(i) - 1));
            n.args.push_back(nodes_[at]);
            c.depth = std::max(c.depth, cost[at].depth + 1);
            c.tree = std::min(c.tree + cost[at].tree, kMaxExprTree + 1);
          }
        }
        if (c.depth > kMaxExprDepth) fail(str("the expression is deeper than ", kMaxExprDepth));
        if (c.tree > kMaxExprTree) fail(str("the expression unfolds to more than ", kMaxExprTree, " nodes"));
        cost.push_back(c);
        nodes_.push_back(std::make_shared<const ScalarNode>(std::move(n)));
      });
  }

  int bufferAt(const json& o) const {
    return static_cast<int>(toInt(at(o, "buffer"), "kernel buffer", 0, static_cast<int64_t>(k_.buffers.size()) - 1));
  }
  ScalarRef valueAt(const json& o, const char* key = "value") const {
    return nodes_[static_cast<size_t>(toInt(at(o, key), str(key, " node"), 0, static_cast<int64_t>(nodes_.size()) - 1))];
  }
  static kernel::Combiner combinerAt(const json& o) {
    return enumNamed<kernel::Combiner>(stringAt(o, "combiner"), 3, kernel::combinerName, "combiner");
  }
  kernel::IndexMap readMap(const json& o) const {
    kernel::IndexMap m;
    m.base = intAt(o, "base", -kMaxMapValue, kMaxMapValue);
    m.strides = intsAt(o, "strides", -kMaxMapValue, kMaxMapValue);
    if (m.strides.size() != k_.numDims())
      fail(str("index map has ", m.strides.size(), " strides for ", k_.numDims(), " dims"));
    return m;
  }

  std::optional<kernel::Gathered> readGathered(const json& o) const {
    if (!o.contains("gathered")) return std::nullopt;
    const json& g = at(o, "gathered");
    return kernel::Gathered{valueAt(g, "index"), intAt(g, "stride", -kMaxMapValue, kMaxMapValue),
                            intAt(g, "size", 1, kMaxTensorElements)};
  }

  // verifyKernel skips maps over an empty space, but the interpreter still
  // reads row-invariant loads at reduce index 0 and writes Final stores at
  // their base; here every map is bounded over indices in [0, max(extent-1,
  // 0)] (so verifyKernel's int64 arithmetic cannot overflow), and the maps
  // the interpreter follows must stay inside their buffers.
  void checkMaps() const {
    bool outerEmpty = k_.outerPoints() == 0, rowEmpty = k_.reducePoints() == 0;
    for (size_t i = 0; i < k_.loads.size(); ++i) {
      const kernel::Load& l = k_.loads[i];
      const Wide rows = l.gathered ? Wide(l.gathered->stride) * (l.gathered->size - 1) : 0;
      checkMap(l.map, l.buffer, str("load ", i), !outerEmpty && !(rowEmpty && kernel::loadReadsRow(k_, i)), rows);
    }
    for (size_t i = 0; i < k_.stores.size(); ++i) {
      const kernel::Store& s = k_.stores[i];
      bool used = s.scope == kernel::StoreScope::Final ||
                  (!outerEmpty && !(rowEmpty && s.scope == kernel::StoreScope::Element));
      const Wide rows = s.gathered ? Wide(s.gathered->stride) * (s.gathered->size - 1) : 0;
      checkMap(s.map, s.buffer, str("store ", i), used, rows);
    }
  }

  // `rows`: how far a gathered load's last row lies past its map.
  void checkMap(const kernel::IndexMap& m, int buffer, const std::string& what, bool used, Wide rows = 0) const {
    Wide lo = m.base, hi = m.base;
    for (size_t d = 0; d < k_.numDims(); ++d) {
      int64_t extent = d < k_.outer.size() ? k_.outer[d] : k_.reduce[d - k_.outer.size()];
      Wide span = Wide(m.strides[d]) * std::max<int64_t>(extent - 1, 0);
      (span < 0 ? lo : hi) += span;
    }
    (rows < 0 ? lo : hi) += rows;
    if (lo < -kMaxRegionBytes || hi > kMaxRegionBytes) fail(str(what, ": index map offsets reach beyond 2^50"));
    const kernel::Buffer& b = k_.buffers[static_cast<size_t>(buffer)];
    if (used && (lo < 0 || hi >= b.type.numElements()))
      fail(str(what, ": offsets ", static_cast<int64_t>(lo), "..", static_cast<int64_t>(hi), " fall outside ", b.name,
               " (", b.type.numElements(), " elements)"));
  }

  const json& j_;
  kernel::Kernel k_;
  std::vector<ScalarRef> nodes_;
};

}  // namespace

ojson writeKernel(const kernel::Kernel& k) {
  NodeWriter nodes;
  ojson buffers = ojson::array(), loads = ojson::array(), reductions = ojson::array(), stores = ojson::array();
  for (const kernel::Buffer& b : k.buffers)
    buffers.push_back({{"name", b.name}, {"type", formatType(b.type)}, {"output", b.output}});
  for (const kernel::Load& l : k.loads) {
    ojson o = writeAccess(l.buffer, l.map);
    if (l.gathered)
      o["gathered"] = {{"index", nodes.add(l.gathered->index)}, {"stride", l.gathered->stride}, {"size", l.gathered->size}};
    loads.push_back(std::move(o));
  }
  auto globals = [&](const std::vector<kernel::Global>& gs) {
    ojson out = ojson::array();
    for (const kernel::Global& g : gs)
      out.push_back({{"combiner", std::string(kernel::combinerName(g.combiner))}, {"value", nodes.add(g.value)}});
    return out;
  };
  ojson prologue = globals(k.prologue);
  for (const kernel::Reduction& r : k.reductions)
    reductions.push_back({{"combiner", std::string(kernel::combinerName(r.combiner))}, {"value", nodes.add(r.value)}});
  ojson globalList = globals(k.globals);
  for (const kernel::Store& s : k.stores) {
    ojson o = writeAccess(s.buffer, s.map);
    o["scope"] = nameOf(s.scope, kScopes);
    o["value"] = nodes.add(s.value);
    if (s.gathered)
      o["gathered"] = {{"index", nodes.add(s.gathered->index)}, {"stride", s.gathered->stride}, {"size", s.gathered->size}};
    if (s.accumulate) o["accumulate"] = true;
    stores.push_back(std::move(o));
  }
  return ojson{{"name", k.name},   {"outer", k.outer},     {"reduce", k.reduce},       {"buffers", buffers},
               {"loads", loads},   {"prologue", prologue}, {"reductions", reductions}, {"globals", globalList},
               {"stores", stores}, {"nodes", nodes.take()}};
}

kernel::Kernel readKernel(const json& j) { return KernelReader(j).run(); }

}  // namespace kfuse::package
