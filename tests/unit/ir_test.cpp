// The graph API (use lists, RAUW, erasure), the verifier on programmatically
// built graphs, value naming, dtype conversions and scalar expressions.
#include "ir/builder.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "ir/scalar_expr.h"
#include "ir/value_names.h"
#include "ir/verifier.h"
#include "tests/unit/test_util.h"

namespace kfuse {
namespace {

TensorType f32(Shape s) { return TensorType(DType::F32, std::move(s)); }

Node* build(Graph& g, std::string_view op, std::vector<Value*> operands, AttrMap attrs = {}) {
  auto n = buildNode(g, op, operands, std::move(attrs));
  EXPECT_TRUE(n) << n.error().message();
  return *n;
}

// Every op of the registry has exactly one handle (ir/ops/ops.def), and the
// handle finds the op again.
TEST(OpHandles, EveryRegisteredOpHasOneHandle) {
  const OpRegistry& r = OpRegistry::global();
  EXPECT_EQ(r.all().size(), kOpCount);
  for (const OpDef* op : r.all()) {
    EXPECT_EQ(findOp(op->name), op->id) << op->name;
    EXPECT_EQ(opName(op->id), op->name);
    EXPECT_EQ(&r.get(op->id), op) << op->name;
  }
  EXPECT_EQ(findOp("conv2d"), Op::Conv2d);
  EXPECT_EQ(findOp("no_such_op"), std::nullopt);
  EXPECT_EQ(r.find("no_such_op"), nullptr);
}

TEST(Graph, UseListsFollowEdits) {
  Module m;
  Graph* g = m.addFunction("main");
  Value* x = g->addArgument("x", f32({2}));
  Node* a = build(*g, "relu", {x});
  Node* b = build(*g, "add", {a->result(), a->result()});
  g->setResults({b->result()});
  EXPECT_EQ(a->result()->uses().size(), 2u);
  EXPECT_EQ(b->result()->graphUses(), 1);
  Node* c = build(*g, "neg", {x});
  g->replaceAllUsesWith(a->result(), c->result());
  EXPECT_FALSE(a->result()->hasUses());
  EXPECT_EQ(c->result()->uses().size(), 2u);
  g->eraseNode(a);
  EXPECT_EQ(x->uses().size(), 1u);
  // The neg was created after its user: the verifier names the problem.
  Status s = verifyGraph(*g);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("%0 = add: operand 0 (%1) is used before it is defined"), std::string::npos)
      << s.message();
  g->moveNode(c, b);
  EXPECT_TRUE(verifyGraph(*g)) << verifyGraph(*g).message();
}

TEST(Graph, ReplaceAllUsesUpdatesResultsAndStateUpdates) {
  Module m;
  m.addParam("w", f32({2}));
  Graph* g = m.addFunction("step");
  Value* x = g->addArgument("x", f32({2}));
  Node* a = build(*g, "relu", {x});
  Node* b = build(*g, "neg", {x});
  g->setResults({a->result()});
  g->addStateUpdate("w", a->result());
  g->replaceAllUsesWith(a->result(), b->result());
  EXPECT_EQ(g->results()[0], b->result());
  EXPECT_EQ(g->stateUpdates()[0].value, b->result());
  EXPECT_EQ(b->result()->graphUses(), 2);
  EXPECT_FALSE(a->result()->hasUses());
}

TEST(Verifier, ReportsEveryProblemWithNodeAndOp) {
  Module m;
  m.addParam("w", f32({3}));
  Graph* g = m.addFunction("main");
  Value* x = g->addArgument("x", f32({2}));
  Node* a = build(*g, "relu", {x});
  a->result()->setType(f32({5}));  // corrupt: stale result type
  a->sourceName = "/act/Relu";
  a->sourceOp = "Relu";
  g->setResults({x});
  g->setDeclaredResultTypes({f32({4})});
  g->addStateUpdate("w", x);
  Status s = verifyGraph(*g);
  ASSERT_FALSE(s);
  const std::string& msg = s.message();
  EXPECT_NE(msg.find("%0 = relu (Relu \"/act/Relu\"): result 0 is declared f32[5] but the op produces f32[2]"),
            std::string::npos) << msg;
  EXPECT_NE(msg.find("result 0 (%x) has type f32[2] but the signature declares f32[4]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("update of @w : f32[3] with a value of type f32[2]"), std::string::npos) << msg;
}

TEST(ValueNames, HintsAreKeptAndMadeUnique) {
  Module m;
  Graph* g = m.addFunction("main");
  Value* x = g->addArgument("x", f32({2}));
  Node* a = build(*g, "relu", {x});
  a->result()->setName("x");  // collides with the argument
  Node* b = build(*g, "neg", {a->result()});
  b->result()->setName("7");  // numeric hints are renumbered
  Node* c = build(*g, "exp", {b->result()});
  c->result()->setName("my value");
  ValueNames names(*g);
  EXPECT_EQ(names(a->result()), "%x_1");
  EXPECT_EQ(names(b->result()), "%0");
  EXPECT_EQ(names(c->result()), "%\"my value\"");
}

TEST(DTypes, HalfAndBFloat16RoundToNearestEven) {
  EXPECT_EQ(halfToFloat(floatToHalf(1.0f)), 1.0f);
  EXPECT_EQ(halfToFloat(floatToHalf(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(halfToFloat(floatToHalf(70000.0f))));
  EXPECT_EQ(halfToFloat(floatToHalf(5.960464477539063e-08f)), 5.960464477539063e-08f);  // smallest subnormal
  EXPECT_EQ(halfToFloat(floatToHalf(1.0f + 1.0f / 2048)), 1.0f);                        // tie -> even
  EXPECT_EQ(halfToFloat(floatToHalf(1.0f + 3.0f / 2048)), 1.0f + 2.0f / 1024);          // tie -> even (up)
  EXPECT_EQ(bfloat16ToFloat(floatToBFloat16(1.0f + 1.0f / 256)), 1.0f);                 // tie -> even
  EXPECT_EQ(bfloat16ToFloat(floatToBFloat16(3.0f)), 3.0f);
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(floatToBFloat16(NAN))));
  EXPECT_EQ(roundToDType(300.7, DType::U8), 255);
  EXPECT_EQ(roundToDType(-3.9, DType::I8), -3);
  EXPECT_EQ(roundToDType(0.2, DType::Bool), 1);
}

TEST(ScalarExpr, EvaluatesAndPrints) {
  Scalar x = Scalar::input(0, DType::F32);
  Scalar e = select(x > 0.0, x, 0.5 * expm1(x));
  double in[] = {-1.0};
  EXPECT_DOUBLE_EQ(evaluateScalar(*e.node(), in), 0.5 * std::expm1(-1.0));
  EXPECT_EQ(formatScalar(*e.node()), "select(gt(in0, 0.0), in0, mul(0.5, expm1(in0)))");
  Scalar i = Scalar::input(0, DType::I32);
  double ints[] = {-7};
  EXPECT_EQ(evaluateScalar(*(i / Scalar::constant(2, DType::I64)).node(), ints), -3);  // truncates
}

TEST(Interpreter, ChecksInputsAndParams) {
  Module m;
  m.addParam("w", f32({2}));
  Graph* g = m.addFunction("main");
  Value* x = g->addArgument("x", f32({2}));
  Node* a = build(*g, "mul", {x, g->paramValue("w")});
  g->setResults({a->result()});
  auto noData = interpret(*g, {Tensor(f32({2}))});
  ASSERT_FALSE(noData);
  EXPECT_NE(noData.error().message().find("parameter @w has no data"), std::string::npos);
  m.setParamData("w", Tensor::fromDoubles(f32({2}), {2, 3}));
  auto wrong = interpret(*g, {Tensor(f32({3}))});
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message().find("input %x must be f32[2], got f32[3]"), std::string::npos);
  auto ok = interpret(*g, {Tensor::fromDoubles(f32({2}), {1, -1})});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->outputs[0].toDoubles(), (std::vector<double>{2, -3}));
}

}  // namespace
}  // namespace kfuse
