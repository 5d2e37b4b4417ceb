#include "runtime/blas.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "ir/support/strings.h"

namespace kfuse {
namespace {

// OpenBLAS's core for this CPU's instruction sets, or null (its own choice).
const char* coreForThisCpu() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return nullptr;
}

struct Loaded {
  Blas blas;
  std::string error;
};

Loaded load() {
  Loaded l;
  if (const char* core = coreForThisCpu(); core && !std::getenv("OPENBLAS_CORETYPE"))
    setenv("OPENBLAS_CORETYPE", core, /*overwrite=*/0);
  void* h = nullptr;
  std::string problems;
  for (const char* name : {"libopenblas.so.0", "libopenblas.so"}) {
    if ((h = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    problems += str(problems.empty() ? "" : "; ", dlerror());
  }
  if (!h) {
    l.error = str("OpenBLAS cannot be loaded (install libopenblas0): ", problems);
    return l;
  }
  l.blas.sgemm = reinterpret_cast<decltype(&cblas_sgemm)>(dlsym(h, "cblas_sgemm"));
  l.blas.dgemm = reinterpret_cast<decltype(&cblas_dgemm)>(dlsym(h, "cblas_dgemm"));
  if (!l.blas.sgemm || !l.blas.dgemm) l.error = "the loaded OpenBLAS lacks cblas_sgemm or cblas_dgemm";
  if (auto corename = reinterpret_cast<char* (*)()>(dlsym(h, "openblas_get_corename"))) l.blas.core = corename();
  if (auto setThreads = reinterpret_cast<void (*)(int)>(dlsym(h, "openblas_set_num_threads"))) setThreads(1);
  return l;
}

}  // namespace

Expected<const Blas*> openBlas() {
  static const Loaded loaded = load();  // thread-safe, once
  if (!loaded.error.empty()) return Error(loaded.error);
  return &loaded.blas;
}

}  // namespace kfuse
