// Shape/type inference and error messages of the shape ops, plus the runtime
// errors and type-only behaviour of their reference implementations.
#include <cstring>
#include <limits>

#include "tests/unit/infer_test_util.h"

namespace kfuse {
namespace {

using test::f32;
using test::i64;
using test::infer;
using Ints = std::vector<int64_t>;

constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();

TensorType boolT(Shape s) { return TensorType(DType::Bool, std::move(s)); }
TensorType i32(Shape s) { return TensorType(DType::I32, std::move(s)); }

// The single result type, or a failure naming the error.
Expected<TensorType> inferOne(std::string_view op, std::vector<TensorType> inputs, AttrMap attrs = {}) {
  KF_ASSIGN_OR_RETURN(auto types, infer(op, std::move(inputs), std::move(attrs)));
  if (types.size() != 1) return Error(str("expected one result, got ", types.size()));
  return types[0];
}

#define EXPECT_INFERS(expr, type)                       \
  do {                                                  \
    auto r_ = (expr);                                   \
    ASSERT_TRUE(r_) << r_.error().message();            \
    EXPECT_EQ(formatType(*r_), formatType(type));       \
  } while (0)

// Runs an op's reference implementation on the given tensors, as the
// interpreter does.
Expected<std::vector<Tensor>> evaluate(std::string_view op, std::vector<Tensor> inputs, AttrMap attrs = {}) {
  const OpDef* def = OpRegistry::global().find(op);
  KF_ASSIGN_OR_RETURN(AttrMap full, completeAttrs(*def, std::move(attrs)));
  std::vector<TensorType> types;
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs) {
    types.push_back(t.type());
    ptrs.push_back(&t);
  }
  KF_ASSIGN_OR_RETURN(auto outTypes, inferResultTypes(*def, full, types));
  OpCall call{*def, full, types};
  return def->reference(call, ptrs, outTypes);
}

TEST(InferShape, FusionClasses) {
  for (const char* op : {"reshape", "transpose", "expand", "concat", "split", "slice", "squeeze", "unsqueeze",
                         "flatten", "pad", "gather", "constant"}) {
    const OpDef* def = OpRegistry::global().find(op);
    ASSERT_NE(def, nullptr) << op;
    EXPECT_EQ(def->fusion, FusionClass::Injective) << op;
    EXPECT_FALSE(def->dependsOnlyOnTypes) << op;
  }
  const OpDef* shapeOf = OpRegistry::global().find("shape_of");
  ASSERT_NE(shapeOf, nullptr);
  EXPECT_EQ(shapeOf->fusion, FusionClass::Opaque);
  EXPECT_TRUE(shapeOf->dependsOnlyOnTypes);
}

// ------------------------------------------------------------ reshape

TEST(InferShape, ReshapeInfersMinusOne) {
  EXPECT_INFERS(inferOne("reshape", {f32({2, 3, 4})}, {{"shape", Ints{4, -1}}}), f32({4, 6}));
  EXPECT_INFERS(inferOne("reshape", {f32({})}, {{"shape", Ints{1}}}), f32({1}));
  EXPECT_INFERS(inferOne("reshape", {boolT({1})}, {{"shape", Ints{}}}), boolT({}));
  // 0 is a zero size, not "copy the input dimension".
  EXPECT_INFERS(inferOne("reshape", {f32({0, 3})}, {{"shape", Ints{3, 0}}}), f32({3, 0}));
}

TEST(InferShape, ReshapeResultIsPlain) {
  TensorType nchw(DType::F32, {1, 2, 3, 4}, Layout::NCHW);
  EXPECT_INFERS(inferOne("reshape", {nchw}, {{"shape", Ints{1, 2, 3, 4}}}), f32({1, 2, 3, 4}));
}

TEST(InferShape, ReshapeErrors) {
  EXPECT_INFER_ERROR(infer("reshape", {f32({2, 3})}, {{"shape", Ints{4, 2}}}),
                     "op 'reshape': cannot reshape f32[2,3] (6 elements) to [4,2] (8 elements)");
  EXPECT_INFER_ERROR(infer("reshape", {f32({2, 3})}, {{"shape", Ints{-1, -1}}}),
                     "attribute shape = [-1, -1] contains more than one -1");
  EXPECT_INFER_ERROR(infer("reshape", {f32({2, 3})}, {{"shape", Ints{-2, -3}}}),
                     "attribute shape = [-2, -3] contains the negative size -2");
  EXPECT_INFER_ERROR(infer("reshape", {f32({2, 3})}, {{"shape", Ints{4, -1}}}),
                     "cannot reshape f32[2,3] (6 elements) to [4,-1]: 6 is not a multiple of 4");
  EXPECT_INFER_ERROR(infer("reshape", {f32({0, 3})}, {{"shape", Ints{0, -1}}}),
                     "cannot infer the -1 in shape [0,-1] for f32[0,3]: the other sizes multiply to 0");
  EXPECT_INFER_ERROR(infer("reshape", {f32({2, 3})}, {{"shape", Ints{int64_t{1} << 40, int64_t{1} << 40}}}),
                     "has more than 2^48 elements");
  EXPECT_INFER_ERROR(infer("reshape", {f32({2, 3})}, {{"shape", Ints{kI64Max, kI64Max, 0}}}),
                     "has more than 2^48 elements");
  EXPECT_INFER_ERROR(infer("reshape", {f32({2, 3})}), "requires attribute 'shape'");
}

// ------------------------------------------------------------ transpose

TEST(InferShape, Transpose) {
  EXPECT_INFERS(inferOne("transpose", {f32({2, 3, 4})}), f32({4, 3, 2}));
  EXPECT_INFERS(inferOne("transpose", {i64({2, 3, 4})}, {{"perm", Ints{2, 0, 1}}}), i64({4, 2, 3}));
  EXPECT_INFERS(inferOne("transpose", {f32({})}), f32({}));
}

TEST(InferShape, TransposeErrors) {
  EXPECT_INFER_ERROR(infer("transpose", {f32({2, 3, 4})}, {{"perm", Ints{0, 0, 1}}}),
                     "attribute perm = [0, 0, 1] is not a permutation of 0..2");
  EXPECT_INFER_ERROR(infer("transpose", {f32({2, 3, 4})}, {{"perm", Ints{0, 3, 1}}}), "is not a permutation of 0..2");
  EXPECT_INFER_ERROR(infer("transpose", {f32({2, 3, 4})}, {{"perm", Ints{0, -1, 1}}}),
                     "is not a permutation of 0..2");
  EXPECT_INFER_ERROR(infer("transpose", {f32({2, 3, 4})}, {{"perm", Ints{1, 0}}}),
                     "attribute perm = [1, 0] has 2 entries, but f32[2,3,4] has rank 3");
}

// ------------------------------------------------------------ expand

TEST(InferShape, ExpandBroadcastsBothWays) {
  EXPECT_INFERS(inferOne("expand", {f32({3, 1})}, {{"shape", Ints{2, 1, 4}}}), f32({2, 3, 4}));
  EXPECT_INFERS(inferOne("expand", {f32({2, 3})}, {{"shape", Ints{3}}}), f32({2, 3}));
  EXPECT_INFERS(inferOne("expand", {f32({1, 3})}, {{"shape", Ints{0, 1}}}), f32({0, 3}));
}

TEST(InferShape, ExpandErrors) {
  EXPECT_INFER_ERROR(infer("expand", {f32({2, 3})}, {{"shape", Ints{4}}}),
                     "cannot expand f32[2,3] to [4]: shapes [2,3] and [4] do not broadcast");
  EXPECT_INFER_ERROR(infer("expand", {f32({2, 3})}, {{"shape", Ints{-1, 3}}}),
                     "attribute shape = [-1, 3] contains the negative size -1");
  EXPECT_INFER_ERROR(infer("expand", {f32({1})}, {{"shape", Ints{int64_t{1} << 30, int64_t{1} << 30}}}),
                     "more than 2^48 elements");
}

// ------------------------------------------------------------ concat / split

TEST(InferShape, Concat) {
  EXPECT_INFERS(inferOne("concat", {f32({2, 3}), f32({2, 5}), f32({2, 0})}, {{"axis", -1}}), f32({2, 8}));
  EXPECT_INFERS(inferOne("concat", {boolT({1, 3})}, {{"axis", 0}}), boolT({1, 3}));
}

TEST(InferShape, ConcatErrors) {
  EXPECT_INFER_ERROR(infer("concat", {f32({2, 3}), f32({2, 3})}), "requires attribute 'axis'");
  EXPECT_INFER_ERROR(infer("concat", {}, {{"axis", 0}}), "takes at least 1 operand");
  EXPECT_INFER_ERROR(infer("concat", {f32({2, 3}), i64({2, 3})}, {{"axis", 0}}),
                     "operands 0 and 1 must have the same dtype, got f32[2,3] and i64[2,3]");
  EXPECT_INFER_ERROR(infer("concat", {f32({2, 3}), f32({2, 3, 1})}, {{"axis", 0}}),
                     "operand 1 (f32[2,3,1]) and operand 0 (f32[2,3]) have different ranks");
  EXPECT_INFER_ERROR(infer("concat", {f32({2, 3}), f32({2, 3}), f32({3, 4})}, {{"axis", 1}}),
                     "operand 2 (f32[3,4]) and operand 0 (f32[2,3]) differ in dimension 0, which is not the concat "
                     "axis 1");
  EXPECT_INFER_ERROR(infer("concat", {f32({2, 3})}, {{"axis", 2}}), "attribute axis = 2 is out of range for rank 2");
  EXPECT_INFER_ERROR(infer("concat", {f32({}), f32({})}, {{"axis", 0}}), "out of range for rank 0");
}

TEST(InferShape, Split) {
  auto r = infer("split", {f32({2, 5})}, {{"axis", -1}, {"sizes", Ints{2, 0, 3}}});
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0], f32({2, 2}));
  EXPECT_EQ((*r)[1], f32({2, 0}));
  EXPECT_EQ((*r)[2], f32({2, 3}));
}

