#include "frontend/trace/nn/init.h"

#include <cmath>
#include <numbers>

#include "ir/support/strings.h"

namespace kfuse::nn {

namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

// pcg32_srandom_r of the reference implementation, with the initial state
// and the stream selector drawn from splitmix64(seed).
void Generator::reseed(uint64_t seed) {
  uint64_t sm = seed;
  uint64_t initState = splitmix64(sm);
  uint64_t stream = splitmix64(sm);
  state_ = 0;
  inc_ = (stream << 1) | 1;
  nextU32();
  state_ += initState;
  nextU32();
}

uint32_t Generator::nextU32() {
  uint64_t old = state_;
  state_ = old * 6364136223846793005ull + inc_;
  auto xorshifted = static_cast<uint32_t>(((old >> 18) ^ old) >> 27);
  auto rot = static_cast<uint32_t>(old >> 59);
  return (xorshifted >> rot) | (xorshifted << ((32 - rot) & 31));
}

uint64_t Generator::nextU64() {
  uint64_t hi = nextU32();
  return (hi << 32) | nextU32();
}

// 27 + 26 bits (genrand_res53 of the Mersenne Twister reference code).
double Generator::uniform() {
  double a = nextU32() >> 5, b = nextU32() >> 6;
  return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

double Generator::normal(double mean, double stddev) {
  double u1 = 1.0 - uniform();  // (0, 1]: log(u1) is finite
  double u2 = uniform();
  return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

Generator& defaultGenerator() {
  thread_local Generator gen(0);
  return gen;
}

void manualSeed(uint64_t seed) { defaultGenerator().reseed(seed); }

namespace init {

void uniform(Tensor& t, double lo, double hi, Generator& gen) {
  for (int64_t i = 0; i < t.numElements(); ++i) t.set(i, gen.uniform(lo, hi));
}

void normal(Tensor& t, double mean, double stddev, Generator& gen) {
  for (int64_t i = 0; i < t.numElements(); ++i) t.set(i, gen.normal(mean, stddev));
}

void fill(Tensor& t, double value) {
  for (int64_t i = 0; i < t.numElements(); ++i) t.set(i, value);
}

namespace {
Expected<int64_t> receptiveField(const Shape& s) {
  if (s.size() < 2)
    return Error(str("fan in and fan out need a weight of rank >= 2, got shape ", formatDims(s)));
  int64_t r = 1;
  for (size_t i = 2; i < s.size(); ++i) r *= s[i];
  return r;
}
}  // namespace

Expected<int64_t> fanIn(const Shape& s) {
  KF_ASSIGN_OR_RETURN(int64_t r, receptiveField(s));
  return s[1] * r;
}

Expected<int64_t> fanOut(const Shape& s) {
  KF_ASSIGN_OR_RETURN(int64_t r, receptiveField(s));
  return s[0] * r;
}

Status kaimingUniform(Tensor& t, double a, Generator& gen) {
  KF_ASSIGN_OR_RETURN(int64_t fan, fanIn(t.shape()));
  if (fan == 0) return Status::ok();  // torch warns and leaves the (empty) tensor alone
  double gain = std::sqrt(2.0 / (1.0 + a * a));
  double bound = std::sqrt(3.0) * gain / std::sqrt(static_cast<double>(fan));
  uniform(t, -bound, bound, gen);
  return Status::ok();
}

Status xavierUniform(Tensor& t, double gain, Generator& gen) {
  KF_ASSIGN_OR_RETURN(int64_t in, fanIn(t.shape()));
  KF_ASSIGN_OR_RETURN(int64_t out, fanOut(t.shape()));
  if (in + out == 0) return Status::ok();
  double bound = gain * std::sqrt(6.0 / static_cast<double>(in + out));
  uniform(t, -bound, bound, gen);
  return Status::ok();
}

}  // namespace init
}  // namespace kfuse::nn
