// The tracer: building graphs through traced Tensors, the trace() forms and
// the builder, and the error design (the first error is kept, later calls
// pass it on, nothing crashes).
#include "ir/parser.h"
#include "ir/support/file_io.h"
#include "tests/trace/trace_test_util.h"

namespace {

using namespace kfuse::trace;
using kfuse::test::f32;
using kfuse::test::i64;
namespace test = kfuse::test;

TEST(Tracer, BuilderFormBuildsTypedNodesAndRuns) {
  Tracer t("demo");
  Tensor x = t.input("x", f32({2, 3}));
  Tensor h = relu(x).named("h");
  EXPECT_TRUE(h.ok());
  EXPECT_EQ(h.type(), f32({2, 3}));
  Tensor y = reduceSum(h * 2.0, {1});
  EXPECT_EQ(y.shape(), (Shape{2}));
  auto m = t.finish({y});
  ASSERT_TRUE(m) << m.error().message();
  std::string ir = test::irText(**m);
  EXPECT_TRUE(test::contains(ir, "module @demo {")) << ir;
  EXPECT_TRUE(test::contains(ir, "func @forward(%x: f32[2,3]) -> (f32[2]) {")) << ir;
  EXPECT_TRUE(test::contains(ir, "%h = relu %x : f32[2,3]")) << ir;
  EXPECT_TRUE(test::contains(ir, "constant {value = dense<f32[]>[2.0]} : f32[]")) << ir;
  auto out = test::run(**m, {kfuse::Tensor::fromDoubles(f32({2, 3}), {1, -2, 3, -4, 5, 6})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].toDoubles(), (std::vector<double>{8, 22}));
}

TEST(Tracer, OperatorsAndScalarsOnEitherSide) {
  auto m = trace(
      [](const Tensor& a, const Tensor& b) {
        return std::vector<Tensor>{a + b, a - b, a * b, a / b, a + 1.0, 1.0 - a, 2.0 * a, a / 4.0, 8.0 / b, -a,
                                   cast(a > 0.0, DType::F32), cast(a < b, DType::F32), pow(a, 2.0),
                                   cast(a >= 1.0, DType::F32), cast(b <= a, DType::F32)};
      },
      {f32({2}), f32({2})});
  ASSERT_TRUE(m) << m.error().message();
  auto out = test::run(**m, {kfuse::Tensor::fromDoubles(f32({2}), {1, -2}), kfuse::Tensor::fromDoubles(f32({2}), {4, 8})});
  std::vector<std::vector<double>> want = {{5, 6},   {-3, -10}, {4, -16},   {0.25, -0.25}, {2, -1}, {0, 3}, {2, -4},
                                           {0.25, -0.5}, {2, 1}, {-1, 2}, {1, 0}, {1, 1}, {1, 4}, {1, 0}, {0, 0}};
  ASSERT_EQ(out.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(out[i].toDoubles(), want[i]) << "output " << i;
}

TEST(Tracer, ScalarConstantsTakeTheTensorsDType) {
  auto m = trace([](const Tensor& x) { return x * 3.0; }, {i64({2})});
  ASSERT_TRUE(m) << m.error().message();
  EXPECT_TRUE(test::contains(test::irText(**m), "dense<i64[]>[3]")) << test::irText(**m);
}

TEST(Tracer, TraceFormsAcceptVectorsAndSeveralTensors) {
  auto vec = trace([](const std::vector<Tensor>& in) { return concat(in, 0); }, {f32({1}), f32({2}), f32({3})},
                   {.moduleName = "cat", .functionName = "main", .inputNames = {"a", "b", "c"}});
  ASSERT_TRUE(vec) << vec.error().message();
  EXPECT_TRUE(test::contains(test::irText(**vec), "func @main(%a: f32[1], %b: f32[2], %c: f32[3]) -> (f32[6])"));
  auto two = trace([](const Tensor& a, const Tensor& b) { return split(a + b, {1, 2}); }, {f32({3}), f32({3})});
  ASSERT_TRUE(two) << two.error().message();
  EXPECT_EQ((*two)->functions()[0]->results().size(), 2u);
  EXPECT_TRUE(test::contains(test::irText(**two), "func @forward(%x0: f32[3], %x1: f32[3])"));
}

TEST(Tracer, ArityMismatchIsAnError) {
  EXPECT_TRACE_ERROR(trace([](const Tensor& x) { return x; }, {f32({1}), f32({1})}),
                     "trace: the function takes 1 Tensor argument, but 2 input types were given");
  EXPECT_TRACE_ERROR(trace([](const Tensor& x) { return x; }, {f32({1})}, {.inputNames = {"a", "b"}}),
                     "2 input names for 1 inputs");
}

TEST(Tracer, ShapeMismatchNamesTheOpAndBothShapesAndIsKept) {
  Tracer t;
  Tensor a = t.input("a", f32({2, 3}));
  Tensor b = t.input("b", f32({4}));
  Tensor bad = a + b;
  EXPECT_FALSE(bad.ok());
  ASSERT_NE(bad.error(), nullptr);
  EXPECT_EQ(bad.error()->message(), "op 'add': shapes [2,3] and [4] do not broadcast");
  // Later calls pass the first error on and build nothing.
  Tensor later = relu(matmul(bad, a));
  ASSERT_NE(later.error(), nullptr);
  EXPECT_EQ(later.error()->message(), bad.error()->message());
  Tensor other = matmul(a, a);  // a second, independent error is not the one reported
  EXPECT_TRUE(test::contains(other.error()->message(), "op 'matmul': contraction sizes differ"));
  ASSERT_NE(t.firstError(), nullptr);
  EXPECT_EQ(t.firstError()->message(), "op 'add': shapes [2,3] and [4] do not broadcast");
  auto m = t.finish({later});
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().message(), "op 'add': shapes [2,3] and [4] do not broadcast");
}

TEST(Tracer, WrongDTypeAndBadAttributesAreErrors) {
  EXPECT_TRACE_ERROR(trace([](const Tensor& x) { return matmul(x, x); }, {i64({2, 2})}),
                     "op 'matmul': operand 0 must be floating-point, got i64[2,2]");
  EXPECT_TRACE_ERROR(trace([](const Tensor& x) { return x + cast(x, DType::F16); }, {f32({2})}),
                     "op 'add': operands 0 and 1 must have the same dtype, got f32[2] and f16[2]");
  EXPECT_TRACE_ERROR(trace([](const Tensor& x) { return reshape(x, {4, -2}); }, {f32({8})}),
                     "op 'reshape': attribute shape = [4, -2] contains the negative size -2");
  EXPECT_TRACE_ERROR(trace([](const Tensor& x) { return softmax(x, 3); }, {f32({8})}),
                     "op 'softmax': attribute axis = 3 is out of range for rank 1");
  EXPECT_TRACE_ERROR(trace([](const Tensor& x) { return dropout(x, 1.0); }, {f32({8})}),
                     "op 'dropout': attribute ratio = 1 must be in [0, 1)");
}

TEST(Tracer, EmptyTensorsAreErrorsNotCrashes) {
  Tensor empty;
  EXPECT_FALSE(empty.ok());
  EXPECT_EQ(empty.error(), nullptr);
  Tensor r = relu(empty);
  ASSERT_NE(r.error(), nullptr);
  EXPECT_EQ(r.error()->message(), "op 'relu': operand 0 is an empty Tensor (default-constructed)");
  EXPECT_FALSE((empty + 1.0).ok());
  EXPECT_FALSE(concat({}, 0).ok());
  EXPECT_EQ(concat({}, 0).error()->message(), "op 'concat': called without operands");
  EXPECT_TRACE_ERROR(trace([](const Tensor& x) { return x + Tensor(); }, {f32({2})}),
                     "op 'add': operand 1 is an empty Tensor (default-constructed)");
  EXPECT_TRACE_ERROR(trace([](const Tensor&) { return Tensor(); }, {f32({2})}),
                     "output 0 is an empty Tensor (default-constructed)");
}

TEST(Tracer, TensorsOfAnotherTraceAreRejected) {
  Tracer one, two;
  Tensor a = one.input("a", f32({2}));
  Tensor b = two.input("b", f32({2}));
  Tensor c = a + b;
  ASSERT_NE(c.error(), nullptr);
  EXPECT_EQ(c.error()->message(), "op 'add': operand 1 belongs to another trace");
  auto m = two.finish({b * 2.0, a});
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().message(), "output 1 belongs to another trace");
}

