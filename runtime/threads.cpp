#include "runtime/threads.h"

#include <sched.h>

#include <thread>

namespace kfuse {

int availableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

void runChunks(const std::vector<std::pair<int64_t, int64_t>>& chunks,
               const std::function<void(int64_t, int64_t)>& body) {
  if (chunks.size() == 1) {
    body(chunks[0].first, chunks[0].second);
    return;
  }
  const auto n = static_cast<int64_t>(chunks.size());
#pragma omp parallel for num_threads(static_cast<int>(n)) schedule(static, 1)
  for (int64_t i = 0; i < n; ++i) body(chunks[static_cast<size_t>(i)].first, chunks[static_cast<size_t>(i)].second);
}

}  // namespace kfuse
