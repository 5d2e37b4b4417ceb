// nn modules: state_dict names, parameters versus buffers, initialisation
// distributions, train/eval tracing, weights loading and its errors, and
// construction problems reported without crashing. Numerical agreement with
// PyTorch is parity_test.cpp's job.
#include <filesystem>

#include "tests/trace/trace_test_util.h"

namespace {

using namespace kfuse::trace;
namespace nn = kfuse::nn;
namespace test = kfuse::test;
using kfuse::test::f32;
using kfuse::test::i64;

std::vector<std::string> names(const std::vector<nn::NamedTensor>& ts) {
  std::vector<std::string> out;
  for (const auto& t : ts) out.push_back(t.name);
  return out;
}

using Names = std::vector<std::string>;

// ---------------------------------------------------------------- names

TEST(NnNames, MatchTorchStateDictKeys) {
  EXPECT_EQ(names(nn::Linear(3, 2).namedTensors()), (Names{"weight", "bias"}));
  EXPECT_EQ(names(nn::Linear(3, 2, false).namedTensors()), (Names{"weight"}));
  EXPECT_EQ(names(nn::Conv2d(3, 2, 3).namedTensors()), (Names{"weight", "bias"}));
  EXPECT_EQ(names(nn::BatchNorm2d(4).namedTensors()),
            (Names{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}));
  EXPECT_EQ(names(nn::BatchNorm2d(4, {.affine = false, .trackRunningStats = false}).namedTensors()), Names{});
  EXPECT_EQ(names(nn::LayerNorm({4}).namedTensors()), (Names{"weight", "bias"}));
  EXPECT_EQ(names(nn::Embedding(5, 2).namedTensors()), (Names{"weight"}));
  EXPECT_EQ(names(nn::MultiheadAttention(4, 2).namedTensors()),
            (Names{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}));
  EXPECT_EQ(names(nn::TransformerEncoderLayer(4, 2, {.dimFeedforward = 8}).namedTensors()),
            (Names{"self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
                   "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
                   "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"}));
  nn::Sequential seq{std::make_shared<nn::Linear>(2, 3), std::make_shared<nn::ReLU>(),
                     std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
                         std::make_shared<nn::BatchNorm2d>(3)})};
  EXPECT_EQ(names(seq.namedTensors()),
            (Names{"0.weight", "0.bias", "2.0.weight", "2.0.bias", "2.0.running_mean", "2.0.running_var",
                   "2.0.num_batches_tracked"}));
  EXPECT_EQ(names(seq.namedParameters()), (Names{"0.weight", "0.bias", "2.0.weight", "2.0.bias"}));
  EXPECT_EQ(names(seq.namedBuffers()), (Names{"2.0.running_mean", "2.0.running_var", "2.0.num_batches_tracked"}));
  EXPECT_EQ(seq[2]->path(), "2");
  EXPECT_EQ(seq.findTensor("2.0.running_var")->type(), f32({3}));
  EXPECT_EQ(seq.findTensor("2.0.nope"), nullptr);
}

// A user-defined module, the way a model is written by hand.
struct Net : nn::Module {
  Net() : Module("Net") {
    fc1 = registerModule("fc1", std::make_shared<nn::Linear>(4, 8));
    bn = registerModule("bn", std::make_shared<nn::BatchNorm2d>(8));
    fc2 = registerModule("fc2", std::make_shared<nn::Linear>(8, 2));
  }
  Tensor forward(const Tensor& x) override {
    auto s = scope(x);
    Tensor h = relu(fc1->forward(x));
    h = bn->forward(reshape(h, {x.shape()[0], 8, 1, 1}));
    return fc2->forward(flatten(h));
  }
  std::shared_ptr<nn::Linear> fc1, fc2;
  std::shared_ptr<nn::BatchNorm2d> bn;
};

