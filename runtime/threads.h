// The CPU runner's threads: OpenMP (GCC's libgomp) runs the chunks of a
// step's generated functions, GEMMs and convolutions (exec/parallel.h says
// how work splits); nothing else in kfuse starts threads, and OpenBLAS is
// told to use one (runtime/blas.h), so a run never has more busy threads
// than it was given.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace kfuse {

// The CPUs this process may run on (its affinity mask), at least 1: the
// default thread count.
int availableCpus();

// body(begin, end) for every chunk, each on its own thread (the calling
// thread among them); one chunk runs inline.
void runChunks(const std::vector<std::pair<int64_t, int64_t>>& chunks,
               const std::function<void(int64_t begin, int64_t end)>& body);

}  // namespace kfuse