TEST(InferShape, SplitErrors) {
  EXPECT_INFER_ERROR(infer("split", {f32({4, 3})}, {{"sizes", Ints{1, 2}}}),
                     "attribute sizes = [1, 2] must sum to 4, the size of axis 0 of f32[4,3]");
  EXPECT_INFER_ERROR(infer("split", {f32({4, 3})}, {{"sizes", Ints{5, -1}}}),
                     "attribute sizes = [5, -1] contains the negative size -1");
  EXPECT_INFER_ERROR(infer("split", {f32({4, 3})}, {{"sizes", Ints{kI64Max, kI64Max, 2}}}), "must sum to 4");
  EXPECT_INFER_ERROR(infer("split", {f32({4, 3})}, {{"sizes", Ints{}}}), "attribute sizes is empty");
  EXPECT_INFER_ERROR(infer("split", {f32({4, 3})}, {{"axis", -3}, {"sizes", Ints{4}}}),
                     "attribute axis = -3 is out of range for rank 2");
  EXPECT_INFER_ERROR(infer("split", {f32({4, 3})}), "requires attribute 'sizes'");
}

// ------------------------------------------------------------ slice

TEST(InferShape, SliceClampsLikeOnnx) {
  EXPECT_INFERS(inferOne("slice", {f32({5, 6})}, {{"starts", Ints{1, -4}}, {"ends", Ints{4, kI64Max}}}), f32({3, 4}));
  EXPECT_INFERS(
      inferOne("slice", {f32({5, 6})}, {{"starts", Ints{-1}}, {"ends", Ints{kI64Min}}, {"steps", Ints{-2}}}),
      f32({3, 6}));
  EXPECT_INFERS(inferOne("slice", {f32({5, 6})}, {{"starts", Ints{4}}, {"ends", Ints{2}}, {"axes", Ints{-1}}}),
                f32({5, 0}));
  EXPECT_INFERS(inferOne("slice", {f32({5, 6})},
                         {{"starts", Ints{kI64Max}}, {"ends", Ints{kI64Min}}, {"steps", Ints{kI64Min}}}),
                f32({1, 6}));
  EXPECT_INFERS(inferOne("slice", {f32({0, 6})}, {{"starts", Ints{-1}}, {"ends", Ints{kI64Min}}, {"steps", Ints{-1}}}),
                f32({0, 6}));
  EXPECT_INFERS(inferOne("slice", {f32({})}, {{"starts", Ints{}}, {"ends", Ints{}}}), f32({}));
}