TEST(NnTrace, ParamsAndBuffersBecomeModuleParamsWithFullNames) {
  Net net;
  net.eval();
  auto m = nn::trace(net, f32({3, 4}));
  ASSERT_TRUE(m) << m.error().message();
  std::string ir = test::irText(**m);
  for (const char* line : {"param @fc1.weight : f32[8,4]", "param @bn.bias : f32[8]", "buffer @bn.running_mean : f32[8]",
                           "buffer @bn.running_var : f32[8]", "param @fc2.bias : f32[2]"})
    EXPECT_TRUE(test::contains(ir, line)) << line << "\n" << ir;
  EXPECT_FALSE(test::contains(ir, "num_batches_tracked")) << "eval mode does not read it";
  EXPECT_TRUE(test::contains(ir, "batch_norm %")) << ir;
  EXPECT_TRUE(test::contains(ir, "loc(\"fc1\", \"Linear\")")) << ir;
  EXPECT_TRUE(test::contains(ir, "loc(\"Net\", \"Net\")")) << "ops of the root module's own forward";
  // The traced parameters share the module's data.
  EXPECT_EQ((*m)->findParam("fc2.weight")->data.get(), net.fc2->findTensor("weight"));
  EXPECT_TRUE(test::run(**m, {test::sample(f32({3, 4}))}).size() == 1);
}

TEST(NnTrace, TrainModeBatchNormUpdatesItsBuffers) {
  Net net;
  auto m = nn::trace(net, f32({3, 4}));
  ASSERT_TRUE(m) << m.error().message();
  const kfuse::Graph& g = *(*m)->functions()[0];
  std::string ir = test::irText(**m);
  EXPECT_TRUE(test::contains(ir, "batch_norm_train")) << ir;
  std::vector<std::string> updated;
  for (const auto& u : g.stateUpdates()) updated.push_back(u.param);
  EXPECT_EQ(updated, (Names{"bn.num_batches_tracked", "bn.running_mean", "bn.running_var"}));
  auto r = kfuse::interpret(g, {test::sample(f32({3, 4}))});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->updates.at("bn.num_batches_tracked")->at(0), 1);
}

TEST(NnTrace, TrainModeBatchNormNeedsMoreThanOneValuePerChannel) {
  nn::BatchNorm2d bn(2);
  EXPECT_TRACE_ERROR(nn::trace(bn, f32({1, 2, 1, 1})),
                     "in BatchNorm2d: training needs more than one value per channel, got input f32[1,2,1,1]");
  bn.eval();
  EXPECT_TRUE(nn::trace(bn, f32({1, 2, 1, 1})));
}

TEST(NnTrace, DropoutIsTheOpInTrainingAndNothingInEval) {
  nn::Dropout drop(0.25);
  auto trained = trace([&](const Tensor& x) { return std::vector<Tensor>{drop.forward(x), drop.forward(x)}; },
                       {f32({4096})});
  ASSERT_TRUE(trained) << trained.error().message();
  const kfuse::Graph& g = *(*trained)->functions()[0];
  ASSERT_EQ(g.numNodes(), 2u);
  const kfuse::Node& first = *g.nodeList().front();
  const kfuse::Node& second = *g.nodeList().back();
  EXPECT_EQ(first.opName(), "dropout");
  EXPECT_EQ(first.attr("ratio").asFloat(), 0.25);
  EXPECT_EQ(first.attr("seed").asInt(), drop.seed());
  EXPECT_NE(second.attr("seed").asInt(), drop.seed()) << "a second use draws another mask";
  // Kept elements are scaled by 1 / (1 - p); about 1 - p of them are kept.
  kfuse::Tensor ones(f32({4096}));
  nn::init::fill(ones, 1.0);
  auto out = test::run(**trained, {ones});
  int kept = 0;
  for (double v : out[0].toDoubles()) {
    EXPECT_TRUE(v == 0.0 || std::fabs(v - 1.0 / 0.75) < 1e-6) << v;
    kept += v != 0.0;
  }
  EXPECT_NEAR(kept / 4096.0, 0.75, 0.03);

  drop.eval();
  auto evaluated = trace([&](const Tensor& x) { return drop.forward(x); }, {f32({8})});
  ASSERT_TRUE(evaluated);
  EXPECT_EQ((*evaluated)->functions()[0]->numNodes(), 0u);
  nn::Dropout all(1.0);
  auto zeroed = trace([&](const Tensor& x) { return all.forward(x); }, {f32({3})});
  ASSERT_TRUE(zeroed) << zeroed.error().message();
  EXPECT_EQ(test::run(**zeroed, {test::sample(f32({3}))})[0].toDoubles(), (std::vector<double>{0, 0, 0}));
}

