// Every op reference case on the cuda target's simulated device: the
// target's pipeline (fusion included) and plan, every kernel compiled as
// host C++ and run by the simulator (CUDA's barrier and warp rules
// checked), GEMMs through the simulated cuBLASLt or generated, reference
// steps on the host. Outputs must meet the NumPy/PyTorch expectations the
// reference interpreter meets (backend_test.cpp does the same for cpu),
// and the forward and reverse schedules must give the same bits.
// The cases with a matmul or convolution run again with every GEMM
// generated (GemmPolicy::Generated), so the tiled GEMM and its epilogues,
// pointwise or after a grid barrier, run too, not only cuBLASLt.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/backend.h"
#include "codegen/cuda/executor.h"
#include "ir/parser.h"
#include "ir/weights.h"
#include "tests/unit/test_util.h"

namespace kfuse {
namespace {

namespace fs = std::filesystem;

// The cases whose module has a matmul or a convolution.
std::vector<std::string> gemmCaseNames() {
  std::vector<std::string> out;
  for (const std::string& name : test::opCaseNames()) {
    std::ifstream in(test::opCasesDir() / (name + ".kir"));
    std::ostringstream text;
    text << in.rdbuf();
    if (text.str().find("= matmul ") != std::string::npos || text.str().find("= conv2d ") != std::string::npos)
      out.push_back(name);
  }
  return out;
}

void checkCase(const std::string& name, cuda::GemmPolicy gemm) {
  fs::path base = test::opCasesDir() / name;
  auto module = parseModuleFile(base.string() + ".kir");
  ASSERT_TRUE(module) << module.error().message();
  auto backend = backendFor("cuda");
  ASSERT_TRUE(backend) << backend.error().message();
  ASSERT_TRUE(prepareModule(**module, *backend));
  cuda::CudaExecutorOptions eo;
  eo.simulate = true;
  eo.poison = true;  // dead buffers NaN (runtime/poison.h): scripts/test.sh runs the cuda tests once, unpoisoned
  eo.compile.cacheDir = std::string(KFUSE_BINARY_DIR) + "/sim-cache";
  eo.compile.gemm = gemm;
  auto exec = cuda::createCudaExecutor(eo);
  // The same program with threads and blocks in reverse order (compiled
  // once: the second executor finds the units in the cache).
  cuda::CudaExecutorOptions reversed = eo;
  reversed.schedule.order = cuda::sim::Order::Reverse;
  auto reverseExec = cuda::createCudaExecutor(reversed);
  auto data = readWeightsFile(base.string() + ".data.safetensors");
  ASSERT_TRUE(data) << data.error().message();
  const Graph& g = *(*module)->functions().front();
  std::vector<Tensor> args;
  for (const auto& a : g.arguments()) args.push_back(data->at("in." + a->name()).withType(a->type()));
  auto result = exec->run(g, args);
  if (!result && name.find("out_of_range") != std::string::npos) GTEST_SKIP() << result.error().message();
  ASSERT_TRUE(result) << result.error().message();
  auto again = reverseExec->run(g, args);
  ASSERT_TRUE(again) << "reverse schedule: " << again.error().message();
  for (size_t i = 0; i < result->outputs.size(); ++i)
    EXPECT_EQ(test::compareTensors(again->outputs[i], result->outputs[i], 0, 0), "")
        << "output " << i << ": the reverse schedule gives other bits";
  test::Tolerance tol = test::readTolerance(base.string() + ".kir");
  // As on the cpu target: compiled f32 code rounds every operation, where
  // the reference rounds once.
  double rtol = std::max(tol.rtol, 2e-6), atol = std::max(tol.atol, 1e-6);
  for (size_t i = 0; i < result->outputs.size(); ++i) {
    const Tensor& want = data->at(str("out.", i));
    EXPECT_EQ(test::compareTensors(result->outputs[i].withType(want.type()), want, atol, rtol), "") << "output " << i;
  }
  // The launches counted are the program's.
  const Plan* plan = exec->planFor(g);
  ASSERT_NE(plan, nullptr);
  auto program = cuda::emitProgram(*plan, eo.compile);
  ASSERT_TRUE(program) << program.error().message();
  uint64_t launches = 0;
  for (const auto& s : program->steps) launches += s.launches.size() + (s.matmul ? 1 : 0);
  EXPECT_EQ(exec->launches(), launches);
}

class SimOpCase : public testing::TestWithParam<std::string> {};
TEST_P(SimOpCase, MatchesOracle) { checkCase(GetParam(), cuda::GemmPolicy::Auto); }
INSTANTIATE_TEST_SUITE_P(Cases, SimOpCase, testing::ValuesIn(test::opCaseNames()), test::PathParamName());

class SimOpCaseGeneratedGemm : public testing::TestWithParam<std::string> {};
TEST_P(SimOpCaseGeneratedGemm, MatchesOracle) { checkCase(GetParam(), cuda::GemmPolicy::Generated); }
INSTANTIATE_TEST_SUITE_P(Cases, SimOpCaseGeneratedGemm, testing::ValuesIn(gemmCaseNames()), test::PathParamName());

}  // namespace
}  // namespace kfuse
