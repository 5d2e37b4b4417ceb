#include "exec/conv_epilogue.h"

#include <algorithm>
#include <optional>

#include "exec/index_space.h"
#include "exec/packed_filter.h"
#include "ir/support/strings.h"

namespace kfuse {

using kernel::restride;

namespace {
// Whether an access with `strides` along dims of `extents` reaches a
// different element from every point: sorted by stride, each at least the
// span of the ones below it.
bool injective(const std::array<int64_t, 4>& strides, const Shape& extents) {
  std::vector<std::pair<int64_t, int64_t>> dims;
  for (size_t d = 0; d < 4; ++d) {
    if (extents[d] <= 1) continue;
    if (strides[d] <= 0) return false;
    dims.emplace_back(strides[d], extents[d]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t span = 1;
  for (const auto& [stride, extent] : dims) {
    if (stride < span) return false;
    span = stride * extent;
  }
  return true;
}
}  // namespace

Expected<ConvBlocks> convBlocksOf(const kernel::Kernel& k, const ConvSpec& c, const std::vector<bool>& confined,
                                  const std::vector<bool>& storedOnly) {
  if (!k.prologue.empty() || !k.globals.empty()) return Error("it folds globals over the whole space");
  for (const kernel::Store& s : k.stores)
    if (s.scope == kernel::StoreScope::Final || s.gathered || s.accumulate) return Error("it scatters or folds");
  for (const kernel::Load& l : k.loads)
    if (l.gathered) return Error("it gathers");
  const std::vector<bool> indexed = kernel::dimsReadByIndexLeaves(k);
  if (std::find(indexed.begin(), indexed.end(), true) != indexed.end()) return Error("it reads an index");
  const Shape y = {c.n, c.o, c.oh, c.ow};
  if (k.outerPoints() * k.reducePoints() != numElements(y))
    return Error(str("its ", k.outerPoints() * k.reducePoints(), " points are not the convolution's ", numElements(y),
                     " outputs"));
  // Each block is one call of the cut kernel: a depthwise convolution's
  // blocks, one channel's row, were too short to pay for it.
  // A packed filter's code (codegen/cpu) completes whole planes too, unless
  // its units are rows of a plane of several (exec/packed_filter.h).
  // Over panels (ConvSpec::pointwisePanels), a unit's pixels of every
  // channel, which run across rows.
  const bool wholePlanes = c.packedFilter ? packedFilterUnitsHoldPlanes(c) : c.wholePlanes();
  const bool panels = c.pointwisePanels();
  const int64_t og = c.o / std::max<int64_t>(c.groups, 1);
  const int64_t pixels = panels        ? std::min(c.oh * c.ow, ops::kPointwisePanelPixels)
                         : wholePlanes ? c.oh * c.ow
                                       : c.ow;
  if (og * pixels < kMinConvEpilogueUnit)
    return Error(str("a unit of its work holds ", og * pixels, " outputs, fewer than ", kMinConvEpilogueUnit));
  const int64_t blockBytes = std::min(og, kConvEpilogueBlockChannels) * pixels * int64_t{sizeof(float)};
  if (blockBytes > kMaxConvEpilogueBlockBytes)
    return Error(str("a block of its outputs takes up to ", blockBytes, " bytes, more than the ",
                     kMaxConvEpilogueBlockBytes, " it may to stay in the first-level cache"));
  // A reduction must fold each output plane, which only whole-plane blocks
  // hold complete.
  if (!k.reduce.empty() && (k.reducePoints() != c.oh * c.ow || !wholePlanes))
    return Error("it reduces across blocks");
  const Shape space = k.space();
  // How a block may walk a confined buffer: as y is, or (a reduction's row
  // stores) one element per plane.
  std::array<int64_t, 4> walk = {c.o * c.oh * c.ow, c.oh * c.ow, c.ow, 1}, planes = {c.o, 1, 0, 0};
  for (size_t d = 0; d < 4; ++d)
    if (y[d] <= 1) walk[d] = planes[d] = 0;
  ConvBlocks b;
  b.strides.assign(k.buffers.size(), {0, 0, 0, 0});
  std::vector<bool> seen(k.buffers.size(), false);
  for (size_t a = 0; a < kernel::numAccesses(k); ++a) {
    const bool isLoad = a < k.loads.size();
    const size_t buffer = static_cast<size_t>(isLoad ? k.loads[a].buffer : k.stores[a - k.loads.size()].buffer);
    const kernel::IndexMap& map = isLoad ? k.loads[a].map : k.stores[a - k.loads.size()].map;
    const std::string& name = k.buffers[buffer].name;
    std::vector<int64_t> along = map.strides;
    along.resize(space.size(), 0);
    auto s = restride(space, along, y);
    if (!s) return Error(str(name, " is not affine in the convolution's image, channel, row and column"));
    const std::array<int64_t, 4> strides = {(*s)[0], (*s)[1], (*s)[2], (*s)[3]};
    if (seen[buffer] && b.strides[buffer] != strides) return Error(str(name, " is accessed with two sets of strides"));
    // A panel's block of pixels runs across rows: one stride along them.
    if (panels && c.oh > 1 && strides[2] != c.ow * strides[3])
      return Error(str(name, "'s rows do not follow one another, as the blocks of a 1x1 convolution over panels run"));
    seen[buffer] = true;
    b.strides[buffer] = strides;
    const bool walksAsY = map.base == 0 && (strides == walk || (!k.reduce.empty() && strides == planes));
    const bool free = buffer < storedOnly.size() && storedOnly[buffer] && k.reduce.empty() && injective(strides, y);
    if (confined[buffer] && !walksAsY && !free)
      return Error(str(name, " is not walked as the convolution's output is, so a block could reach past its own"));
  }
  return b;
}

kernel::Kernel convBlockKernel(const kernel::Kernel& k, const ConvBlocks& blocks, int64_t channels, int64_t rows,
                               int64_t cols) {
  kernel::Kernel r = k;
  r.name = str(k.name, "_block", channels, "x", rows, "x", cols);
  if (k.reduce.empty()) {
    r.outer = {channels, rows, cols};
  } else {  // whole planes (convBlocksOf)
    r.outer = {channels};
    r.reduce = {rows, cols};
  }
  auto remap = [&](kernel::IndexMap& m, int buffer) {
    const std::array<int64_t, 4>& s = blocks.strides[static_cast<size_t>(buffer)];
    m.strides = {s[1], s[2], s[3]};
  };
  for (kernel::Load& l : r.loads) remap(l.map, l.buffer);
  for (kernel::Store& s : r.stores) remap(s.map, s.buffer);
  return r;
}

Expected<ConvBlocks> convEpilogue(const Plan& plan, size_t step) {
  if (step >= plan.steps.size() || plan.steps[step].kind() != StepKind::Conv) return Error("not a convolution");
  const Step& s = plan.steps[step];
  const ConvSpec& c = s.conv();
  if (s.kernels.empty()) return Error("there is no epilogue");
  if (c.direction != ConvDirection::Forward) return Error("it is not a forward convolution");
  for (int b : {c.x, c.w, c.bias, c.y})
    if (b >= 0 && plan.buffers[static_cast<size_t>(b)].type.dtype != DType::F32)
      return Error("its operands are not all f32");
  const EpilogueStorage e = epilogueStorage(plan, s, c.y);
  for (int b : {c.x, c.w, c.bias})
    if (b >= 0 && std::find(e.written.begin(), e.written.end(), plan.storageOf(b)) != e.written.end())
      return Error("the epilogue writes over an operand of the convolution");
  return convBlocksOf(plan.kernels[static_cast<size_t>(s.kernels[0])], c, e.confined, e.storedOnly);
}

}  // namespace kfuse