TEST(InferShape, SliceErrors) {
  AttrMap base{{"starts", Ints{0, 1}}, {"ends", Ints{2, 3}}};
  auto with = [&](const char* name, Attribute a) {
    AttrMap m = base;
    m[name] = std::move(a);
    return m;
  };
  EXPECT_INFER_ERROR(infer("slice", {f32({5, 6})}, with("steps", Ints{1, 0})),
                     "attribute steps = [1, 0] contains 0; steps must be nonzero");
  EXPECT_INFER_ERROR(infer("slice", {f32({5, 6})}, with("ends", Ints{2})),
                     "attributes starts = [0, 1] and ends = [2] differ in length");
  EXPECT_INFER_ERROR(infer("slice", {f32({5, 6})}, with("axes", Ints{0})),
                     "attribute axes = [0] has 1 entries, but starts has 2");
  EXPECT_INFER_ERROR(infer("slice", {f32({5, 6})}, with("steps", Ints{1, 1, 1})),
                     "attribute steps = [1, 1, 1] has 3 entries, but starts has 2");
  EXPECT_INFER_ERROR(infer("slice", {f32({5, 6})}, with("axes", Ints{1, -1})),
                     "attribute axes = [1, -1] repeats axis 1");
  EXPECT_INFER_ERROR(infer("slice", {f32({5, 6})}, with("axes", Ints{0, 2})),
                     "attribute axes contains axis 2, out of range for rank 2");
  EXPECT_INFER_ERROR(infer("slice", {f32({5})}, base), "attribute starts has 2 entries, more than the rank of f32[5]");
  EXPECT_INFER_ERROR(infer("slice", {f32({5})}, {{"starts", Ints{0}}}), "requires attribute 'ends'");
}

