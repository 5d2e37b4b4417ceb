// Gradient-check cases of the shape and data-movement ops (see gradcheck.h).
#include "tests/unit/gradcheck.h"

namespace kfuse::test {

GradFamily shapeGrads() {
  using F = Fill;
  using Ints = std::vector<int64_t>;
  GradFamily family;
  auto& cases = family.cases;
  cases.push_back({"reshape", "reshape", {in({2, 3, 2})}, {{"shape", Ints{3, -1}}}});
  cases.push_back({"squeeze", "squeeze", {in({2, 1, 3})}, {}});
  cases.push_back({"unsqueeze", "unsqueeze", {in({2, 3})}, {{"axes", Ints{0, 3}}}});
  cases.push_back({"flatten", "flatten", {in({2, 3, 2})}, {{"axis", int64_t{2}}}});
  cases.push_back({"transpose", "transpose", {in({2, 3, 4})}, {{"perm", Ints{2, 0, 1}}}});
  cases.push_back({"transpose_default", "transpose", {in({2, 3})}, {}});
  cases.push_back({"expand", "expand", {in({3, 1})}, {{"shape", Ints{2, 3, 4}}}});
  cases.push_back({"concat", "concat", {in({2, 1}), in({2, 3}), in({2, 2})}, {{"axis", int64_t{-1}}}});
  cases.push_back({"split", "split", {in({5, 2})}, {{"sizes", Ints{2, 3}}}});
  cases.push_back({"slice", "slice", {in({4, 5})}, {{"starts", Ints{1, -4}}, {"ends", Ints{3, 100}}}});
  cases.push_back({"slice_axes", "slice", {in({3, 4, 2})},
                   {{"starts", Ints{1}}, {"ends", Ints{3}}, {"axes", Ints{1}}}});
  cases.push_back({"pad", "pad", {in({2, 3})}, {{"pads", Ints{1, 0, 2, -1}}, {"value", 0.5}}});
  cases.push_back({"interleave", "interleave", {in({2, 2}), in({2, 1})},
                   {{"shape", Ints{2, 3}}, {"steps", Ints{1, 2}}, {"offsets", Ints{0, 0, 0, 1}}}});
  cases.push_back({"gather_axis0", "gather", {in({5, 3}), fixed(TensorType(DType::I64, {2, 2}), F::Indices, 5)},
                   {}});
  cases.push_back({"gather_axis1", "gather", {in({2, 4}), fixed(TensorType(DType::I32, {3}), F::Indices, 4)},
                   {{"axis", int64_t{1}}}});
  // Random indices repeat: with reduction none only the last update of a
  // coordinate may receive a gradient.
  const TensorType idx41(DType::I64, {4, 1}), idx52(DType::I32, {5, 2});
  cases.push_back({"scatter_nd_rows", "scatter_nd", {in({5, 3}), fixed(idx41, F::Indices, 5), in({4, 3})}, {}});
  cases.push_back({"scatter_nd_rows_add", "scatter_nd", {in({5, 3}), fixed(idx41, F::Indices, 5), in({4, 3})},
                   {{"reduction", std::string("add")}}});
  cases.push_back({"scatter_nd_elements", "scatter_nd", {in({3, 4}), fixed(idx52, F::Indices, 3), in({5})}, {}});
  cases.push_back({"scatter_nd_elements_add", "scatter_nd", {in({3, 4}), fixed(idx52, F::Indices, 3), in({5})},
                   {{"reduction", std::string("add")}}});
  family.notDifferentiable = {
      {"shape_of", "integer result depending only on the type"},
      {"constant", "no operands"},
      {"gather_grad", "gradient-only op"},
  };
  return family;
}

}  // namespace kfuse::test
