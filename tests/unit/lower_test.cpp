// Lowering to kernel IR preserves meaning: every op reference case whose
// nodes can all be part of a kernel is lowered to one kernel and run with
// the kernel interpreter, and must match the same NumPy/PyTorch expectations
// the graph interpreter meets.
#include <filesystem>

#include "exec/kernel_eval.h"
#include "codegen/kernel/lower.h"
#include "ir/parser.h"
#include "ir/weights.h"
#include "tests/unit/test_util.h"

namespace kfuse {
namespace {

namespace fs = std::filesystem;

class LowerTest : public testing::TestWithParam<std::string> {};

TEST_P(LowerTest, KernelMatchesOracle) {
  fs::path base = test::opCasesDir() / GetParam();
  auto module = parseModuleFile(base.string() + ".kir");
  ASSERT_TRUE(module) << module.error().message();
  const Graph& g = *(*module)->functions().front();
  for (const auto& n : g.nodeList())
    if (std::string why = kernel::notKernelizable(*n); !why.empty()) GTEST_SKIP() << why;
  auto k = kernel::lowerToKernel(g, "case");
  ASSERT_TRUE(k) << k.error().message();
  auto data = readWeightsFile(base.string() + ".data.safetensors");
  ASSERT_TRUE(data) << data.error().message();
  for (const auto& [name, t] : *data)
    if (t.dtype() == DType::I64)
      for (int64_t i = 0; i < t.numElements(); ++i)
        if (std::abs(t.as<int64_t>()[i]) > (int64_t{1} << 53))
          GTEST_SKIP() << "the kernel interpreter computes in double, exact only up to 2^53";
  std::vector<Tensor> buffers;
  for (const auto& a : g.arguments()) buffers.push_back(data->at("in." + a->name()).withType(a->type()));
  for (const Value* r : g.results()) buffers.emplace_back(r->type());
  std::vector<Tensor*> ptrs;
  for (Tensor& t : buffers) ptrs.push_back(&t);
  ASSERT_TRUE(kernel::evaluateKernel(*k, ptrs)) << kernel::printKernel(*k);
  test::Tolerance tol = test::readTolerance(base.string() + ".kir");
  for (size_t i = 0; i < g.results().size(); ++i) {
    const Tensor& want = data->at(str("out.", i));
    const Tensor& got = buffers[g.arguments().size() + i];
    EXPECT_EQ(test::compareTensors(got.withType(want.type()), want, tol.atol, tol.rtol), "")
        << "output " << i << "\n" << kernel::printKernel(*k);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, LowerTest, testing::ValuesIn(test::opCaseNames()),
                         test::PathParamName());

}  // namespace
}  // namespace kfuse
