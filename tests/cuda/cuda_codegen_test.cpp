// The CUDA code generator without a GPU: schedules (vector width, row
// strategy), the multi-tensor launch cut at the parameter limit, the
// architecture check, the NVRTC cache (hits, truncated and corrupt
// entries), NVRTC error messages, and the cuda executor on a machine
// without a driver.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "codegen/backend.h"
#include "codegen/cuda/compiler.h"
#include "codegen/cuda/kernel_emitter.h"
#include "ir/support/strings.h"
#include "runtime/cuda/driver.h"
#include "tests/codegen/kernel_builder.h"

namespace kfuse {
namespace {

namespace fs = std::filesystem;
using testing::elementwiseKernel;

kernel::Kernel scaleKernel(const std::string& name, int64_t n, DType dt) {
  return elementwiseKernel(name, {n}, {dt}, dt, [](const std::vector<Scalar>& in) { return in[0] * 2.0; });
}

TEST(CudaSchedule, ElementwiseUsesSixteenByteVectors) {
  auto f32 = cuda::emitKernelFunction(scaleKernel("scale", 4096, DType::F32), "kf_scale", {});
  ASSERT_TRUE(f32) << f32.error().message();
  EXPECT_EQ(f32->schedule.strategy, cuda::Strategy::Elementwise);
  EXPECT_EQ(f32->schedule.vec, 4);
  EXPECT_NE(f32->source.find("kf_vload<float, 4>"), std::string::npos) << f32->source;
  EXPECT_NE(f32->source.find("kf_vstore("), std::string::npos);
  // f16 storage: 8 halves per 16 bytes, f32 arithmetic.
  auto f16 = cuda::emitKernelFunction(scaleKernel("scale_h", 4096, DType::F16), "kf_scale_h", {});
  ASSERT_TRUE(f16) << f16.error().message();
  EXPECT_EQ(f16->schedule.vec, 8);
  EXPECT_NE(f16->source.find("kf_half_to_float"), std::string::npos);
  // An odd length keeps the fast path and adds a scalar remainder.
  auto odd = cuda::emitKernelFunction(scaleKernel("scale_odd", 4099, DType::F32), "kf_odd", {});
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->schedule.vec, 4);
  EXPECT_TRUE(odd->schedule.vecTail);
}

TEST(CudaSchedule, RowReductionsUseWarpsAndBlocks) {
  auto narrow = cuda::emitKernelFunction(testing::softmaxKernel(64, 10, DType::F32), "kf_softmax", {});
  ASSERT_TRUE(narrow) << narrow.error().message();
  EXPECT_EQ(narrow->schedule.strategy, cuda::Strategy::RowThread);
  auto warp = cuda::emitKernelFunction(testing::softmaxKernel(64, 1000, DType::F32), "kf_softmax", {});
  ASSERT_TRUE(warp);
  EXPECT_EQ(warp->schedule.strategy, cuda::Strategy::RowWarp);
  EXPECT_NE(warp->source.find("kf_warp_reduce<KF_MAX>"), std::string::npos);
  auto block = cuda::emitKernelFunction(testing::softmaxKernel(4, 8192, DType::F32), "kf_softmax", {});
  ASSERT_TRUE(block);
  EXPECT_EQ(block->schedule.strategy, cuda::Strategy::RowBlock);
  EXPECT_NE(block->source.find("kf_block_reduce<KF_SUM>"), std::string::npos);
  auto column = cuda::emitKernelFunction(testing::columnSumKernel(256, 64, DType::F32, DType::F32), "kf_col", {});
  ASSERT_TRUE(column);
  EXPECT_EQ(column->schedule.strategy, cuda::Strategy::Column);
}

// A Kernels step of `n` independent kernels (each its own in and out
// buffer), as the optimizer's multi-tensor update is.
Plan multiTensorPlan(int n) {
  Plan p;
  p.function = "update";
  Step s;
  s.name = "fused_update";
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < 2; ++j) {
      PlanBuffer b;
      b.name = str(j ? "out" : "in", i);
      b.type = TensorType(DType::F32, {1000});
      b.kind = j ? BufferKind::Temp : BufferKind::Input;
      p.buffers.push_back(b);
    }
    p.kernels.push_back(scaleKernel(str("update", i), 1000, DType::F32));
    s.kernels.push_back(i);
    s.kernelBuffers.push_back({2 * i, 2 * i + 1});
  }
  p.steps.push_back(s);
  return p;
}

TEST(CudaMultiTensor, OneLaunchWhenPointersFit) {
  Plan p = multiTensorPlan(100);  // 200 pointers: 1600 bytes
  cuda::CudaCompileOptions o;
  o.emit.maxParamBytes = 4096;
  auto e = cuda::emitProgram(p, o);
  ASSERT_TRUE(e) << e.error().message();
  ASSERT_EQ(e->steps.size(), 1u);
  EXPECT_EQ(e->steps[0].launches.size(), 1u);
  EXPECT_EQ(e->steps[0].launches[0].args.size(), 200u);
}

TEST(CudaMultiTensor, ArgumentListsAreCutAtTheParameterLimit) {
  Plan p = multiTensorPlan(600);  // 1200 pointers: 9600 bytes
  cuda::CudaCompileOptions o;
  o.emit.maxParamBytes = 4096;  // drivers before CUDA 12.1
  auto small = cuda::emitProgram(p, o);
  ASSERT_TRUE(small) << small.error().message();
  // 512 pointers per launch: 256 kernels, then 256, then 88.
  ASSERT_EQ(small->steps[0].launches.size(), 3u);
  size_t total = 0;
  for (const auto& l : small->steps[0].launches) {
    EXPECT_LE(l.args.size() * 8, 4096u);
    total += l.args.size();
  }
  EXPECT_EQ(total, 1200u);
  o.emit.maxParamBytes = 32764;  // CUDA 12.1+ on Volta and newer
  auto large = cuda::emitProgram(p, o);
  ASSERT_TRUE(large);
  EXPECT_EQ(large->steps[0].launches.size(), 1u);
}

