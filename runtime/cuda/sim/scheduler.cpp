#include "runtime/cuda/sim/scheduler.h"

#include <setjmp.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "ir/support/strings.h"
#include "runtime/cuda/sim/fiber.h"
#include "runtime/cuda/sim/memory.h"
#include "runtime/cuda/sim/threads.h"

namespace kfuse::cuda::sim {
namespace {

// Rounds in a row in which only threads in __nanosleep ran, and each went
// back to sleep, before the launch is declared stuck (a grid barrier in a
// launch whose blocks are not all resident spins forever).
constexpr int kMaxIdleRounds = 1000;

// splitmix64: the random schedule's generator (seeded, the same on every machine).
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }
};

// The fibers of this host thread, reused from launch to launch.
std::vector<std::unique_ptr<Fiber>>& fiberPool() {
  thread_local std::vector<std::unique_ptr<Fiber>> pool;
  return pool;
}

class Runner;
thread_local Runner* tCurrent = nullptr;

void threadMain();
void onSignal(int sig, siginfo_t* info, void* context);

class Runner {
 public:
  Runner(const Launch& l, const Schedule& s) : l_(l), schedule_(s), rng_{s.seed} {
    blockThreads_ = l.block.x * l.block.y * l.block.z;
  }
  ~Runner() {
    for (unsigned char* p : smem_) freeRegion(p);
  }

  Status run();

  // The API's side (on a thread's fiber).
  const kfsim_thread* self() const { return &running_->pub; }
  int barrier(int op, int pred, int line);
  unsigned long long warp(int op, unsigned mask, unsigned long long value, int arg, int width, int line);
  void yield();
  [[noreturn]] void fault(const char* what, int line);
  [[noreturn]] void exitThread();
  [[noreturn]] void runEntry() {
    l_.entry->thunk(l_.params);
    exitThread();
  }

  // The signal handler's side.
  bool inKernel() const { return running_ != nullptr; }
  [[noreturn]] void trapped(int sig, uintptr_t address) {
    signal_ = sig;
    address_ = address;
    siglongjmp(jmp_, 1);
  }

 private:
  bool placeBlocks(size_t first, size_t count);
  void schedule();
  bool pick(uint32_t& index);
  void makeReady(std::vector<uint32_t> ids);
  void afterSwitch(Thread& t);
  void onExit(Thread& t);
  void onBarrier(Thread& t);
  void onWarp(Thread& t);
  void completeWarp(const Thread& t);
  void fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
  }
  std::string where(const Thread& t) const {
    return str("block ", formatDim(t.pub.blockIdx), " thread ", formatDim(t.pub.threadIdx));
  }
  Thread& lane(const Thread& t, unsigned laneId) { return threads_[t.warpBase + laneId]; }
  bool laneExists(const Thread& t, unsigned laneId) const {
    return t.warpBase + laneId < blocks_[t.block].first + blockThreads_;
  }

  const Launch& l_;
  Schedule schedule_;
  Rng rng_;
  unsigned blockThreads_ = 0;
  HostContext main_;
  sigjmp_buf jmp_{};
  int signal_ = 0;
  uintptr_t address_ = 0;
  std::vector<Thread> threads_;
  std::vector<BlockState> blocks_;
  std::vector<unsigned char*> smem_;  // per resident block
  std::vector<uint64_t> blockOrder_;  // the grid's blocks (linear indices) in schedule order
  // Threads that can run, the next on top (a stack: threads an operation
  // releases run before those that were waiting to run already).
  std::vector<uint32_t> ready_;
  std::vector<uint32_t> sleepers_;
  size_t live_ = 0;
  int idleRounds_ = 0;
  Thread* running_ = nullptr;
  std::string error_;
};

