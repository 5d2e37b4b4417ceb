#include "codegen/cuda/index_space.h"

#include <functional>
#include <unordered_set>

namespace kfuse::cuda {
namespace {

using kernel::Kernel;

std::vector<int64_t> stridesOfDim(const Kernel& k, size_t dim) {
  std::vector<int64_t> strides;
  strides.reserve(numAccesses(k));
  for (const auto& l : k.loads) strides.push_back(l.map.strides[dim]);
  for (const auto& s : k.stores) strides.push_back(s.map.strides[dim]);
  return strides;
}

bool contiguous(const SpaceDim& outer, const SpaceDim& inner) {
  for (size_t a = 0; a < outer.strides.size(); ++a)
    if (outer.strides[a] != inner.strides[a] * inner.extent) return false;
  return true;
}

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
  if (space.points == 0) space.dims.clear();
  return space;
}

}  // namespace

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

KernelSpaces buildSpaces(const Kernel& k) {
  std::vector<bool> indexed = dimsReadByIndexLeaves(k);
  return {buildSpace(k, k.outer, 0, indexed), buildSpace(k, k.reduce, k.outer.size(), indexed)};
}

std::vector<std::string> emitDecompose(CodeWriter& w, const Space& space, const std::string& linear,
                                       const std::string& prefix, const std::string& indexType) {
  std::vector<std::string> names(space.dims.size());
  if (space.dims.size() == 1) {
    names[0] = linear;
    return names;
  }
  // Innermost first: i_last = t % e_last, t /= e_last, ...; the outermost is what is left.
  std::string rest = linear;
  for (size_t d = space.dims.size(); d-- > 0;) {
    names[d] = str(prefix, d);
    if (d == 0) {
      w.line("const ", indexType, " ", names[d], " = ", rest, ";");
      break;
    }
    int64_t e = space.dims[d].extent;
    w.line("const ", indexType, " ", names[d], " = ", rest, " % ", e, ";");
    std::string next = str(prefix, "q", d);
    w.line("const ", indexType, " ", next, " = ", rest, " / ", e, ";");
    rest = next;
  }
  return names;
}

std::string offsetTerm(const Space& space, const std::vector<std::string>& index, size_t access) {
  std::string out;
  for (size_t d = 0; d < space.dims.size(); ++d) {
    int64_t s = space.dims[d].strides[access];
    if (s == 0) continue;
    std::string term = s == 1 ? index[d] : str(index[d], " * ", s);
    out = out.empty() ? term : str(out, " + ", term);
  }
  return out;
}

}  // namespace kfuse::cuda
