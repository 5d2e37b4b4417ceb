#include "exec/parallel.h"

#include <algorithm>

#include "exec/index_space.h"

namespace kfuse {

Work kernelWork(const kernel::Kernel& k) {
  Work w;
  w.cost = static_cast<double>(k.outerPoints()) * static_cast<double>(std::max<int64_t>(k.reducePoints(), 1)) *
           static_cast<double>(std::max<size_t>(k.loads.size() + k.stores.size(), 1));
  bool finalStores = false;
  for (const auto& s : k.stores) finalStores |= s.scope == kernel::StoreScope::Final;
  if (!k.globals.empty() || !k.prologue.empty() || finalStores) return w;
  kernel::KernelSpaces spaces = kernel::buildSpaces(k);
  if (spaces.outer.dims.empty() || spaces.outer.empty()) return w;
  w.units = spaces.outer.dims[0].extent;
  if (spaces.outer.dims.size() == 1) w.alignment = kUnitAlignment;
  return w;
}

Work packedGemmWork(const GemmSpec& g) {
  Work w;
  w.units = g.m;
  w.cost = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
  return w;
}

namespace {
double convFlops(const ConvSpec& c) {
  return 2.0 * static_cast<double>(c.n) * static_cast<double>(c.o) * static_cast<double>(c.oh * c.ow) *
         static_cast<double>(c.c / std::max<int64_t>(c.groups, 1) * c.kh * c.kw);
}
}  // namespace

Work directConvWork(const ConvSpec& c) { return Work{c.n * c.groups * c.oh, 1, convFlops(c)}; }

Work im2colConvWork(const ConvSpec& c) {
  if (c.direction == ConvDirection::GradWeight) return Work{c.groups, 1, convFlops(c)};
  return Work{c.n, im2colImagesPerGemm(c), convFlops(c)};
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
