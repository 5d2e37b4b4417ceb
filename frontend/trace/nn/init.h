// Random initialisation of nn parameters: a seeded generator and PyTorch's
// initialisation schemes (torch.nn.init). The distributions are PyTorch's;
// the random streams are not (bit-exact equality with torch's generator is
// not a goal), so a model initialised here and one initialised by PyTorch
// agree in distribution, and weights are moved across with a weights file.
#pragma once

#include <cstdint>

#include "ir/support/expected.h"
#include "ir/tensor.h"

namespace kfuse::nn {

// PCG32 (O'Neill, "PCG: A Family of Simple Fast Space-Efficient
// Statistically Good Algorithms for Random Number Generation", 2014: the
// XSH-RR output function over a 64-bit LCG), its state and stream seeded
// from one 64-bit seed through splitmix64. Same seed, same numbers, on every
// platform.
class Generator {
 public:
  explicit Generator(uint64_t seed = 0) { reseed(seed); }
  void reseed(uint64_t seed);

  uint32_t nextU32();
  uint64_t nextU64();
  // Uniform in [0, 1) with 53 random bits.
  double uniform();
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Normal by the Box-Muller transform.
  double normal(double mean = 0.0, double stddev = 1.0);

 private:
  uint64_t state_ = 0, inc_ = 1;
};

// The generator modules draw from when constructed, like torch's global
// generator; one per thread, seeded with 0 until manualSeed.
Generator& defaultGenerator();
void manualSeed(uint64_t seed);

namespace init {

// Fills t in place (each value rounded to t's dtype).
void uniform(Tensor& t, double lo, double hi, Generator& gen);
void normal(Tensor& t, double mean, double stddev, Generator& gen);
void fill(Tensor& t, double value);

// Fans of a weight shaped [out, in, k...]: in * prod(k) and out * prod(k).
// An Error for rank < 2, as in torch.
Expected<int64_t> fanIn(const Shape& s);
Expected<int64_t> fanOut(const Shape& s);

// torch.nn.init.kaiming_uniform_(t, a, mode="fan_in", nonlinearity="leaky_relu"):
// U(-b, b) with b = sqrt(6 / ((1 + a^2) fan_in)). With a = sqrt(5), as
// Linear and Conv2d use, b = 1 / sqrt(fan_in).
Status kaimingUniform(Tensor& t, double a, Generator& gen);
// torch.nn.init.xavier_uniform_: U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out)).
Status xavierUniform(Tensor& t, double gain, Generator& gen);

}  // namespace init
}  // namespace kfuse::nn
