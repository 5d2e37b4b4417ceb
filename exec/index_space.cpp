#include "exec/index_space.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

namespace kfuse::kernel {
namespace {

// A dim of extent > 1 as the range [lo, hi) of place values it takes in
// the row-major index, and an access's stride per unit of it.
struct PlacePiece {
  int64_t lo = 1, hi = 1, stride = 0;
};

std::vector<PlacePiece> piecesOf(const Shape& shape, const std::vector<int64_t>& strides) {
  std::vector<PlacePiece> out;
  int64_t place = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] > 1) out.push_back({place, place * shape[d], strides.empty() ? 0 : strides[d]});
    place *= shape[d];
  }
  return out;
}


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

// Through the common refinement of both shapes' place values (their
// pieces), each inside one dim of `from`.
std::optional<std::vector<int64_t>> restride(const Shape& from, const std::vector<int64_t>& strides, const Shape& to) {
  if (numElements(from) != numElements(to)) return std::nullopt;
  const std::vector<PlacePiece> fromPieces = piecesOf(from, strides);
  const std::vector<PlacePiece> toPieces = piecesOf(to, {});
  std::vector<int64_t> bounds = {1};
  for (const std::vector<PlacePiece>* ps : {&fromPieces, &toPieces})
    for (const PlacePiece& p : *ps) bounds.insert(bounds.end(), {p.lo, p.hi});
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  // The common refinement: pieces between consecutive bounds, each inside
  // one dim of `from` (bounds must divide each other).
  std::vector<PlacePiece> fine;
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    if (bounds[i + 1] % bounds[i] != 0) return std::nullopt;
    auto in = std::find_if(fromPieces.begin(), fromPieces.end(),
                           [&](const PlacePiece& p) { return p.lo <= bounds[i] && bounds[i + 1] <= p.hi; });
    if (in == fromPieces.end()) return std::nullopt;
    fine.push_back({bounds[i], bounds[i + 1], in->stride * (bounds[i] / in->lo)});
  }
  std::vector<int64_t> out(to.size(), 0);
  int64_t place = 1;
  for (size_t d = to.size(); d-- > 0;) {
    const int64_t lo = place, hi = place * to[d];
    place = hi;
    if (to[d] <= 1) continue;
    auto first = std::find_if(fine.begin(), fine.end(), [&](const PlacePiece& p) { return p.lo == lo; });
    if (first == fine.end()) return std::nullopt;
    out[d] = first->stride;
    int64_t expected = first->stride * (first->hi / first->lo);
    for (auto p = first + 1; p != fine.end() && p->hi <= hi; ++p) {
      if (p->stride != expected) return std::nullopt;
      expected = p->stride * (p->hi / p->lo);
    }
  }
  return out;
}


}  // namespace kfuse::kernel
