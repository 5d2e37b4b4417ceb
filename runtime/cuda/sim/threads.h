// The simulator's view of the threads of a launch's resident blocks
// (scheduler.cpp runs them; waits.cpp describes them in error messages).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/cuda/sim/abi.h"

namespace kfuse::cuda::sim {

class Fiber;

enum class ThreadState : uint8_t { Ready, Running, Barrier, Warp, Sleeping, Exited, Faulted };

struct Thread {
  kfsim_thread pub{};  // what device code reads (abi.h)
  Fiber* fiber = nullptr;
  ThreadState state = ThreadState::Ready;
  uint32_t block = 0;     // resident block slot
  uint32_t linear = 0;    // index in its block
  uint32_t warpBase = 0;  // index of its warp's lane 0 among the resident threads
  // The operation it waits at (Barrier, Warp) and its operands.
  int op = 0, line = 0, pred = 0, arg = 0, width = 32;
  unsigned mask = 0;
  unsigned long long value = 0, result = 0;
};

struct BlockState {
  uint32_t first = 0;  // its thread 0 among the resident threads
  uint32_t live = 0, exited = 0, arrived = 0;
  int barrierLine = 0, barrierOp = 0;  // of the barrier its arrived threads wait at
  kfsim_dim3 index{};
};

std::string formatDim(const kfsim_dim3& d);
std::string hexMask(unsigned mask);
const char* warpOpName(int op);
const char* barrierOpName(int op);

// Where every thread of the resident blocks is, in ranges of threads doing
// the same: "block (2,0,0): threads 0-31: at __shfl_down_sync (mask
// 0xffffffff) on line 120; threads 32-255: at __syncthreads on line 130".
// At most a few blocks, so that messages stay short.
std::string describeWaits(const std::vector<Thread>& threads, const std::vector<BlockState>& blocks,
                          unsigned blockThreads);

}  // namespace kfuse::cuda::sim