TEST(CudaArch, SupportedAndRefused) {
  for (const char* a : {"sm_80", "sm_89", "sm_90"}) EXPECT_TRUE(cuda::checkArch(a)) << a;
  auto bad = cuda::checkArch("sm_75");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("unsupported CUDA architecture 'sm_75'"), std::string::npos);
  EXPECT_NE(bad.error().message().find("sm_80, sm_89, sm_90"), std::string::npos);
  cuda::CudaCompileOptions o;
  o.arch = "compute_90";
  EXPECT_FALSE(cuda::emitProgram(multiTensorPlan(1), o));
}

TEST(CudaNvrtc, ErrorsNameTheUnitAndQuoteTheLog) {
  auto r = cuda::compileUnit("extern \"C\" __global__ void k() { undefined_thing(); }", "step broken (@k)", {});
  ASSERT_FALSE(r);
  const std::string& m = r.error().message();
  EXPECT_NE(m.find("NVRTC failed to compile step broken (@k) for sm_90"), std::string::npos) << m;
  EXPECT_NE(m.find("undefined_thing"), std::string::npos) << m;
}

TEST(CudaCache, HitsAndRefusesBrokenEntries) {
  if (!cuda::CompileCache::hashAvailable()) GTEST_SKIP() << "built without LLVM: no SHA-256, no NVRTC cache";
  fs::path dir = fs::path(KFUSE_BINARY_DIR) / "cache-test";
  fs::remove_all(dir);
  cuda::CompileCache cache(dir.string());
  cuda::NvrtcOptions nv;
  std::string src = "extern \"C\" __global__ void k(float* p) { p[threadIdx.x] *= 2.0f; }";
  std::vector<cuda::CompileJob> jobs = {{src, "k"}};
  cuda::CompileStats first, second, third, fourth;
  auto a = cuda::compileAll(jobs, nv, cache, 1, &first);
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_EQ(first.compiled, 1u);
  auto b = cuda::compileAll(jobs, nv, cache, 1, &second);
  ASSERT_TRUE(b);
  EXPECT_EQ(second.cacheHits, 1u);
  EXPECT_EQ((*b)[0].cubin, (*a)[0].cubin);
  EXPECT_EQ((*b)[0].ptx, (*a)[0].ptx);
  // The key covers the options: another architecture is another entry.
  cuda::NvrtcOptions sm80 = nv;
  sm80.arch = "sm_80";
  EXPECT_NE(cuda::CompileCache::key(src, sm80), cuda::CompileCache::key(src, nv));
  EXPECT_NE(cuda::CompileCache::key(src + " ", nv), cuda::CompileCache::key(src, nv));

  std::string path = cache.pathOf(cuda::CompileCache::key(src, nv));
  auto size = fs::file_size(path);
  fs::resize_file(path, size / 2);  // truncated
  EXPECT_FALSE(cache.load(cuda::CompileCache::key(src, nv)));
  auto c = cuda::compileAll(jobs, nv, cache, 1, &third);
  ASSERT_TRUE(c);
  EXPECT_EQ(third.compiled, 1u);
  EXPECT_EQ((*c)[0].cubin, (*a)[0].cubin);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(path) - 10));
    f.put('\x5a');  // one byte of the payload changed: the checksum no longer matches
  }
  EXPECT_FALSE(cache.load(cuda::CompileCache::key(src, nv)));
  auto d = cuda::compileAll(jobs, nv, cache, 1, &fourth);
  ASSERT_TRUE(d);
  EXPECT_EQ(fourth.compiled, 1u);
  EXPECT_EQ(fourth.cacheHits, 0u);
  fs::remove_all(dir);
}

TEST(CudaTarget, ListedAndPlannedWithoutADevice) {
  auto targets = availableTargets();
  EXPECT_NE(std::find(targets.begin(), targets.end(), "cuda"), targets.end());
  auto backend = backendFor("cuda");
  ASSERT_TRUE(backend) << backend.error().message();
  EXPECT_NE(backend->pipeline.find("fuse"), std::string::npos);
}

TEST(CudaTarget, RunWithoutADriverFailsWithTheReason) {
  if (cuda::loadDriver()) GTEST_SKIP() << "this machine has a CUDA driver and device";
  auto m = std::make_unique<Module>("m");
  Graph& g = *m->addFunction("f");
  Value* x = g.addArgument("x", TensorType(DType::F32, {4}));
  g.setResults({x});
  auto exec = createExecutor("cuda");
  ASSERT_TRUE(exec) << exec.error().message();
  Tensor t(TensorType(DType::F32, {4}));
  auto r = (*exec)->run(g, {t});
  ASSERT_FALSE(r);
  const std::string& msg = r.error().message();
  EXPECT_NE(msg.find("the cuda target cannot run @f"), std::string::npos) << msg;
  EXPECT_TRUE(msg.find("libcuda.so.1 cannot be loaded") != std::string::npos ||
              msg.find("no CUDA device") != std::string::npos)
      << msg;
}

}  // namespace
}  // namespace kfuse
