// The one emission layer of kfuse's kernel code generators: what a kernel
// computes at each point of each section, in kernel_ir.h's order, written
// once for the LLVM IR emitter (V = llvm::Value*) and the CUDA C emitter
// (V = std::string, an expression or variable name). A code generator
// derives from KernelWalk<V> and supplies
//   - the values: a load at a point, an index, an accumulator, a global, a
//     conversion, one node of a scalar program given its operands' values;
//   - the effects: a store, folding a value into a reduction or a global;
//   - the loops and the thread mapping: how the prologue's points, the outer
//     points and each row's points are visited (a loop nest on the CPU,
//     threads, teams and grid-stride loops on the GPU), which call back into
//     the sections below.
// The walker decides what is evaluated where: the prologue's globals at each
// outer point; per outer point each group of reductions folded over the
// row, the element stores at each row point, then the row stores and the
// main globals at the row's first point; final stores last. A Site
// evaluates the scalar programs of one point: each load once, on first use,
// each node once (TVM's CodeGenC, Inductor's codegen/common.py have the same
// split between what is computed and how it is printed).
#pragma once

#include <functional>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "codegen/kernel/emission_schedule.h"

namespace kfuse::kernel {

// A point of the index space: the element offset of every access (loads,
// then stores) and the index of every kernel dim.
template <class V>
struct Point {
  std::vector<V> offsets;
  std::vector<V> index;
};

template <class V>
class KernelWalk {
 public:
  using P = Point<V>;
  using Body = std::function<void(const P&)>;

  explicit KernelWalk(const Kernel& k) : k_(k), s_(scheduleEmission(k)) {}
  virtual ~KernelWalk() = default;
  KernelWalk(const KernelWalk&) = delete;
  KernelWalk& operator=(const KernelWalk&) = delete;

  // One evaluation point: loads on first use, every node once.
  class Site {
   public:
    Site(KernelWalk& w, const P& p) : w_(w), p_(p), loads_(w.k_.loads.size()) {}

    V eval(const ScalarRef& e) { return eval(*e); }
    V eval(const ScalarNode& n) {
      if (auto it = memo_.find(&n); it != memo_.end()) return it->second;
      std::vector<V> args;
      if (n.op == ScalarOp::Input || n.op == ScalarOp::Index) {
        args.push_back(leaf(n));
      } else {
        for (const ScalarRef& a : n.args) args.push_back(eval(*a));
      }
      V v = w_.scalarNode(n, args);
      memo_.emplace(&n, v);
      return v;
    }
    // Makes `v` the value of `n` (a node computed earlier and kept), so that
    // no expression containing `n` computes it again.
    void seed(const ScalarNode& n, V v) { memo_[&n] = v; }
    const P& point() const { return p_; }

   private:
    V leaf(const ScalarNode& n) {
      const Kernel& k = w_.k_;
      auto i = static_cast<size_t>(n.input);
      if (n.op == ScalarOp::Index) return w_.convert(w_.indexValue(p_, i), DType::I64, n.type);
      if (i < k.firstAccumulator()) {
        if (!loads_[i]) {
          const std::optional<Gathered>& g = k.loads[i].gathered;
          loads_[i] = g ? w_.gatheredValue(p_, i, eval(*g->index)) : w_.loadValue(p_, i);
        }
        DType storage = k.buffers[static_cast<size_t>(k.loads[i].buffer)].type.dtype;
        return w_.convert(*loads_[i], computeType(storage), n.type);
      }
      if (i < k.firstGlobal()) {
        size_t r = i - k.firstAccumulator();
        return w_.convert(w_.accumulatorValue(r), w_.s_.accumulators[r], n.type);
      }
      size_t g = i - k.firstGlobal();
      return w_.convert(w_.globalValue(g), w_.s_.globals[g], n.type);
    }

    KernelWalk& w_;
    const P& p_;
    std::vector<std::optional<V>> loads_;
    std::unordered_map<const ScalarNode*, V> memo_;
  };

 protected:
  // The whole kernel: globals, the prologue, the main loops (when there is
  // an outer point), the globals' finish and the final stores.
  void walk() {
    for (size_t g = 0; g < s_.numGlobals(); ++g) declareGlobal(g);
    if (!s_.spaces.outer.empty()) {
      beforeLoops();
      if (!k_.prologue.empty()) {
        prologueLoop([&](const P& p) { prologuePoint(p); });
        afterPrologue();
      }
      mainLoops();
    }
    finish();
  }

  // ---- the sections, for the loops to call

  // Folds the prologue's globals at an outer point (row-invariant values).
  void prologuePoint(const P& p) {
    Site site(*this, p);
    std::vector<V> values;
    for (size_t g = 0; g < k_.prologue.size(); ++g) values.push_back(globalOperand(site, g));
    for (size_t g = 0; g < values.size(); ++g) foldGlobal(g, values[g]);
  }

  // One outer point in row order: each group of reductions over the row,
  // the element stores, the row level.
  void outerPoint(const P& p) {
    for (auto [first, last] : s_.groups) {
      beginGroup(first, last, p);
      reduceLoop(p, first, last, [&](const P& q) { reducePoint(first, last, q); });
      endGroup(first, last);
    }
    if (s_.elementStores) elementLoop(p, [&](const P& q) { elementPoint(q); });
    if (s_.rowLevel(k_)) rowLevel(p, [&](const P& q) { rowPoint(q); });
  }

