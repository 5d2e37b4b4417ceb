// The simulator's own tests (runtime/cuda/sim): kernels written in CUDA C
// in this file, compiled as host C++ with the simulator's device header
// at build time, launched through the scheduler. They pin down CUDA's
// rules the simulator enforces (barriers, warp operations with masks and
// widths, shared memory, faults) and show that a kernel missing a barrier
// gives different results under different schedules.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "runtime/cuda/sim/memory.h"
#include "runtime/cuda/sim/scheduler.h"
// After every other header: it defines CUDA's built-ins as macros.
#include "runtime/cuda/sim/device.h"

extern "C" {
const struct kfsim_api* kfsim_api_ptr = kfuse::cuda::sim::simulatorApi();
}

// ---- kernels ----

// A block's sum: shuffles within warps, then the warps' partials through
// shared memory, as the prelude's kf_block_reduce does.
__global__ void blockSum(const float* in, float* out) {
  float v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
  float* tmp = reinterpret_cast<float*>(kf_smem());
  if (threadIdx.x % 32 == 0) tmp[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0;
    for (unsigned w = 0; w < blockDim.x / 32; ++w) s += tmp[w];
    out[blockIdx.x] = s;
  }
}

// Reads a neighbour's shared value; with `sync` false the barrier between
// the write and the read is missing.
__global__ void neighbour(int* out, int sync) {
  int* s = reinterpret_cast<int*>(kf_smem());
  s[threadIdx.x] = (int)threadIdx.x * 10;
  if (sync) __syncthreads();
  out[threadIdx.x] = s[(threadIdx.x + 1) % blockDim.x];
}

// Two phases through the same shared slots; with `sync` false the barrier
// that keeps the second phase's writes from the first phase's reads is
// missing (the prelude's kf_block_reduce ends with that barrier).
__global__ void twoPhases(int* out, int sync) {
  int* s = reinterpret_cast<int*>(kf_smem());
  const unsigned n = blockDim.x, next = (threadIdx.x + 1) % n;
  s[threadIdx.x] = 1;
  __syncthreads();
  const int first = s[next];
  if (sync) __syncthreads();
  s[threadIdx.x] = 2;
  __syncthreads();
  out[threadIdx.x] = first * 10 + s[next];
}

__global__ void barrierInBranch(int* out) {
  if (threadIdx.x < 16) __syncthreads();
  out[threadIdx.x] = 1;
}

__global__ void twoBarriers(int* out) {
  if (threadIdx.x < 32) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1;
}

// Every lane records where its shuffle's value came from.
__global__ void shuffleTable(int* out, int op, int arg, int width) {
  const int lane = (int)threadIdx.x;
  int v = 0;
  switch (op) {
    case 0: v = __shfl_sync(0xffffffffu, lane, arg, width); break;
    case 1: v = __shfl_up_sync(0xffffffffu, lane, arg, width); break;
    case 2: v = __shfl_down_sync(0xffffffffu, lane, arg, width); break;
    default: v = __shfl_xor_sync(0xffffffffu, lane, arg, width); break;
  }
  out[lane] = v;
}

__global__ void shuffleNotInMask(int* out) {
  // Lane 0 leaves itself out of its own mask.
  const unsigned mask = threadIdx.x == 0 ? 0xfffffffeu : 0xffffffffu;
  out[threadIdx.x] = __shfl_sync(mask, (int)threadIdx.x, 0);
}

__global__ void shuffleReadsOutsideMask(int* out) {
  if (threadIdx.x < 16) out[threadIdx.x] = __shfl_down_sync(0x0000ffffu, (int)threadIdx.x, 8);
}

__global__ void divergentShuffles(int* out) {
  int v = (int)threadIdx.x;
  if (threadIdx.x < 16)
    v = __shfl_down_sync(0xffffffffu, v, 1);
  else
    v = __shfl_xor_sync(0xffffffffu, v, 1);
  out[threadIdx.x] = v;
}