TEST(NnTrace, AttentionDropoutOnlyInTraining) {
  nn::TransformerEncoderLayer layer(4, 2, {.dimFeedforward = 8, .dropout = 0.5});
  auto count = [&] {
    auto m = nn::trace(layer, f32({2, 3, 4}));
    EXPECT_TRUE(m) << m.error().message();
    int n = 0;
    for (const auto& node : (*m)->functions()[0]->nodeList()) n += node->opName() == "dropout";
    return n;
  };
  EXPECT_EQ(count(), 4);  // attention weights, dropout, dropout1, dropout2
  layer.eval();
  EXPECT_EQ(count(), 0);
}

// ---------------------------------------------------------------- initialisation

struct Moments {
  double mean = 0, var = 0, maxAbs = 0;
};
Moments moments(const kfuse::Tensor& t) {
  Moments m;
  std::vector<double> v = t.toDoubles();
  for (double x : v) {
    m.mean += x;
    m.maxAbs = std::max(m.maxAbs, std::fabs(x));
  }
  m.mean /= static_cast<double>(v.size());
  for (double x : v) m.var += (x - m.mean) * (x - m.mean);
  m.var /= static_cast<double>(v.size());
  return m;
}

// U(-b, b): every value within b, variance b^2 / 3, mean 0, each moment
// within 5 standard errors of the sample (a uniform's sample variance has
// standard error sqrt(0.8 / n) * variance).
void expectUniform(const kfuse::Tensor& t, double bound, const std::string& what) {
  Moments m = moments(t);
  auto n = static_cast<double>(t.numElements());
  double var = bound * bound / 3;
  EXPECT_LE(m.maxAbs, bound) << what;
  if (n >= 1000) {
    EXPECT_GT(m.maxAbs, 0.99 * bound) << what;
  }
  EXPECT_NEAR(m.var, var, 5 * std::sqrt(0.8 / n) * var) << what;
  EXPECT_NEAR(m.mean, 0, 5 * std::sqrt(var / n)) << what;
}