// ------------------------------------------------------------ squeeze / unsqueeze / flatten

TEST(InferShape, SqueezeUnsqueeze) {
  EXPECT_INFERS(inferOne("squeeze", {f32({1, 3, 1, 2})}), f32({3, 2}));
  EXPECT_INFERS(inferOne("squeeze", {f32({1, 3, 1, 2})}, {{"axes", Ints{-2}}}), f32({1, 3, 2}));
  EXPECT_INFERS(inferOne("squeeze", {f32({1, 1})}), f32({}));
  EXPECT_INFERS(inferOne("unsqueeze", {f32({2, 3})}, {{"axes", Ints{-1, 0}}}), f32({1, 2, 3, 1}));
  EXPECT_INFERS(inferOne("unsqueeze", {f32({})}, {{"axes", Ints{0}}}), f32({1}));
  EXPECT_INFERS(inferOne("unsqueeze", {f32({2, 3})}, {{"axes", Ints{2}}}), f32({2, 3, 1}));
}

TEST(InferShape, SqueezeUnsqueezeErrors) {
  EXPECT_INFER_ERROR(infer("squeeze", {f32({1, 3})}, {{"axes", Ints{1}}}),
                     "cannot squeeze axis 1 of f32[1,3]: its size is 3, not 1");
  EXPECT_INFER_ERROR(infer("squeeze", {f32({1, 3})}, {{"axes", Ints{2}}}),
                     "attribute axes contains axis 2, out of range for rank 2");
  EXPECT_INFER_ERROR(infer("squeeze", {f32({1, 1})}, {{"axes", Ints{0, -2}}}), "attribute axes repeats an axis");
  EXPECT_INFER_ERROR(infer("unsqueeze", {f32({2, 3})}), "requires attribute 'axes'");
  // Axes refer to the result rank (3 here), so 3 is out of range.
  EXPECT_INFER_ERROR(infer("unsqueeze", {f32({2, 3})}, {{"axes", Ints{3}}}),
                     "attribute axes contains axis 3, out of range for rank 3");
  EXPECT_INFER_ERROR(infer("unsqueeze", {f32({2, 3})}, {{"axes", Ints{0, -4}}}), "attribute axes repeats an axis");
  EXPECT_INFER_ERROR(infer("unsqueeze", {f32({2, 3, 4, 5})}, {{"axes", Ints{0, 1, 2}}}),
                     "gives rank 7, above the maximum of 6");
}

