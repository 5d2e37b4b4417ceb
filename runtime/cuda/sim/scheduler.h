// Runs one kernel launch of a simulated module (abi.h): every CUDA thread
// a fiber (fiber.h) on the calling host thread, switched only where CUDA
// threads synchronise, so a thread runs until it reaches a barrier, a warp
// operation, __nanosleep or its end.
//
// CUDA's rules are enforced, and breaking one ends the launch with an
// error naming the kernel, the block, the threads and the source line:
//   - __syncthreads (barrier.sync.aligned): every thread of the block
//     reaches the same barrier; threads waiting at different barriers, or
//     while others of the block have exited, are divergence;
//   - warp operations: the calling lane is in its mask; every non-exited
//     lane of the mask reaches the same operation with the same mask (a
//     lane waiting at a barrier or at another operation instead is
//     divergence); a shuffle reading a lane outside the mask, or one that
//     exited, reads an undefined value, reported;
//   - a fault (memory.h's guard pages, a misaligned vector access, an
//     integer division trap) names the address and what it belongs to;
//   - no thread can run: the waits of every thread are listed.
//
// Blocks run one after another, in the schedule's order; a cooperative
// launch holds all its blocks at once (grid barriers spin in __nanosleep,
// which lets every other thread run first). Within a resident set, the
// schedule orders the threads: forward (0, 1, ...), reverse, or random
// with a seed. A correct kernel gives the same bits under every schedule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ir/support/expected.h"
#include "runtime/cuda/sim/abi.h"

namespace kfuse::cuda::sim {

enum class Order : uint8_t { Forward, Reverse, Random };

struct Schedule {
  Order order = Order::Forward;
  uint64_t seed = 1;  // Random only
};

// "forward", "reverse", "random:SEED" (and back).
std::string scheduleName(const Schedule& s);
Expected<Schedule> parseSchedule(std::string_view text);

struct Launch {
  const kfsim_entry* entry = nullptr;
  std::string name;  // the entry and its module, for messages
  void* const* params = nullptr;  // cuLaunchKernel's kernelParams
  kfsim_dim3 grid{1, 1, 1}, block{1, 1, 1};
  size_t sharedBytes = 0;    // dynamic shared memory per block
  bool cooperative = false;  // all blocks resident at once
};

// The simulated device (what the simulated driver reports).
constexpr unsigned kMaxThreadsPerBlock = 1024;
constexpr size_t kDefaultSharedBytes = 48 * 1024;  // without cuFuncSetAttribute
constexpr size_t kMaxSharedBytes = 227 * 1024;     // with it (sm_90's opt-in limit)
constexpr int kMultiprocessors = 4;
// Blocks of `blockThreads` threads that one multiprocessor holds at once:
// what a cooperative launch may have per multiprocessor. Kept small (2048
// threads per multiprocessor would be a GPU's) because every resident
// thread is a fiber with its own stack.
int maxActiveBlocksPerMultiprocessor(unsigned blockThreads);

// Runs the launch to completion; an error says what broke which rule.
// The launch's geometry is checked by the caller (the simulated driver).
Status runLaunch(const Launch& launch, const Schedule& schedule);

// The table simulated modules are given (abi.h).
const kfsim_api* simulatorApi();

}  // namespace kfuse::cuda::sim
