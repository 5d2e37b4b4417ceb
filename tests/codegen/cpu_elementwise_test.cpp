// Elementwise kernels on the CPU JIT against the kernel interpreter: every
// scalar op on every compute type, broadcasts, transposes, Index leaves.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <span>

#include "codegen/cpu/compile.h"
#include "ir/philox.h"
#include "ir/support/strings.h"
#include "tests/codegen/jit_harness.h"
#include "tests/codegen/kernel_builder.h"

namespace kfuse::testing {
namespace {

Scalar c(double v, DType t) { return Scalar::constant(v, t); }

TEST(CpuElementwise, AddIsBitExact) {
  // f32 + f32 computed in f32 equals the double sum rounded to f32.
  Kernel k = elementwiseKernel("add", {37, 129}, {DType::F32, DType::F32}, DType::F32,
                               [](const std::vector<Scalar>& x) { return x[0] + x[1]; });
  EXPECT_TRUE(matchesInterpreter(k, Tolerance::exact(), 1, {-1e3, 1e3}));
}

TEST(CpuElementwise, BasicArithmeticIsBitExact) {
  for (ScalarOp op : {ScalarOp::Sub, ScalarOp::Mul, ScalarOp::Div}) {
    Kernel k = elementwiseKernel("arith", {1000}, {DType::F32, DType::F32}, DType::F32,
                                 [&](const std::vector<Scalar>& x) { return binary(op, x[0], x[1]); });
    EXPECT_TRUE(matchesInterpreter(k, Tolerance::exact(), 2, {-10, 10, 0.05})) << scalarOpName(op);
  }
  Kernel k = elementwiseKernel("square_root", {1000}, {DType::F32}, DType::F32,
                               [&](const std::vector<Scalar>& x) { return sqrt(x[0]); });
  EXPECT_TRUE(matchesInterpreter(k, Tolerance::exact(), 3, {0, 100, 0.05}));
}

TEST(CpuElementwise, BroadcastAndTransposedLoads) {
  // out[i,j,k] = a[i,j,k] * b[k] + t[k,j,i] + s[] (scalar), a strided slice too.
  KernelBuilder b("broadcast", {5, 6, 67});
  Scalar a = b.loadAxes(b.input(DType::F32, {5, 6, 67}), {0, 1, 2});
  Scalar row = b.loadAxes(b.input(DType::F32, {67}), {2});
  Scalar t = b.loadAxes(b.input(DType::F32, {67, 6, 5}), {2, 1, 0});
  Scalar s = b.loadAxes(b.input(DType::F32, {}), {});
  // Every other column of a [5, 6, 134] tensor, starting at column 1.
  Scalar slice = b.load(b.input(DType::F32, {5, 6, 134}), {6 * 134, 134, 2}, 1);
  b.storeOuter(b.output(DType::F32, {5, 6, 67}), a * row + t + s - slice);
  EXPECT_TRUE(matchesInterpreter(b.build(), Tolerance::f32()));
}

TEST(CpuElementwise, StoreThroughTransposedMap) {
  KernelBuilder b("transpose_store", {33, 17});
  Scalar x = b.loadOuter(b.input(DType::F64, {33, 17}));
  b.storeAxes(b.output(DType::F64, {17, 33}), {1, 0}, x * 2.0);
  EXPECT_TRUE(matchesInterpreter(b.build(), Tolerance::exact()));
}

struct UnaryCase {
  ScalarOp op;
  double lo, hi;
};

TEST(CpuElementwise, EveryUnaryFloatOp) {
  const UnaryCase cases[] = {
      {ScalarOp::Neg, -5, 5},    {ScalarOp::Abs, -5, 5},    {ScalarOp::Exp, -20, 20},  {ScalarOp::Expm1, -3, 3},
      {ScalarOp::Log, 1e-3, 50}, {ScalarOp::Log1p, -0.9, 5}, {ScalarOp::Sqrt, 0, 50},   {ScalarOp::Rsqrt, 1e-3, 50},
      {ScalarOp::Tanh, -6, 6},   {ScalarOp::Erf, -4, 4},    {ScalarOp::Sin, -10, 10},  {ScalarOp::Cos, -10, 10},
      {ScalarOp::Floor, -9, 9},  {ScalarOp::Ceil, -9, 9},
  };
  for (const UnaryCase& uc : cases) {
    for (DType t : {DType::F32, DType::F64}) {
      Kernel k = elementwiseKernel(str("unary_", scalarOpName(uc.op)), {257}, {t}, t,
                                   [&](const std::vector<Scalar>& x) { return unary(uc.op, x[0]); });
      Tolerance tol = t == DType::F32 ? Tolerance{1e-6, 1e-6} : Tolerance{1e-14, 1e-14};
      EXPECT_TRUE(matchesInterpreter(k, tol, 7, {uc.lo, uc.hi})) << scalarOpName(uc.op) << " " << dtypeName(t);
      // NaN, infinities and signed zeros behave as the double reference does.
      EXPECT_TRUE(matchesInterpreter(k, tol, 8, {uc.lo, uc.hi, 0.5})) << scalarOpName(uc.op) << " specials";
    }
  }
}

// Vectorised f32 math calls glibc's libmvec where the target has it
// (codegen/cpu/compile.cpp). Each function is checked over 2^20 floats spread
// over every bit pattern (NaNs, infinities, zeros, subnormals included)
// against the double function rounded to f32: within 4 ulp, specials equal.
double ulpError(float got, double exact) {
  float want = static_cast<float>(exact);
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) == std::isnan(got) ? 0 : 1e9;
  if (std::isinf(want) || std::isinf(got)) return got == want ? 0 : 1e9;
  float mag = std::max(std::fabs(want), std::numeric_limits<float>::min());
  return std::fabs(static_cast<double>(got) - exact) / (std::nextafter(mag, INFINITY) - mag);
}

// 2^20 floats of every exponent and sign with varied mantissas, then `extra`.
Tensor floatSample(std::span<const float> extra = {}) {
  const int64_t n = 1 << 20, all = n + static_cast<int64_t>(extra.size());
  Tensor in(TensorType(DType::F32, {all}));
  for (int64_t i = 0; i < n; ++i) {
    auto bits = static_cast<uint32_t>(i * 4096 + i % 4093);
    std::memcpy(in.data() + i * 4, &bits, 4);
  }
  if (!extra.empty()) std::memcpy(in.data() + n * 4, extra.data(), extra.size_bytes());
  return in;
}

// The largest ulpError of `out` against exact(x) over `in`, and its x.
std::pair<double, float> worstUlp(const Tensor& in, const Tensor& out, double (*exact)(double)) {
  std::pair<double, float> worst{0, 0};
  for (int64_t i = 0; i < in.numElements(); ++i) {
    float x, y;
    std::memcpy(&x, in.data() + i * 4, 4);
    std::memcpy(&y, out.data() + i * 4, 4);
    if (double e = ulpError(y, exact(x)); e > worst.first) worst = {e, x};
  }
  return worst;
}

TEST(CpuElementwise, VectorMathIsWithinFourUlp) {
  const std::pair<ScalarOp, double (*)(double)> functions[] = {
      {ScalarOp::Exp, [](double x) { return std::exp(x); }},     {ScalarOp::Log, [](double x) { return std::log(x); }},
      {ScalarOp::Sin, [](double x) { return std::sin(x); }},     {ScalarOp::Cos, [](double x) { return std::cos(x); }},
      {ScalarOp::Tanh, [](double x) { return std::tanh(x); }},   {ScalarOp::Erf, [](double x) { return std::erf(x); }},
      {ScalarOp::Expm1, [](double x) { return std::expm1(x); }}, {ScalarOp::Log1p, [](double x) { return std::log1p(x); }},
  };
  const Tensor in = floatSample();
  const int64_t n = in.numElements();
  for (auto [op, exact] : functions) {
    Kernel k = elementwiseKernel(str("vector_", scalarOpName(op)), {n}, {DType::F32}, DType::F32,
                                 [&](const std::vector<Scalar>& x) { return unary(op, x[0]); });
    cpu::CompileOptions options;
    options.keepOptimizedIR = true;
    auto compiled = sharedJit().compile(std::span(&k, 1), options);
    ASSERT_TRUE(compiled) << compiled.error().message();
    // Which variant each CPU calls is CpuSubtarget.VectorMathPerLevel's;
    // here, that this machine's code calls one, or computes the exponential
    // inline where its subtarget says (codegen/cpu/inline_math.h): vector
    // code without a call.
    const std::string& ir = compiled->optimizedIR;
    const bool inlined = (op == ScalarOp::Exp && sharedJit().subtarget().inlineExp) ||
                         (op == ScalarOp::Erf && sharedJit().subtarget().inlineErf);
    if (inlined) {
      for (const char* callee : {"@expf", "@erff", "@_ZGV", "@llvm.exp."})
        EXPECT_EQ(ir.find(callee), std::string::npos) << scalarOpName(op) << " calls " << callee;
      EXPECT_NE(ir.find("x float> @llvm.fmuladd"), std::string::npos) << scalarOpName(op) << " is scalar";
    } else if (!sharedJit().subtarget().vectorMath.empty()) {
      EXPECT_NE(ir.find("x float> @_ZGV"), std::string::npos) << scalarOpName(op) << " is scalar";
    }
    std::vector<Tensor> buffers = {in, Tensor(TensorType(DType::F32, {n}))};
    runCompiled(k, compiled->functions[0], buffers);
    auto [worst, worstAt] = worstUlp(in, buffers[1], exact);
    // The inline erf's bound is its own (InlineErfIsWithinSixUlp).
    const double bound = op == ScalarOp::Erf && inlined ? 6.0 : 4.0;
    EXPECT_LE(worst, bound) << scalarOpName(op) << " is " << worst << " ulp off at x = " << worstAt;
  }
}

// The inline exponential (codegen/cpu/inline_math.h), whatever this
// machine's subtarget decides: a JIT told to compute it inline, over every
// float of the sample above, within 1.5 ulp (1.17 measured over all 2^32
// without FMA, 0.91 with), overflow to +inf from 88.73, subnormal results
// rounded once, 0 below them, NaN for NaN, and no call left in the code.
TEST(CpuElementwise, InlineExponentialIsWithinOneAndAHalfUlp) {
  cpu::CpuSubtarget inlined = sharedJit().subtarget();
  inlined.inlineExp = true;
  auto jit = cpu::CpuJit::create(inlined, "");
  ASSERT_TRUE(jit) << jit.error().message();
  const float specials[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 88.72f, 88.73f, -87.5f, -100.0f, -103.9f, -104.5f};
  const Tensor in = floatSample(specials);
  const int64_t all = in.numElements();
  Kernel k = elementwiseKernel("inline_exp", {all}, {DType::F32}, DType::F32,
                               [](const std::vector<Scalar>& x) { return exp(x[0]); });
  cpu::CompileOptions options;
  options.keepOptimizedIR = true;
  auto compiled = (*jit)->compile(std::span(&k, 1), options);
  ASSERT_TRUE(compiled) << compiled.error().message();
  for (const char* callee : {"@expf", "@_ZGV", "@llvm.exp."})
    EXPECT_EQ(compiled->optimizedIR.find(callee), std::string::npos) << "exp calls " << callee;
  std::vector<Tensor> buffers = {in, Tensor(TensorType(DType::F32, {all}))};
  runCompiled(k, compiled->functions[0], buffers);
  // (ulpError counts a subnormal result's error in the smallest subnormal.)
  auto [worst, worstAt] = worstUlp(in, buffers[1], [](double x) { return std::exp(x); });
  EXPECT_LE(worst, 1.5) << "exp is " << worst << " ulp off at x = " << worstAt;
}

// The inline erf (codegen/cpu/inline_math.h), whatever this machine's
// subtarget decides: within 6 ulp over the sample and the floats about
// x = 3.749, where its error over every float is largest (5.93 ulp), +-1
// past +-4, odd, NaN for NaN, and no call left in the code.
TEST(CpuElementwise, InlineErfIsWithinSixUlp) {
  cpu::CpuSubtarget inlined = sharedJit().subtarget();
  inlined.inlineErf = true;
  auto jit = cpu::CpuJit::create(inlined, "");
  ASSERT_TRUE(jit) << jit.error().message();
  std::vector<float> extra = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 4.0f, -4.0f, 4.5f, -7.0f, 1e-30f, -1e-40f};
  for (float x = 3.7488f; x < 3.7490f; x = std::nextafter(x, 4.0f)) extra.push_back(x);
  const Tensor in = floatSample(extra);
  const int64_t all = in.numElements();
  Kernel k = elementwiseKernel("inline_erf", {all}, {DType::F32}, DType::F32,
                               [](const std::vector<Scalar>& x) { return unary(ScalarOp::Erf, x[0]); });
  cpu::CompileOptions options;
  options.keepOptimizedIR = true;
  auto compiled = (*jit)->compile(std::span(&k, 1), options);
  ASSERT_TRUE(compiled) << compiled.error().message();
  for (const char* callee : {"@erff", "@_ZGV"})
    EXPECT_EQ(compiled->optimizedIR.find(callee), std::string::npos) << "erf calls " << callee;
  std::vector<Tensor> buffers = {in, Tensor(TensorType(DType::F32, {all}))};
  runCompiled(k, compiled->functions[0], buffers);
  auto [worst, worstAt] = worstUlp(in, buffers[1], [](double x) { return std::erf(x); });
  EXPECT_LE(worst, 6.0) << "erf is " << worst << " ulp off at x = " << worstAt;
  const int64_t n = all - static_cast<int64_t>(extra.size());  // where the extra values start
  EXPECT_TRUE(std::isnan(buffers[1].at(n)));
  EXPECT_EQ(buffers[1].at(n + 1), 1.0);
  EXPECT_EQ(buffers[1].at(n + 2), -1.0);
  EXPECT_EQ(buffers[1].at(n + 5), 1.0);
  EXPECT_EQ(buffers[1].at(n + 6), -1.0);
  EXPECT_EQ(buffers[1].at(n + 7), 1.0);
  EXPECT_EQ(buffers[1].at(n + 8), -1.0);
}

