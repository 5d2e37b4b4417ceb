// Every op of the registry has a free function, and each function builds
// exactly one node of its op with the attributes it was given.
#include <set>

#include "ir/op_registry.h"
#include "tests/trace/trace_test_util.h"

namespace {

using namespace kfuse::trace;
using kfuse::AttrMap;
using kfuse::test::f32;
using kfuse::test::i64;
namespace test = kfuse::test;
using Ints = std::vector<int64_t>;
using Call = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

struct OpCase {
  std::string op;
  std::vector<TensorType> inputs;
  Call call;
  AttrMap expect = {};  // attributes the node must carry
};

template <typename F>
Call one(F f) {
  return [f](const std::vector<Tensor>& in) { return std::vector<Tensor>{f(in)}; };
}

std::vector<OpCase> unaryCases() {
  TensorType x = f32({2, 3});
  std::vector<OpCase> cases;
  auto push = [&](std::string op, Tensor (*fn)(const Tensor&), TensorType in) {
    cases.push_back({op, {in}, one([fn](const auto& in) { return fn(in[0]); })});
  };
  push("identity", identity, x);
  push("neg", neg, x);
  push("abs", kfuse::trace::abs, x);
  push("exp", kfuse::trace::exp, x);
  push("log", kfuse::trace::log, x);
  push("sqrt", kfuse::trace::sqrt, x);
  push("rsqrt", rsqrt, x);
  push("reciprocal", reciprocal, x);
  push("tanh", kfuse::trace::tanh, x);
  push("sigmoid", sigmoid, x);
  push("relu", relu, x);
  push("erf", kfuse::trace::erf, x);
  push("sin", kfuse::trace::sin, x);
  push("cos", kfuse::trace::cos, x);
  push("sign", sign, x);
  push("floor", kfuse::trace::floor, x);
  push("ceil", kfuse::trace::ceil, x);
  push("round", kfuse::trace::round, x);
  push("shape_of", shapeOf, x);
  push("global_avg_pool2d", globalAvgPool2d, f32({1, 2, 3, 3}));
  cases.push_back({"leaky_relu", {x}, one([](const auto& in) { return leakyRelu(in[0], 0.2); }), {{"alpha", 0.2}}});
  cases.push_back({"elu", {x}, one([](const auto& in) { return elu(in[0], 0.5); }), {{"alpha", 0.5}}});
  cases.push_back({"gelu", {x}, one([](const auto& in) { return gelu(in[0], "tanh"); }), {{"approximate", "tanh"}}});
  cases.push_back({"softplus", {x}, one([](const auto& in) { return softplus(in[0], 2.0, 10.0); }),
                   {{"beta", 2.0}, {"threshold", 10.0}}});
  cases.push_back({"clip", {x}, one([](const auto& in) { return clip(in[0], -1.0, 1.0); }), {{"min", -1.0}, {"max", 1.0}}});
  cases.push_back({"cast", {x}, one([](const auto& in) { return cast(in[0], DType::F16); }), {{"to", "f16"}}});
  return cases;
}

std::vector<OpCase> binaryCases() {
  std::vector<OpCase> cases;
  auto push = [&](std::string op, Tensor (*fn)(const Tensor&, const Tensor&)) {
    cases.push_back({op, {f32({2, 3}), f32({3})}, one([fn](const auto& in) { return fn(in[0], in[1]); })});
  };
  push("add", add);
  push("sub", sub);
  push("mul", mul);
  push("div", div);
  push("pow", kfuse::trace::pow);
  push("maximum", maximum);
  push("minimum", minimum);
  push("equal", equal);
  push("less", less);
  push("greater", greater);
  push("less_equal", lessEqual);
  push("greater_equal", greaterEqual);
  TensorType b = TensorType(DType::Bool, {2, 3});
  cases.push_back({"logical_not", {b}, one([](const auto& in) { return logicalNot(in[0]); })});
  cases.push_back({"logical_and", {b, b}, one([](const auto& in) { return logicalAnd(in[0], in[1]); })});
  cases.push_back({"logical_or", {b, b}, one([](const auto& in) { return logicalOr(in[0], in[1]); })});
  cases.push_back({"logical_xor", {b, b}, one([](const auto& in) { return logicalXor(in[0], in[1]); })});
  cases.push_back({"where", {TensorType(DType::Bool, {2, 3}), f32({2, 3}), f32({3})},
                   one([](const auto& in) { return where(in[0], in[1], in[2]); })});
  cases.push_back({"mse_loss", {f32({3}), f32({3})}, one([](const auto& in) { return mseLoss(in[0], in[1], "sum"); }),
                   {{"reduction", "sum"}}});
  cases.push_back({"cross_entropy", {f32({4, 5}), i64({4})},
                   one([](const auto& in) { return crossEntropy(in[0], in[1], "sum", 1); }),
                   {{"reduction", "sum"}, {"ignore_index", int64_t{1}}}});
  return cases;
}

std::vector<OpCase> reductionCases() {
  TensorType x = f32({2, 3});
  AttrMap keep = {{"axes", Ints{1}}, {"keepdims", true}};
  return {
      {"reduce_sum", {x}, one([](const auto& in) { return reduceSum(in[0], {1}, true); }), keep},
      {"reduce_mean", {x}, one([](const auto& in) { return reduceMean(in[0], {1}, true); }), keep},
      {"reduce_max", {x}, one([](const auto& in) { return reduceMax(in[0], {1}, true); }), keep},
      {"reduce_min", {x}, one([](const auto& in) { return reduceMin(in[0], {1}, true); }), keep},
      {"reduce_prod", {x}, one([](const auto& in) { return reduceProd(in[0], {1}, true); }), keep},
      {"argmax", {x}, one([](const auto& in) { return argmax(in[0], 0, true); }), {{"axis", int64_t{0}}, {"keepdims", true}}},
      {"softmax", {x}, one([](const auto& in) { return softmax(in[0], 0); }), {{"axis", int64_t{0}}}},
      {"log_softmax", {x}, one([](const auto& in) { return logSoftmax(in[0], 0); }), {{"axis", int64_t{0}}}},
  };
}

std::vector<OpCase> shapeCases() {
  TensorType x = f32({2, 3});
  return {
      {"constant", {x}, one([](const auto& in) { return in[0].tracer().constant(kfuse::Tensor(f32({1}))); }),
       {{"value", kfuse::Tensor(f32({1}))}}},
      {"reshape", {x}, one([](const auto& in) { return reshape(in[0], {3, 2}); }), {{"shape", Ints{3, 2}}}},
      {"squeeze", {f32({2, 1, 3})}, one([](const auto& in) { return squeeze(in[0], {1}); }), {{"axes", Ints{1}}}},
      {"unsqueeze", {x}, one([](const auto& in) { return unsqueeze(in[0], {0}); }), {{"axes", Ints{0}}}},
      {"flatten", {f32({2, 3, 4})}, one([](const auto& in) { return flatten(in[0], 2); }), {{"axis", int64_t{2}}}},
      {"transpose", {x}, one([](const auto& in) { return transpose(in[0], {1, 0}); }), {{"perm", Ints{1, 0}}}},
      {"expand", {f32({3, 1})}, one([](const auto& in) { return expand(in[0], {2, 3, 4}); }), {{"shape", Ints{2, 3, 4}}}},
      {"concat", {x, f32({2, 1})}, one([](const auto& in) { return concat(in, 1); }), {{"axis", int64_t{1}}}},
      {"split", {x}, [](const auto& in) { return split(in[0], {1, 2}, 1); }, {{"sizes", Ints{1, 2}}, {"axis", int64_t{1}}}},
      {"slice", {x}, one([](const auto& in) { return slice(in[0], {0}, {2}, {1}, {1}); }),
       {{"starts", Ints{0}}, {"ends", Ints{2}}, {"axes", Ints{1}}, {"steps", Ints{1}}}},
      {"pad", {x}, one([](const auto& in) { return pad(in[0], {0, 1, 0, 1}, "reflect"); }),
       {{"pads", Ints{0, 1, 0, 1}}, {"mode", "reflect"}}},
      {"gather", {f32({4, 3}), i64({2})}, one([](const auto& in) { return gather(in[0], in[1], 0); }),
       {{"axis", int64_t{0}}}},
      {"interleave", {f32({2, 2}), f32({2, 1})},
       one([](const auto& in) { return interleave(in, {2, 3}, {1, 2}, {0, 0, 0, 1}); }),
       {{"shape", Ints{2, 3}}, {"steps", Ints{1, 2}}, {"offsets", Ints{0, 0, 0, 1}}}},
      {"scatter_nd", {f32({4, 3}), i64({2, 1}), f32({2, 3})},
       one([](const auto& in) { return scatterNd(in[0], in[1], in[2], "add"); }), {{"reduction", "add"}}},
  };
}

std::vector<OpCase> linalgNormCases() {
  TensorType img = f32({2, 3, 4, 4}), ch = f32({3});
  return {
      {"matmul", {f32({2, 3}), f32({4, 3})}, one([](const auto& in) { return matmul(in[0], in[1], false, true); }),
       {{"transpose_a", false}, {"transpose_b", true}}},
      {"conv2d", {f32({1, 2, 5, 5}), f32({4, 1, 3, 3}), f32({4})},
       one([](const auto& in) {
         return conv2d(in[0], in[1], in[2], {.strides = {2, 2}, .pads = {1, 1, 1, 1}, .groups = 2});
       }),
       {{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}, {"groups", int64_t{2}}}},
      {"max_pool2d", {f32({1, 2, 5, 5})},
       one([](const auto& in) { return maxPool2d(in[0], {.kernel = {2, 2}, .strides = {1, 1}, .dilations = {2, 2}}); }),
       {{"kernel", Ints{2, 2}}, {"strides", Ints{1, 1}}, {"dilations", Ints{2, 2}}}},
      {"avg_pool2d", {f32({1, 2, 5, 5})},
       one([](const auto& in) {
         return avgPool2d(in[0], {.kernel = {3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}, .ceilMode = true,
                                  .countIncludePad = true});
       }),
       {{"kernel", Ints{3, 3}}, {"ceil_mode", true}, {"count_include_pad", true}}},
      {"batch_norm", {img, ch, ch, ch, ch},
       one([](const auto& in) { return batchNorm(in[0], in[1], in[2], in[3], in[4], 1e-3); }), {{"epsilon", 1e-3}}},
      {"batch_norm_train", {img, ch, ch},
       [](const auto& in) {
         BatchNormTrainResult r = batchNormTrain(in[0], in[1], in[2], 1e-3);
         return std::vector<Tensor>{r.y, r.mean, r.var};
       },
       {{"epsilon", 1e-3}}},
      {"layer_norm", {f32({2, 3, 4}), f32({3, 4}), f32({3, 4})},
       one([](const auto& in) { return layerNorm(in[0], in[1], in[2], -2, 1e-4); }),
       {{"axis", int64_t{-2}}, {"epsilon", 1e-4}}},
      {"dropout", {f32({8}), TensorType(DType::I64, {})},
       one([](const auto& in) { return dropout(in[0], in[1], 0.25, 7); }), {{"ratio", 0.25}, {"seed", int64_t{7}}}},
  };
}

std::vector<OpCase> allCases() {
  std::vector<OpCase> all;
  for (auto family : {unaryCases, binaryCases, reductionCases, shapeCases, linalgNormCases})
    for (OpCase& c : family()) all.push_back(std::move(c));
  return all;
}

TEST(TraceOps, EachFunctionBuildsOneNodeOfItsOpWithItsAttributes) {
  for (const OpCase& c : allCases()) {
    SCOPED_TRACE(c.op);
    Tracer t;
    std::vector<Tensor> in;
    for (size_t i = 0; i < c.inputs.size(); ++i) in.push_back(t.input("x" + std::to_string(i), c.inputs[i]));
    std::vector<Tensor> out = c.call(in);
    for (const Tensor& r : out) ASSERT_TRUE(r.ok()) << (r.error() ? r.error()->message() : "empty");
    auto m = t.finish(out);
    ASSERT_TRUE(m) << m.error().message();
    const kfuse::Graph& g = *(*m)->functions()[0];
    ASSERT_EQ(g.numNodes(), 1u) << test::irText(**m);
    const kfuse::Node& n = *g.nodeList().front();
    EXPECT_EQ(n.opName(), c.op);
    EXPECT_EQ(n.numResults(), out.size());
    for (const auto& [name, value] : c.expect) {
      ASSERT_TRUE(n.hasAttr(name)) << name;
      EXPECT_TRUE(n.attr(name) == value) << name << " = " << kfuse::formatAttribute(n.attr(name));
    }
  }
}

// Ops that passes build are not part of the tracing API: ops with a body
// (fused groups, built by fusion), gradient ops (autodiff), optimizer
// updates and collectives (data-parallel). The last three are told apart by
// name (relu_grad, conv2d_grad_input, sgd_update, all_reduce) until the
// registry marks them.
bool builtByPasses(const kfuse::OpDef& op) {
  return op.hasBody || op.name.find("_grad") != std::string::npos || op.name.ends_with("_update") ||
         op.name == "all_reduce" || op.name == "reduce_scatter" || op.name == "all_gather" || op.name == "shard";
}

// Fails when an op is added to the registry without a tracing function.
TEST(TraceOps, EveryRegistryOpHasAFunction) {
  std::set<std::string> covered, registered;
  for (const OpCase& c : allCases()) covered.insert(c.op);
  for (const kfuse::OpDef* op : kfuse::OpRegistry::global().all())
    if (!builtByPasses(*op)) registered.insert(op->name);
  std::vector<std::string> missing, unknown;
  std::set_difference(registered.begin(), registered.end(), covered.begin(), covered.end(), std::back_inserter(missing));
  std::set_difference(covered.begin(), covered.end(), registered.begin(), registered.end(), std::back_inserter(unknown));
  EXPECT_TRUE(missing.empty()) << "ops without a tracing function (add one to frontend/trace/ops.h): " << kfuse::join(missing);
  EXPECT_TRUE(unknown.empty()) << "cases of ops not in the registry: " << kfuse::join(unknown);
}

}  // namespace