TEST(Tracer, AFinishedTraceTakesNoMoreCalls) {
  Tracer t;
  Tensor x = t.input("x", f32({2}));
  auto m = t.finish({x});
  ASSERT_TRUE(m) << m.error().message();
  EXPECT_FALSE(x.ok());
  EXPECT_EQ(x.value(), nullptr);
  EXPECT_EQ(x.type(), f32({2}));  // the type stays readable
  Tensor late = relu(x);
  ASSERT_NE(late.error(), nullptr);
  EXPECT_EQ(late.error()->message(), "op 'relu': the trace has already finished");
  EXPECT_FALSE(t.input("y", f32({1})).ok());
  EXPECT_TRACE_ERROR(t.finish({}), "finish: the trace has already finished");
}

TEST(Tracer, InputsAreChecked) {
  Tracer t;
  EXPECT_TRUE(t.input("x", f32({2})).ok());
  Tensor dup = t.input("x", f32({3}));
  ASSERT_NE(dup.error(), nullptr);
  EXPECT_EQ(dup.error()->message(), "input 'x' is declared twice");
  EXPECT_EQ(t.input("n", f32({2, -1})).error()->message(), "input 'n': shape [2, -1] contains the negative size -1");
  EXPECT_EQ(t.input("l", TensorType(DType::F32, {2}, Layout::NHWC)).error()->message(),
            "input 'l': layout tag #nhwc needs a rank-4 type");
  EXPECT_EQ(t.input("r", f32({1, 1, 1, 1, 1, 1, 1})).error()->message(),
            "input 'r' has rank 7, above the maximum of 6");
  EXPECT_EQ(t.input("", f32({1})).error()->message(), "an input needs a name");
}

