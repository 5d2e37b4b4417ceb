// Gradient-check cases of the elementwise ops (see gradcheck.h).
#include "tests/unit/gradcheck.h"

namespace kfuse::test {
namespace {
using F = Fill;
}  // namespace

GradFamily elementwiseGrads() {
  GradFamily family;
  std::vector<GradCase>& cases = family.cases;
  auto unary = [&](std::string op, Fill f = F::Normal, AttrMap attrs = {}, std::string suffix = "") {
    cases.push_back({op + suffix, op, {in({2, 3}, f)}, std::move(attrs)});
  };
  unary("identity");
  unary("neg");
  unary("abs", F::AwayFromZero);
  unary("exp");
  unary("log", F::Positive);
  unary("sqrt", F::Positive);
  unary("rsqrt", F::Positive);
  unary("reciprocal", F::AwayFromZero);
  unary("tanh");
  unary("sigmoid");
  unary("relu", F::AwayFromZero);
  unary("leaky_relu", F::AwayFromZero, {{"alpha", 0.2}});
  unary("elu", F::AwayFromZero, {{"alpha", 0.7}});
  unary("gelu");
  unary("gelu", F::Normal, {{"approximate", "tanh"}}, "_tanh");
  unary("erf");
  unary("softplus", F::Normal, {{"beta", 2.0}, {"threshold", 1.0}});
  unary("sin");
  unary("cos");
  unary("sign", F::AwayFromZero);
  unary("floor", F::AwayFromZero);
  unary("ceil", F::AwayFromZero);
  unary("round", F::AwayFromZero);
  unary("clip", F::Normal, {{"min", -0.5}, {"max", 0.6}});
  for (const char* op : {"add", "sub", "mul", "div", "maximum", "minimum"})
    cases.push_back({std::string(op) + "_broadcast", op, {in({2, 3}), in({3}, F::AwayFromZero)}, {}});
  cases.push_back({"pow", "pow", {in({2, 3}, F::Positive), in({2, 1})}, {}});
  cases.push_back({"where", "where", {fixed(TensorType(DType::Bool, {2, 3}), F::Bool), in({2, 3}), in({1, 3})}, {}});
  cases.push_back({"cast_f64_to_f32", "cast", {in({4})}, {{"to", "f32"}}, 1e-2, 1e-4});
  family.notDifferentiable = {
      {"equal", "boolean result"},
      {"less", "boolean result"},
      {"greater", "boolean result"},
      {"less_equal", "boolean result"},
      {"greater_equal", "boolean result"},
      {"logical_not", "boolean result"},
      {"logical_and", "boolean result"},
      {"logical_or", "boolean result"},
      {"logical_xor", "boolean result"},
      // Gradient-only ops: no second derivatives. Their forward values are
      // checked against torch.autograd by the op reference cases.
      {"relu_grad", "gradient-only op"},
      {"sigmoid_grad", "gradient-only op"},
      {"tanh_grad", "gradient-only op"},
      {"gelu_grad", "gradient-only op"},
  };
  return family;
}


}  // namespace kfuse::test