TEST(NnInit, FollowsTorchDefaults) {
  nn::manualSeed(1);
  nn::Linear linear(400, 300);
  expectUniform(*linear.findTensor("weight"), 1 / std::sqrt(400.0), "Linear.weight");
  expectUniform(*linear.findTensor("bias"), 1 / std::sqrt(400.0), "Linear.bias");
  nn::Conv2d conv(64, 32, 3, {.groups = 4});
  double convBound = 1 / std::sqrt(64.0 / 4 * 9);
  expectUniform(*conv.findTensor("weight"), convBound, "Conv2d.weight");
  expectUniform(*conv.findTensor("bias"), convBound, "Conv2d.bias");
  nn::Embedding emb(1000, 64);
  Moments e = moments(*emb.findTensor("weight"));
  EXPECT_NEAR(e.mean, 0, 0.02);
  EXPECT_NEAR(e.var, 1, 0.03);
  nn::MultiheadAttention mha(64, 4);
  expectUniform(*mha.findTensor("in_proj_weight"), std::sqrt(6.0 / (64 + 3 * 64)), "in_proj_weight");
  expectUniform(*mha.findTensor("out_proj.weight"), 1 / std::sqrt(64.0), "out_proj.weight");
  EXPECT_EQ(moments(*mha.findTensor("in_proj_bias")).maxAbs, 0);
  EXPECT_EQ(moments(*mha.findTensor("out_proj.bias")).maxAbs, 0);
  nn::BatchNorm2d bn(3);
  EXPECT_EQ(bn.findTensor("weight")->toDoubles(), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(bn.findTensor("running_var")->toDoubles(), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(bn.findTensor("num_batches_tracked")->type(), i64({}));
  nn::LayerNorm ln({2});
  EXPECT_EQ(ln.findTensor("bias")->toDoubles(), (std::vector<double>{0, 0}));
}

TEST(NnInit, SeededAndReproducible) {
  nn::manualSeed(7);
  nn::Linear a(8, 8);
  nn::manualSeed(7);
  nn::Linear b(8, 8);
  nn::manualSeed(8);
  nn::Linear c(8, 8);
  EXPECT_TRUE(a.findTensor("weight")->identical(*b.findTensor("weight")));
  EXPECT_FALSE(a.findTensor("weight")->identical(*c.findTensor("weight")));
  nn::Generator g1(3), g2(3);
  a.resetParameters(g1);
  c.resetParameters(g2);
  EXPECT_TRUE(a.findTensor("bias")->identical(*c.findTensor("bias")));
}

TEST(NnInit, GeneratorIsPcg32SeededBySplitmix) {
  nn::Generator g(0), h(0), k(1);
  std::vector<uint32_t> first;
  for (int i = 0; i < 4; ++i) first.push_back(g.nextU32());
  for (uint32_t v : first) EXPECT_EQ(h.nextU32(), v);
  EXPECT_NE(k.nextU32(), first[0]);
  double sum = 0, sq = 0, lo = 1, hi = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    double u = g.uniform();
    lo = std::min(lo, u);
    hi = std::max(hi, u);
    double z = g.normal();
    sum += z;
    sq += z * z;
  }
  EXPECT_GE(lo, 0.0);
  EXPECT_LT(hi, 1.0);
  EXPECT_NEAR(sum / n, 0, 0.02);
  EXPECT_NEAR(sq / n, 1, 0.02);
  kfuse::Tensor vec(f32({3}));
  auto fans = nn::init::fanIn({3});
  ASSERT_FALSE(fans);
  EXPECT_EQ(fans.error().message(), "fan in and fan out need a weight of rank >= 2, got shape [3]");
  EXPECT_FALSE(nn::init::kaimingUniform(vec, 0, g));
}

// ---------------------------------------------------------------- weights I/O

std::string tempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("kfuse_nn_test_" + name)).string();
}

TEST(NnWeights, SaveAndLoadRoundTrip) {
  Net a, b;
  std::string path = tempPath("net.safetensors");
  ASSERT_TRUE(a.saveWeights(path));
  ASSERT_TRUE(b.loadWeights(path));
  for (const auto& t : a.namedTensors()) EXPECT_TRUE(t.data->identical(*b.findTensor(t.name))) << t.name;
  std::filesystem::remove(path);
}

TEST(NnWeights, LoadErrorsNameEachProblemAndChangeNothing) {
  nn::Linear fc(2, 3);
  kfuse::TensorMap good = fc.stateDict();
  kfuse::Tensor before = *fc.findTensor("weight");

  kfuse::TensorMap unknown = good;
  unknown.emplace("fc3.weight", kfuse::Tensor(f32({2, 2})));
  EXPECT_EQ(fc.loadStateDict(unknown).message(),
            "unknown tensor 'fc3.weight' (f32[2,2]): the model has no parameter or buffer of that name");

  kfuse::TensorMap missing = good;
  missing.erase("bias");
  EXPECT_EQ(fc.loadStateDict(missing).message(), "missing parameter 'bias' (f32[3])");

  kfuse::TensorMap shaped = good;
  shaped["weight"] = kfuse::Tensor(f32({3, 3}));
  EXPECT_EQ(fc.loadStateDict(shaped).message(), "parameter 'weight' is f32[3,2] in the model but f32[3,3] in the weights");

  kfuse::TensorMap typed = good;
  typed["weight"] = kfuse::Tensor(TensorType(DType::F64, {3, 2}));
  EXPECT_EQ(fc.loadStateDict(typed).message(), "parameter 'weight' is f32[3,2] in the model but f64[3,2] in the weights");

  kfuse::TensorMap several = shaped;
  several.erase("bias");
  several.emplace("extra", kfuse::Tensor(f32({1})));
  EXPECT_EQ(fc.loadStateDict(several).message(),
            "3 problems:\n  parameter 'weight' is f32[3,2] in the model but f32[3,3] in the weights\n  missing "
            "parameter 'bias' (f32[3])\n  unknown tensor 'extra' (f32[1]): the model has no parameter or buffer of that "
            "name");
  EXPECT_TRUE(fc.findTensor("weight")->identical(before)) << "a failed load changes nothing";

  // Non-strict loading skips unknown and missing names, never a bad shape.
  kfuse::TensorMap partial;
  partial.emplace("weight", kfuse::Tensor(f32({3, 2})));
  partial.emplace("other.thing", kfuse::Tensor(f32({7})));
  EXPECT_TRUE(fc.loadStateDict(partial, {.strict = false}));
  EXPECT_EQ(moments(*fc.findTensor("weight")).maxAbs, 0);
  EXPECT_FALSE(fc.loadStateDict(shaped, {.strict = false}));

  nn::BatchNorm2d bn(2);
  kfuse::TensorMap noStats = bn.stateDict();
  noStats.erase("running_var");
  EXPECT_EQ(bn.loadStateDict(noStats).message(), "missing buffer 'running_var' (f32[2])");
}