TEST(InferShape, Flatten) {
  EXPECT_INFERS(inferOne("flatten", {f32({2, 3, 4})}), f32({2, 12}));
  EXPECT_INFERS(inferOne("flatten", {f32({2, 3, 4})}, {{"axis", 0}}), f32({1, 24}));
  EXPECT_INFERS(inferOne("flatten", {f32({2, 3, 4})}, {{"axis", 3}}), f32({24, 1}));
  EXPECT_INFERS(inferOne("flatten", {f32({2, 3, 4})}, {{"axis", -3}}), f32({1, 24}));
  EXPECT_INFERS(inferOne("flatten", {f32({2, 0, 4})}, {{"axis", 2}}), f32({0, 4}));
  EXPECT_INFER_ERROR(infer("flatten", {f32({2, 3})}, {{"axis", 3}}),
                     "attribute axis = 3 is out of range [-2, 2] for f32[2,3]");
  EXPECT_INFER_ERROR(infer("flatten", {f32({2, 3})}, {{"axis", -3}}), "is out of range [-2, 2]");
}

// ------------------------------------------------------------ pad

TEST(InferShape, Pad) {
  EXPECT_INFERS(inferOne("pad", {f32({3, 4})}, {{"pads", Ints{1, 0, 2, -3}}}), f32({6, 1}));
  EXPECT_INFERS(inferOne("pad", {f32({3, 4})}, {{"pads", Ints{2, 3, 2, 3}}, {"mode", "reflect"}}), f32({7, 10}));
  EXPECT_INFERS(inferOne("pad", {f32({0, 4})}, {{"pads", Ints{0, 9, 0, 0}}, {"mode", "edge"}}), f32({0, 13}));
  EXPECT_INFERS(inferOne("pad", {i64({2})}, {{"pads", Ints{1, 1}}, {"value", 3}}), i64({4}));
}

TEST(InferShape, PadErrors) {
  EXPECT_INFER_ERROR(infer("pad", {f32({3, 4})}, {{"pads", Ints{1, 1}}}),
                     "attribute pads = [1, 1] has 2 entries, but f32[3,4] needs 2 * rank = 4");
  EXPECT_INFER_ERROR(infer("pad", {f32({3})}, {{"pads", Ints{1, 1}}, {"mode", "wrap"}}),
                     "attribute mode = \"wrap\" is not one of \"constant\", \"reflect\", \"edge\"");
  EXPECT_INFER_ERROR(infer("pad", {f32({3, 4})}, {{"pads", Ints{-2, 0, -2, 0}}}),
                     "attribute pads = [-2, 0, -2, 0] crops axis 0 of f32[3,4] below zero (3 + -2 + -2)");
  EXPECT_INFER_ERROR(infer("pad", {f32({3, 4})}, {{"pads", Ints{0, 4, 0, 0}}, {"mode", "reflect"}}),
                     "reflect padding of axis 1 of f32[3,4] by 4 and 0 needs pads smaller than its size 4");
  EXPECT_INFER_ERROR(infer("pad", {f32({1})}, {{"pads", Ints{0, 1}}, {"mode", "reflect"}}),
                     "needs pads smaller than its size 1");
  EXPECT_INFER_ERROR(infer("pad", {f32({0, 2})}, {{"pads", Ints{1, 0, 0, 0}}, {"mode", "edge"}}),
                     "edge padding cannot grow axis 0 of f32[0,2]: it is empty");
  EXPECT_INFER_ERROR(infer("pad", {f32({3})}, {{"pads", Ints{kI64Max, kI64Max}}}), "exceeds 2^48 elements");
  EXPECT_INFER_ERROR(infer("pad", {f32({3})}, {{"pads", Ints{kI64Min, 0}}}), "exceeds 2^48 elements");
  EXPECT_INFER_ERROR(infer("pad", {f32({3, 3})}, {{"pads", Ints{int64_t{1} << 30, int64_t{1} << 30, 0, 0}}}),
                     "has more than 2^48 elements");
  EXPECT_INFER_ERROR(infer("pad", {f32({3})}, {{"pads", Ints{1, 1}}, {"value", "zero"}}),
                     "attribute 'value' of op 'pad' must be float, got string");
}

