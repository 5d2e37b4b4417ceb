// Every op reference case through the cpu target: the target's pipeline
// (fusion included), a plan with compiled kernels, GEMM and convolution
// steps, and reference ops; outputs must meet the same NumPy/PyTorch
// expectations the reference interpreter meets.
#include <filesystem>
#include <fstream>

#include "codegen/backend.h"
#include "ir/parser.h"
#include "ir/weights.h"
#include "tests/unit/test_util.h"

namespace kfuse {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> allCases() {
  std::vector<std::string> out;
  fs::path root = fs::path(test::sourceDir()) / "tests/ops/cases";
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.path().extension() == ".kir") out.push_back(fs::relative(e.path(), root).replace_extension().string());
  std::sort(out.begin(), out.end());
  return out;
}

struct Tolerance {
  double atol = 1e-6, rtol = 1e-6;
};

Tolerance readTolerance(const std::string& kirPath) {
  std::ifstream in(kirPath);
  std::string first;
  std::getline(in, first);
  Tolerance t;
  std::sscanf(first.c_str(), "// tolerance atol=%lf rtol=%lf", &t.atol, &t.rtol);
  return t;
}

class CpuTargetTest : public testing::TestWithParam<std::string> {};

TEST_P(CpuTargetTest, MatchesOracle) {
  fs::path base = fs::path(test::sourceDir()) / "tests/ops/cases" / GetParam();
  auto module = parseModuleFile(base.string() + ".kir");
  ASSERT_TRUE(module) << module.error().message();
  auto backend = backendFor("cpu");
  ASSERT_TRUE(backend) << backend.error().message();
  ASSERT_TRUE(prepareModule(**module, *backend));
  auto exec = createExecutor("cpu");
  ASSERT_TRUE(exec) << exec.error().message();
  auto data = readWeightsFile(base.string() + ".data.safetensors");
  ASSERT_TRUE(data) << data.error().message();
  const Graph& g = *(*module)->functions().front();
  std::vector<Tensor> args;
  for (const auto& a : g.arguments()) args.push_back(data->at("in." + a->name()).withType(a->type()));
  auto result = (*exec)->run(g, args);
  if (!result && GetParam().find("out_of_range") != std::string::npos) GTEST_SKIP() << result.error().message();
  ASSERT_TRUE(result) << result.error().message();
  Tolerance tol = readTolerance(base.string() + ".kir");
  // Compiled f32 code rounds every operation, where the reference rounds
  // once; allow a few more ulps than the reference's own tolerance.
  double rtol = std::max(tol.rtol, 2e-6), atol = std::max(tol.atol, 1e-6);
  for (size_t i = 0; i < result->outputs.size(); ++i) {
    const Tensor& want = data->at(str("out.", i));
    EXPECT_EQ(test::compareTensors(result->outputs[i].withType(want.type()), want, atol, rtol), "") << "output " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, CpuTargetTest, testing::ValuesIn(allCases()), [](const auto& info) {
  std::string n = info.param;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
});

}  // namespace
}  // namespace kfuse
