// Helpers shared by the unit tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "ir/support/strings.h"
#include "ir/tensor.h"

namespace kfuse::test {

// Empty string when `got` matches `want` within |got - want| <= atol +
// rtol * |want| (NaN matches NaN, infinities match exactly, integer and bool
// tensors must be equal); otherwise a description of the worst element.
inline std::string compareTensors(const Tensor& got, const Tensor& want, double atol, double rtol) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return str("type ", formatType(got.type()), " != expected ", formatType(want.type()));
  bool exact = !isFloat(want.dtype());
  double worst = 0;
  int64_t worstAt = -1;
  for (int64_t i = 0; i < want.numElements(); ++i) {
    double g = got.at(i), w = want.at(i);
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isinf(w) || std::isinf(g) || std::isnan(w) || std::isnan(g) || exact) {
      if (g != w) return str("element ", i, ": got ", g, ", expected ", w);
      continue;
    }
    double excess = std::fabs(g - w) - (atol + rtol * std::fabs(w));
    if (excess > worst) {
      worst = excess;
      worstAt = i;
    }
  }
  if (worstAt < 0) return "";
  return str("element ", worstAt, ": got ", got.at(worstAt), ", expected ", want.at(worstAt), " (abs err ",
             std::fabs(got.at(worstAt) - want.at(worstAt)), ", atol ", atol, ", rtol ", rtol, ")");
}

// Source-tree paths, set by CMake.
inline std::string sourceDir() { return KFUSE_SOURCE_DIR; }

}  // namespace kfuse::test