__global__ void shuffleThenBarrier(int* out) {
  int v = (int)threadIdx.x;
  if (threadIdx.x == 3) __syncthreads();
  v = __shfl_down_sync(0xffffffffu, v, 1);
  out[threadIdx.x] = v;
}

// Half a warp takes part in the votes; the other half has exited.
__global__ void votes(unsigned* out) {
  if (threadIdx.x >= 16) return;
  const int odd = threadIdx.x % 2;
  out[0] = __ballot_sync(0x0000ffffu, odd);
  out[1] = (unsigned)__any_sync(0x0000ffffu, threadIdx.x == 5);
  out[2] = (unsigned)__all_sync(0x0000ffffu, threadIdx.x < 16);
  out[3] = (unsigned)__all_sync(0x0000ffffu, odd);
}

__global__ void readSharedFirst(float* out) { out[threadIdx.x] = reinterpret_cast<float*>(kf_smem())[threadIdx.x]; }

__global__ void readPast(const float* in, float* out, int n) { out[0] = in[n + 64]; }

__global__ void sharedPast(float* out) { out[0] = reinterpret_cast<float*>(kf_smem())[1024]; }

__global__ void misalignedVector(const float* in, float* out) {
  KF_SIM_CHECK_ALIGNED(in + 1, 16);
  out[0] = in[1];
}

__global__ void divideByZero(int* out, int d) { out[0] = 7 / d; }

// The prelude's grid-wide protocols: a last block folding every block's
// partial in block order, and a grid barrier (cooperative launches only).
__global__ void lastBlockSum(const float* in, float* partials, unsigned* counter, float* out) {
  if (threadIdx.x == 0) partials[blockIdx.x] = in[blockIdx.x];
  int last = 0;
  if (threadIdx.x == 0) {
    __threadfence();
    last = atomicAdd(counter, 1u) == gridDim.x - 1u;
  }
  last = __syncthreads_or(last);
  if (last && threadIdx.x == 0) {
    float s = 0;
    for (unsigned b = 0; b < gridDim.x; ++b) s += __ldcg(partials + b);
    out[0] = s;
    atomicExch(counter, 0u);
  }
}

__global__ void gridBarrier(unsigned* bar, int* data, int* out) {
  if (threadIdx.x == 0) data[blockIdx.x] = (int)blockIdx.x + 1;
  __syncthreads();
  if (threadIdx.x == 0) {
    volatile unsigned* generation = bar + 1;
    const unsigned g = *generation;
    __threadfence();
    if (atomicAdd(bar, 1u) == gridDim.x - 1u) {
      atomicExch(bar, 0u);
      __threadfence();
      atomicAdd(bar + 1, 1u);
    } else {
      while (*generation == g) __nanosleep(32);
    }
  }
  __syncthreads();
  // Every block's value is there after the barrier.
  if (threadIdx.x == 0) {
    int s = 0;
    for (unsigned b = 0; b < gridDim.x; ++b) s += __ldcg(data + b);
    out[blockIdx.x] = s;
  }
}