TEST(Tracer, ParametersAreSharedAndUpdatesAreSequential) {
  Tracer t;
  auto w = std::make_shared<const kfuse::Tensor>(kfuse::Tensor::fromDoubles(f32({2}), {1, 2}));
  Tensor x = t.input("x", f32({2}));
  Tensor p = t.parameter("w", w);
  EXPECT_EQ(t.parameter("w", w).value(), p.value());  // same parameter, same value
  auto other = std::make_shared<const kfuse::Tensor>(*w);
  EXPECT_TRUE(test::contains(t.parameter("w", other).error()->message(),
                             "parameter 'w' is already bound to another tensor in this trace"));
  Tracer u;
  Tensor ux = u.input("x", f32({2}));
  Tensor up = u.parameter("w", w, /*trainable=*/false);
  u.update("w", up + ux);
  Tensor again = u.parameter("w", w, false);  // reads the pending new value
  EXPECT_NE(again.value(), up.value());
  u.update("w", again * 2.0);
  auto m = u.finish({again});
  ASSERT_TRUE(m) << m.error().message();
  std::string ir = test::irText(**m);
  EXPECT_TRUE(test::contains(ir, "buffer @w : f32[2]")) << ir;
  auto r = kfuse::interpret(*(*m)->functions()[0], {kfuse::Tensor::fromDoubles(f32({2}), {10, 20})});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->outputs[0].toDoubles(), (std::vector<double>{11, 22}));
  EXPECT_EQ(r->updates.at("w")->toDoubles(), (std::vector<double>{22, 44}));  // one update, the last
  EXPECT_EQ((*m)->functions()[0]->stateUpdates().size(), 1u);
}

