// The conformance runner's comparison: per-dtype tolerances, NaN and
// infinities, exact integers, and the worst-element report.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tools/kfuse/onnx_backend_test.h"

namespace kfuse::cli {
namespace {

Tensor f32(std::vector<double> v) {
  return Tensor::fromDoubles(TensorType(DType::F32, {static_cast<int64_t>(v.size())}), v);
}

TEST(CompareTensors, AllowsThePerDTypeTolerance) {
  EXPECT_EQ(compareTensors(f32({1.0, 100.0}), f32({1.0 + 5e-5, 100.0 + 5e-3})), "");
  EXPECT_EQ(compareTensors(f32({0.0, 100.0}), f32({0.0, 100.02})),
            "1 of 2 elements differ; worst at [1]: got 100, want 100.019997 (|error| 0.02 > 0.01)");
}

TEST(CompareTensors, MatchesNaNAndExactInfinities) {
  double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(compareTensors(f32({nan, inf, -inf}), f32({nan, inf, -inf})), "");
  EXPECT_NE(compareTensors(f32({nan}), f32({1.0})), "");
  EXPECT_NE(compareTensors(f32({inf}), f32({-inf})), "");
  EXPECT_NE(compareTensors(f32({1e30}), f32({inf})), "");
}

TEST(CompareTensors, ComparesIntegersExactly) {
  Tensor a(TensorType(DType::I64, {1})), b(TensorType(DType::I64, {1}));
  a.as<int64_t>()[0] = (int64_t{1} << 60) + 1;  // differs from b beyond double's precision
  b.as<int64_t>()[0] = int64_t{1} << 60;
  EXPECT_NE(compareTensors(a, b), "");
  EXPECT_EQ(toleranceFor(DType::I32).atol, 0);
}

TEST(CompareTensors, ReportsTypeMismatches) {
  EXPECT_EQ(compareTensors(f32({1, 2}), Tensor(TensorType(DType::F32, {1, 2}))), "is f32[2], expected f32[1,2]");
  EXPECT_EQ(compareTensors(f32({1}), Tensor(TensorType(DType::F64, {1}))), "is f32[1], expected f64[1]");
}

}  // namespace
}  // namespace kfuse::cli
