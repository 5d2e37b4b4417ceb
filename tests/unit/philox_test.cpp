// Philox4x32-10 (ir/philox.h) against the Random123 known-answer vectors, and
// the statistics of the dropout mask built on it.
#include "ir/philox.h"

#include <gtest/gtest.h>

namespace kfuse::philox {
namespace {

// Checked at compile time too: the generators mirror a constexpr definition.
static_assert(philox4x32_10({0, 0, 0, 0}, {0, 0})[0] == 0x6627e8d5u);

TEST(Philox, KnownAnswerZeros) {
  Counter want = {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u};
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}), want);
}

TEST(Philox, KnownAnswerAllOnes) {
  Counter want = {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu};
  EXPECT_EQ(philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}), want);
}

TEST(Philox, KnownAnswerPi) {
  Counter want = {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u};
  EXPECT_EQ(philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u}), want);
}

// dropoutBits places seed in the key and (index, step) in the counter, low
// word first.
TEST(Philox, DropoutBitsWordOrder) {
  int64_t seed = 0x299f31d0a4093822, index = static_cast<int64_t>(0x85a308d3243f6a88u), step = 0x0370734413198a2e;
  EXPECT_EQ(dropoutBits(seed, step, index), 0xd16cfe09u);
  EXPECT_EQ(dropoutBits(0, 0, 0), 0x6627e8d5u);
  EXPECT_EQ(dropoutBits(-1, -1, -1), 0x408f276du);  // two's complement: all ones
}

TEST(Philox, UniformAndThreshold) {
  EXPECT_EQ(uniformFromBits(0), 0.0);
  EXPECT_EQ(uniformFromBits(0xffffffffu), 1.0 - 1.0 / 16777216.0);
  EXPECT_EQ(uniformFromBits(0x80000000u), 0.5);
  EXPECT_EQ(dropoutThreshold(0.0), 0u);
  EXPECT_EQ(dropoutThreshold(0.5), 1u << 23);
  EXPECT_EQ(dropoutThreshold(0.3), 5033165u);  // ceil(0.3 * 2^24)
  // The integer comparison is exactly uniform >= ratio, including near the threshold.
  for (double ratio : {0.1, 0.3, 0.5, 0.7, 0.9, 1.0 / 3.0}) {
    uint32_t t = dropoutThreshold(ratio);
    EXPECT_GE(uniformFromBits(t << 8), ratio);
    EXPECT_LT(uniformFromBits((t - 1) << 8), ratio);
  }
}

TEST(Philox, KeptFractionMatchesRatio) {
  constexpr int64_t kElements = 100000;
  for (double ratio : {0.1, 0.5, 0.9}) {
    for (int64_t seed : {int64_t{0}, int64_t{123456789012345}}) {
      int64_t kept = 0;
      for (int64_t i = 0; i < kElements; ++i) kept += dropoutKeep(seed, 3, i, ratio) ? 1 : 0;
      double fraction = static_cast<double>(kept) / kElements;
      EXPECT_NEAR(fraction, 1.0 - ratio, 0.01) << "ratio " << ratio << " seed " << seed;
    }
  }
}

TEST(Philox, RatioZeroKeepsEverything) {
  for (int64_t i = 0; i < 1000; ++i) EXPECT_TRUE(dropoutKeep(7, 1, i, 0.0));
}

// Different steps and seeds give different masks over the same elements.
TEST(Philox, MasksDependOnSeedAndStep) {
  auto mask = [](int64_t seed, int64_t step) {
    std::vector<bool> m;
    for (int64_t i = 0; i < 256; ++i) m.push_back(dropoutKeep(seed, step, i, 0.5));
    return m;
  };
  EXPECT_NE(mask(0, 0), mask(0, 1));
  EXPECT_NE(mask(0, 0), mask(1, 0));
  EXPECT_NE(mask(0, 0), mask(int64_t{1} << 32, 0));  // the seed's high word matters
  EXPECT_NE(mask(0, 0), mask(0, int64_t{1} << 32));  // and the step's
  EXPECT_EQ(mask(5, 9), mask(5, 9));
}

}  // namespace
}  // namespace kfuse::philox
