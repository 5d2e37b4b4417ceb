#include "exec/row_blocks.h"

#include <algorithm>

#include "exec/index_space.h"
#include "ir/support/strings.h"

namespace kfuse::kernel {
namespace {

// Row-major strides of `extents`.
std::vector<int64_t> rowMajor(const std::vector<int64_t>& extents) {
  std::vector<int64_t> s(extents.size(), 1);
  for (size_t d = extents.size(); d-- > 1;) s[d - 1] = s[d] * extents[d];
  return s;
}

std::vector<int64_t> extentsOf(const Space& s) {
  std::vector<int64_t> e;
  for (const SpaceDim& d : s.dims) e.push_back(d.extent);
  return e;
}

// Access a's strides over the merged dims of `spaces` (outer, then reduce).
std::vector<int64_t> accessStrides(const KernelSpaces& spaces, size_t a) {
  std::vector<int64_t> s;
  for (const SpaceDim& d : spaces.outer.dims) s.push_back(d.strides[a]);
  for (const SpaceDim& d : spaces.reduce.dims) s.push_back(d.strides[a]);
  return s;
}

}  // namespace

Expected<RowBlocks> rowBlocksOf(const Kernel& k, int64_t rows, const std::vector<bool>& confined) {
  if (!k.prologue.empty() || !k.globals.empty()) return Error("it folds globals over the whole space");
  for (const Store& s : k.stores) {
    if (s.scope == StoreScope::Final) return Error("it has a final store");
    if (s.gathered) return Error("it scatters");
  }
  const std::vector<bool> indexed = dimsReadByIndexLeaves(k);
  if (std::find(indexed.begin(), indexed.end(), true) != indexed.end()) return Error("it reads an index");
  const KernelSpaces spaces = buildSpaces(k);
  if (rows < 1 || spaces.outer.empty() || spaces.outer.dims.empty() || spaces.outer.dims[0].extent % rows != 0)
    return Error(str("its outer space does not start with a multiple of the ", rows, " rows"));
  RowBlocks rb;
  rb.pointsPerRow = spaces.outer.dims[0].extent / rows;
  rb.rowStrides.assign(k.buffers.size(), 0);
  std::vector<bool> seen(k.buffers.size(), false);
  std::vector<int64_t> extents = extentsOf(spaces.outer);
  const std::vector<int64_t> outerOnly = rowMajor(extents);
  for (int64_t e : extentsOf(spaces.reduce)) extents.push_back(e);
  std::vector<int64_t> whole = rowMajor(extents), rowScope = outerOnly;
  rowScope.resize(extents.size(), 0);
  for (size_t a = 0; a < numAccesses(k); ++a) {
    const bool isLoad = a < k.loads.size();
    const size_t buffer = static_cast<size_t>(isLoad ? k.loads[a].buffer : k.stores[a - k.loads.size()].buffer);
    const IndexMap& map = isLoad ? k.loads[a].map : k.stores[a - k.loads.size()].map;
    const int64_t rowStride = spaces.outer.dims[0].strides[a] * rb.pointsPerRow;
    if (seen[buffer] && rb.rowStrides[buffer] != rowStride)
      return Error(str(k.buffers[buffer].name, " is accessed with two row strides"));
    seen[buffer] = true;
    rb.rowStrides[buffer] = rowStride;
    if (!confined[buffer]) continue;
    if (isLoad && k.loads[a].gathered)
      return Error(str(k.buffers[buffer].name, " is gathered from, so a block of rows could read past its own"));
    const bool row = !isLoad && k.stores[a - k.loads.size()].scope == StoreScope::Row;
    if (map.base != 0 || accessStrides(spaces, a) != (row ? rowScope : whole))
      return Error(str(k.buffers[buffer].name, " is not walked in row order, so a block of rows could reach past its own"));
  }
  return rb;
}

Kernel rowBlockKernel(const Kernel& k, const RowBlocks& blocks, int64_t count) {
  const KernelSpaces spaces = buildSpaces(k);
  Kernel r = k;
  r.name = str(k.name, "_rows", count);
  r.outer = extentsOf(spaces.outer);
  r.outer[0] = count * blocks.pointsPerRow;
  r.reduce = extentsOf(spaces.reduce);
  if (r.reduce.empty() && !k.reduce.empty()) r.reduce = {1};
  auto remap = [&](IndexMap& m, size_t a) {
    m.strides = accessStrides(spaces, a);
    if (r.reduce.size() > spaces.reduce.dims.size()) m.strides.push_back(0);
  };
  for (size_t a = 0; a < r.loads.size(); ++a) remap(r.loads[a].map, a);
  for (size_t s = 0; s < r.stores.size(); ++s) remap(r.stores[s].map, r.loads.size() + s);
  return r;
}

}  // namespace kfuse::kernel