// Resident blocks [first, first + count) of the grid's blocks in schedule
// order: their threads on fresh fibers, shared memory filled with NaN.
bool Runner::placeBlocks(size_t first, size_t count) {
  const kfsim_dim3 g = l_.grid;
  threads_.assign(count * blockThreads_, Thread{});
  blocks_.assign(count, BlockState{});
  auto& pool = fiberPool();
  while (pool.size() < threads_.size()) pool.push_back(std::make_unique<Fiber>());
  while (smem_.size() < count) {
    auto* p = static_cast<unsigned char*>(allocateRegion(l_.sharedBytes, 16, RegionKind::Shared));
    if (!p) return false;
    smem_.push_back(p);
  }
  for (size_t b = 0; b < count; ++b) {
    uint64_t linear = blockOrder_[first + b];
    BlockState& bs = blocks_[b];
    bs.first = static_cast<uint32_t>(b * blockThreads_);
    bs.live = blockThreads_;
    bs.index = {static_cast<unsigned>(linear % g.x), static_cast<unsigned>(linear / g.x % g.y),
                static_cast<unsigned>(linear / (static_cast<uint64_t>(g.x) * g.y))};
    // 0xFF bytes: NaN in every float type, -1 in every integer one.
    std::memset(smem_[b], 0xFF, l_.sharedBytes);
    for (unsigned i = 0; i < blockThreads_; ++i) {
      Thread& t = threads_[bs.first + i];
      t.pub.threadIdx = {i % l_.block.x, i / l_.block.x % l_.block.y, i / (l_.block.x * l_.block.y)};
      t.pub.blockIdx = bs.index;
      t.pub.blockDim = l_.block;
      t.pub.gridDim = g;
      t.pub.smem = smem_[b];
      t.block = static_cast<uint32_t>(b);
      t.linear = i;
      t.warpBase = bs.first + i / 32 * 32;
      t.fiber = pool[bs.first + i].get();
      if (!t.fiber->prepare(threadMain)) return false;
    }
  }
  live_ = threads_.size();
  ready_.clear();
  sleepers_.clear();
  std::vector<uint32_t> all(threads_.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint32_t>(i);
  makeReady(std::move(all));
  return true;
}

// Threads become ready in the schedule's order, ahead of those ready
// before them: forward runs the lowest index first, reverse the highest;
// random picks among all ready threads. Running released threads first
// lets a warp or thread race ahead of the others, as one may on a GPU:
// a missing barrier then shows as a thread reading a slot before its
// writer wrote it, or after the next phase overwrote it.
void Runner::makeReady(std::vector<uint32_t> ids) {
  std::sort(ids.begin(), ids.end());
  if (schedule_.order != Order::Reverse) std::reverse(ids.begin(), ids.end());
  for (uint32_t i : ids) {
    threads_[i].state = ThreadState::Ready;
    ready_.push_back(i);
  }
}

bool Runner::pick(uint32_t& index) {
  if (ready_.empty()) return false;
  if (schedule_.order == Order::Random) std::swap(ready_[rng_.below(ready_.size())], ready_.back());
  index = ready_.back();
  ready_.pop_back();
  return true;
}

void Runner::schedule() {
  while (error_.empty()) {
    uint32_t i = 0;
    if (!pick(i)) {
      if (live_ == 0) return;
      if (!sleepers_.empty()) {
        if (++idleRounds_ > kMaxIdleRounds) {
          fail(str("no progress: every thread that can run spins in __nanosleep (", sleepers_.size(),
                   " of them), waiting for something no thread will do (a grid barrier in a launch that is not "
                   "cooperative?)\n",
                   describeWaits(threads_, blocks_, blockThreads_)));
          return;
        }
        std::vector<uint32_t> wake;
        wake.swap(sleepers_);
        makeReady(std::move(wake));
        continue;
      }
      fail(str("deadlock: no thread can run\n", describeWaits(threads_, blocks_, blockThreads_)));
      return;
    }
    Thread& t = threads_[i];
    t.state = ThreadState::Running;
    running_ = &t;
    t.fiber->enter(main_);
    running_ = nullptr;
    afterSwitch(t);
  }
}

void Runner::afterSwitch(Thread& t) {
  if (t.state != ThreadState::Sleeping) idleRounds_ = 0;
  switch (t.state) {
    case ThreadState::Exited: onExit(t); break;
    case ThreadState::Barrier: onBarrier(t); break;
    case ThreadState::Warp: onWarp(t); break;
    case ThreadState::Sleeping: sleepers_.push_back(static_cast<uint32_t>(&t - threads_.data())); break;
    default: break;  // Faulted: error_ is set
  }
}

void Runner::onExit(Thread& t) {
  BlockState& b = blocks_[t.block];
  --b.live;
  ++b.exited;
  --live_;
  if (b.arrived > 0) {
    for (uint32_t i = b.first; i < b.first + blockThreads_; ++i)
      if (threads_[i].state == ThreadState::Barrier)
        return fail(str("divergent __syncthreads: ", where(t), " exited while ", where(threads_[i]),
                        " and others wait at the barrier on line ", threads_[i].line,
                        " (every thread of a block must reach each barrier)\n",
                        describeWaits(threads_, blocks_, blockThreads_)));
  }
  // Lanes waiting for this one at a warp operation go on without it (one
  // check per distinct mask: that is a group).
  std::vector<uint32_t> waiting;
  std::vector<unsigned> masks;
  for (unsigned j = 0; j < 32 && laneExists(t, j); ++j) {
    const Thread& u = lane(t, j);
    if (u.state != ThreadState::Warp || !(u.mask >> (t.linear % 32) & 1u)) continue;
    if (std::find(masks.begin(), masks.end(), u.mask) != masks.end()) continue;
    masks.push_back(u.mask);
    waiting.push_back(t.warpBase + j);
  }
  for (uint32_t i : waiting)
    if (error_.empty() && threads_[i].state == ThreadState::Warp) onWarp(threads_[i]);
}

void Runner::onBarrier(Thread& t) {
  BlockState& b = blocks_[t.block];
  if (b.exited > 0)
    return fail(str("divergent __syncthreads: ", where(t), " waits at the barrier on line ", t.line, " but ", b.exited,
                    " thread(s) of its block exited without reaching it\n",
                    describeWaits(threads_, blocks_, blockThreads_)));
  if (b.arrived > 0 && (b.barrierLine != t.line || b.barrierOp != t.op)) {
    const Thread* other = &t;
    for (uint32_t i = b.first; i < b.first + blockThreads_; ++i)
      if (threads_[i].state == ThreadState::Barrier && threads_[i].line == b.barrierLine) other = &threads_[i];
    return fail(str("divergent __syncthreads: ", where(t), " waits at the barrier on line ", t.line, ", ", where(*other),
                    " at the one on line ", b.barrierLine, "\n", describeWaits(threads_, blocks_, blockThreads_)));
  }
  // A lane of its warp waiting for it at a warp operation never gets it.
  for (unsigned j = 0; j < 32 && laneExists(t, j); ++j) {
    const Thread& u = lane(t, j);
    if (u.state == ThreadState::Warp && (u.mask >> (t.linear % 32) & 1u))
      return fail(str("divergence: ", where(t), " waits at __syncthreads on line ", t.line, " while ", where(u),
                      " waits for it at a warp operation on line ", u.line, "\n",
                      describeWaits(threads_, blocks_, blockThreads_)));
  }
  b.barrierLine = t.line;
  b.barrierOp = t.op;
  if (++b.arrived < b.live) return;
  // Everyone is here: the predicate's fold, then all go on.
  int any = 0, all = 1, count = 0;
  std::vector<uint32_t> released;
  released.reserve(blockThreads_);
  for (uint32_t i = b.first; i < b.first + blockThreads_; ++i) {
    Thread& u = threads_[i];
    if (u.state != ThreadState::Barrier) continue;
    any |= u.pred;
    all &= u.pred;
    count += u.pred;
    released.push_back(i);
  }
  const int result = t.op == KFSIM_BAR_OR ? any : t.op == KFSIM_BAR_AND ? all : t.op == KFSIM_BAR_COUNT ? count : 0;
  for (uint32_t i : released) threads_[i].result = static_cast<unsigned long long>(result);
  b.arrived = 0;
  makeReady(std::move(released));
}

// A lane arrived at a warp operation (or a lane it waits for exited):
// checks the mask and the others of it, and completes the operation when
// every non-exited lane of the mask is there.
void Runner::onWarp(Thread& t) {
  const unsigned self = t.linear % 32;
  if (!(t.mask >> self & 1u))
    return fail(str(where(t), " (lane ", self, ") calls ", warpOpName(t.op), " on line ", t.line, " with mask ",
                    hexMask(t.mask), ", which does not include its own lane"));
  if (t.op <= KFSIM_SHFL_XOR && (t.width < 1 || t.width > 32 || (t.width & (t.width - 1)) != 0))
    return fail(str(where(t), " calls ", warpOpName(t.op), " on line ", t.line, " with width ", t.width,
                    " (a power of two up to 32)"));
  for (unsigned j = 0; j < 32; ++j) {
    if (!(t.mask >> j & 1u) || j == self || !laneExists(t, j)) continue;
    const Thread& u = lane(t, j);
    switch (u.state) {
      case ThreadState::Exited: continue;  // CUDA: the non-exited lanes of the mask
      case ThreadState::Warp:
        if (u.op != t.op || u.mask != t.mask || u.width != t.width)
          return fail(str("divergent warp operation: ", where(t), " waits at ", warpOpName(t.op), " (mask ",
                          hexMask(t.mask), ", width ", t.width, ") on line ", t.line, ", lane ", j, " at ",
                          warpOpName(u.op), " (mask ", hexMask(u.mask), ", width ", u.width, ") on line ", u.line));
        continue;
      case ThreadState::Barrier:
        return fail(str("divergence: ", where(t), " waits at ", warpOpName(t.op), " on line ", t.line, " for lane ", j,
                        ", which waits at __syncthreads on line ", u.line, "\n",
                        describeWaits(threads_, blocks_, blockThreads_)));
      default: return;  // not there yet
    }
  }
  completeWarp(t);
}

// PTX shfl.sync's lane selection (CUDA passes c = ((32 - width) << 8) |
// (up ? 0 : 31)): the source lane j, and whether it is valid (else the
// lane keeps its own value). `arg` uses its low 5 bits.
unsigned shuffleSource(int op, unsigned lane, int arg, int width, bool& own) {
  const int segmask = (32 - width) & 0x1f;
  const int cval = op == KFSIM_SHFL_UP ? 0 : 0x1f;
  const int bval = arg & 0x1f;
  const int l = static_cast<int>(lane);
  const int maxLane = (l & segmask) | (cval & ~segmask);
  const int minLane = l & segmask;
  int j = l;
  bool valid = true;
  switch (op) {
    case KFSIM_SHFL_UP:
      j = l - bval;
      valid = j >= maxLane;
      break;
    case KFSIM_SHFL_DOWN:
      j = l + bval;
      valid = j <= maxLane;
      break;
    case KFSIM_SHFL_XOR:
      j = l ^ bval;
      valid = j <= maxLane;
      break;
    default:
      j = minLane | (bval & ~segmask);
      valid = j <= maxLane;
      break;
  }
  own = !valid;
  return valid ? static_cast<unsigned>(j) : lane;
}

void Runner::completeWarp(const Thread& t) {
  std::vector<uint32_t> group;  // the non-exited lanes of the mask
  for (unsigned j = 0; j < 32; ++j)
    if ((t.mask >> j & 1u) && laneExists(t, j) && lane(t, j).state == ThreadState::Warp)
      group.push_back(t.warpBase + j);
  const int op = t.op;
  if (op <= KFSIM_SHFL_XOR) {
    std::vector<unsigned long long> results(group.size());
    for (size_t g = 0; g < group.size(); ++g) {
      const Thread& u = threads_[group[g]];
      bool own = false;
      unsigned src = shuffleSource(op, u.linear % 32, u.arg, u.width, own);
      if (own) {
        results[g] = u.value;
        continue;
      }
      bool present = (t.mask >> src & 1u) && laneExists(t, src) && lane(t, src).state == ThreadState::Warp;
      if (!present)
        return fail(str(where(u), " (lane ", u.linear % 32, ") reads lane ", src, " with ", warpOpName(op), " on line ",
                        u.line, ", which is ", (t.mask >> src & 1u) ? "exited" : str("not in the mask ", hexMask(t.mask)),
                        ": the value is undefined"));
      results[g] = lane(t, src).value;
    }
    for (size_t g = 0; g < group.size(); ++g) threads_[group[g]].result = results[g];
  } else {
    unsigned long long ballot = 0;
    for (uint32_t i : group)
      if (threads_[i].value) ballot |= 1ull << (threads_[i].linear % 32);
    const unsigned long long members = [&] {
      unsigned long long m = 0;
      for (uint32_t i : group) m |= 1ull << (threads_[i].linear % 32);
      return m;
    }();
    unsigned long long r = op == KFSIM_BALLOT ? ballot : op == KFSIM_ANY ? (ballot != 0) : op == KFSIM_ALL ? (ballot == members) : 0;
    for (uint32_t i : group) threads_[i].result = r;
  }
  makeReady(std::move(group));
}

// ---- the API's side, on a thread's fiber ----

int Runner::barrier(int op, int pred, int line) {
  Thread& t = *running_;
  t.state = ThreadState::Barrier;
  t.op = op;
  t.pred = pred;
  t.line = line;
  t.fiber->leave(main_);
  return static_cast<int>(t.result);
}

unsigned long long Runner::warp(int op, unsigned mask, unsigned long long value, int arg, int width, int line) {
  Thread& t = *running_;
  t.state = ThreadState::Warp;
  t.op = op;
  t.mask = mask;
  t.value = value;
  t.arg = arg;
  t.width = width;
  t.line = line;
  t.fiber->leave(main_);
  return t.result;
}

void Runner::yield() {
  Thread& t = *running_;
  t.state = ThreadState::Sleeping;
  t.fiber->leave(main_);
}

void Runner::fault(const char* what, int line) {
  Thread& t = *running_;
  t.state = ThreadState::Faulted;
  fail(str(what, " on line ", line, " in ", where(t)));
  t.fiber->leave(main_);
  __builtin_unreachable();  // a faulted thread is never resumed
}

void Runner::exitThread() {
  Thread& t = *running_;
  t.state = ThreadState::Exited;
  t.fiber->leave(main_);
  __builtin_unreachable();
}

void threadMain() { tCurrent->runEntry(); }

const kfsim_thread* apiSelf() { return tCurrent->self(); }
int apiBarrier(int op, int pred, int line) { return tCurrent->barrier(op, pred, line); }
unsigned long long apiWarp(int op, unsigned mask, unsigned long long value, int arg, int width, int line) {
  return tCurrent->warp(op, mask, value, arg, width, line);
}
void apiYield() { tCurrent->yield(); }
void apiFault(const char* what, int line) { tCurrent->fault(what, line); }

const kfsim_api kApi = {KFSIM_ABI_VERSION, apiSelf, apiBarrier, apiWarp, apiYield, apiFault};

// ---- faults ----

struct sigaction previous[NSIG];

void onSignal(int sig, siginfo_t* info, void* context) {
  Runner* r = tCurrent;
  if (r && r->inKernel()) r->trapped(sig, reinterpret_cast<uintptr_t>(info->si_addr));
  // Not a simulated thread's: whoever handled it before us does.
  const struct sigaction& old = previous[sig];
  if (old.sa_flags & SA_SIGINFO) {
    if (old.sa_sigaction) return old.sa_sigaction(sig, info, context);
  } else if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN) {
    return old.sa_handler(sig);
  }
  signal(sig, SIG_DFL);  // the instruction faults again, with the default action
}

void installHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = onSignal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE}) sigaction(sig, &sa, &previous[sig]);
  });
}

std::string signalWhat(int sig, uintptr_t address) {
  if (sig == SIGFPE) return "an integer division by zero or overflow (x86 traps where a GPU gives an unspecified value)";
  char hex[32];
  std::snprintf(hex, sizeof(hex), "0x%llx", static_cast<unsigned long long>(address));
  return str("an access to ", hex, ": ", describeAddress(address));
}

Status Runner::run() {
  installHandlers();
  // The handler runs on its own stack: a fault may be a fiber's stack overflow.
  std::vector<char> altStack(64 * 1024);
  stack_t alt{}, oldAlt{};
  alt.ss_sp = altStack.data();
  alt.ss_size = altStack.size();
  sigaltstack(&alt, &oldAlt);
  Runner* outer = tCurrent;
  tCurrent = this;

  const size_t gridBlocks = static_cast<size_t>(l_.grid.x) * l_.grid.y * l_.grid.z;
  blockOrder_.resize(gridBlocks);
  for (size_t i = 0; i < gridBlocks; ++i) blockOrder_[i] = i;
  if (schedule_.order == Order::Reverse) std::reverse(blockOrder_.begin(), blockOrder_.end());
  if (schedule_.order == Order::Random)
    for (size_t i = gridBlocks; i > 1; --i) std::swap(blockOrder_[i - 1], blockOrder_[rng_.below(i)]);
  const size_t perPlacement = l_.cooperative ? gridBlocks : 1;
  if (sigsetjmp(jmp_, 1) == 0) {
    for (size_t first = 0; first < gridBlocks && error_.empty(); first += perPlacement) {
      if (!placeBlocks(first, perPlacement)) {
        fail("the host is out of memory for the simulated threads' stacks or shared memory");
        break;
      }
      schedule();
    }
  } else {
    fail(str(signalWhat(signal_, address_), " in ", running_ ? where(*running_) : std::string("a thread")));
    running_ = nullptr;
  }

  tCurrent = outer;
  sigaltstack(&oldAlt, nullptr);
  if (error_.empty()) return Status::ok();
  return Error(str("kernel ", l_.name, ": ", error_));
}

}  // namespace

