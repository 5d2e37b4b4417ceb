#include "exec/index_space.h"

#include <functional>
#include <unordered_set>

namespace kfuse::kernel {
namespace {

std::vector<int64_t> stridesOfDim(const Kernel& k, size_t dim) {
  std::vector<int64_t> strides;
  strides.reserve(numAccesses(k));
  for (const auto& l : k.loads) strides.push_back(l.map.strides[dim]);
  for (const auto& s : k.stores) strides.push_back(s.map.strides[dim]);
  return strides;
}

// `outer` then `inner` can run as one dim when every access steps over a
// whole `inner` run per step of `outer` (broadcast dims, stride 0 in both,
// qualify too).
bool contiguous(const SpaceDim& outer, const SpaceDim& inner) {
  for (size_t a = 0; a < outer.strides.size(); ++a)
    if (outer.strides[a] != inner.strides[a] * inner.extent) return false;
  return true;
}

// The space of kernel dims [first, first + shape.size()).
Space buildSpace(const Kernel& k, const Shape& shape, size_t first, const std::vector<bool>& indexed) {
  Space space;
  space.points = numElements(shape);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    size_t dim = first + i;
    SpaceDim d{shape[i], stridesOfDim(k, dim), static_cast<int>(dim)};
    if (!space.dims.empty()) {
      SpaceDim& prev = space.dims.back();
      bool mergeable = !indexed[dim] && (prev.kernelDim < 0 || !indexed[static_cast<size_t>(prev.kernelDim)]);
      if (mergeable && contiguous(prev, d)) {
        prev.extent *= d.extent;
        prev.strides = d.strides;
        prev.kernelDim = -1;
        continue;
      }
    }
    space.dims.push_back(std::move(d));
  }
  if (space.empty()) space.dims.clear();
  return space;
}

// Calls `visit` once per node of the DAG under `root`.
void visitNodes(const ScalarNode& root, std::unordered_set<const ScalarNode*>& seen,
                const std::function<void(const ScalarNode&)>& visit) {
  std::vector<const ScalarNode*> work{&root};
  while (!work.empty()) {
    const ScalarNode* n = work.back();
    work.pop_back();
    if (!seen.insert(n).second) continue;
    visit(*n);
    for (const ScalarRef& a : n->args) work.push_back(a.get());
  }
}

// The accumulators (reduction indices) an expression reads.
std::unordered_set<size_t> accumulatorsRead(const Kernel& k, const ScalarNode& root) {
  std::unordered_set<size_t> accs;
  std::unordered_set<const ScalarNode*> seen;
  visitNodes(root, seen, [&](const ScalarNode& n) {
    auto i = static_cast<size_t>(n.input);
    if (n.op == ScalarOp::Input && i >= k.firstAccumulator() && i < k.firstGlobal()) accs.insert(i - k.firstAccumulator());
  });
  return accs;
}

}  // namespace

std::vector<bool> dimsReadByIndexLeaves(const Kernel& k) {
  std::vector<bool> read(k.numDims(), false);
  std::unordered_set<const ScalarNode*> seen;
  auto visit = [&](const ScalarNode& n) {
    if (n.op == ScalarOp::Index && n.input >= 0 && static_cast<size_t>(n.input) < read.size())
      read[static_cast<size_t>(n.input)] = true;
  };
  for (const auto& r : k.reductions) visitNodes(*r.value, seen, visit);
  for (const auto& g : k.prologue) visitNodes(*g.value, seen, visit);
  for (const auto& g : k.globals) visitNodes(*g.value, seen, visit);
  for (const auto& s : k.stores) visitNodes(*s.value, seen, visit);
  for (const auto& l : k.loads)
    if (l.gathered) visitNodes(*l.gathered->index, seen, visit);
  return read;
}

KernelSpaces buildSpaces(const Kernel& k) {
  std::vector<bool> indexed = dimsReadByIndexLeaves(k);
  return {buildSpace(k, k.outer, 0, indexed), buildSpace(k, k.reduce, k.outer.size(), indexed)};
}

std::vector<std::pair<size_t, size_t>> reductionGroups(const Kernel& k) {
  std::vector<std::pair<size_t, size_t>> groups;
  for (size_t first = 0; first < k.reductions.size();) {
    size_t last = first + 1;
    while (last < k.reductions.size()) {
      std::unordered_set<size_t> reads = accumulatorsRead(k, *k.reductions[last].value);
      bool dependent = false;
      for (size_t r = first; r < last; ++r) dependent |= reads.count(r) > 0;
      if (dependent) break;
      ++last;
    }
    groups.emplace_back(first, last);
    first = last;
  }
  return groups;
}

}  // namespace kfuse::kernel
