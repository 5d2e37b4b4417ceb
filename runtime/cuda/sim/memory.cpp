#include "runtime/cuda/sim/memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <map>
#include <mutex>

#include "ir/support/strings.h"

namespace kfuse::cuda::sim {
namespace {

struct Region {
  uintptr_t mapping = 0;   // start of the whole mapping (guards included)
  size_t mappingBytes = 0;
  uintptr_t begin = 0;     // usable bytes [begin, begin + bytes)
  size_t bytes = 0;
  uintptr_t guardBegin = 0, guardEnd = 0;  // the inaccessible page(s) past the region
  RegionKind kind = RegionKind::Device;
};

size_t pageSize() {
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

size_t roundUp(size_t v, size_t a) { return (v + a - 1) / a * a; }

// Regions by their usable start.
std::mutex& registryMutex() {
  static std::mutex m;
  return m;
}
std::map<uintptr_t, Region>& registry() {
  static std::map<uintptr_t, Region> r;
  return r;
}

const char* kindName(RegionKind k) {
  switch (k) {
    case RegionKind::Device: return "device allocation";
    case RegionKind::Shared: return "block's dynamic shared memory";
    case RegionKind::Stack: return "thread's stack";
  }
  return "region";
}

}  // namespace

void* allocateRegion(size_t bytes, size_t align, RegionKind kind) {
  const size_t page = pageSize();
  if (align == 0 || align > page || (align & (align - 1)) != 0) return nullptr;
  const size_t usable = roundUp(bytes, align);
  // Stacks grow down: their guard is below them. Everything else has its
  // guard above, where a run past the end lands.
  const size_t dataPages = roundUp(std::max<size_t>(usable, 1), page);
  const size_t total = dataPages + page;
  void* m = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  Region r;
  r.mapping = reinterpret_cast<uintptr_t>(m);
  r.mappingBytes = total;
  r.bytes = bytes;
  r.kind = kind;
  if (kind == RegionKind::Stack) {
    r.guardBegin = r.mapping;
    r.guardEnd = r.mapping + page;
    r.begin = r.guardEnd;
  } else {
    r.guardBegin = r.mapping + dataPages;
    r.guardEnd = r.guardBegin + page;
    r.begin = r.guardBegin - usable;
  }
  if (::mprotect(reinterpret_cast<void*>(r.guardBegin), page, PROT_NONE) != 0) {
    ::munmap(m, total);
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(registryMutex());
  registry()[r.begin] = r;
  return reinterpret_cast<void*>(r.begin);
}

void freeRegion(void* p) {
  if (!p) return;
  Region r;
  {
    std::lock_guard<std::mutex> lock(registryMutex());
    auto it = registry().find(reinterpret_cast<uintptr_t>(p));
    if (it == registry().end()) return;
    r = it->second;
    registry().erase(it);
  }
  ::munmap(reinterpret_cast<void*>(r.mapping), r.mappingBytes);
}

size_t regionSize(const void* p) {
  std::lock_guard<std::mutex> lock(registryMutex());
  auto it = registry().find(reinterpret_cast<uintptr_t>(p));
  return it == registry().end() ? 0 : it->second.bytes;
}

bool insideRegion(uintptr_t p, size_t bytes, RegionKind kind) {
  std::lock_guard<std::mutex> lock(registryMutex());
  auto it = registry().upper_bound(p);
  if (it == registry().begin()) return false;
  --it;
  const Region& r = it->second;
  return r.kind == kind && p >= r.begin && p + bytes <= r.begin + r.bytes;
}

std::string describeAddress(uintptr_t a) {
  std::lock_guard<std::mutex> lock(registryMutex());
  for (const auto& [begin, r] : registry()) {
    if (a >= r.guardBegin && a < r.guardEnd) {
      if (r.kind == RegionKind::Stack) return "the guard page below a thread's stack (a stack overflow)";
      return str(a - (r.begin + r.bytes), " bytes past the end of a ", r.bytes, "-byte ", kindName(r.kind));
    }
    if (a >= r.begin && a < r.begin + r.bytes) return str("byte ", a - r.begin, " of a ", r.bytes, "-byte ", kindName(r.kind));
  }
  return "no memory of the simulated device (a host pointer, or garbage)";
}

}  // namespace kfuse::cuda::sim
