#include "exec/kernel_ir.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <unordered_set>

#include "ir/support/strings.h"

namespace kfuse::kernel {

std::string_view combinerName(Combiner c) {
  switch (c) {
    case Combiner::Sum: return "sum";
    case Combiner::Max: return "max";
    case Combiner::Min: return "min";
  }
  return "?";
}

double combinerInit(Combiner c) {
  switch (c) {
    case Combiner::Sum: return 0;
    case Combiner::Max: return -std::numeric_limits<double>::infinity();
    case Combiner::Min: return std::numeric_limits<double>::infinity();
  }
  return 0;
}

int64_t gatheredRow(int64_t index, int64_t size) {
  if (index < 0) index += size;
  return std::clamp<int64_t>(index, 0, size - 1);
}

bool scatters(const Kernel& k) {
  for (const Store& s : k.stores)
    if (s.accumulate) return true;
  return false;
}

bool loadDependsOn(const Kernel& k, size_t i, size_t dim) {
  const Load& l = k.loads[i];
  if (l.map.dependsOn(dim)) return true;
  if (!l.gathered || !l.gathered->index) return false;
  std::unordered_set<const ScalarNode*> seen;
  std::function<bool(const ScalarNode&)> reads = [&](const ScalarNode& n) {
    if (!seen.insert(&n).second) return false;
    if (n.op == ScalarOp::Index) return n.input == static_cast<int>(dim);
    if (n.op == ScalarOp::Input) {
      auto j = static_cast<size_t>(n.input);
      return j < k.loads.size() && j != i && !k.loads[j].gathered && k.loads[j].map.dependsOn(dim);
    }
    for (const auto& a : n.args)
      if (reads(*a)) return true;
    return false;
  };
  return reads(*l.gathered->index);
}

bool loadReadsRow(const Kernel& k, size_t i) {
  for (size_t d = k.outer.size(); d < k.numDims(); ++d)
    if (loadDependsOn(k, i, d)) return true;
  return false;
}

namespace {

// Names leaves as a reader of the kernel sees them: L3 (load 3), acc1, g0, i2.
std::string leafName(const Kernel& k, const ScalarNode& n) {
  if (n.op == ScalarOp::Index) return str("i", n.input);
  auto i = static_cast<size_t>(n.input);
  if (i < k.firstAccumulator()) return str("L", i);
  if (i < k.firstGlobal()) return str("acc", i - k.firstAccumulator());
  return str("g", i - k.firstGlobal());
}

std::string expr(const Kernel& k, const ScalarNode& n) {
  switch (n.op) {
    case ScalarOp::Const:
      return isFloat(n.type) ? formatDouble(n.constant) : std::to_string(static_cast<int64_t>(n.constant));
    case ScalarOp::Input:
    case ScalarOp::Index: return leafName(k, n);
    case ScalarOp::Cast: return str("cast<", dtypeName(n.type), ">(", expr(k, *n.args[0]), ")");
    default: {
      std::vector<std::string> args;
      for (const auto& a : n.args) args.push_back(expr(k, *a));
      return str(scalarOpName(n.op), "(", join(args), ")");
    }
  }
}

std::string mapText(const IndexMap& m) {
  std::vector<std::string> terms;
  if (m.base != 0) terms.push_back(std::to_string(m.base));
  for (size_t d = 0; d < m.strides.size(); ++d)
    if (m.strides[d] != 0) terms.push_back(m.strides[d] == 1 ? str("i", d) : str(m.strides[d], "*i", d));
  return terms.empty() ? "0" : join(terms, " + ");
}

std::string_view scopeName(StoreScope s) {
  switch (s) {
    case StoreScope::Element: return "element";
    case StoreScope::Row: return "row";
    case StoreScope::Final: return "final";
  }
  return "?";
}

}  // namespace

std::string printKernel(const Kernel& k) {
  std::ostringstream os;
  os << "kernel @" << k.name << " outer" << formatDims(k.outer);
  if (!k.reduce.empty()) os << " reduce" << formatDims(k.reduce);
  os << "\n";
  for (const Buffer& b : k.buffers)
    os << "  " << (b.output ? "out " : "in  ") << b.name << " : " << formatType(b.type) << "\n";
  for (size_t i = 0; i < k.loads.size(); ++i) {
    const Load& l = k.loads[i];
    os << "  L" << i << " = load " << k.buffers[static_cast<size_t>(l.buffer)].name << "[" << mapText(l.map);
    if (l.gathered && l.gathered->index)
      os << " + " << l.gathered->stride << "*gather(" << expr(k, *l.gathered->index) << ", " << l.gathered->size << ")";
    os << "]\n";
  }
  for (size_t i = 0; i < k.prologue.size(); ++i)
    os << "  g" << i << " = prologue " << combinerName(k.prologue[i].combiner) << " " << expr(k, *k.prologue[i].value)
       << "\n";
  for (size_t i = 0; i < k.reductions.size(); ++i)
    os << "  acc" << i << " = reduce " << combinerName(k.reductions[i].combiner) << " "
       << expr(k, *k.reductions[i].value) << "\n";
  for (size_t i = 0; i < k.globals.size(); ++i)
    os << "  g" << k.prologue.size() + i << " = global " << combinerName(k.globals[i].combiner) << " "
       << expr(k, *k.globals[i].value) << "\n";
  for (const Store& s : k.stores) {
    os << "  store " << k.buffers[static_cast<size_t>(s.buffer)].name << "[" << mapText(s.map);
    if (s.gathered && s.gathered->index)
      os << " + " << s.gathered->stride << "*gather(" << expr(k, *s.gathered->index) << ", " << s.gathered->size << ")";
    os << "] (" << scopeName(s.scope) << ") " << (s.accumulate ? "+=" : "=") << " " << expr(k, *s.value) << "\n";
  }
  return os.str();
}

namespace {

class KernelVerifier {
 public:
  explicit KernelVerifier(const Kernel& k) : k_(k) {}

