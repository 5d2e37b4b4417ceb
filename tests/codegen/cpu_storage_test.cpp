// Storage dtypes on the CPU JIT: loads widen and stores round exactly as
// ir/dtype.h does (f16/bf16 bit for bit, integer saturation, bool bytes).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "tests/codegen/jit_harness.h"
#include "tests/codegen/kernel_builder.h"

namespace kfuse::testing {
namespace {

// Runs a one-input copy kernel from `from` to `to` storage over `n` elements
// whose input bytes are `in`; returns the output bytes.
template <typename Out, typename In>
std::vector<Out> convert(DType from, DType to, const std::vector<In>& in) {
  auto n = static_cast<int64_t>(in.size());
  Kernel k = elementwiseKernel("convert", {n}, {from}, to, [](const std::vector<Scalar>& x) { return x[0]; });
  std::vector<Tensor> buffers = {Tensor(TensorType(from, {n})), Tensor(TensorType(to, {n}))};
  std::memcpy(buffers[0].data(), in.data(), in.size() * sizeof(In));
  Status s = runJit(k, buffers);
  EXPECT_TRUE(s.isOk()) << s.message();
  std::vector<Out> out(in.size());
  std::memcpy(out.data(), buffers[1].data(), out.size() * sizeof(Out));
  return out;
}

TEST(CpuStorage, HalfAndBFloat16LoadsOfEveryBitPattern) {
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<uint32_t> half = convert<uint32_t>(DType::F16, DType::F32, all);
  std::vector<uint32_t> bf16 = convert<uint32_t>(DType::BF16, DType::F32, all);
  for (size_t i = 0; i < all.size(); ++i) {
    ASSERT_EQ(half[i], std::bit_cast<uint32_t>(halfToFloat(all[i]))) << "f16 0x" << std::hex << i;
    ASSERT_EQ(bf16[i], std::bit_cast<uint32_t>(bfloat16ToFloat(all[i]))) << "bf16 0x" << std::hex << i;
  }
}

// Float bit patterns that reach every rounding case of both conversions:
// each sign and exponent with mantissas at, just below and just above the
// halfway point of every shift floatToHalf may use, plus random ones.
std::vector<uint32_t> interestingFloats() {
  std::mt19937_64 rng(42);
  std::vector<uint32_t> out;
  for (uint32_t sign : {0u, 1u})
    for (uint32_t exp = 0; exp < 256; ++exp) {
      std::vector<uint32_t> mantissas = {0, 1, 0x7fffff, 0x400000, 0x200};
      for (uint32_t shift = 1; shift < 24; ++shift) {
        uint32_t high = static_cast<uint32_t>(rng()) << shift;
        uint32_t tie = high | (1u << (shift - 1));
        for (uint32_t m : {tie, tie - 1, tie + 1, tie & ~(1u << shift), (tie | (1u << shift))}) mantissas.push_back(m);
      }
      for (int i = 0; i < 16; ++i) mantissas.push_back(static_cast<uint32_t>(rng()));
      for (uint32_t m : mantissas) out.push_back((sign << 31) | (exp << 23) | (m & 0x7fffff));
    }
  for (int i = 0; i < (1 << 20); ++i) out.push_back(static_cast<uint32_t>(rng()));
  return out;
}

TEST(CpuStorage, HalfAndBFloat16StoresAreBitExact) {
  std::vector<uint32_t> in = interestingFloats();
  std::vector<uint16_t> half = convert<uint16_t>(DType::F32, DType::F16, in);
  std::vector<uint16_t> bf16 = convert<uint16_t>(DType::F32, DType::BF16, in);
  int64_t halfMismatches = 0, bf16Mismatches = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    float f = std::bit_cast<float>(in[i]);
    if (half[i] != floatToHalf(f) && ++halfMismatches <= 5)
      ADD_FAILURE() << "f16 of 0x" << std::hex << in[i] << ": 0x" << half[i] << ", expected 0x" << floatToHalf(f);
    if (bf16[i] != floatToBFloat16(f) && ++bf16Mismatches <= 5)
      ADD_FAILURE() << "bf16 of 0x" << std::hex << in[i] << ": 0x" << bf16[i] << ", expected 0x"
                    << floatToBFloat16(f);
  }
  EXPECT_EQ(halfMismatches, 0);
  EXPECT_EQ(bf16Mismatches, 0);
}

// Data movement between every pair of storage dtypes: loads widen exactly,
// stores round, truncate and saturate exactly as roundToDType.
TEST(CpuStorage, EveryStorageDtypePairIsExact) {
  for (DType from : kAllDTypes) {
    for (DType to : kAllDTypes) {
      Kernel k = elementwiseKernel("copy", {4, 129}, {from}, to,
                                   [](const std::vector<Scalar>& x) { return x[0]; });
      for (uint64_t seed : {21, 22}) {
        // Values beyond every integer range, fractions, NaN and infinities.
        InputSpec spec = seed == 21 ? InputSpec{-300, 300, 0.1} : InputSpec{-1e12, 1e12, 0.1};
        EXPECT_TRUE(matchesInterpreter(k, Tolerance::exact(), seed, spec))
            << dtypeName(from) << " -> " << dtypeName(to);
      }
    }
  }
}

TEST(CpuStorage, FloatToInt64SaturatesLikeRoundToDType) {
  Kernel k = elementwiseKernel("to_i64", {6}, {DType::F32}, DType::I64,
                               [](const std::vector<Scalar>& x) { return x[0]; });
  std::vector<Tensor> buffers = {
      Tensor::fromDoubles(TensorType(DType::F32, {6}), {1e30, -1e30, 0x1p63, -0x1p63, NAN, -2.9}),
      Tensor(TensorType(DType::I64, {6}))};
  EXPECT_TRUE(matchesInterpreter(k, buffers, Tolerance::exact()));
}

TEST(CpuStorage, BoolStorageReadsAnyNonzeroByteAsTrue) {
  Kernel k = elementwiseKernel("bool_bytes", {4}, {DType::Bool}, DType::U8,
                               [](const std::vector<Scalar>& x) { return x[0]; });
  std::vector<Tensor> buffers = {Tensor(TensorType(DType::Bool, {4})), Tensor(TensorType(DType::U8, {4}))};
  const uint8_t bytes[] = {0, 1, 2, 255};
  std::memcpy(buffers[0].data(), bytes, 4);
  ASSERT_TRUE(runJit(k, buffers).isOk());
  EXPECT_EQ(std::vector<double>({0, 1, 1, 1}), buffers[1].toDoubles());
}

}  // namespace
}  // namespace kfuse::testing
