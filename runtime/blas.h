// OpenBLAS, opened by the runtime on first use rather than linked. OpenBLAS
// picks its kernels when it is loaded, from the CPU's model number; on CPUs
// it does not know (virtual machines report "Intel Xeon Processor") it falls
// back to its SSE3 kernels ("Prescott"), which made the 784-512-512-10 Adam
// step 3.2x slower on an AVX-512 machine. Opening it here lets the runtime
// first name the core by the instruction sets the CPU has (SkylakeX with
// AVX-512, Haswell with AVX2 and FMA) in OPENBLAS_CORETYPE, OpenBLAS's own
// setting, unless the user has set it. OpenBLAS is told to use one thread:
// the runner's threads (runtime/threads.h) run batches of GEMMs side by side,
// and OpenBLAS's pool beside them would oversubscribe the cores. A single
// GEMM is never split across threads: OpenBLAS's result for a row depends on
// which rows it is computed with (its kernels for the last rows of a block
// accumulate in another order), so splitting would make results depend on
// the thread count.
#pragma once

#include <cblas.h>

#include <string>

#include "ir/support/expected.h"

namespace kfuse {

struct Blas {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&cblas_dgemm) dgemm = nullptr;
  std::string core;  // the kernels OpenBLAS runs ("SkylakeX")
};

// Opens OpenBLAS once per process, from any thread; an Error says why it
// cannot be opened.
Expected<const Blas*> openBlas();

}  // namespace kfuse