  Status run() {
    for (size_t i = 0; i < k_.loads.size(); ++i) {
      const Load& l = k_.loads[i];
      if (!checkBuffer(l.buffer, str("load ", i), false)) continue;
      checkMap(l.map, k_.buffers[static_cast<size_t>(l.buffer)], str("load ", i), k_.numDims(),
               l.gathered ? gatheredSpan(*l.gathered, str("load ", i)) : 0);
      if (l.gathered) checkGatheredIndex(*l.gathered, str("load ", i, "'s gathered index"));
    }
    size_t leaves = k_.firstGlobal() + k_.prologue.size() + k_.globals.size();
    for (size_t i = 0; i < k_.prologue.size(); ++i)
      checkExpr(k_.prologue[i].value, str("prologue ", i), k_.firstAccumulator(), false);
    for (size_t i = 0; i < k_.reductions.size(); ++i)
      checkExpr(k_.reductions[i].value, str("reduction ", i), k_.firstAccumulator() + i, true,
                k_.firstGlobal(), k_.firstGlobal() + k_.prologue.size());
    for (size_t i = 0; i < k_.globals.size(); ++i)
      checkExpr(k_.globals[i].value, str("global ", i), k_.firstGlobal(), false, k_.firstGlobal(),
                k_.firstGlobal() + k_.prologue.size());
    for (size_t i = 0; i < k_.stores.size(); ++i) {
      const Store& s = k_.stores[i];
      std::string what = str("store ", i);
      if (!checkBuffer(s.buffer, what, true)) continue;
      const Buffer& b = k_.buffers[static_cast<size_t>(s.buffer)];
      checkMap(s.map, b, what, k_.numDims(), s.gathered ? gatheredSpan(*s.gathered, what) : 0);
      bool element = s.scope == StoreScope::Element;
      if (s.gathered) checkGatheredIndex(*s.gathered, str(what, "'s gathered index"));
      if (s.gathered.has_value() != s.accumulate || (s.accumulate && !element))
        fail(str(what, ": only element stores scatter, gathered and accumulating"));
      if (s.accumulate)
        for (size_t d = 0; d < k_.outer.size(); ++d)
          if (k_.outer[d] > 1 && !s.map.dependsOn(d))
            fail(str(what, ": a scatter's outer points must write apart, but its map does not span outer dim ", d));
      if (s.scope != StoreScope::Element)
        for (size_t d = s.scope == StoreScope::Row ? k_.outer.size() : 0; d < k_.numDims(); ++d)
          if (s.map.dependsOn(d)) fail(str(what, ": a ", scopeName(s.scope), " store's index depends on dim ", d));
      if (s.scope == StoreScope::Final) {
        checkExpr(s.value, what, k_.firstGlobal(), false, k_.firstGlobal(), leaves, /*globalsOnly=*/true);
      } else {
        checkExpr(s.value, what, k_.firstGlobal(), element, k_.firstGlobal(), leaves);
      }
    }
    if (errors_.empty()) return Status::ok();
    return Error(str("kernel @", k_.name, ": ", join(errors_, "; ")));
  }

 private:
  void fail(std::string msg) { errors_.push_back(std::move(msg)); }

  bool checkBuffer(int b, const std::string& what, bool mustBeOutput) {
    if (b < 0 || static_cast<size_t>(b) >= k_.buffers.size()) {
      fail(str(what, " names buffer ", b, " of ", k_.buffers.size()));
      return false;
    }
    if (mustBeOutput && !k_.buffers[static_cast<size_t>(b)].output) fail(str(what, " writes an input buffer"));
    return true;
  }