TEST(NnWeights, FileErrorsNameTheFile) {
  nn::Linear fc(2, 3);
  kfuse::Status s = fc.loadWeights("/nonexistent/w.safetensors");
  ASSERT_FALSE(s);
  EXPECT_TRUE(test::contains(s.message(), "/nonexistent/w.safetensors")) << s.message();
  nn::Linear other(3, 3);
  std::string path = tempPath("other.safetensors");
  ASSERT_TRUE(other.saveWeights(path));
  EXPECT_EQ(fc.loadWeights(path).message(),
            "loading '" + path + "': parameter 'weight' is f32[3,2] in the model but f32[3,3] in the weights");
  std::filesystem::remove(path);
}

TEST(NnWeights, SetTensorChecksTheType) {
  nn::Sequential seq{std::make_shared<nn::Linear>(2, 2)};
  EXPECT_TRUE(seq.setTensor("0.bias", kfuse::Tensor(f32({2}))));
  EXPECT_EQ(seq.setTensor("0.bias", kfuse::Tensor(f32({3}))).message(), "'bias' of Linear is f32[2], not f32[3]");
  EXPECT_EQ(seq.setTensor("1.bias", kfuse::Tensor(f32({2}))).message(), "Sequential has no child module '1'");
  EXPECT_EQ(seq.setTensor("0.gamma", kfuse::Tensor(f32({2}))).message(), "Linear has no parameter or buffer 'gamma'");
}

// ---------------------------------------------------------------- errors

TEST(NnErrors, ShapeErrorsNameTheModule) {
  nn::Sequential seq{std::make_shared<nn::Linear>(4, 8), std::make_shared<nn::ReLU>(),
                     std::make_shared<nn::Linear>(6, 2)};
  EXPECT_TRACE_ERROR(nn::trace(seq, f32({3, 4})),
                     "in 2 (Linear): op 'matmul': contraction sizes differ: operand 0 f32[3,8] gives K = 8, operand 1 "
                     "f32[2,6] (transposed) gives K = 6");
  nn::BatchNorm2d bn(3);
  EXPECT_TRACE_ERROR(nn::trace(bn, f32({2, 3, 4})), "in BatchNorm2d: expected a 4-D input [N, C, H, W], got f32[2,3,4]");
  nn::LayerNorm ln({5});
  EXPECT_TRACE_ERROR(nn::trace(ln, f32({2, 4})), "in LayerNorm: input f32[2,4] does not end in the normalized shape [5]");
  nn::Embedding emb(4, 2);
  EXPECT_TRACE_ERROR(nn::trace(emb, f32({3})), "in Embedding: op 'gather': operand 1 (indices) must be i64 or i32, got f32[3]");
  nn::MultiheadAttention mha(8, 2);
  EXPECT_TRACE_ERROR(nn::trace(mha, f32({2, 8})),
                     "in MultiheadAttention: expected query [N, L, E] and key, value [N, S, E] with E = 8, got f32[2,8]");
  EXPECT_TRACE_ERROR(
      trace([&](const Tensor& x, const Tensor& m) { return mha.forward(x, x, x, {.attnMask = m}); },
            {f32({2, 3, 8}), TensorType(DType::Bool, {3, 4})}),
      "attn_mask must be [L, S] = [3, 3] or [N * num_heads, L, S] = [4, 3, 3], got bool[3,4]");
  nn::AdaptiveAvgPool2d pool({2, 2});
  EXPECT_TRACE_ERROR(nn::trace(pool, f32({1, 1, 5, 4})),
                     "output size 2x2 does not divide the input's 5x4 (uneven adaptive windows are not supported)");
  nn::Flatten flat(2, 1);
  EXPECT_TRACE_ERROR(nn::trace(flat, f32({2, 3, 4})), "dims 2 to 1 are not a valid range for f32[2,3,4]");
}

