// Helpers shared by the tracing frontend's tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "frontend/trace/trace.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "ir/support/strings.h"

namespace kfuse::test {

inline TensorType f32(Shape s) { return TensorType(DType::F32, std::move(s)); }
inline TensorType i64(Shape s) { return TensorType(DType::I64, std::move(s)); }

// 0.1 * (i + 1) * (-1)^i: distinct, signed, deterministic values.
inline Tensor sample(TensorType t) {
  Tensor out(t);
  for (int64_t i = 0; i < out.numElements(); ++i) out.set(i, 0.1 * static_cast<double>(i + 1) * (i % 2 ? -1 : 1));
  return out;
}

// Largest |a - b| over all elements (infinite when types differ).
inline double maxAbsDiff(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return INFINITY;
  double worst = 0;
  for (int64_t i = 0; i < a.numElements(); ++i) {
    double d = std::fabs(a.at(i) - b.at(i));
    if (std::isnan(d)) return INFINITY;
    worst = std::max(worst, d);
  }
  return worst;
}

// Runs the module's first function on args; fails the test on an error.
inline std::vector<Tensor> run(const Module& m, const std::vector<Tensor>& args) {
  auto r = interpret(*m.functions().front(), args);
  EXPECT_TRUE(r) << r.error().message();
  return r ? r->outputs : std::vector<Tensor>{};
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// The printed IR without parameter data, for checks on its text.
inline std::string irText(const Module& m) { return printModule(m, PrintOptions{.inlineUnbackedParams = false}); }

}  // namespace kfuse::test

// Expects a traced Expected<...> to have failed with `fragment` in its message.
#define EXPECT_TRACE_ERROR(expr, fragment)                                                    \
  do {                                                                                        \
    auto r_ = (expr);                                                                         \
    ASSERT_FALSE(r_) << "expected an error containing: " << (fragment);                       \
    EXPECT_TRUE(::kfuse::test::contains(r_.error().message(), fragment)) << r_.error().message(); \
  } while (0)
