// The machine CPU kernels are generated for, and LLVM's view of it.
#pragma once

#include <memory>
#include <string>

#include <llvm/Target/TargetMachine.h>

#include "ir/support/expected.h"

namespace kfuse::cpu {

// A target triple, CPU name and feature string, as LLVM spells them.
struct CpuTarget {
  std::string triple;    // "x86_64-pc-linux-gnu"
  std::string cpu;       // "sapphirerapids"
  std::string features;  // "+avx2,+fma,-avx512fp16,..."

  // The machine this process runs on, every feature it has.
  static CpuTarget host();
};

// Registers LLVM's native target, asm printer and parser. Runs once per
// process whatever the number of callers or threads.
void initializeNativeTarget();

// A TargetMachine at the highest codegen optimisation level. Position-
// independent code when `pic` (objects that go into shared libraries).
Expected<std::unique_ptr<llvm::TargetMachine>> createTargetMachine(const CpuTarget& target, bool pic);

}  // namespace kfuse::cpu