namespace kfuse::cuda::sim {
namespace {

template <auto F>
const kfsim_entry* entryOf(const char* name) {
  static const kfsim_entry e = {name, &kfsim::entry_of<F>::thunk, kfsim::entry_of<F>::count,
                                kfsim::entry_of<F>::sizes, kfsim::entry_of<F>::pointers, 0};
  return &e;
}

// Device memory of n elements of T, freed at the end of the test.
template <typename T>
struct DeviceArray {
  explicit DeviceArray(size_t n, T fill = T{}) : n(n) {
    p = static_cast<T*>(allocateRegion(n * sizeof(T), 256, RegionKind::Device));
    for (size_t i = 0; i < n; ++i) p[i] = fill;
  }
  ~DeviceArray() { freeRegion(p); }
  std::vector<T> values() const { return std::vector<T>(p, p + n); }
  T* p;
  size_t n;
};

template <auto F, typename... A>
Status launch(const char* name, kfsim_dim3 grid, kfsim_dim3 block, size_t smem, Schedule s, A... args) {
  void* params[] = {static_cast<void*>(&args)..., nullptr};
  Launch l;
  l.entry = entryOf<F>(name);
  l.name = name;
  l.params = params;
  l.grid = grid;
  l.block = block;
  l.sharedBytes = smem;
  return runLaunch(l, s);
}

template <auto F, typename... A>
Status launchCooperative(const char* name, unsigned grid, unsigned block, Schedule s, A... args) {
  void* params[] = {static_cast<void*>(&args)..., nullptr};
  Launch l;
  l.entry = entryOf<F>(name);
  l.name = name;
  l.params = params;
  l.grid = {grid, 1, 1};
  l.block = {block, 1, 1};
  l.cooperative = true;
  return runLaunch(l, s);
}

std::vector<Schedule> schedules() { return {{Order::Forward, 0}, {Order::Reverse, 0}, {Order::Random, 7}, {Order::Random, 12345}}; }

TEST(SimDevice, BlockSumIsTheSameUnderEverySchedule) {
  constexpr int kBlocks = 3, kThreads = 256;
  DeviceArray<float> in(kBlocks * kThreads);
  for (int i = 0; i < kBlocks * kThreads; ++i) in.p[i] = static_cast<float>(i % 97) * 0.25f;
  std::vector<float> first;
  for (const Schedule& s : schedules()) {
    DeviceArray<float> out(kBlocks, NAN);
    Status st = launch<blockSum>("blockSum", {kBlocks, 1, 1}, {kThreads, 1, 1}, 8 * sizeof(float), s, (const float*)in.p,
                                 out.p);
    ASSERT_TRUE(st) << st.message();
    for (int b = 0; b < kBlocks; ++b) {
      double want = 0;
      for (int i = 0; i < kThreads; ++i) want += in.p[b * kThreads + i];
      EXPECT_NEAR(out.p[b], want, 1e-3) << scheduleName(s);
    }
    if (first.empty()) first = out.values();
    EXPECT_EQ(out.values(), first) << scheduleName(s) << ": not the same bits as forward";
  }
}

TEST(SimDevice, AMissingBarrierShowsAsDifferentResultsAcrossSchedules) {
  auto run = [](Schedule s, int sync) {
    DeviceArray<int> out(64, 0);
    Status st = launch<neighbour>("neighbour", {1, 1, 1}, {64, 1, 1}, 64 * sizeof(int), s, out.p, sync);
    EXPECT_TRUE(st) << st.message();
    return out.values();
  };
  for (const Schedule& s : schedules()) {
    std::vector<int> got = run(s, 1);
    for (int i = 0; i < 64; ++i) EXPECT_EQ(got[static_cast<size_t>(i)], (i + 1) % 64 * 10) << scheduleName(s);
  }
  // Without the barrier a thread reads its neighbour's slot before or
  // after the neighbour wrote it, depending on who ran first.
  EXPECT_NE(run({Order::Forward, 0}, 0), run({Order::Reverse, 0}, 0));
}

// Threads an operation releases run first: one racing ahead into the next
// phase overwrites what the others have yet to read.
TEST(SimDevice, AMissingBarrierBetweenPhasesIsCaughtByEverySchedule) {
  for (const Schedule& s : schedules()) {
    for (int sync : {1, 0}) {
      DeviceArray<int> out(64, 0);
      Status st = launch<twoPhases>("twoPhases", {1, 1, 1}, {64, 1, 1}, 64 * sizeof(int), s, out.p, sync);
      ASSERT_TRUE(st) << st.message();
      int wrong = 0;
      for (int v : out.values()) wrong += v != 12;
      if (sync) {
        EXPECT_EQ(wrong, 0) << scheduleName(s);
      } else {
        EXPECT_GT(wrong, 0) << scheduleName(s) << ": the missing barrier went unnoticed";
      }
    }
  }
}

TEST(SimDevice, ABarrierInDivergentCodeIsAnError) {
  DeviceArray<int> out(64);
  Status st = launch<barrierInBranch>("barrierInBranch", {1, 1, 1}, {64, 1, 1}, 0, {}, out.p);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("kernel barrierInBranch: divergent __syncthreads"), std::string::npos) << st.message();
  st = launch<twoBarriers>("twoBarriers", {1, 1, 1}, {64, 1, 1}, 0, {Order::Reverse, 0}, out.p);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("divergent __syncthreads"), std::string::npos) << st.message();
}