// ------------------------------------------------------------ gather

TEST(InferShape, Gather) {
  EXPECT_INFERS(inferOne("gather", {f32({5, 3}), i64({2, 4})}), f32({2, 4, 3}));
  EXPECT_INFERS(inferOne("gather", {f32({2, 5, 3}), i32({4})}, {{"axis", -2}}), f32({2, 4, 3}));
  EXPECT_INFERS(inferOne("gather", {boolT({2, 5}), i64({})}, {{"axis", 1}}), boolT({2}));
}

TEST(InferShape, GatherErrors) {
  EXPECT_INFER_ERROR(infer("gather", {f32({5, 3}), f32({2})}),
                     "operand 1 (indices) must be i64 or i32, got f32[2]");
  EXPECT_INFER_ERROR(infer("gather", {f32({5, 3}), i64({2})}, {{"axis", 2}}),
                     "attribute axis = 2 is out of range for rank 2");
  EXPECT_INFER_ERROR(infer("gather", {f32({}), i64({2})}), "attribute axis = 0 is out of range for rank 0");
  EXPECT_INFER_ERROR(infer("gather", {f32({5})}), "op 'gather' takes 2 operands, got 1");
}

TEST(ShapeReference, GatherReportsTheBadIndex) {
  Tensor data = Tensor::fromDoubles(f32({5}), {0, 1, 2, 3, 4});
  Tensor idx = Tensor::fromDoubles(i64({4}), {0, -5, 4, 7});
  auto r = evaluate("gather", {data, idx});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(), "index 7 at position 3 is out of range for axis 0 of size 5");
  Tensor negative = Tensor::fromDoubles(i32({1}), {-6});
  r = evaluate("gather", {data, negative});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(), "index -6 at position 0 is out of range for axis 0 of size 5");
}

TEST(ShapeReference, GatherChecksIndicesEvenWhenTheResultIsEmpty) {
  Tensor data(f32({3, 0}));
  Tensor idx = Tensor::fromDoubles(i64({1}), {3});
  auto r = evaluate("gather", {data, idx});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(), "index 3 at position 0 is out of range for axis 0 of size 3");
}

// i64 data beyond 2^53 moves as bytes, not through doubles.
TEST(ShapeReference, DataMovementIsExactForLargeI64) {
  Tensor data(i64({2}));
  int64_t vals[2] = {(int64_t{1} << 62) + 1, kI64Min + 1};
  std::memcpy(data.data(), vals, sizeof vals);
  auto r = evaluate("slice", {data}, {{"starts", Ints{-1}}, {"ends", Ints{kI64Min}}, {"steps", Ints{-1}}});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)[0].as<int64_t>()[0], vals[1]);
  EXPECT_EQ((*r)[0].as<int64_t>()[1], vals[0]);
}

// ------------------------------------------------------------ shape_of

TEST(InferShape, ShapeOf) {
  EXPECT_INFERS(inferOne("shape_of", {f32({2, 0, 4})}), i64({3}));
  EXPECT_INFERS(inferOne("shape_of", {boolT({})}), i64({0}));
}

// Constant folding evaluates shape_of on a rank-0 placeholder tensor: the
// result must come from the operand's type.
TEST(ShapeReference, ShapeOfReadsTheType) {
  const OpDef* def = OpRegistry::global().find("shape_of");
  AttrMap attrs;
  std::vector<TensorType> types{f32({7, 0, 3})};
  Tensor placeholder(f32({}));
  const Tensor* inputs[] = {&placeholder};
  std::vector<TensorType> outTypes{i64({3})};
  auto r = def->reference(OpCall{*def, attrs, types}, inputs, outTypes);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)[0].toDoubles(), (std::vector<double>{7, 0, 3}));
}

}  // namespace
}  // namespace kfuse
