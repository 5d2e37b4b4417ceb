// Shape/type inference and error messages of scatter_nd, and the run-time
// errors of its reference implementation (indices out of range).
#include <cstring>

#include "tests/unit/infer_test_util.h"

namespace kfuse {
namespace {

using test::f32;
using test::i64;
using test::infer;

TensorType i32(Shape s) { return TensorType(DType::I32, std::move(s)); }
TensorType boolT(Shape s) { return TensorType(DType::Bool, std::move(s)); }

std::string inferred(std::vector<TensorType> inputs, AttrMap attrs = {}) {
  auto r = infer("scatter_nd", std::move(inputs), std::move(attrs));
  if (!r) return "error: " + r.error().message();
  return formatType(r->at(0));
}

Expected<Tensor> evaluate(std::vector<Tensor> inputs, AttrMap attrs = {}) {
  const OpDef* def = OpRegistry::global().find("scatter_nd");
  KF_ASSIGN_OR_RETURN(AttrMap full, completeAttrs(*def, std::move(attrs)));
  std::vector<TensorType> types;
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs) {
    types.push_back(t.type());
    ptrs.push_back(&t);
  }
  KF_ASSIGN_OR_RETURN(auto outTypes, inferResultTypes(*def, full, types));
  KF_ASSIGN_OR_RETURN(auto outs, def->reference(OpCall{*def, full, types}, ptrs, outTypes));
  return outs.at(0);
}

TEST(InferScatter, ResultIsData) {
  EXPECT_EQ(inferred({f32({5, 3}), i64({2, 1}), f32({2, 3})}), "f32[5,3]");
  EXPECT_EQ(inferred({f32({5, 3}), i32({4, 2}), f32({4})}), "f32[5,3]");           // elements
  EXPECT_EQ(inferred({f32({5, 3}), i64({2}), f32({})}), "f32[5,3]");                // one tuple
  EXPECT_EQ(inferred({f32({5, 3}), i64({2, 0}), f32({2, 5, 3})}), "f32[5,3]");      // whole tensor
  EXPECT_EQ(inferred({boolT({2}), i64({1, 1}), boolT({1})}), "bool[2]");
  EXPECT_EQ(inferred({i64({3}), i64({2, 1}), i64({2})}, {{"reduction", std::string("mul")}}), "i64[3]");
}

TEST(InferScatter, Errors) {
  EXPECT_INFER_ERROR(infer("scatter_nd", {f32({5, 3}), f32({2, 1}), f32({2, 3})}),
                     "operand 1 (indices) must be i64 or i32, got f32[2,1]");
  EXPECT_INFER_ERROR(infer("scatter_nd", {f32({5, 3}), i64({}), f32({})}),
                     "operand 1 (indices) must have rank >= 1, got i64[]");
  EXPECT_INFER_ERROR(infer("scatter_nd", {f32({5, 3}), i64({2, 3}), f32({2})}),
                     "operand 1 (indices) i64[2,3] has coordinates of length 3, more than the rank of operand 0 "
                     "(data) f32[5,3]");
  EXPECT_INFER_ERROR(infer("scatter_nd", {f32({5, 3}), i64({2, 1}), f32({3, 2})}),
                     "operand 2 (updates) f32[3,2] must have shape [2, 3] (indices i64[2,1] into data f32[5,3])");
  EXPECT_INFER_ERROR(infer("scatter_nd", {f32({5, 3}), i64({2, 1}), i64({2, 3})}),
                     "operands 0 and 2 must have the same dtype");
  EXPECT_INFER_ERROR(infer("scatter_nd", {f32({5}), i64({1, 1}), f32({1})}, {{"reduction", std::string("sum")}}),
                     "attribute reduction = \"sum\" is not one of \"none\", \"add\", \"mul\", \"max\", \"min\"");
  EXPECT_INFER_ERROR(infer("scatter_nd", {boolT({2}), i64({1, 1}), boolT({1})}, {{"reduction", std::string("add")}}),
                     "operand 0 must be numeric, got bool[2]");
}

TEST(ScatterReference, ReportsTheBadIndexBeforeWriting) {
  Tensor data = Tensor::fromDoubles(f32({3, 2}), {0, 1, 2, 3, 4, 5});
  Tensor idx = Tensor::fromDoubles(i64({2, 2}), {0, 1, 1, 2});
  Tensor upd = Tensor::fromDoubles(f32({2}), {9, 9});
  auto r = evaluate({data, idx, upd});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(),
            "index 2 at indices[1][1] (indices i64[2,2]) is out of range for axis 1 of data f32[3,2] (size 2)");
  Tensor negative = Tensor::fromDoubles(i32({1, 1}), {-4});
  r = evaluate({data, negative, Tensor::fromDoubles(f32({1, 2}), {7, 7})});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(),
            "index -4 at indices[0][0] (indices i32[1,1]) is out of range for axis 0 of data f32[3,2] (size 3)");
}

TEST(ScatterReference, NegativeIndicesAndLastWriteWins) {
  Tensor data = Tensor::fromDoubles(f32({4}), {0, 0, 0, 0});
  Tensor idx = Tensor::fromDoubles(i64({3, 1}), {-1, 3, 0});
  Tensor upd = Tensor::fromDoubles(f32({3}), {1, 2, 3});
  auto r = evaluate({data, idx, upd});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->toDoubles(), (std::vector<double>{3, 0, 0, 2}));
  r = evaluate({data, idx, upd}, {{"reduction", std::string("add")}});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->toDoubles(), (std::vector<double>{3, 0, 0, 3}));
}

// Replacing moves bytes: i64 beyond 2^53 stays exact.
TEST(ScatterReference, ReplacingIsExactForLargeI64) {
  Tensor data(i64({2}));
  Tensor upd(i64({1}));
  const int64_t big = (int64_t{1} << 62) + 1;
  std::memcpy(upd.data(), &big, sizeof big);
  Tensor idx = Tensor::fromDoubles(i64({1, 1}), {1});
  auto r = evaluate({data, idx, upd});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->as<int64_t>()[1], big);
}

}  // namespace
}  // namespace kfuse