// The source lane of each lane, from CUDA's description of the shuffles:
// width-wide segments; up and down do not wrap (out of the segment: the
// lane's own value); xor may reach earlier segments, not later ones; idx
// takes the source lane modulo the width.
int expectedSource(int op, int lane, int arg, int width) {
  const int base = lane / width * width;
  switch (op) {
    case 0: return base + arg % width;
    case 1: return lane % width >= arg ? lane - arg : lane;
    case 2: return lane % width + arg < width ? lane + arg : lane;
    default: {
      const int src = lane ^ arg;
      return src < base + width ? src : lane;
    }
  }
}

TEST(SimDevice, ShufflesFollowCudaWidthAndNoWrapRules) {
  for (int op = 0; op < 4; ++op)
    for (int width : {32, 16, 8, 4, 2, 1})
      for (int arg : {0, 1, 2, 3, 5, 8, 16, 31}) {
        DeviceArray<int> out(32, -1);
        Status st = launch<shuffleTable>("shuffleTable", {1, 1, 1}, {32, 1, 1}, 0, {Order::Random, 3}, out.p, op, arg, width);
        ASSERT_TRUE(st) << st.message();
        for (int lane = 0; lane < 32; ++lane)
          EXPECT_EQ(out.p[lane], expectedSource(op, lane, arg, width))
              << "op " << op << " width " << width << " arg " << arg << " lane " << lane;
      }
}

TEST(SimDevice, ALaneMissingFromItsMaskIsAnError) {
  DeviceArray<int> out(32);
  Status st = launch<shuffleNotInMask>("shuffleNotInMask", {1, 1, 1}, {32, 1, 1}, 0, {}, out.p);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("(lane 0) calls __shfl_sync on line"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("with mask 0xfffffffe, which does not include its own lane"), std::string::npos)
      << st.message();
}

TEST(SimDevice, ReadingALaneOutsideTheMaskIsAnError) {
  DeviceArray<int> out(32);
  Status st = launch<shuffleReadsOutsideMask>("shuffleReadsOutsideMask", {1, 1, 1}, {32, 1, 1}, 0, {}, out.p);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("reads lane 16 with __shfl_down_sync"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("not in the mask 0x0000ffff"), std::string::npos) << st.message();
}

TEST(SimDevice, DivergentWarpOperationsAreErrors) {
  DeviceArray<int> out(32);
  Status st = launch<divergentShuffles>("divergentShuffles", {1, 1, 1}, {32, 1, 1}, 0, {}, out.p);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("divergent warp operation"), std::string::npos) << st.message();
  st = launch<shuffleThenBarrier>("shuffleThenBarrier", {1, 1, 1}, {32, 1, 1}, 0, {}, out.p);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("divergence"), std::string::npos) << st.message();
}

TEST(SimDevice, VotesCountTheNonExitedLanesOfTheMask) {
  for (const Schedule& s : schedules()) {
    DeviceArray<unsigned> out(4, 99);
    Status st = launch<votes>("votes", {1, 1, 1}, {32, 1, 1}, 0, s, out.p);
    ASSERT_TRUE(st) << st.message();
    EXPECT_EQ(out.p[0], 0x0000aaaau);
    EXPECT_EQ(out.p[1], 1u);
    EXPECT_EQ(out.p[2], 1u);
    EXPECT_EQ(out.p[3], 0u);
  }
}

TEST(SimDevice, SharedMemoryStartsAsNaN) {
  DeviceArray<float> out(64, 0.0f);
  Status st = launch<readSharedFirst>("readSharedFirst", {1, 1, 1}, {64, 1, 1}, 64 * sizeof(float), {}, out.p);
  ASSERT_TRUE(st) << st.message();
  for (float v : out.values()) EXPECT_TRUE(std::isnan(v));
}

