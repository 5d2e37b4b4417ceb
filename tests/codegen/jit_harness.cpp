#include "tests/codegen/jit_harness.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>

#include "exec/kernel_eval.h"
#include "ir/support/strings.h"

namespace kfuse::testing {
namespace {

double integerLo(DType t) { return t == DType::U8 ? 0 : t == DType::I8 ? -128 : -1e18; }
double integerHi(DType t) { return t == DType::U8 ? 255 : t == DType::I8 ? 127 : 1e18; }

double specialValue(std::mt19937_64& rng) {
  static constexpr double kSpecial[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0};
  return kSpecial[std::uniform_int_distribution<size_t>(0, 4)(rng)];
}

// One rounding step of a float storage dtype, relative.
double storageEpsilon(DType t) {
  switch (t) {
    case DType::F16: return 0x1p-10;
    case DType::BF16: return 0x1p-7;
    default: return 0;
  }
}

bool sameBits(const Tensor& a, const Tensor& b, int64_t i) {
  size_t size = dtypeSize(a.dtype());
  return std::memcmp(a.data() + static_cast<size_t>(i) * size, b.data() + static_cast<size_t>(i) * size, size) == 0;
}

bool close(double jit, double ref, Tolerance tol, DType t) {
  if (std::isnan(jit) && std::isnan(ref)) return true;
  if (jit == ref) return true;
  if (std::isinf(jit) || std::isinf(ref) || (tol.rel == 0 && tol.abs == 0)) return false;
  double rel = tol.rel + storageEpsilon(t);
  return std::fabs(jit - ref) <= tol.abs + rel * std::fabs(ref);
}

}  // namespace

Tensor randomTensor(const TensorType& type, std::mt19937_64& rng, const InputSpec& spec) {
  Tensor t(type);
  std::uniform_real_distribution<double> real(spec.lo, spec.hi);
  std::uniform_real_distribution<double> unit(0, 1);
  double lo = std::max(std::ceil(spec.lo), integerLo(type.dtype));
  double hi = std::min(std::floor(spec.hi), integerHi(type.dtype));
  std::uniform_int_distribution<int64_t> integer(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
  for (int64_t i = 0; i < t.numElements(); ++i) {
    double v = 0;
    if (type.dtype == DType::Bool) {
      v = static_cast<double>(rng() & 1);
    } else if (isInteger(type.dtype)) {
      v = static_cast<double>(integer(rng));
    } else {
      v = spec.special > 0 && unit(rng) < spec.special ? specialValue(rng) : real(rng);
    }
    t.set(i, v);
  }
  return t;
}

cpu::CpuJit& sharedJit() {
  static std::unique_ptr<cpu::CpuJit> jit = [] {
    auto created = cpu::CpuJit::create(cpu::CpuTarget::host());
    if (!created) {
      ADD_FAILURE() << created.error().message();
      std::abort();  // every test needs it; nothing sensible to continue with
    }
    return std::move(*created);
  }();
  return *jit;
}

const cpu::CpuSubtarget& subtargetNamed(const std::string& cpu) {
  static std::mutex mutex;
  static std::map<std::string, cpu::CpuSubtarget> made;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = made.find(cpu); it != made.end()) return it->second;
  auto target = cpu::CpuTarget::named(cpu);
  auto subtarget = target ? cpu::subtargetOf(*target) : Expected<cpu::CpuSubtarget>(target.error());
  if (!subtarget) {
    ADD_FAILURE() << subtarget.error().message();
    std::abort();
  }
  return made.emplace(cpu, std::move(*subtarget)).first->second;
}

void runInRanges(cpu::KernelFn fn, void** args, const Work& w) {
  Work everything = w;
  everything.cost = HUGE_VAL;  // split however small
  for (auto [begin, end] : chunksOf(everything, 3)) fn(args, begin, end);
}

void runCompiled(const kernel::Kernel& k, cpu::KernelFn fn, std::vector<Tensor>& buffers) {
  std::vector<void*> pointers;
  for (Tensor& t : buffers) pointers.push_back(t.data());
  runInRanges(fn, pointers.data(), kernelWork(k));
}

Status runJit(const kernel::Kernel& k, std::vector<Tensor>& buffers) {
  KF_ASSIGN_OR_RETURN(cpu::CompiledKernels compiled, sharedJit().compile(std::span(&k, 1)));
  runCompiled(k, compiled.functions[0], buffers);
  return Status::ok();
}

std::vector<Tensor> randomBuffers(const kernel::Kernel& k, uint64_t seed, const InputSpec& spec) {
  std::mt19937_64 rng(seed);
  std::vector<Tensor> buffers;
  for (const kernel::Buffer& b : k.buffers) buffers.push_back(randomTensor(b.type, rng, spec));
  return buffers;
}

::testing::AssertionResult outputsMatch(const kernel::Kernel& k, const std::vector<Tensor>& jit,
                                        const std::vector<Tensor>& reference, Tolerance tol) {
  std::vector<std::string> problems;
  int64_t mismatches = 0;
  for (size_t b = 0; b < k.buffers.size(); ++b) {
    if (!k.buffers[b].output) continue;
    const Tensor& j = jit[b];
    const Tensor& r = reference[b];
    for (int64_t i = 0; i < j.numElements(); ++i) {
      if (sameBits(j, r, i) || close(j.at(i), r.at(i), tol, j.dtype())) continue;
      if (++mismatches <= 8)
        problems.push_back(str(k.buffers[b].name, "[", i, "]: jit ", formatDouble(j.at(i)), ", interpreter ",
                               formatDouble(r.at(i))));
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << mismatches << " mismatches in kernel\n"
                                       << kernel::printKernel(k) << join(problems, "\n");
}

namespace {
Status interpret(const kernel::Kernel& k, std::vector<Tensor>& buffers) {
  std::vector<Tensor*> pointers;
  for (Tensor& t : buffers) pointers.push_back(&t);
  return kernel::evaluateKernel(k, pointers);
}
}  // namespace

::testing::AssertionResult compiledMatchesInterpreter(const kernel::Kernel& k, cpu::KernelFn fn, Tolerance tol,
                                                      uint64_t seed, const InputSpec& spec) {
  std::vector<Tensor> jit = randomBuffers(k, seed, spec);
  std::vector<Tensor> reference = jit;
  if (Status s = interpret(k, reference); !s) return ::testing::AssertionFailure() << "interpreter: " << s.message();
  runCompiled(k, fn, jit);
  return outputsMatch(k, jit, reference, tol);
}

::testing::AssertionResult matchesInterpreter(const kernel::Kernel& k, std::vector<Tensor> buffers, Tolerance tol) {
  std::vector<Tensor> reference = buffers;
  if (Status s = interpret(k, reference); !s) return ::testing::AssertionFailure() << "interpreter: " << s.message();
  if (Status s = runJit(k, buffers); !s) return ::testing::AssertionFailure() << "jit: " << s.message();
  return outputsMatch(k, buffers, reference, tol);
}

::testing::AssertionResult matchesInterpreter(const kernel::Kernel& k, Tolerance tol, uint64_t seed,
                                              const InputSpec& spec) {
  return matchesInterpreter(k, randomBuffers(k, seed, spec), tol);
}

}  // namespace kfuse::testing
