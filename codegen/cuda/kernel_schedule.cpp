#include "codegen/cuda/kernel_schedule.h"

#include <algorithm>

namespace kfuse::cuda {

using kernel::Kernel;

std::string_view strategyName(Strategy s) {
  switch (s) {
    case Strategy::Elementwise: return "elementwise";
    case Strategy::RowThread: return "thread per row";
    case Strategy::RowWarp: return "warp per row";
    case Strategy::RowBlock: return "block per row";
    case Strategy::Column: return "columns across lanes";
  }
  return "?";
}

namespace {

constexpr int64_t kNarrowIndexLimit = int64_t{1} << 30;

DType accessDType(const Kernel& k, size_t access) {
  int buffer = access < k.loads.size() ? k.loads[access].buffer : k.stores[access - k.loads.size()].buffer;
  return k.buffers[static_cast<size_t>(buffer)].type.dtype;
}

int64_t accessBase(const Kernel& k, size_t access) {
  return access < k.loads.size() ? k.loads[access].map.base : k.stores[access - k.loads.size()].map.base;
}

// The widest vector every unit-stride access can use on the innermost dim;
// 1 when some access walks it with another stride or offsets misalign.
int vectorWidth(const Kernel& k, const Space& space, bool& tail) {
  tail = false;
  if (space.dims.empty()) return 1;
  const SpaceDim& inner = space.dims.back();
  size_t minSize = 16;
  bool any = false;
  for (size_t a = 0; a < numAccesses(k); ++a) {
    int64_t s = inner.strides[a];
    if (s != 0 && s != 1) return 1;
    if (s == 1) {
      any = true;
      minSize = std::min(minSize, dtypeSize(accessDType(k, a)));
    }
  }
  if (!any) return 1;
  int vec = static_cast<int>(std::min<size_t>(8, 16 / minSize));
  bool oneDim = space.dims.size() == 1;
  auto fits = [&](int v) {
    if (v > inner.extent) return false;
    if (!oneDim && inner.extent % v != 0) return false;
    for (size_t a = 0; a < numAccesses(k); ++a) {
      if (inner.strides[a] != 1) continue;
      if (accessBase(k, a) % v != 0) return false;
      for (size_t d = 0; d + 1 < space.dims.size(); ++d)
        if (space.dims[d].strides[a] % v != 0) return false;
    }
    return true;
  };
  while (vec > 1 && !fits(vec)) vec /= 2;
  if (vec < 2) return 1;
  tail = oneDim && inner.extent % vec != 0;
  return vec;
}

}  // namespace

KernelSchedule scheduleKernel(const Kernel& k, const kernel::EmissionSchedule& emission, const EmitOptions& opts) {
  const KernelSpaces& spaces = emission.spaces;
  KernelSchedule s;
  const int64_t n = spaces.outer.points, r = spaces.reduce.points;
  const int threads = opts.threads;
  int64_t largest = std::max(n, r);
  for (const auto& b : k.buffers) largest = std::max(largest, b.type.numElements());
  s.wideIndex = largest >= kNarrowIndexLimit;

  int64_t work = n;  // threads' work items: points, vectors or rows
  // A reduction over no dims (a rank-0 tensor) still folds one point: it is
  // a row kernel with rows of length 1, not an elementwise one.
  const bool rows = !k.reduce.empty() || !k.reductions.empty();
  if (!rows) {
    s.strategy = Strategy::Elementwise;
    s.vec = vectorWidth(k, spaces.outer, s.vecTail);
    work = (n + s.vec - 1) / s.vec;
    s.teamX = threads;
  } else if (kernel::scatters(k)) {  // a scatter's rows in order, by one thread
    s.strategy = Strategy::RowThread;
    s.teamX = threads;
  } else if (emission.rowsAcross) {
    s.strategy = Strategy::Column;
    s.teamX = 32;
    s.teamY = threads / 32;
  } else if (r <= 16) {
    s.strategy = Strategy::RowThread;
    s.teamX = threads;
  } else if (r < 4096) {
    s.strategy = Strategy::RowWarp;
    s.teamX = threads / 32;
    s.teamY = 32;
  } else {
    s.strategy = Strategy::RowBlock;
    s.teamY = threads;
  }
  if (rows) work = (n + s.teamX - 1) / s.teamX * threads;
  int64_t cap = k.prologue.empty() ? opts.maxBlocks : opts.maxBlocksWithPrologue;
  s.blocks = std::clamp<int64_t>((work + threads - 1) / threads, 1, cap);
  if (opts.fixedBlocks > 0) s.blocks = opts.fixedBlocks;

  // Shared memory: team reductions of Column (a value per thread) and
  // RowBlock, block reductions of globals and prologues (a value per warp).
  size_t perWarp = static_cast<size_t>(threads / 32) * 8;
  s.smemBytes = 0;
  if (s.strategy == Strategy::Column) s.smemBytes = static_cast<size_t>(threads) * 8;
  if (s.strategy == Strategy::RowBlock || !k.globals.empty() || !k.prologue.empty())
    s.smemBytes = std::max(s.smemBytes, perWarp);

  if (!k.globals.empty()) {
    size_t offset = 8;  // the last-block counter, padded
    for (size_t g = 0; g < k.globals.size(); ++g) {
      s.globalOffsets.push_back(offset);
      offset += static_cast<size_t>(s.blocks) * 8;
    }
    s.scratchBytes = offset;
  }
  return s;
}

}  // namespace kfuse::cuda
