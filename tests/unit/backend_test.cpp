// Every op reference case through the cpu target: the target's pipeline
// (fusion included), a plan with compiled kernels, GEMM and convolution
// steps, and reference ops; outputs must meet the same NumPy/PyTorch
// expectations the reference interpreter meets.
#include <filesystem>

#include "codegen/backend.h"
#include "ir/parser.h"
#include "ir/weights.h"
#include "tests/unit/test_util.h"

namespace kfuse {
namespace {

namespace fs = std::filesystem;

class CpuTargetTest : public testing::TestWithParam<std::string> {};

TEST_P(CpuTargetTest, MatchesOracle) {
  fs::path base = test::opCasesDir() / GetParam();
  auto module = parseModuleFile(base.string() + ".kir");
  ASSERT_TRUE(module) << module.error().message();
  auto backend = backendFor("cpu");
  ASSERT_TRUE(backend) << backend.error().message();
  ASSERT_TRUE(prepareModule(**module, *backend));
  auto exec = createExecutor("cpu", {});
  ASSERT_TRUE(exec) << exec.error().message();
  auto data = readWeightsFile(base.string() + ".data.safetensors");
  ASSERT_TRUE(data) << data.error().message();
  const Graph& g = *(*module)->functions().front();
  std::vector<Tensor> args;
  for (const auto& a : g.arguments()) args.push_back(data->at("in." + a->name()).withType(a->type()));
  auto result = (*exec)->run(g, args);
  if (!result && GetParam().find("out_of_range") != std::string::npos) GTEST_SKIP() << result.error().message();
  ASSERT_TRUE(result) << result.error().message();
  test::Tolerance tol = test::readTolerance(base.string() + ".kir");
  // Compiled f32 code rounds every operation, where the reference rounds
  // once; allow a few more ulps than the reference's own tolerance.
  double rtol = std::max(tol.rtol, 2e-6), atol = std::max(tol.atol, 1e-6);
  for (size_t i = 0; i < result->outputs.size(); ++i) {
    const Tensor& want = data->at(str("out.", i));
    EXPECT_EQ(test::compareTensors(result->outputs[i].withType(want.type()), want, atol, rtol), "") << "output " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, CpuTargetTest, testing::ValuesIn(test::opCaseNames()),
                         test::PathParamName());

}  // namespace
}  // namespace kfuse
