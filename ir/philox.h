// Philox4x32-10, the counter-based random number generator of Salmon, Moraes,
// Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3" (SC 2011), as
// in Random123. A counter-based generator makes random bits a pure function
// of (key, counter), so every backend (reference interpreter, CPU and CUDA
// kernels, any thread layout) draws exactly the same bits for an element.
// The CUDA and LLVM code generators mirror these functions; keep them
// header-only, constexpr and free of anything but 32/64-bit integer math.
//
// The dropout mask (the definition every backend must reproduce bit for bit):
//   key     = (seed & 0xffffffff, seed >> 32)            seed: the op's int64 attribute
//   counter = (index & 0xffffffff, index >> 32,          index: flat row-major element index
//              step & 0xffffffff, step >> 32)            step: the optional i64 operand (absent = 0)
//   u       = philox4x32_10(counter, key)[0]             only the first 32-bit output is used
//   uniform = (u >> 8) * 2^-24                           in [0, 1), exactly representable in f32
//   keep    = uniform >= ratio
//   y       = keep ? x / (1 - ratio) : 0
// Negative seeds and steps use their two's-complement bits. Backends should
// compare integers, (u >> 8) >= dropoutThreshold(ratio), which is exactly
// `uniform >= ratio` without any float rounding.
#pragma once

#include <array>
#include <cstdint>

namespace kfuse::philox {

using Counter = std::array<uint32_t, 4>;
using Key = std::array<uint32_t, 2>;

inline constexpr uint32_t kM0 = 0xD2511F53u;  // round multipliers
inline constexpr uint32_t kM1 = 0xCD9E8D57u;
inline constexpr uint32_t kW0 = 0x9E3779B9u;  // Weyl key increments (golden ratio, sqrt(3) - 1)
inline constexpr uint32_t kW1 = 0xBB67AE85u;
inline constexpr int kRounds = 10;

// High and low 32 bits of the 64-bit product a * b.
constexpr uint32_t mulHi(uint32_t a, uint32_t b) {
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
}
constexpr uint32_t mulLo(uint32_t a, uint32_t b) { return a * b; }

// One Philox S-box round (Random123's philox4x32round).
constexpr Counter singleRound(const Counter& c, const Key& k) {
  return {mulHi(kM1, c[2]) ^ c[1] ^ k[0], mulLo(kM1, c[2]), mulHi(kM0, c[0]) ^ c[3] ^ k[1], mulLo(kM0, c[0])};
}

constexpr Key bumpKey(const Key& k) { return {k[0] + kW0, k[1] + kW1}; }

// Ten rounds; the key is bumped between rounds (nine bumps in all).
constexpr Counter philox4x32_10(Counter c, Key k) {
  c = singleRound(c, k);
  for (int r = 1; r < kRounds; ++r) {
    k = bumpKey(k);
    c = singleRound(c, k);
  }
  return c;
}

constexpr uint32_t lo32(uint64_t v) { return static_cast<uint32_t>(v); }
constexpr uint32_t hi32(uint64_t v) { return static_cast<uint32_t>(v >> 32); }

// The first 32-bit output for dropout element `index` (see the header comment).
constexpr uint32_t dropoutBits(int64_t seed, int64_t step, int64_t index) {
  auto s = static_cast<uint64_t>(seed), t = static_cast<uint64_t>(step), i = static_cast<uint64_t>(index);
  return philox4x32_10({lo32(i), hi32(i), lo32(t), hi32(t)}, {lo32(s), hi32(s)})[0];
}

// uniform = (u >> 8) * 2^-24: 24 random bits, exact in f32 and f64.
constexpr double uniformFromBits(uint32_t u) { return static_cast<double>(u >> 8) * (1.0 / 16777216.0); }

// Smallest 24-bit value v with v * 2^-24 >= ratio, for ratio in [0, 1):
// keep iff (u >> 8) >= dropoutThreshold(ratio). ratio * 2^24 is exact in double.
constexpr uint32_t dropoutThreshold(double ratio) {
  double scaled = ratio * 16777216.0;
  auto v = static_cast<uint32_t>(scaled);  // truncation; ratio >= 0
  return static_cast<double>(v) < scaled ? v + 1 : v;
}

constexpr bool dropoutKeep(int64_t seed, int64_t step, int64_t index, double ratio) {
  return (dropoutBits(seed, step, index) >> 8) >= dropoutThreshold(ratio);
}

}  // namespace kfuse::philox