  // Folds reductions [first, last) at a row point.
  void reducePoint(size_t first, size_t last, const P& q) {
    Site site(*this, q);
    std::vector<V> values;
    for (size_t r = first; r < last; ++r) {
      const Reduction& red = k_.reductions[r];
      values.push_back(convert(site.eval(red.value), red.value->type, s_.accumulators[r]));
    }
    for (size_t r = first; r < last; ++r) foldReduction(r, values[r - first]);
    afterReducePoint(site, first, last);
  }

  // The element stores at a row point.
  void elementPoint(const P& q) {
    Site site(*this, q);
    beforeElementStores(site);
    stores(site, StoreScope::Element);
  }

  // The row stores and the main globals at the row's first point (their
  // values do not depend on the row).
  void rowPoint(const P& p) {
    Site site(*this, p);
    std::vector<V> values;
    for (size_t g = 0; g < k_.globals.size(); ++g) values.push_back(globalOperand(site, k_.prologue.size() + g));
    stores(site, StoreScope::Row);
    for (size_t g = 0; g < values.size(); ++g) foldGlobal(k_.prologue.size() + g, values[g]);
  }

  // A point of a kernel without reductions or reduce dims: its element
  // stores, row stores and globals at one site (every load read once).
  void wholePoint(const P& p) {
    Site site(*this, p);
    std::vector<V> values;
    for (size_t g = 0; g < k_.globals.size(); ++g) values.push_back(globalOperand(site, k_.prologue.size() + g));
    stores(site, StoreScope::Element);
    stores(site, StoreScope::Row);
    for (size_t g = 0; g < values.size(); ++g) foldGlobal(k_.prologue.size() + g, values[g]);
  }
  bool pointwise() const { return k_.reductions.empty() && s_.spaces.reduce.dims.empty(); }

  // The final stores, at index 0 of every dim.
  void finalPoint(const P& origin) {
    Site site(*this, origin);
    stores(site, StoreScope::Final);
  }

  // Evaluates every store of `scope` at the site, then writes them: all
  // loads of a point happen before its stores, as in the interpreter.
  // (A scatter's index is evaluated with the values.)
  void stores(Site& site, StoreScope scope) {
    std::vector<std::tuple<size_t, V, std::optional<V>>> values;
    for (size_t s = 0; s < k_.stores.size(); ++s) {
      const Store& st = k_.stores[s];
      if (st.scope != scope) continue;
      std::optional<V> row;
      if (st.gathered) row = site.eval(*st.gathered->index);
      values.emplace_back(s, site.eval(st.value), row);
    }
    for (auto& [s, v, row] : values) row ? scatterValue(site.point(), s, v, *row) : storeValue(site.point(), s, v);
  }

  // ---- values: what a backend computes
  // Load `i` at `p`, in its buffer's compute type.
  virtual V loadValue(const P& p, size_t i) = 0;
  // Gathered load `i` at `p`, given its index's value (an i64): the row
  // gatheredRow picks (exec/kernel_ir.h), `stride` elements per row past p.
  virtual V gatheredValue(const P& p, size_t i, V index) = 0;
  // Kernel dim `d`'s index at `p`, as an i64.
  virtual V indexValue(const P& p, size_t d) = 0;
  // The current outer point's accumulator `r` (after its group), in s_.accumulators[r].
  virtual V accumulatorValue(size_t r) = 0;
  // Global `g` (prologue first) as folded so far, in s_.globals[g].
  virtual V globalValue(size_t g) = 0;
  virtual V convert(V v, DType from, DType to) = 0;
  // One node given its operands' values (for an Input or Index leaf: its
  // value in the node's type; for a constant: none).
  virtual V scalarNode(const ScalarNode& n, const std::vector<V>& args) = 0;

  // ---- effects
  // Store `s` at `p`; `v` is of the store's value type.
  virtual void storeValue(const P& p, size_t s, V v) = 0;
  // Scatter-adds `v` (of the store's value type) into the row of store `s`
  // that gatheredRow picks for `index` (an i64), at `p`.
  virtual void scatterValue(const P& p, size_t s, V v, V index) = 0;
  // `v` is of the accumulator's type.
  virtual void foldReduction(size_t r, V v) = 0;
  virtual void foldGlobal(size_t g, V v) = 0;

  // ---- structure: loops and thread mapping
  virtual void declareGlobal(size_t g) = 0;
  virtual void beforeLoops() {}
  virtual void prologueLoop(const Body& body) = 0;
  virtual void afterPrologue() {}
  // Visits the outer points, calling outerPoint (or wholePoint, or the
  // sections in another order that keeps each row's folding order).
  virtual void mainLoops() = 0;
  virtual void beginGroup(size_t first, size_t last, const P& p) = 0;
  virtual void reduceLoop(const P& p, size_t first, size_t last, const Body& body) = 0;
  virtual void endGroup(size_t first, size_t last) = 0;
  virtual void afterReducePoint(Site&, size_t /*first*/, size_t /*last*/) {}
  virtual void elementLoop(const P& p, const Body& body) = 0;
  virtual void beforeElementStores(Site&) {}
  virtual void rowLevel(const P& p, const Body& body) = 0;
  // After the main loops: the globals' finish, then finalPoint at the origin.
  virtual void finish() = 0;

  const Kernel& k_;
  const EmissionSchedule s_;

 private:
  V globalOperand(Site& site, size_t g) {
    const Global& gl = g < k_.prologue.size() ? k_.prologue[g] : k_.globals[g - k_.prologue.size()];
    return convert(site.eval(gl.value), gl.value->type, s_.globals[g]);
  }
};

}  // namespace kfuse::kernel
