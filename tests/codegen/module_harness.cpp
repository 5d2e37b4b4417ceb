#include "tests/codegen/module_harness.h"

#include <gtest/gtest.h>

#include <cmath>

#include "codegen/backend.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/support/strings.h"
#include "tests/unit/test_util.h"

namespace kfuse::testing {

Tensor waveTensor(const TensorType& t, double phase) {
  Tensor x(t);
  for (int64_t i = 0; i < x.numElements(); ++i) x.set(i, std::sin(0.61 * static_cast<double>(i) + phase));
  return x;
}

std::unique_ptr<Module> preparedModule(const char* text) {
  auto m = parseModule(text, "test.kir");
  EXPECT_TRUE(m) << m.error().message();
  if (!m) return nullptr;
  auto backend = backendFor("cpu");
  EXPECT_TRUE(backend && prepareModule(**m, *backend));
  return std::move(*m);
}

std::string cpuMatchesInterpreter(Module& m, const std::vector<Tensor>& args, int threads, double tol) {
  const Graph& fn = *m.functions().front();
  auto want = interpret(fn, args);
  if (!want) return want.error().message();
  auto exec = createExecutor("cpu", {.inplace = true, .poison = true, .threads = threads});
  if (!exec) return exec.error().message();
  auto got = (*exec)->run(fn, args);
  if (!got) return got.error().message();
  for (size_t i = 0; i < want->outputs.size(); ++i)
    if (std::string d = test::compareTensors(got->outputs[i], want->outputs[i], tol, tol); !d.empty())
      return str("output ", i, ": ", d);
  return "";
}

}  // namespace kfuse::testing
