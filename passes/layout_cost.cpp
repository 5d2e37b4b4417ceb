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

// The cpu target: runtime/cpu_conv (im2col + OpenBLAS sgemm), measured with
// `conv_layout_bench --fit` over ResNet-18's and the test CNN's convolutions
// (docs/layout.md has the table and the machine). Only the ratios between
// the entries and against the transpose matter to the decisions.
constexpr LayoutCostModel kCpu{"cpu", {{4.232e-11, 4.34e-11}, {4.997e-11, 4.209e-11}}, 1.61e-10};

}  // namespace

const LayoutCostModel* layoutCostModelFor(std::string_view target) {
  if (target == "cpu") return &kCpu;
  return nullptr;
}

}  // namespace kfuse
