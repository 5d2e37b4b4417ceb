// Helpers shared by the unit tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

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

// The op reference cases (tests/ops/cases): paths relative to that folder,
// without extension ("elementwise/add_broadcast"), sorted.
inline std::filesystem::path opCasesDir() { return std::filesystem::path(sourceDir()) / "tests/ops/cases"; }
inline std::vector<std::string> opCaseNames() {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(opCasesDir()))
    if (e.path().extension() == ".kir") out.push_back(fs::relative(e.path(), opCasesDir()).replace_extension().string());
  std::sort(out.begin(), out.end());
  return out;
}

// A case's tolerance, from its first line: `// tolerance atol=A rtol=R`.
struct Tolerance {
  double atol = 1e-6, rtol = 1e-6;
};
inline Tolerance readTolerance(const std::string& kirPath) {
  std::ifstream in(kirPath);
  std::string first;
  std::getline(in, first);
  Tolerance t;
  std::sscanf(first.c_str(), "// tolerance atol=%lf rtol=%lf", &t.atol, &t.rtol);
  return t;
}

// A GoogleTest parameter name from a path: every non-alphanumeric is '_'.
struct PathParamName {
  template <class Info>
  std::string operator()(const Info& info) const {
    std::string n = info.param;
    for (char& c : n)
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return n;
  }
};

}  // namespace kfuse::test
