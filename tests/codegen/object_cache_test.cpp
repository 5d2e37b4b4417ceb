// The CPU JIT's on-disk object cache (codegen/cpu/object_cache.h): reuse,
// keys that tell CPUs apart, and entries that are corrupt or truncated,
// which must be compiled again, never loaded.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include <unistd.h>

#include "codegen/cpu/jit.h"
#include "ir/support/strings.h"
#include "kernel_builder.h"
#include "jit_harness.h"

namespace kfuse::testing {
namespace {

namespace fs = std::filesystem;

std::string scratchDir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / str("kfuse_object_cache_", name, "_", ::getpid());
  fs::remove_all(dir);
  return dir.string();
}

std::vector<Kernel> someKernels() {
  return {softmaxKernel(8, 40, DType::F32), layerNormKernel(6, 33),
          elementwiseKernel("scaled_tanh", {300}, {DType::F32}, DType::F32,
                            [](const std::vector<Scalar>& x) { return tanh(x[0]) * 3.0; })};
}

// Every kernel of the batch run and compared with the interpreter.
void expectCorrect(const std::vector<Kernel>& kernels, const cpu::CompiledKernels& compiled) {
  for (size_t i = 0; i < kernels.size(); ++i)
    EXPECT_TRUE(compiledMatchesInterpreter(kernels[i], compiled.functions[i], Tolerance{1e-5, 1e-6}, 3 + i))
        << kernels[i].name;
}

std::vector<fs::path> entries(const std::string& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ObjectCache, SecondCompileLoadsEveryFunction) {
  if (cpu::ObjectCache::codeGeneratorId().empty()) GTEST_SKIP() << "this binary has no build-id: nothing is cached";
  std::string dir = scratchDir("reuse");
  std::vector<Kernel> kernels = someKernels();
  {
    auto jit = cpu::CpuJit::create(cpu::CpuTarget::host(), dir);
    ASSERT_TRUE(jit) << jit.error().message();
    auto first = (*jit)->compile(kernels);
    ASSERT_TRUE(first) << first.error().message();
    EXPECT_EQ(first->compiled, kernels.size());
    EXPECT_EQ(first->cacheHits, 0u);
    expectCorrect(kernels, *first);
  }
  EXPECT_EQ(entries(dir).size(), kernels.size());
  auto jit = cpu::CpuJit::create(cpu::CpuTarget::host(), dir);  // a new process would do the same
  ASSERT_TRUE(jit) << jit.error().message();
  auto second = (*jit)->compile(kernels);
  ASSERT_TRUE(second) << second.error().message();
  EXPECT_EQ(second->compiled, 0u);
  EXPECT_EQ(second->cacheHits, kernels.size());
  expectCorrect(kernels, *second);
  fs::remove_all(dir);
}

TEST(ObjectCache, CorruptAndTruncatedEntriesAreCompiledAgain) {
  if (cpu::ObjectCache::codeGeneratorId().empty()) GTEST_SKIP() << "this binary has no build-id: nothing is cached";
  std::string dir = scratchDir("corrupt");
  std::vector<Kernel> kernels = someKernels();
  {
    auto jit = cpu::CpuJit::create(cpu::CpuTarget::host(), dir);
    ASSERT_TRUE(jit);
    ASSERT_TRUE((*jit)->compile(kernels));
  }
  std::vector<fs::path> files = entries(dir);
  ASSERT_EQ(files.size(), 3u);
  {  // one byte of the object flipped, deep in the payload
    std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-100, std::ios::end);
    char c = 0;
    f.read(&c, 1);
    f.seekp(-100, std::ios::end);
    c = static_cast<char>(c ^ 0x5a);
    f.write(&c, 1);
  }
  fs::resize_file(files[1], fs::file_size(files[1]) / 2);  // truncated
  auto jit = cpu::CpuJit::create(cpu::CpuTarget::host(), dir);
  ASSERT_TRUE(jit);
  auto again = (*jit)->compile(kernels);
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_EQ(again->compiled, 2u);
  EXPECT_EQ(again->cacheHits, 1u);
  expectCorrect(kernels, *again);
  // Rewritten whole: a third compile loads all three.
  auto third = (*jit)->compile(kernels);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->cacheHits, 3u);
  fs::remove_all(dir);
}

TEST(ObjectCache, KeysTellCpusApart) {
  if (cpu::ObjectCache::codeGeneratorId().empty()) GTEST_SKIP() << "this binary has no build-id: nothing is cached";
  std::string dir = scratchDir("cpus");
  std::vector<Kernel> kernels = someKernels();
  auto host = cpu::CpuJit::create(cpu::CpuTarget::host(), dir);
  ASSERT_TRUE(host);
  ASSERT_TRUE((*host)->compile(kernels));
  auto baseline = cpu::CpuTarget::named("x86-64");  // every x86-64 machine can run it
  ASSERT_TRUE(baseline);
  auto old = cpu::CpuJit::create(*baseline, dir);
  ASSERT_TRUE(old) << old.error().message();
  auto compiled = (*old)->compile(kernels);
  ASSERT_TRUE(compiled);
  EXPECT_EQ(compiled->cacheHits, 0u) << "code for the host was loaded for a baseline x86-64 CPU";
  expectCorrect(kernels, *compiled);
  EXPECT_NE(cpu::ObjectCache::key({"a", "bc"}), cpu::ObjectCache::key({"ab", "c"}));
  fs::remove_all(dir);
}

