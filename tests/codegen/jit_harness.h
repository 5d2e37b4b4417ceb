// Runs kernels with the CPU JIT and with the kernel interpreter on the same
// buffers and compares the outputs element by element.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "codegen/cpu/jit.h"
#include "exec/kernel_ir.h"
#include "exec/parallel.h"
#include "ir/tensor.h"

namespace kfuse::testing {

// |jit - reference| <= abs + rel * |reference|, or identical storage bits.
// Both zero: storage bits must be identical (data movement, integers).
// f16/bf16 outputs allow one rounding step of their own on top (the JIT
// rounds an f32 result, the interpreter a double one).
struct Tolerance {
  double rel = 0;
  double abs = 0;
  static Tolerance exact() { return {}; }
  static Tolerance f32() { return {1e-6, 1e-6}; }
};

// How random inputs are drawn: floats uniform in [lo, hi], integers uniform
// in [lo, hi] clamped to the dtype, bools 0/1; a `special` fraction of float
// elements are NaN, +-inf or +-0.
struct InputSpec {
  double lo = -2;
  double hi = 2;
  double special = 0;
};

Tensor randomTensor(const TensorType& type, std::mt19937_64& rng, const InputSpec& spec = {});

// The JIT every test shares (creating one costs a few milliseconds), for
// this machine: what it runs is this machine's code, which the suite's qemu
// runs check at lower ISA levels (docs/testing.md). Tests whose expectations
// depend on the code a CPU gets compile for a named one (subtargetNamed).
cpu::CpuJit& sharedJit();

// The subtarget of a CPU by LLVM's name ("haswell"), for code that is
// compiled (cpu::emitObject) but not run; aborts the test on a bad name.
const cpu::CpuSubtarget& subtargetNamed(const std::string& cpu);

// Compiles `k` alone and runs it on `buffers` (kernel order).
Status runJit(const kernel::Kernel& k, std::vector<Tensor>& buffers);
// Runs a compiled function on `buffers`, its work (exec/parallel.h) in up to
// three ranges one after the other, as three threads would split it: every
// generated function is checked on ranges, not only on the whole.
void runInRanges(cpu::KernelFn fn, void** args, const Work& w);
// Runs compiled kernel `k` on `buffers` (kernel order), in ranges.
void runCompiled(const kernel::Kernel& k, cpu::KernelFn fn, std::vector<Tensor>& buffers);

// Buffers for `k`: inputs random, outputs random too (so that an element
// one side forgets to write shows up).
std::vector<Tensor> randomBuffers(const kernel::Kernel& k, uint64_t seed, const InputSpec& spec = {});

// Compares outputs of two runs of `k`; the message names the kernel and the
// first mismatches.
::testing::AssertionResult outputsMatch(const kernel::Kernel& k, const std::vector<Tensor>& jit,
                                        const std::vector<Tensor>& reference, Tolerance tol);

// Runs an already compiled `fn` (of `k`) and the interpreter on random
// buffers and compares.
::testing::AssertionResult compiledMatchesInterpreter(const kernel::Kernel& k, cpu::KernelFn fn, Tolerance tol,
                                                      uint64_t seed, const InputSpec& spec = {});

// Runs `k` both ways on `buffers` and compares.
::testing::AssertionResult matchesInterpreter(const kernel::Kernel& k, std::vector<Tensor> buffers, Tolerance tol);
// The same on random buffers.
::testing::AssertionResult matchesInterpreter(const kernel::Kernel& k, Tolerance tol, uint64_t seed = 1,
                                              const InputSpec& spec = {});

}  // namespace kfuse::testing