TEST(CpuElementwise, EveryBinaryFloatOp) {
  for (ScalarOp op : {ScalarOp::Add, ScalarOp::Sub, ScalarOp::Mul, ScalarOp::Div, ScalarOp::Pow, ScalarOp::Max,
                      ScalarOp::Min}) {
    for (DType t : {DType::F32, DType::F64}) {
      Kernel k = elementwiseKernel(str("binary_", scalarOpName(op)), {131}, {t, t}, t,
                                   [&](const std::vector<Scalar>& x) { return binary(op, x[0], x[1]); });
      Tolerance tol = t == DType::F32 ? Tolerance{1e-6, 1e-6} : Tolerance{1e-14, 1e-14};
      double lo = op == ScalarOp::Pow ? 0.1 : -4;
      EXPECT_TRUE(matchesInterpreter(k, tol, 11, {lo, 4, 0.3})) << scalarOpName(op) << " " << dtypeName(t);
    }
  }
}

TEST(CpuElementwise, MaxMinPropagateNaNAndOrderZeros) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (ScalarOp op : {ScalarOp::Max, ScalarOp::Min}) {
    Kernel k = elementwiseKernel("maxmin", {6}, {DType::F32, DType::F32}, DType::F32,
                                 [&](const std::vector<Scalar>& x) { return binary(op, x[0], x[1]); });
    std::vector<Tensor> buffers = {
        Tensor::fromDoubles(TensorType(DType::F32, {6}), {nan, 1, 0.0, -0.0, -INFINITY, 3}),
        Tensor::fromDoubles(TensorType(DType::F32, {6}), {1, nan, -0.0, 0.0, 2, INFINITY}),
        Tensor(TensorType(DType::F32, {6}))};
    EXPECT_TRUE(matchesInterpreter(k, buffers, Tolerance::exact())) << scalarOpName(op);
  }
}

