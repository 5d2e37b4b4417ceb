// Gradient-check cases of the reduction ops (see gradcheck.h).
#include "tests/unit/gradcheck.h"

namespace kfuse::test {
namespace {
using F = Fill;
}  // namespace

GradFamily reductionGrads() {
  GradFamily family;
  std::vector<GradCase>& cases = family.cases;
  for (const char* op : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"}) {
    cases.push_back({std::string(op) + "_axis1", op, {in({2, 3, 2})}, {{"axes", std::vector<int64_t>{1}}}});
    cases.push_back({std::string(op) + "_all_keepdims", op, {in({2, 3})}, {{"keepdims", true}}});
  }
  // Rows of x with two zeros (row 0) and one zero (rows 1 and 2).
  cases.push_back({"reduce_prod_zeros", "reduce_prod", {in({3, 4}, F::SomeZeros)}, {{"axes", std::vector<int64_t>{1}}}});
  cases.push_back({"reduce_sum_neg_axes", "reduce_sum", {in({2, 3, 2})}, {{"axes", std::vector<int64_t>{0, -1}}}});
  for (const char* op : {"softmax", "log_softmax"}) {
    cases.push_back({std::string(op) + "_last", op, {in({2, 4})}, {}});
    cases.push_back({std::string(op) + "_axis0", op, {in({3, 2, 2})}, {{"axis", int64_t{0}}}});
  }
  family.notDifferentiable = {
      {"argmax", "integer result"},
      {"softmax_grad", "gradient-only op"},
      {"log_softmax_grad", "gradient-only op"},
  };
  return family;
}


}  // namespace kfuse::test