TEST(SimDevice, FaultsNameTheMemoryAndTheThread) {
  DeviceArray<float> in(256), out(1);
  Status st = launch<readPast>("readPast", {2, 1, 1}, {32, 1, 1}, 0, {}, (const float*)in.p, out.p, 256);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("kernel readPast: an access to 0x"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("256 bytes past the end of a 1024-byte device allocation in block (0,0,0) thread (0,0,0)"),
            std::string::npos)
      << st.message();

  st = launch<sharedPast>("sharedPast", {1, 1, 1}, {32, 1, 1}, 4096, {}, out.p);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("0 bytes past the end of a 4096-byte block's dynamic shared memory"), std::string::npos)
      << st.message();

  st = launch<misalignedVector>("misalignedVector", {1, 1, 1}, {32, 1, 1}, 0, {}, (const float*)in.p, out.p);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("a misaligned vector access on line"), std::string::npos) << st.message();

  DeviceArray<int> iout(1);
  st = launch<divideByZero>("divideByZero", {1, 1, 1}, {32, 1, 1}, 0, {}, iout.p, 0);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("integer division by zero"), std::string::npos) << st.message();

  // The simulator is usable after a fault.
  DeviceArray<float> sums(1);
  DeviceArray<float> ones(32, 1.0f);
  st = launch<blockSum>("blockSum", {1, 1, 1}, {32, 1, 1}, 4, {}, (const float*)ones.p, sums.p);
  ASSERT_TRUE(st) << st.message();
  EXPECT_EQ(sums.p[0], 32.0f);
}

TEST(SimDevice, LastBlockProtocolFoldsInBlockOrderUnderEverySchedule) {
  constexpr unsigned kBlocks = 37;
  DeviceArray<float> in(kBlocks), partials(kBlocks, NAN), out(1, NAN);
  DeviceArray<unsigned> counter(1, 0);
  for (unsigned i = 0; i < kBlocks; ++i) in.p[i] = 1.0f / static_cast<float>(i + 1);
  std::vector<float> first;
  for (const Schedule& s : schedules()) {
    Status st = launch<lastBlockSum>("lastBlockSum", {kBlocks, 1, 1}, {64, 1, 1}, 0, s, (const float*)in.p, partials.p,
                                     counter.p, out.p);
    ASSERT_TRUE(st) << st.message();
    EXPECT_EQ(counter.p[0], 0u);
    if (first.empty()) first = out.values();
    EXPECT_EQ(out.values(), first) << scheduleName(s);
  }
}

TEST(SimDevice, GridBarrierNeedsACooperativeLaunch) {
  constexpr unsigned kBlocks = 6;
  for (const Schedule& s : schedules()) {
    DeviceArray<unsigned> bar(2, 0);
    DeviceArray<int> data(kBlocks, 0), out(kBlocks, 0);
    Status st = launchCooperative<gridBarrier>("gridBarrier", kBlocks, 64, s, bar.p, data.p, out.p);
    ASSERT_TRUE(st) << st.message();
    for (unsigned b = 0; b < kBlocks; ++b) EXPECT_EQ(out.p[b], 21) << scheduleName(s);
    EXPECT_EQ(bar.p[0], 0u);
  }
  // Blocks one after another: the first spins for ever at the barrier.
  DeviceArray<unsigned> bar(2, 0);
  DeviceArray<int> data(kBlocks, 0), out(kBlocks, 0);
  Status st = launch<gridBarrier>("gridBarrier", {kBlocks, 1, 1}, {64, 1, 1}, 0, {}, bar.p, data.p, out.p);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("no progress"), std::string::npos) << st.message();
}

TEST(SimDevice, SchedulesParseAndPrint) {
  for (const char* text : {"forward", "reverse", "random:42"}) {
    auto s = parseSchedule(text);
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_EQ(scheduleName(*s), text);
  }
  EXPECT_FALSE(parseSchedule("sideways"));
  EXPECT_FALSE(parseSchedule("random:"));
  EXPECT_FALSE(parseSchedule("random:x1"));
}

}  // namespace
}  // namespace kfuse::cuda::sim
