#include "exec/kernel_eval.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "ir/support/strings.h"

namespace kfuse::kernel {
namespace {

double combine(Combiner c, double acc, double v) {
  switch (c) {
    case Combiner::Sum: return acc + v;
    case Combiner::Max: return (std::isnan(acc) || std::isnan(v)) ? NAN : std::max(acc, v);
    case Combiner::Min: return (std::isnan(acc) || std::isnan(v)) ? NAN : std::min(acc, v);
  }
  return acc;
}

int64_t offset(const IndexMap& m, const std::vector<int64_t>& index) {
  int64_t off = m.base;
  for (size_t d = 0; d < index.size(); ++d) off += m.strides[d] * index[d];
  return off;
}

// Calls fn(index) for every point of `shape` in row-major order, writing the
// point into index[first, first + shape.size()).
template <typename Fn>
void forEachPoint(const Shape& shape, std::vector<int64_t>& index, size_t first, Fn fn) {
  int64_t n = numElements(shape);
  for (size_t d = 0; d < shape.size(); ++d) index[first + d] = 0;
  for (int64_t p = 0; p < n; ++p) {
    fn();
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      size_t at = first + static_cast<size_t>(d);
      if (++index[at] < shape[static_cast<size_t>(d)]) break;
      index[at] = 0;
    }
  }
}

class Evaluator {
 public:
  Evaluator(const Kernel& k, std::span<Tensor* const> buffers)
      : k_(k), buffers_(buffers), leaves_(k.firstGlobal() + k.prologue.size() + k.globals.size(), 0.0),
        index_(k.numDims(), 0), rowDependent_(k.loads.size(), false) {
    for (size_t i = 0; i < k.loads.size(); ++i) rowDependent_[i] = loadReadsRow(k, i);
  }

  void run() {
    for (size_t g = 0; g < k_.prologue.size(); ++g) leaves_[k_.firstGlobal() + g] = combinerInit(k_.prologue[g].combiner);
    for (size_t g = 0; g < k_.globals.size(); ++g) leaves_[globalSlot(g)] = combinerInit(k_.globals[g].combiner);
    forEachPoint(k_.outer, index_, 0, [&] {
      loadAll(true);
      for (size_t g = 0; g < k_.prologue.size(); ++g) {
        double& slot = leaves_[k_.firstGlobal() + g];
        slot = combine(k_.prologue[g].combiner, slot, eval(k_.prologue[g].value));
      }
    });
    forEachPoint(k_.outer, index_, 0, [&] { outerPoint(); });
    for (const Store& s : k_.stores)
      if (s.scope == StoreScope::Final) store(s);
  }

 private:
  size_t globalSlot(size_t g) const { return k_.firstGlobal() + k_.prologue.size() + g; }

  // Outside the row loop only row-invariant loads may be read (a row-
  // dependent one could be out of bounds when the row is empty).
  // Gathered loads last: their indices read the others.
  void loadAll(bool rowInvariantOnly = false) {
    for (bool gathered : {false, true})
      for (size_t i = 0; i < k_.loads.size(); ++i) {
        const Load& l = k_.loads[i];
        if (l.gathered.has_value() != gathered) continue;
        if (rowInvariantOnly && rowDependent_[i]) continue;
        int64_t at = offset(l.map, index_);
        if (l.gathered) at += l.gathered->stride * row(*l.gathered);
        leaves_[i] = buffers_[static_cast<size_t>(l.buffer)]->at(at);
      }
  }

  double eval(const ScalarRef& e) { return evaluateScalar(*e, leaves_, index_); }

  void store(const Store& s) {
    Tensor& b = *buffers_[static_cast<size_t>(s.buffer)];
    int64_t at = offset(s.map, index_);
    if (s.gathered) at += s.gathered->stride * row(*s.gathered);
    b.set(at, s.accumulate ? b.at(at) + eval(s.value) : eval(s.value));
  }

  // The row a gathered access picks at the current point. An i64 index is
  // exact in the double the expression yields; anything beyond the table's
  // range clamps the same either way.
  int64_t row(const Gathered& g) {
    const double v = std::clamp(eval(g.index), -0x1p62, 0x1p62);
    return gatheredRow(static_cast<int64_t>(v), g.size);
  }

  void forEachRowPoint(const std::function<void()>& fn) {
    forEachPoint(k_.reduce, index_, k_.outer.size(), [&] {
      loadAll();
      fn();
    });
  }

  void outerPoint() {
    for (size_t r = 0; r < k_.reductions.size(); ++r) {
      const Reduction& red = k_.reductions[r];
      double acc = combinerInit(red.combiner);
      forEachRowPoint([&] { acc = combine(red.combiner, acc, eval(red.value)); });
      leaves_[k_.firstAccumulator() + r] = acc;
    }
    forEachRowPoint([&] {
      for (const Store& s : k_.stores)
        if (s.scope == StoreScope::Element) store(s);
    });
    // Row stores and globals read row-invariant values: evaluate at r = 0.
    for (size_t d = k_.outer.size(); d < k_.numDims(); ++d) index_[d] = 0;
    loadAll(true);
    for (const Store& s : k_.stores)
      if (s.scope == StoreScope::Row) store(s);
    for (size_t g = 0; g < k_.globals.size(); ++g) {
      double& slot = leaves_[globalSlot(g)];
      slot = combine(k_.globals[g].combiner, slot, eval(k_.globals[g].value));
    }
  }

  const Kernel& k_;
  std::span<Tensor* const> buffers_;
  std::vector<double> leaves_;
  std::vector<int64_t> index_;
  std::vector<bool> rowDependent_;  // per load
};

}  // namespace

Status evaluateKernel(const Kernel& k, std::span<Tensor* const> buffers) {
  if (buffers.size() != k.buffers.size())
    return Error(str("kernel @", k.name, " takes ", k.buffers.size(), " buffers, got ", buffers.size()));
  for (size_t i = 0; i < buffers.size(); ++i)
    if (!(buffers[i]->type() == k.buffers[i].type))
      return Error(str("kernel @", k.name, ": buffer ", k.buffers[i].name, " must be ", formatType(k.buffers[i].type),
                       ", got ", formatType(buffers[i]->type())));
  // An empty reduce space leaves Row loads at index 0 of a reduce dim, which
  // is still in bounds only if no load depends on it; Element stores never run.
  Evaluator(k, buffers).run();
  return Status::ok();
}

}  // namespace kfuse::kernel