TEST(CpuElementwise, ComparisonsAndLogic) {
  for (DType t : {DType::F32, DType::F64, DType::I64, DType::Bool}) {
    for (ScalarOp op : {ScalarOp::Lt, ScalarOp::Le, ScalarOp::Gt, ScalarOp::Ge, ScalarOp::Eq, ScalarOp::Ne,
                        ScalarOp::And, ScalarOp::Or}) {
      Kernel k = elementwiseKernel("compare", {300}, {t, t}, DType::Bool,
                                   [&](const std::vector<Scalar>& x) { return binary(op, x[0], x[1]); });
      // Few distinct values, so that equal operands are common.
      EXPECT_TRUE(matchesInterpreter(k, Tolerance::exact(), 5, {-2, 2, 0.2}))
          << scalarOpName(op) << " " << dtypeName(t);
    }
    Kernel k = elementwiseKernel("not", {100}, {t}, DType::Bool,
                                 [&](const std::vector<Scalar>& x) { return !x[0]; });
    EXPECT_TRUE(matchesInterpreter(k, Tolerance::exact(), 6, {-2, 2, 0.3})) << "not " << dtypeName(t);
  }
}

TEST(CpuElementwise, SelectOnEveryType) {
  for (DType t : {DType::F32, DType::F64, DType::I64, DType::Bool}) {
    Kernel k = elementwiseKernel("select", {200}, {DType::Bool, t, t}, t,
                                 [&](const std::vector<Scalar>& x) { return select(x[0], x[1], x[2]); });
    EXPECT_TRUE(matchesInterpreter(k, Tolerance::exact(), 9, {-100, 100})) << dtypeName(t);
  }
}

