#include <cstdio>

#include "ir/support/strings.h"
#include "runtime/cuda/sim/threads.h"

namespace kfuse::cuda::sim {

std::string formatDim(const kfsim_dim3& d) { return str("(", d.x, ",", d.y, ",", d.z, ")"); }

std::string hexMask(unsigned mask) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", mask);
  return buf;
}

const char* warpOpName(int op) {
  switch (op) {
    case KFSIM_SHFL_IDX: return "__shfl_sync";
    case KFSIM_SHFL_UP: return "__shfl_up_sync";
    case KFSIM_SHFL_DOWN: return "__shfl_down_sync";
    case KFSIM_SHFL_XOR: return "__shfl_xor_sync";
    case KFSIM_BALLOT: return "__ballot_sync";
    case KFSIM_ANY: return "__any_sync";
    case KFSIM_ALL: return "__all_sync";
    case KFSIM_SYNCWARP: return "__syncwarp";
  }
  return "a warp operation";
}

const char* barrierOpName(int op) {
  switch (op) {
    case KFSIM_BAR_OR: return "__syncthreads_or";
    case KFSIM_BAR_AND: return "__syncthreads_and";
    case KFSIM_BAR_COUNT: return "__syncthreads_count";
    default: return "__syncthreads";
  }
}

namespace {

std::string waitOf(const Thread& t) {
  switch (t.state) {
    case ThreadState::Barrier: return str("at ", barrierOpName(t.op), " on line ", t.line);
    case ThreadState::Warp: return str("at ", warpOpName(t.op), " (mask ", hexMask(t.mask), ") on line ", t.line);
    case ThreadState::Sleeping: return "in __nanosleep";
    case ThreadState::Exited: return "exited";
    case ThreadState::Faulted: return "faulted";
    default: return "can run";
  }
}

}  // namespace

std::string describeWaits(const std::vector<Thread>& threads, const std::vector<BlockState>& blocks,
                          unsigned blockThreads) {
  constexpr size_t kMaxBlocks = 4;
  std::string out;
  size_t shown = 0;
  for (const BlockState& b : blocks) {
    bool stuck = false;
    for (uint32_t i = b.first; i < b.first + blockThreads; ++i) stuck |= threads[i].state != ThreadState::Exited;
    if (!stuck) continue;
    if (shown++ == kMaxBlocks) {
      out += "  ...\n";
      break;
    }
    out += str("  block ", formatDim(b.index), ":");
    std::string sep = " ";
    for (uint32_t i = b.first; i < b.first + blockThreads;) {
      std::string what = waitOf(threads[i]);
      uint32_t j = i + 1;
      while (j < b.first + blockThreads && waitOf(threads[j]) == what) ++j;
      uint32_t lo = i - b.first, hi = j - 1 - b.first;
      out += str(sep, lo == hi ? str("thread ", lo) : str("threads ", lo, "-", hi), ": ", what);
      sep = "; ";
      i = j;
    }
    out += "\n";
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace kfuse::cuda::sim
