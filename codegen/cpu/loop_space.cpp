#include "codegen/cpu/loop_space.h"

#include <functional>
#include <unordered_set>

namespace kfuse::cpu {
namespace {

using kernel::Kernel;

// Kernel dims some Index leaf reads, anywhere in the kernel.
std::vector<bool> dimsReadByIndexLeaves(const Kernel& k) {
  std::vector<bool> read(k.numDims(), false);
  std::unordered_set<const ScalarNode*> seen;
  std::function<void(const ScalarNode&)> walk = [&](const ScalarNode& n) {
    if (!seen.insert(&n).second) return;
    if (n.op == ScalarOp::Index && n.input >= 0 && static_cast<size_t>(n.input) < read.size())
      read[static_cast<size_t>(n.input)] = true;
    for (const ScalarRef& a : n.args) walk(*a);
  };
  for (const auto& r : k.reductions) walk(*r.value);
  for (const auto& g : k.prologue) walk(*g.value);
  for (const auto& g : k.globals) walk(*g.value);
  for (const auto& s : k.stores) walk(*s.value);
  return read;
}

std::vector<int64_t> stridesOfDim(const Kernel& k, size_t dim) {
  std::vector<int64_t> strides;
  strides.reserve(numAccesses(k));
  for (const auto& l : k.loads) strides.push_back(l.map.strides[dim]);
  for (const auto& s : k.stores) strides.push_back(s.map.strides[dim]);
  return strides;
}

// `outer` then `inner` can run as one loop when every access steps over a
// whole `inner` run per step of `outer` (broadcast dims, stride 0 in both,
// qualify too).
bool contiguous(const LoopDim& outer, const LoopDim& inner) {
  for (size_t a = 0; a < outer.strides.size(); ++a)
    if (outer.strides[a] != inner.strides[a] * inner.extent) return false;
  return true;
}

// The loops of kernel dims [first, first + shape.size()).
LoopSpace buildSpace(const Kernel& k, const Shape& shape, size_t first, const std::vector<bool>& indexed) {
  LoopSpace space;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) space.empty = true;
    if (shape[i] == 1) continue;
    size_t dim = first + i;
    LoopDim d{shape[i], stridesOfDim(k, dim), static_cast<int>(dim)};
    if (!space.dims.empty()) {
      LoopDim& prev = space.dims.back();
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
  if (space.empty) space.dims.clear();
  return space;
}

}  // namespace

KernelLoops buildLoops(const Kernel& k) {
  std::vector<bool> indexed = dimsReadByIndexLeaves(k);
  return {buildSpace(k, k.outer, 0, indexed), buildSpace(k, k.reduce, k.outer.size(), indexed)};
}

}  // namespace kfuse::cpu
