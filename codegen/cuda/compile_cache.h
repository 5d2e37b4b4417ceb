// The on-disk cache of NVRTC outputs and the parallel compilation of a
// plan's units.
//
// An entry is keyed by SHA-256 of (NVRTC version, options, source), one file
// per key, written to a temporary name and renamed into place (a crash
// leaves no half-written entry under the real name). The file holds a
// header with the sizes and the SHA-256 of the payload; an entry whose
// length or checksum does not match (truncated, corrupted, another format)
// is never loaded: it is recompiled and overwritten.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codegen/cuda/nvrtc_compiler.h"

namespace kfuse::cuda {

class CompileCache {
 public:
  // `dir` empty: no cache. Without a SHA-256 implementation (kfuse built
  // without LLVM, whose Support library provides it) there is never a cache.
  explicit CompileCache(std::string dir);
  static bool hashAvailable();
  // ~/.cache/kfuse/nvrtc ($HOME's), or "" when there is no home directory.
  static std::string defaultDir();

  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }
  static std::string key(const std::string& source, const NvrtcOptions& opts);
  // The key of `source` compiled by a compiler of that identity (UnitCompiler).
  static std::string key(const std::string& source, const std::string& compilerIdentity);
  std::string pathOf(const std::string& key) const;

  // nullopt when missing or invalid (an invalid entry is removed).
  std::optional<CompiledUnit> load(const std::string& key) const;
  Status store(const std::string& key, const CompiledUnit& unit) const;

 private:
  std::string dir_;
};

struct CompileJob {
  std::string source;
  std::string what;  // for errors
  std::vector<std::string> entries;  // its extern "C" entries (the simulator's compiler lists them)
};

// What compiles units: NVRTC, or the simulator's host compiler
// (host_compiler.h). `identity` (the compiler, its version and options) is
// part of every cache key.
struct UnitCompiler {
  std::string identity;
  std::function<Expected<CompiledUnit>(const CompileJob&)> compile;
};
UnitCompiler nvrtcUnitCompiler(const NvrtcOptions& opts);

struct CompileStats {
  size_t units = 0;
  size_t compiled = 0;   // by NVRTC
  size_t cacheHits = 0;
  double seconds = 0;    // wall time of the whole batch
};

// Compiles every job on `threads` threads (0: one per hardware thread),
// reading and filling the cache; one result per job, in job order.
std::vector<Expected<CompiledUnit>> compileEach(const std::vector<CompileJob>& jobs, const NvrtcOptions& opts,
                                                const CompileCache& cache, int threads, CompileStats* stats = nullptr);

std::vector<Expected<CompiledUnit>> compileEach(const std::vector<CompileJob>& jobs, const UnitCompiler& compiler,
                                                const CompileCache& cache, int threads, CompileStats* stats = nullptr);

// compileEach's results, or the first failure in job order.
Expected<std::vector<CompiledUnit>> compileAll(const std::vector<CompileJob>& jobs, const NvrtcOptions& opts,
                                               const CompileCache& cache, int threads, CompileStats* stats = nullptr);
Expected<std::vector<CompiledUnit>> compileAll(const std::vector<CompileJob>& jobs, const UnitCompiler& compiler,
                                               const CompileCache& cache, int threads, CompileStats* stats = nullptr);

}  // namespace kfuse::cuda