const kfsim_api* simulatorApi() { return &kApi; }

Status runLaunch(const Launch& launch, const Schedule& schedule) {
  if (!launch.entry || !launch.entry->thunk) return Error(str("kernel ", launch.name, ": no entry"));
  Runner runner(launch, schedule);
  return runner.run();
}

int maxActiveBlocksPerMultiprocessor(unsigned blockThreads) {
  if (blockThreads == 0 || blockThreads > kMaxThreadsPerBlock) return 0;
  return std::max(1, static_cast<int>(512 / blockThreads));
}

std::string scheduleName(const Schedule& s) {
  switch (s.order) {
    case Order::Forward: return "forward";
    case Order::Reverse: return "reverse";
    case Order::Random: return str("random:", s.seed);
  }
  return "forward";
}

Expected<Schedule> parseSchedule(std::string_view text) {
  Schedule s;
  if (text == "forward") return s;
  if (text == "reverse") {
    s.order = Order::Reverse;
    return s;
  }
  if (text.substr(0, 7) == "random:" && text.size() > 7) {
    uint64_t seed = 0;
    for (char c : text.substr(7)) {
      if (c < '0' || c > '9' || seed > (~0ull - 9) / 10) return Error(str("bad seed in schedule '", text, "'"));
      seed = seed * 10 + static_cast<uint64_t>(c - '0');
    }
    s.order = Order::Random;
    s.seed = seed;
    return s;
  }
  return Error(str("unknown schedule '", text, "' (forward, reverse or random:SEED)"));
}

}  // namespace kfuse::cuda::sim
