// The on-disk cache of compiled CPU code: one object file per generated
// function (a kernel, a direct convolution, a packed GEMM), so that a model
// run again, or another model sharing kernels with it, is linked from the
// cache instead of compiled (ViT-tiny's 120 kernels took 4 s to compile).
//
// An entry is keyed by SHA-256 of everything the code depends on: the code
// generator itself (the GNU build-id of the binary kfuse's code generator is
// linked into, which changes with any change to it, so that a rebuilt kfuse
// never loads code an older one generated), the CPU and its features, the
// optimisation level, the subtarget's choices its features do not fix (a
// JIT made from a changed subtarget: CpuJit::create), and the function's
// whole description (its kernel IR, convolution or GEMM spec, tiling,
// epilogue) with its symbol name, which
// the JIT derives from that description (jit.h), not from the model's names.
// What an entry holds is the JIT's: the symbol its object defines (another
// unit's, when their emitted code was the same) and the object.
// One file per key, written under a temporary name and renamed into place,
// so a crash leaves no half-written entry; the file carries the SHA-256 of
// its payload, and an entry whose length, magic or checksum is wrong is
// never loaded: it is removed, compiled again and rewritten. (codegen/cuda/compile_cache.h keeps NVRTC's
// outputs the same way.)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/support/expected.h"

namespace kfuse::cpu {

class ObjectCache {
 public:
  // `dir` empty: no cache.
  explicit ObjectCache(std::string dir) : dir_(std::move(dir)) {}
  // ~/.cache/kfuse/cpu ($HOME's), or "" when there is no home directory.
  static std::string defaultDir();
  // The code generator's identity (hex of the build-id note of the binary
  // this code is linked into); "" when the binary has none, and then
  // nothing may be cached.
  static std::string codeGeneratorId();

  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }
  // SHA-256 (hex) of the parts, each length-prefixed so that no two lists
  // of parts share a key.
  static std::string key(const std::vector<std::string_view>& parts);
  std::string pathOf(const std::string& key) const;

  // The object's bytes, or nullopt when missing or invalid (an invalid
  // entry is removed).
  std::optional<std::string> load(const std::string& key) const;
  // A cache that cannot be written costs only time: callers may ignore the error.
  Status store(const std::string& key, const std::string& object) const;

 private:
  std::string dir_;
};

}  // namespace kfuse::cpu