TEST(CpuElementwise, IntegerArithmetic) {
  for (ScalarOp op : {ScalarOp::Add, ScalarOp::Sub, ScalarOp::Mul, ScalarOp::Div, ScalarOp::Max, ScalarOp::Min,
                      ScalarOp::Pow}) {
    for (DType t : {DType::I64, DType::I32, DType::I8}) {
      Kernel k = elementwiseKernel("int_binary", {500}, {t, t}, DType::I64,
                                   [&](const std::vector<Scalar>& x) { return binary(op, x[0], x[1]); });
      InputSpec spec = op == ScalarOp::Pow ? InputSpec{0, 9} : InputSpec{-20, 20};  // includes x / 0
      EXPECT_TRUE(matchesInterpreter(k, Tolerance::exact(), 13, spec)) << scalarOpName(op) << " " << dtypeName(t);
    }
  }
  for (ScalarOp op : {ScalarOp::Neg, ScalarOp::Abs, ScalarOp::Floor, ScalarOp::Ceil}) {
    Kernel k = elementwiseKernel("int_unary", {100}, {DType::I64}, DType::I64,
                                 [&](const std::vector<Scalar>& x) { return unary(op, x[0]); });
    EXPECT_TRUE(matchesInterpreter(k, Tolerance::exact(), 14, {-1000, 1000})) << scalarOpName(op);
  }
}

