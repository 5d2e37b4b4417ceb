#include "exec/parallel.h"

#include <algorithm>

#include "exec/index_space.h"
#include "exec/packed_filter.h"
#include "exec/packed_gemm.h"

namespace kfuse {

Work kernelWork(const kernel::Kernel& k) {
  Work w;
  w.cost = static_cast<double>(k.outerPoints()) * static_cast<double>(std::max<int64_t>(k.reducePoints(), 1)) *
           static_cast<double>(std::max<size_t>(k.loads.size() + k.stores.size(), 1));
  bool finalStores = false;
  for (const auto& s : k.stores) finalStores |= s.scope == kernel::StoreScope::Final;
  // A prologue does not stop a split: every range folds it over all outer
  // points, in the same order (so every range gets the same bits), before
  // its own points. It reads only row-invariant loads, so folding it once
  // per thread costs little beside the rows.
  if (!k.globals.empty() || finalStores) return w;
  kernel::KernelSpaces spaces = kernel::buildSpaces(k);
  if (spaces.outer.dims.empty() || spaces.outer.empty()) return w;
  w.units = spaces.outer.dims[0].extent;
  if (spaces.outer.dims.size() == 1) w.alignment = kUnitAlignment;
  return w;
}

Work packedGemmWork(const GemmSpec& g) {
  Work w;
  w.units = packedColumnsOuter(g) ? (g.n + kPackedPanel - 1) / kPackedPanel : g.m;
  w.cost = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
  return w;
}

namespace {
double convFlops(const ConvSpec& c) {
  return 2.0 * static_cast<double>(c.n) * static_cast<double>(c.o) * static_cast<double>(c.oh * c.ow) *
         static_cast<double>(c.c / std::max<int64_t>(c.groups, 1) * c.kh * c.kw);
}
}  // namespace

Work directConvWork(const ConvSpec& c, bool packedFilter) {
  if (packedFilter)
    return Work{(packedFilterRowUnits(c) ? c.n * c.oh : c.n) * packedFilterOutputs(c.o), kPackedFilterChannels,
                convFlops(c)};
  if (c.pointwisePanels())
    return Work{c.n * ops::pointwisePanelUnits(c.oh * c.ow), 1, convFlops(c)};
  if (c.wholePlanes()) return Work{c.n * c.o, 1, convFlops(c)};
  return Work{c.n * c.groups * c.oh, 1, convFlops(c)};
}

Work im2colConvWork(const ConvSpec& c) {
  const Im2colSplit s = im2colSplit(c);
  switch (c.direction) {
    case ConvDirection::Forward: return Work{c.n * s.tiles * s.blocks, im2colImagesPerGemm(c), convFlops(c)};
    case ConvDirection::GradInput: return Work{c.n * s.blocks, im2colImagesPerGemm(c), convFlops(c)};
    case ConvDirection::GradWeight: break;
  }
  return Work{c.groups * s.blocks, 1, convFlops(c)};
}

namespace {
// `count` channels in as many blocks as `want` asks, none under `least`
// channels (fewer blocks where that leaves them too small).
void blockChannels(Im2colSplit& s, int64_t count, int64_t want, int64_t least) {
  if (count <= 0) return;
  const int64_t blocks = std::clamp<int64_t>(want, 1, std::max<int64_t>(count / least, 1));
  s.blockChannels = (count + blocks - 1) / blocks;
  s.blocks = (count + s.blockChannels - 1) / s.blockChannels;
}
}  // namespace

Im2colSplit im2colSplit(const ConvSpec& c) {
  // A tile of ~512 pixels keeps BLAS near its speed (and its patch matrix
  // in L2); a block of 16 output or 8 input channels at least keeps a GEMM
  // from being all packing.
  constexpr int64_t kTilePixels = 512, kLeastOutputs = 16, kLeastInputs = 8;
  const int64_t groups = std::max<int64_t>(c.groups, 1), og = c.o / groups, cg = c.c / groups;
  Im2colSplit s;
  s.tileRows = c.oh;
  s.blockChannels = c.direction == ConvDirection::Forward ? og : cg;
  const auto wanted = [](int64_t units) { return (kIm2colMinUnits + units - 1) / std::max<int64_t>(units, 1); };
  switch (c.direction) {
    case ConvDirection::Forward: {
      if (c.oh <= 0 || c.ow <= 0) return s;
      const int64_t tiles = std::max<int64_t>((c.oh * c.ow + kTilePixels - 1) / kTilePixels, 1);
      s.tileRows = (c.oh + tiles - 1) / tiles;
      s.tiles = (c.oh + s.tileRows - 1) / s.tileRows;
      if (c.n * s.tiles < kIm2colMinUnits) blockChannels(s, og, wanted(c.n * s.tiles), kLeastOutputs);
      return s;
    }
    case ConvDirection::GradInput:
      if (c.n < kIm2colMinUnits) blockChannels(s, cg, wanted(c.n), kLeastInputs);
      return s;
    case ConvDirection::GradWeight:
      if (groups >= kIm2colMinUnits) return s;
      if (cg >= 2 * kLeastInputs) {
        blockChannels(s, cg, wanted(groups), kLeastInputs);
      } else {
        // Each block builds the whole patch matrix (most of a first layer's
        // time): two blocks at most.
        s.outputBlocks = true;
        s.blockChannels = og;
        blockChannels(s, og, std::min<int64_t>(wanted(groups), 2), kLeastOutputs);
      }
      return s;
  }
  return s;
}

GemmSplit blasGemmSplit(const GemmSpec& g) {
  // Blocks of at least 128 columns (a multiple of 32), or else of at least
  // 64 rows (a multiple of 16), and only for products of 8 MFLOP or more: a
  // smaller one repacks its operands more than it gains.
  constexpr int64_t kLeastColumns = 128, kColumnMultiple = 32, kLeastRows = 64, kRowMultiple = 16;
  constexpr double kLeastFlops = 8e6;
  GemmSplit s;
  s.columns = g.n;
  const int64_t matrices = numElements(g.batch);
  const double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
  if (matrices >= kIm2colMinUnits || flops < kLeastFlops) return s;
  const int64_t want = (kIm2colMinUnits + matrices - 1) / std::max<int64_t>(matrices, 1);
  auto block = [&](int64_t extent, int64_t least, int64_t multiple) {
    return std::max(least, ((extent + want - 1) / want + multiple - 1) / multiple * multiple);
  };
  if (g.n >= 2 * kLeastColumns) {
    s.columns = block(g.n, kLeastColumns, kColumnMultiple);
    s.blocks = (g.n + s.columns - 1) / s.columns;
  } else if (g.m >= 2 * kLeastRows) {
    s.rows = block(g.m, kLeastRows, kRowMultiple);
    s.blocks = (g.m + s.rows - 1) / s.rows;
  }
  return s;
}

Work blasGemmWork(const GemmSpec& g) {
  const double flops = 2.0 * static_cast<double>(numElements(g.batch)) * static_cast<double>(g.m) *
                       static_cast<double>(g.n) * static_cast<double>(g.k);
  return Work{numElements(g.batch) * blasGemmSplit(g).blocks, 1, flops};
}

int64_t im2colImagesPerGemm(const ConvSpec& c) {
  constexpr int64_t kColumns = 128;
  const int64_t pixels = std::max<int64_t>(c.oh * c.ow, 1);
  return std::clamp<int64_t>((kColumns + pixels - 1) / pixels, 1, std::max<int64_t>(c.n / 2, 1));
}

int64_t im2colWorkspaceRows(const ConvSpec& c, int64_t images) {
  const int64_t groups = std::max<int64_t>(c.groups, 1);
  const int64_t taps = c.c / groups * c.kh * c.kw;
  const bool outputBlock = images > 1 && !c.channelsLast;
  return images * taps + (outputBlock ? images * (c.o / groups) : 0);
}

std::vector<std::pair<int64_t, int64_t>> chunksOf(const Work& w, int threads) {
  if (threads <= 1 || w.units <= 1 || w.cost < kMinParallelCost) return {{0, w.units}};
  const int64_t a = std::max<int64_t>(w.alignment, 1);
  const int64_t slots = (w.units + a - 1) / a;  // aligned groups of units
  const int64_t n = std::min<int64_t>(threads, slots);
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t t = 0; t < n; ++t) {
    int64_t begin = std::min(w.units, slots * t / n * a), end = std::min(w.units, slots * (t + 1) / n * a);
    if (begin < end) out.emplace_back(begin, end);
  }
  return out;
}

}  // namespace kfuse
