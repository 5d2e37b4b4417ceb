// Every op reference case through the cpu target: the target's pipeline
// (fusion included), a plan with compiled kernels, GEMM and convolution
// steps, and reference ops; outputs must meet the same NumPy/PyTorch
// expectations the reference interpreter meets.
#include <cmath>
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

// Dropout fused into kernels that read its result through a transpose and
// a strided slice, its mask returned and its gradient's mask redrawn: the
// generated code draws from each element's own flat index, so every value
// is the interpreter's, bit for bit (lit fusion/dropout.kir: no reference
// step is left).
TEST(CpuTarget, DropoutInKernelsDrawsTheInterpretersMask) {
  constexpr std::string_view kText = R"(module @drop {
  func @main(%x: f32[6,40], %b: f32[40,6], %step: i64[]) -> (f32[40,6], f32[6,20], bool[6,40], f32[6,40]) {
    %a = relu %x : f32[6,40]
    %d, %k = dropout %a, %step {ratio = 0.3, seed = -8070450532247928832, mask = true} : f32[6,40], bool[6,40]
    %t = transpose %d {perm = [1, 0]} : f32[40,6]
    %o = add %t, %b : f32[40,6]
    %s = slice %d {starts = [1], ends = [40], axes = [1], steps = [2]} : f32[6,20]
    %e = neg %s : f32[6,20]
    %g = dropout %x, %step {ratio = 0.3, seed = -8070450532247928832} : f32[6,40]
    return %o, %e, %k, %g
  }
})";
  std::vector<Tensor> args;
  std::vector<double> x(240), b(240);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = std::sin(0.37 * static_cast<double>(i));
    b[i] = 0.01 * static_cast<double>(i);
  }
  args.push_back(Tensor::fromDoubles(TensorType(DType::F32, {6, 40}), x));
  args.push_back(Tensor::fromDoubles(TensorType(DType::F32, {40, 6}), b));
  args.push_back(Tensor::fromDoubles(TensorType(DType::I64, {}), {(1ll << 33) + 9}));
  std::vector<std::vector<Tensor>> outputs;
  for (std::string_view target : {"interpreter", "cpu"}) {
    auto module = parseModule(kText, "drop.kir");
    ASSERT_TRUE(module) << module.error().message();
    auto backend = backendFor(target);
    ASSERT_TRUE(backend) << backend.error().message();
    ASSERT_TRUE(prepareModule(**module, *backend));
    auto exec = createExecutor(target, {});
    ASSERT_TRUE(exec) << exec.error().message();
    auto result = (*exec)->run(*(*module)->functions().front(), args);
    ASSERT_TRUE(result) << result.error().message();
    outputs.push_back(result->outputs);
  }
  ASSERT_EQ(outputs[0].size(), 4u);
  for (size_t i = 0; i < outputs[0].size(); ++i)
    EXPECT_EQ(test::compareTensors(outputs[1][i], outputs[0][i], 0, 0), "") << "output " << i;
}

}  // namespace
}  // namespace kfuse