TEST(CpuElementwise, IntegerDivisionNeverTraps) {
  Kernel k = elementwiseKernel("div", {8}, {DType::I64, DType::I64}, DType::I64,
                               [](const std::vector<Scalar>& x) { return x[0] / x[1]; });
  const double min = -9223372036854775808.0;  // INT64_MIN / -1 must not trap either
  std::vector<Tensor> buffers = {
      Tensor::fromDoubles(TensorType(DType::I64, {8}), {7, -7, 7, -7, 5, 0, min, 9}),
      Tensor::fromDoubles(TensorType(DType::I64, {8}), {2, 2, -2, -2, 0, 0, -1, 3}),
      Tensor(TensorType(DType::I64, {8}))};
  ASSERT_TRUE(runJit(k, buffers).isOk());
  const int64_t* out = buffers[2].as<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(out, out + 7), (std::vector<int64_t>{3, -3, -3, 3, 0, 0, INT64_MIN}));
  buffers[1].set(6, 1);  // keep the reference comparison to exactly representable values
  EXPECT_TRUE(matchesInterpreter(k, buffers, Tolerance::exact()));
}

TEST(CpuElementwise, CastsBetweenComputeTypes) {
  const DType types[] = {DType::F32, DType::F64, DType::I64, DType::Bool};
  for (DType from : types) {
    for (DType to : types) {
      Kernel k = elementwiseKernel("cast", {300}, {from}, to,
                                   [&](const std::vector<Scalar>& x) { return cast(x[0], to); });
      // Fractions, negatives, NaN (-> 0 as an integer) and infinities.
      EXPECT_TRUE(matchesInterpreter(k, Tolerance::exact(), 17, {-300, 300, 0.1}))
          << dtypeName(from) << " -> " << dtypeName(to);
    }
  }
}