TEST(Tracer, BadUpdatesAreErrors) {
  Tracer t;
  Tensor x = t.input("x", f32({3}));
  t.update("nope", x);
  EXPECT_EQ(t.firstError()->message(), "update of 'nope': no such parameter in this trace");
  Tracer u;
  Tensor y = u.input("y", f32({3}));
  u.parameter("w", std::make_shared<const kfuse::Tensor>(kfuse::Tensor(f32({2}))));
  u.update("w", y);
  EXPECT_EQ(u.firstError()->message(), "update of parameter 'w' : f32[2] with a value of type f32[3]");
  // A later failure carries its own message; the trace keeps the first.
  EXPECT_EQ(u.parameter("v", nullptr).error()->message(), "parameter 'v' has no data");
  EXPECT_EQ(u.firstError()->message(), "update of parameter 'w' : f32[2] with a value of type f32[3]");
}

TEST(Tracer, SeedsDifferForEveryUseOfAKey) {
  Tracer t;
  int key = 0;
  EXPECT_EQ(t.seedFor(&key, 42), 42);
  int64_t second = t.seedFor(&key, 42);
  EXPECT_NE(second, 42);
  EXPECT_NE(t.seedFor(&key, 42), second);
  int other = 0;
  EXPECT_EQ(t.seedFor(&other, 7), 7);
}

TEST(Tracer, ScopesPrefixErrorsAndMarkProvenance) {
  Tracer t;
  Tensor x = t.input("x", f32({2, 3}));
  Tensor ok, bad;
  {
    Scope s(x, "block.1", "Custom");
    ok = relu(x);
    bad = x + t.input("y", f32({5}));
  }
  Tensor outside = exp(ok);
  ASSERT_NE(bad.error(), nullptr);
  EXPECT_EQ(bad.error()->message(), "in block.1 (Custom): op 'add': shapes [2,3] and [5] do not broadcast");
  EXPECT_EQ(ok.value()->producer()->sourceName, "block.1");
  EXPECT_EQ(ok.value()->producer()->sourceOp, "Custom");
  EXPECT_EQ(outside.value()->producer()->sourceName, "");
  Tensor root;
  {
    Scope s(x, "", "Net");
    root = x.tracer().fail("custom check failed");
  }
  EXPECT_EQ(root.error()->message(), "in Net: custom check failed");
}

TEST(Tracer, MultiResultOpsFailAsAWhole) {
  Tracer t;
  Tensor x = t.input("x", f32({5}));
  std::vector<Tensor> parts = split(x, {2, 2});
  ASSERT_EQ(parts.size(), 2u);
  for (const Tensor& p : parts) EXPECT_TRUE(test::contains(p.error()->message(), "must sum to 5"));
  BatchNormTrainResult bn = batchNormTrain(x, x, x);
  EXPECT_FALSE(bn.y.ok() || bn.mean.ok() || bn.var.ok());
}

TEST(Tracer, TracedModulesPrintAndParseBack) {
  auto m = trace(
      [](const Tensor& x) {
        Tensor w = x.tracer().constant(kfuse::Tensor::fromDoubles(f32({3, 2}), {1, 2, 3, 4, 5, 6}));
        return softmax(matmul(x, w), -1);
      },
      {f32({4, 3})});
  ASSERT_TRUE(m) << m.error().message();
  std::string text = kfuse::printModule(**m);
  auto back = kfuse::parseModule(text, "traced.kir");
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(kfuse::printModule(**back), text);
}

// docs/tracing.md's complete model is examples/quickstart/main.cpp (built,
// and run by CTest), so the page cannot drift from code that compiles.
TEST(TracingDocs, CompleteModelIsTheQuickstartExample) {
  auto doc = kfuse::readFile(std::string(KFUSE_SOURCE_DIR) + "/docs/tracing.md");
  auto example = kfuse::readFile(std::string(KFUSE_SOURCE_DIR) + "/examples/quickstart/main.cpp");
  ASSERT_TRUE(doc && example);
  size_t begin = doc->find("```cpp\n");
  ASSERT_NE(begin, std::string::npos);
  begin += 7;
  std::string block = doc->substr(begin, doc->find("```\n", begin) - begin);
  std::string code = *example;
  while (code.starts_with("//")) code = code.substr(code.find('\n') + 1);  // the file's own header comment
  EXPECT_EQ(block, code);
  EXPECT_LT(std::count(block.begin(), block.end(), '\n'), 30);
}

}  // namespace
