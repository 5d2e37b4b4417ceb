// The machine CPU kernels are generated for, and LLVM's view of it.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <llvm/Target/TargetMachine.h>

#include "ir/support/expected.h"

namespace kfuse::cpu {

// A target triple, CPU name and feature string, as LLVM spells them.
struct CpuTarget {
  std::string triple;    // "x86_64-pc-linux-gnu"
  std::string cpu;       // "sapphirerapids"
  std::string features;  // "+avx2,+fma,-avx512fp16,..."

  // The machine this process runs on, every feature it has. Where LLVM
  // cannot read the CPU's features, the architecture's baseline ("x86-64":
  // SSE2), with a note on stderr once, never guessed features.
  static CpuTarget host();
  // A CPU by LLVM's name ("x86-64-v3", "skylake-avx512") on this machine's
  // architecture, with the features that name implies; errors list nothing
  // but say where to find the names (llc -mcpu=help).
  static Expected<CpuTarget> named(const std::string& cpu);
};

// The target for `cpu` as the --cpu flags take it: "" or "native" is this
// machine (host()), anything else named(). The one place that picks the
// host: everything else receives a target.
Expected<CpuTarget> cpuTargetFor(std::string_view cpu);

// Every feature code for `target` may use, by LLVM's name ("avx2", "fma"):
// those the CPU name implies and those the feature string adds, each with
// what it implies (avx2: avx, sse4.2, ...), less what the string removes
// with what depends on it, as LLVM's code generator applies them.
Expected<std::vector<std::string>> enabledFeatures(const CpuTarget& target);

// Registers LLVM's native target, asm printer and parser. Runs once per
// process whatever the number of callers or threads.
void initializeNativeTarget();

// A TargetMachine at the highest codegen optimisation level. Position-
// independent code when `pic` (objects that go into shared libraries).
Expected<std::unique_ptr<llvm::TargetMachine>> createTargetMachine(const CpuTarget& target, bool pic);

}  // namespace kfuse::cpu