  // How far a gathered load's rows reach past its map (`stride` times the
  // last row); 0 when invalid (reported).
  int64_t gatheredSpan(const Gathered& g, const std::string& what) {
    if (g.size < 1) {
      fail(str(what, ": a gathered axis of size ", g.size));
      return 0;
    }
    return g.stride * (g.size - 1);
  }

  // An i64 of iteration indices and loads that are not gathered.
  void checkGatheredIndex(const Gathered& g, const std::string& what) {
    if (!g.index) {
      fail(str(what, " is missing"));
      return;
    }
    if (g.index->type != DType::I64) fail(str(what, " is ", dtypeName(g.index->type), ", not i64"));
    std::unordered_set<const ScalarNode*> seen;
    std::function<void(const ScalarNode&)> walk = [&](const ScalarNode& n) {
      if (!seen.insert(&n).second) return;
      for (const auto& a : n.args) walk(*a);
      if (n.op == ScalarOp::Index && (n.input < 0 || static_cast<size_t>(n.input) >= k_.numDims()))
        fail(str(what, " reads iteration dim ", n.input, " of ", k_.numDims()));
      if (n.op != ScalarOp::Input) return;
      if (n.input < 0 || static_cast<size_t>(n.input) >= k_.loads.size())
        fail(str(what, " reads leaf ", n.input, ", which is not a load"));
      else if (k_.loads[static_cast<size_t>(n.input)].gathered)
        fail(str(what, " reads load ", n.input, ", which is gathered itself"));
    };
    walk(*g.index);
  }

  // The map's extreme offsets over the whole index space (plus `extra` at
  // the far end: a gathered load's rows) lie inside the buffer.
  void checkMap(const IndexMap& m, const Buffer& b, const std::string& what, size_t dims, int64_t extra = 0) {
    if (m.strides.size() != dims) {
      fail(str(what, ": index map has ", m.strides.size(), " strides for ", dims, " dims"));
      return;
    }
    int64_t lo = m.base, hi = m.base;
    for (size_t d = 0; d < dims; ++d) {
      int64_t extent = d < k_.outer.size() ? k_.outer[d] : k_.reduce[d - k_.outer.size()];
      if (extent == 0) return;  // empty space: nothing is accessed
      int64_t span = m.strides[d] * (extent - 1);
      (span < 0 ? lo : hi) += span;
    }
    (extra < 0 ? lo : hi) += extra;
    if (lo < 0 || hi >= b.type.numElements())
      fail(str(what, ": offsets ", lo, "..", hi, " fall outside ", b.name, " (", b.type.numElements(), " elements)"));
  }

  // Leaves below `visibleInputs` are readable, plus globals in
  // [globalsBegin, globalsEnd); row-dependent loads only if `rowDependent`.
  void checkExpr(const ScalarRef& e, const std::string& what, size_t visibleInputs, bool rowDependent,
                 size_t globalsBegin = 0, size_t globalsEnd = 0, bool globalsOnly = false) {
    if (!e) {
      fail(str(what, " has no value"));
      return;
    }
    std::unordered_set<const ScalarNode*> seen;
    std::function<void(const ScalarNode&)> walk = [&](const ScalarNode& n) {
      if (!seen.insert(&n).second) return;
      for (const auto& a : n.args) walk(*a);
      if (n.op == ScalarOp::Index) {
        if (n.input < 0 || static_cast<size_t>(n.input) >= k_.numDims())
          fail(str(what, " reads iteration dim ", n.input, " of ", k_.numDims()));
        else if (!rowDependent && static_cast<size_t>(n.input) >= k_.outer.size())
          fail(str(what, " reads reduce dim ", n.input, " outside the row loop"));
        return;
      }
      if (n.op != ScalarOp::Input) return;
      auto i = static_cast<size_t>(n.input);
      bool global = i >= globalsBegin && i < globalsEnd;
      if (globalsOnly && !global) {
        fail(str(what, " reads a leaf other than a global"));
      } else if (!global && i >= visibleInputs) {
        fail(str(what, " reads leaf ", i, ", which is not available there"));
      } else if (i < k_.loads.size() && !rowDependent && loadReadsRow(k_, i)) {
        fail(str(what, " reads load ", i, ", which depends on the row"));
      }
    };
    walk(*e);
  }

  const Kernel& k_;
  std::vector<std::string> errors_;
};

}  // namespace

Status verifyKernel(const Kernel& k) { return KernelVerifier(k).run(); }

}  // namespace kfuse::kernel
