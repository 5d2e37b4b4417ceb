// libFuzzer target: the package reader (runtime/package/package.h) on
// arbitrary bytes. Built with clang (-fsanitize=fuzzer,address,undefined)
// and FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, which makes the container
// accept sections whose checksum does not match, so that mutations reach
// the parsers behind it (meta, weights, plans, CUDA programs).
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/package/package.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto pkg = kfuse::Package::parse(std::string(reinterpret_cast<const char*>(data), size), "fuzz.kfpkg");
  if (!pkg) return 0;
  // What a runner reads first from an accepted package: every buffer's
  // storage, every step's buffers.
  for (const kfuse::PackageFunction& f : (*pkg)->functions()) {
    const kfuse::Plan& p = *f.plan;
    for (size_t b = 0; b < p.buffers.size(); ++b) (void)p.storageOf(static_cast<int>(b));
    for (const kfuse::Step& s : p.steps) (void)kfuse::stepBuffers(s);
    (void)kfuse::printPlan(p);
  }
  return 0;
}
