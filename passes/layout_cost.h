// The cost model layout selection (passes/layout.cpp) decides with: how long
// a convolution takes in each activation / filter layout on a target, and
// what a transpose costs per byte. Numbers are measured, per target
// (bench/conv_layout_bench, docs/layout.md), never guessed: a target without
// measurements has no model, and `auto` then keeps every layout as it is.
#pragma once

#include <cstdint>
#include <string_view>

#include "ir/ops/window.h"
#include "ir/support/expected.h"
#include "passes/direct_conv.h"

namespace kfuse {

enum class LayoutMode : uint8_t { Auto, NCHW, NHWC };
// "auto", "nchw" or "nhwc"; an Error names the three.
Expected<LayoutMode> parseLayoutMode(std::string_view s);
std::string_view layoutModeName(LayoutMode m);

// One convolution's work in logical (NCHW / OIHW) terms.
struct ConvWork {
  int64_t n = 0, c = 0, o = 0, kh = 0, kw = 0, oh = 0, ow = 0, groups = 1, strideW = 1;
  // 1x1 at stride 1 without padding: NCHW plans join its rows
  // (ops::pointwiseRowsJoined).
  bool pointwise = false;
  // A small "same" convolution at stride 1 that NCHW plans run as whole
  // planes (ops::convWholePlanes).
  bool wholePlanes = false;
  double macs() const {
    return static_cast<double>(n) * static_cast<double>(o) * static_cast<double>(oh * ow) *
           static_cast<double>(c / groups) * static_cast<double>(kh * kw);
  }
};

struct LayoutCostModel {
  std::string_view target;
  // Seconds per multiply-add, [activation NHWC][filter OHWI].
  double macSeconds[2][2] = {{0, 0}, {0, 0}};
  // Seconds per byte a transpose moves (each element read once and written once).
  double transposeByteSeconds = 0;
  // Seconds per multiply-add of the target's generated direct convolution,
  // for the NCHW convolutions passes/direct_conv.h gives one with vectors
  // of `directLanes` floats (either filter layout); 0: the target has none.
  double directMacSeconds = 0;
  int64_t directLanes = 0;

  bool direct(const ConvWork& w, bool nhwc) const {
    if (directMacSeconds <= 0 || nhwc) return false;
    if (w.wholePlanes) return directConvPlaneFills(w.oh * w.ow, directLanes);
    const int64_t row = w.pointwise ? w.ow * ops::pointwiseRowsJoined(w.oh, w.ow) : w.ow;
    return directConvComputes(nhwc, w.strideW) && directConvRowsFill(row, directLanes, /*partialVectors=*/true);
  }
  double convSeconds(const ConvWork& w, bool nhwc, bool ohwi) const {
    return w.macs() * (direct(w, nhwc) ? directMacSeconds : macSeconds[nhwc][ohwi]);
  }
  double transposeSeconds(double bytes) const { return 2 * bytes * transposeByteSeconds; }
};

// The measured model of `target`, or null when none was measured.
const LayoutCostModel* layoutCostModelFor(std::string_view target);

}  // namespace kfuse