TEST(NnErrors, ConstructionProblemsAreReportedNotFatal) {
  nn::Conv2d conv(3, 4, 3, {.groups = 2});
  EXPECT_EQ(conv.validate().message(), "Conv2d: groups = 2 must be >= 1 and divide in_channels 3 and out_channels 4");
  EXPECT_TRACE_ERROR(nn::trace(conv, f32({1, 3, 5, 5})),
                     "Conv2d: groups = 2 must be >= 1 and divide in_channels 3 and out_channels 4");
  EXPECT_FALSE(conv.loadStateDict(conv.stateDict()));
  nn::Linear neg(-1, 2);
  EXPECT_EQ(neg.validate().message(), "Linear: sizes in = -1, out = 2 must be >= 0");
  nn::MultiheadAttention heads(8, 3);
  EXPECT_TRACE_ERROR(nn::trace(heads, f32({1, 2, 8})), "embed_dim = 8 must be >= 0 and divisible by num_heads = 3");
  nn::TransformerEncoderLayer act(4, 2, {.activation = "swish"});
  EXPECT_EQ(act.validate().message(), "TransformerEncoderLayer: activation \"swish\" must be \"relu\" or \"gelu\"");
  nn::Dropout p(1.5);
  EXPECT_TRACE_ERROR(nn::trace(p, f32({2})), "probability p = 1.5 must be in [0, 1]");
  nn::AdaptiveAvgPool2d zero(0);
  EXPECT_TRACE_ERROR(nn::trace(zero, f32({1, 1, 2, 2})), "output size 0x0 must be at least 1x1");
  nn::LayerNorm empty(kfuse::Shape{});
  EXPECT_TRACE_ERROR(nn::trace(empty, f32({2})), "normalized shape [] must be non-empty and non-negative");
}

struct Clash : nn::Module {
  Clash() : Module("Clash") {
    registerModule("a", std::make_shared<nn::Linear>(2, 2));
    registerModule("a", std::make_shared<nn::ReLU>());
    registerModule("b.c", std::make_shared<nn::ReLU>());
  }
};

TEST(NnErrors, BadChildNamesAreReported) {
  Clash c;
  EXPECT_EQ(c.validate().message(), "Clash: module name 'a' is already taken in this module");
  nn::Sequential seq{std::make_shared<nn::Linear>(2, 2), nullptr};
  EXPECT_EQ(seq.validate().message(), "Sequential: child module '1' is null");
  EXPECT_TRACE_ERROR(nn::trace(seq, f32({1, 2})), "Sequential: child module '1' is null");
  // A defect of an ancestor also stops its children from tracing.
  EXPECT_TRACE_ERROR(trace([&](const Tensor& x) { return seq[0]->forward(x); }, {f32({1, 2})}),
                     "in 0 (Linear): Sequential: child module '1' is null");
}

TEST(NnErrors, ModulesWithoutAForwardSaySo) {
  struct Bare : nn::Module {
    Bare() : Module("Bare") {}
  } bare;
  EXPECT_TRACE_ERROR(nn::trace(bare, f32({1})), "in Bare: this module has no forward(x) taking one input");
}

TEST(NnErrors, TwoRootModulesWithTheSameNamesClash) {
  nn::Linear a(2, 2), b(2, 2);
  EXPECT_TRACE_ERROR(trace([&](const Tensor& x) { return b.forward(a.forward(x)); }, {f32({1, 2})}),
                     "in Linear: parameter 'weight' is already bound to another tensor in this trace");
}

}  // namespace