// Functions are compiled and cached by their code, not their names: a
// batch's kernels alike (a transformer's layers) compile once, and a kernel
// another model names differently is found in the cache.
TEST(ObjectCache, KernelsAlikeCompileOnceWhateverTheirNames) {
  std::vector<Kernel> kernels = someKernels();
  for (size_t i = 0; i < 2; ++i) {
    kernels.push_back(kernels[i]);
    kernels.back().name = str("layer_2_", kernels[i].name);
  }
  auto jit = cpu::CpuJit::create(cpu::CpuTarget::host(), "");
  ASSERT_TRUE(jit);
  auto compiled = (*jit)->compile(kernels);
  ASSERT_TRUE(compiled) << compiled.error().message();
  EXPECT_EQ(compiled->compiled, 3u);
  ASSERT_EQ(compiled->functions.size(), 5u);
  EXPECT_EQ(compiled->functions[3], compiled->functions[0]);
  EXPECT_EQ(compiled->functions[4], compiled->functions[1]);
  expectCorrect(kernels, *compiled);

  if (cpu::ObjectCache::codeGeneratorId().empty()) GTEST_SKIP() << "this binary has no build-id: nothing is cached";
  std::string dir = scratchDir("renamed");
  auto cached = cpu::CpuJit::create(cpu::CpuTarget::host(), dir);
  ASSERT_TRUE(cached);
  ASSERT_TRUE((*cached)->compile(std::span(kernels.data(), 1)));
  std::vector<Kernel> renamed = {kernels[0]};
  renamed[0].name = "another_models_softmax";
  auto again = (*cached)->compile(renamed);
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_EQ(again->cacheHits, 1u);
  expectCorrect(renamed, *again);
  fs::remove_all(dir);
}

// Kernels whose descriptions differ but whose emitted code is the same (an
// elementwise update of weights of different shapes: its work units are
// elements) compile once, and each is cached: a new JIT loads both.
TEST(ObjectCache, KernelsWithTheSameCodeCompileOnce) {
  auto update = [](const std::string& name, const Shape& shape) {
    return elementwiseKernel(name, shape, {DType::F32, DType::F32}, DType::F32,
                             [](const std::vector<Scalar>& x) { return x[0] - x[1] * 0.01; });
  };
  std::vector<Kernel> kernels = {update("conv_weight", {64, 3, 7, 7}), update("fc_weight", {10, 512}),
                                 layerNormKernel(6, 33)};
  std::string dir = cpu::ObjectCache::codeGeneratorId().empty() ? "" : scratchDir("same_code");
  auto jit = cpu::CpuJit::create(cpu::CpuTarget::host(), dir);
  ASSERT_TRUE(jit);
  auto compiled = (*jit)->compile(kernels);
  ASSERT_TRUE(compiled) << compiled.error().message();
  EXPECT_EQ(compiled->compiled, 2u);
  EXPECT_EQ(compiled->functions[0], compiled->functions[1]);
  expectCorrect(kernels, *compiled);
  if (dir.empty()) GTEST_SKIP() << "this binary has no build-id: nothing is cached";
  EXPECT_EQ(entries(dir).size(), kernels.size());
  auto again = cpu::CpuJit::create(cpu::CpuTarget::host(), dir);
  ASSERT_TRUE(again);
  auto loaded = (*again)->compile(std::span(kernels.data() + 1, 2));  // the second only, and the layer norm
  ASSERT_TRUE(loaded) << loaded.error().message();
  EXPECT_EQ(loaded->compiled, 0u);
  EXPECT_EQ(loaded->cacheHits, 2u);
  expectCorrect({kernels[1], kernels[2]}, *loaded);
  fs::remove_all(dir);
}

TEST(ObjectCache, NoDirectoryMeansNoCache) {
  std::vector<Kernel> kernels = someKernels();
  auto jit = cpu::CpuJit::create(cpu::CpuTarget::host(), "");
  ASSERT_TRUE(jit);
  for (int i = 0; i < 2; ++i) {
    auto compiled = (*jit)->compile(kernels);
    ASSERT_TRUE(compiled);
    EXPECT_EQ(compiled->cacheHits, 0u);
    EXPECT_EQ(compiled->compiled, kernels.size());
  }
}

}  // namespace
}  // namespace kfuse::testing
