#include "codegen/kernel/kept_sum.h"

#include <cmath>

#include "exec/index_space.h"

namespace kfuse::kernel {
namespace {

// The node of `root` that computes what `target` does, or null.
const ScalarNode* findSame(const ScalarNode& root, const ScalarNode& target) {
  if (sameExpr(root, target)) return &root;
  for (const ScalarRef& a : root.args)
    if (const ScalarNode* n = findSame(*a, target)) return n;
  return nullptr;
}

// Whether `root` reads a load that moves along the row anywhere but inside
// an expression equal to `kept`. Row-invariant loads (a sample's label, a
// scalar) are read once per row, and a buffer read so cannot be in place
// under the row's elements (codegen/plan/inplace.h: in place needs equal
// sizes and one map for the load and the store).
bool readsRowLoads(const Kernel& k, const ScalarNode& root, const ScalarNode& kept) {
  if (sameExpr(root, kept)) return false;
  if (root.op == ScalarOp::Input && static_cast<size_t>(root.input) < k.firstAccumulator())
    return loadReadsRow(k, static_cast<size_t>(root.input));
  for (const ScalarRef& a : root.args)
    if (readsRowLoads(k, *a, kept)) return true;
  return false;
}

}  // namespace

bool sameExpr(const ScalarNode& a, const ScalarNode& b) {
  if (&a == &b) return true;
  if (a.op != b.op || a.type != b.type || a.input != b.input || a.args.size() != b.args.size()) return false;
  if (a.op == ScalarOp::Const && a.constant != b.constant && !(std::isnan(a.constant) && std::isnan(b.constant)))
    return false;
  for (size_t i = 0; i < a.args.size(); ++i)
    if (!sameExpr(*a.args[i], *b.args[i])) return false;
  return true;
}

std::optional<KeptSum> findKeptSum(const Kernel& k) {
  if (k.reduce.empty() || k.reductions.empty() || !k.globals.empty()) return std::nullopt;
  std::optional<size_t> element;
  for (size_t s = 0; s < k.stores.size(); ++s) {
    if (k.stores[s].scope == StoreScope::Row) continue;
    if (element || k.stores[s].scope != StoreScope::Element) return std::nullopt;
    element = s;
  }
  if (!element) return std::nullopt;
  const Store& store = k.stores[*element];
  const DType storage = k.buffers[static_cast<size_t>(store.buffer)].type.dtype;
  if (storage != DType::F32 && storage != DType::F64) return std::nullopt;
  for (size_t d = k.outer.size(); d < k.numDims(); ++d)
    if (!store.map.dependsOn(d) && k.reduce[d - k.outer.size()] > 1) return std::nullopt;
  const auto [first, last] = reductionGroups(k).back();
  for (size_t r = first; r < last; ++r) {
    const Reduction& red = k.reductions[r];
    if (red.combiner != Combiner::Sum || red.value->type != storage) continue;
    const ScalarNode* inStore = findSame(*store.value, *red.value);
    // A bare load is read again as cheaply as it would be kept.
    if (!inStore || inStore->op == ScalarOp::Input || readsRowLoads(k, *store.value, *red.value))
      continue;
    return KeptSum{r, *element, inStore, inStore == store.value.get()};
  }
  return std::nullopt;
}

}  // namespace kfuse::kernel