TEST(CpuElementwise, ConstantsOfEveryType) {
  Kernel k = elementwiseKernel("consts", {10}, {DType::F32}, DType::F32, [](const std::vector<Scalar>& x) {
    Scalar i = cast(c(-3, DType::I64) * c(7, DType::I64), DType::F32);
    Scalar b = select(c(1, DType::Bool), c(0.1, DType::F32), c(0.2, DType::F32));
    return x[0] * c(1.5, DType::F32) + i + b + cast(c(2.5, DType::F64), DType::F32);
  });
  EXPECT_TRUE(matchesInterpreter(k, Tolerance::f32()));
}

TEST(CpuElementwise, IndexLeaves) {
  // out[i, j, k] = i * 100 + j * 10 + k, with an extent-1 dim in the middle.
  KernelBuilder b("iota", {4, 1, 3, 5});
  Scalar v = Scalar::index(0) * c(100, DType::I64) + Scalar::index(2) * c(10, DType::I64) + Scalar::index(3) +
             Scalar::index(1) * c(1000, DType::I64);
  b.storeOuter(b.output(DType::I32, {4, 1, 3, 5}), v);
  Kernel k = b.build();
  EXPECT_TRUE(matchesInterpreter(k, Tolerance::exact()));
}

TEST(CpuElementwise, PhiloxIsDropoutsDefinition) {
  // The scalar op is ir/philox.h's dropoutBits, for 64-bit seeds, negative
  // ones and counters past 2^32 (both counter words in use).
  for (int64_t seed : {int64_t{0}, int64_t{-3}, int64_t{0x123456789abcdef0}})
    for (int64_t index : {int64_t{0}, int64_t{7}, (int64_t{1} << 33) + 5})
      for (int64_t step : {int64_t{0}, int64_t{3}, (int64_t{1} << 40) + 1}) {
        Scalar bits = philoxBits(c(static_cast<double>(index), DType::I64), c(static_cast<double>(step), DType::I64), seed);
        EXPECT_EQ(evaluateScalar(*bits.node(), {}), philox::dropoutBits(seed, step, index))
            << "seed " << seed << " index " << index << " step " << step;
      }
  // Compiled (a vector loop and its remainder) against the interpreter.
  KernelBuilder b("philox", {3, 517});
  Scalar step = b.loadAxes(b.input(DType::I64, {}), {});
  Scalar index = Scalar::index(0) * c(517, DType::I64) + Scalar::index(1) + c(0x1p33, DType::I64);
  Scalar bits = philoxBits(index, step, int64_t{0x123456789abcdef0});
  b.storeOuter(b.output(DType::I64, {3, 517}), bits);
  b.storeOuter(b.output(DType::Bool, {3, 517}), bits >= 0x80000000 * 1.0);
  EXPECT_TRUE(matchesInterpreter(b.build(), Tolerance::exact()));
}

TEST(CpuElementwise, EmptyShapesRunNothing) {
  for (Shape shape : {Shape{0}, Shape{3, 0}, Shape{0, 5, 7}}) {
    Kernel k = elementwiseKernel("empty", shape, {DType::F32}, DType::F32,
                                 [](const std::vector<Scalar>& x) { return exp(x[0]); });
    EXPECT_TRUE(matchesInterpreter(k, Tolerance::exact()));
  }
  Kernel scalar = elementwiseKernel("rank0", {}, {DType::F32}, DType::F16,
                                    [](const std::vector<Scalar>& x) { return x[0] * 3.0; });
  EXPECT_TRUE(matchesInterpreter(scalar, Tolerance::exact()));
}

TEST(CpuElementwise, HalfPrecisionArithmetic) {
  for (DType t : {DType::F16, DType::BF16}) {
    Kernel k = elementwiseKernel("half_gelu", {1000}, {t, t}, t, [](const std::vector<Scalar>& x) {
      Scalar y = x[0] * x[1];
      return 0.5 * y * (1.0 + erf(y * 0.7071067811865476));
    });
    EXPECT_TRUE(matchesInterpreter(k, Tolerance::f32(), 31, {-3, 3, 0.05})) << dtypeName(t);
  }
}

}  // namespace
}  // namespace kfuse::testing
