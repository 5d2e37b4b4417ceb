#include "passes/layout_cost.h"

#include "ir/support/strings.h"

namespace kfuse {

Expected<LayoutMode> parseLayoutMode(std::string_view s) {
  if (s == "auto") return LayoutMode::Auto;
  if (s == "nchw") return LayoutMode::NCHW;
  if (s == "nhwc") return LayoutMode::NHWC;
  return Error(str("unknown layout mode '", s, "' (expected auto, nchw or nhwc)"));
}

std::string_view layoutModeName(LayoutMode m) {
  switch (m) {
    case LayoutMode::Auto: return "auto";
    case LayoutMode::NCHW: return "nchw";
    case LayoutMode::NHWC: return "nhwc";
  }
  return "?";
}

namespace {

// The cpu target: runtime/cpu_conv (im2col + OpenBLAS sgemm) and the
// generated direct convolutions (16 lanes: the AVX-512 machine measured),
// measured with `conv_layout_bench --fit` over ResNet-18's, the test CNN's
// and the benchmark CNN's convolutions (docs/layout.md has the table and the
// machine). Only the ratios between the entries and against the transpose
// matter to the decisions.
constexpr LayoutCostModel kCpu{"cpu", {{2.638e-11, 2.634e-11}, {3.528e-11, 2.965e-11}}, 1.25e-10, 1.44e-11, 16};

}  // namespace

const LayoutCostModel* layoutCostModelFor(std::string_view target) {
  if (target == "cpu") return &kCpu;
  return nullptr;
}

}  // namespace kfuse
