// Every nn module against its PyTorch twin. gen_parity.py (run by CTest
// first) writes each torch module's state_dict and inputs/outputs; here the
// same structure is built from kfuse's nn modules, loaded by name (strictly:
// a name or shape that differs from torch's fails the load), traced, run by
// the reference interpreter and compared: max |kfuse - torch| <= 1e-5.
#include <fstream>
#include <set>

#include "frontend/io/npz.h"
#include "tests/trace/trace_test_util.h"

namespace {

using namespace kfuse::trace;
namespace nn = kfuse::nn;
namespace test = kfuse::test;
using ModulePtr = std::shared_ptr<nn::Module>;

constexpr double kTolerance = 1e-5;

struct ParityCase {
  std::string name;
  std::function<ModulePtr()> make;
  // Applies the module to the traced inputs in0, in1, ...; nullptr: forward(in0).
  std::function<Tensor(nn::Module&, const std::vector<Tensor>&)> call = nullptr;
  bool train = false;
};

// gtest prints a failing case by its name, not its bytes.
void PrintTo(const ParityCase& c, std::ostream* os) { *os << c.name; }

template <typename M, typename... Args>
std::function<ModulePtr()> make(Args... args) {
  return [=] { return std::make_shared<M>(args...); };
}

ModulePtr convBnRelu(int64_t in, int64_t out) {
  return std::make_shared<nn::Sequential>(std::initializer_list<ModulePtr>{
      std::make_shared<nn::Conv2d>(in, out, 3, nn::Conv2dOptions{.padding = 1}),
      std::make_shared<nn::BatchNorm2d>(out), std::make_shared<nn::ReLU>()});
}

Tensor mhaWithMasks(nn::Module& m, const std::vector<Tensor>& in) {
  return static_cast<nn::MultiheadAttention&>(m).forward(in[0], in[1], in[2], {.attnMask = in[3], .keyPaddingMask = in[4]});
}

Tensor mhaFloatMask(nn::Module& m, const std::vector<Tensor>& in) {
  return static_cast<nn::MultiheadAttention&>(m).forward(in[0], in[0], in[0], {.attnMask = in[1]});
}

Tensor encoderWithPadding(nn::Module& m, const std::vector<Tensor>& in) {
  return static_cast<nn::TransformerEncoderLayer&>(m).forward(in[0], {.keyPaddingMask = in[1]});
}

std::vector<ParityCase> cases() {
  using nn::Size2;
  return {
      {"linear", make<nn::Linear>(5, 4)},
      {"linear_nobias_3d", make<nn::Linear>(6, 3, false)},
      {"conv2d", make<nn::Conv2d>(3, 4, Size2(3), nn::Conv2dOptions{.padding = 1})},
      {"conv2d_strided_grouped",
       make<nn::Conv2d>(4, 6, Size2(3, 2),
                        nn::Conv2dOptions{.stride = {2, 1}, .padding = {1, 0}, .dilation = {1, 2}, .groups = 2})},
      {"embedding", make<nn::Embedding>(10, 4)},
      {"flatten", make<nn::Flatten>()},
      {"flatten_range", make<nn::Flatten>(1, 2)},
      {"batchnorm_eval", make<nn::BatchNorm2d>(3)},
      {"batchnorm_noaffine_eval", make<nn::BatchNorm2d>(3, nn::BatchNormOptions{.affine = false})},
      {"batchnorm_train", make<nn::BatchNorm2d>(3, nn::BatchNormOptions{.momentum = 0.2}), nullptr, true},
      {"batchnorm_train_cumulative", make<nn::BatchNorm2d>(3, nn::BatchNormOptions{.momentum = std::nullopt}), nullptr,
       true},
      {"layernorm", make<nn::LayerNorm>(kfuse::Shape{6})},
      {"layernorm_2d", make<nn::LayerNorm>(kfuse::Shape{3, 4}, nn::LayerNormOptions{.eps = 1e-3})},
      {"layernorm_noaffine", make<nn::LayerNorm>(kfuse::Shape{5}, nn::LayerNormOptions{.elementwiseAffine = false})},
      {"relu", make<nn::ReLU>()},
      {"gelu", make<nn::GELU>()},
      {"gelu_tanh", make<nn::GELU>("tanh")},
      {"tanh", make<nn::Tanh>()},
      {"sigmoid", make<nn::Sigmoid>()},
      {"dropout_eval", make<nn::Dropout>(0.3)},
      {"maxpool", make<nn::MaxPool2d>(Size2(3), nn::MaxPool2dOptions{.stride = Size2(2), .padding = 1})},
      {"maxpool_dilated_ceil",
       make<nn::MaxPool2d>(Size2(2), nn::MaxPool2dOptions{.stride = Size2(2), .dilation = 2, .ceilMode = true})},
      {"avgpool", make<nn::AvgPool2d>(Size2(3), nn::AvgPool2dOptions{.stride = Size2(2), .padding = 1})},
      {"avgpool_exclude_pad_ceil",
       make<nn::AvgPool2d>(Size2(3, 2), nn::AvgPool2dOptions{.stride = Size2(2), .padding = 1, .ceilMode = true,
                                                             .countIncludePad = false})},
      {"adaptive_avgpool_1", make<nn::AdaptiveAvgPool2d>(Size2(1))},
      {"adaptive_avgpool_2x3", make<nn::AdaptiveAvgPool2d>(Size2(2, 3))},
      {"mha_self", make<nn::MultiheadAttention>(8, 2)},
      {"mha_cross_masks", make<nn::MultiheadAttention>(8, 4), mhaWithMasks},
      {"mha_seq_first_float_mask",
       make<nn::MultiheadAttention>(8, 2, nn::MultiheadAttentionOptions{.bias = false, .batchFirst = false}),
       mhaFloatMask},
      {"encoder_layer", make<nn::TransformerEncoderLayer>(8, 2, nn::TransformerEncoderLayerOptions{.dimFeedforward = 16})},
      {"encoder_layer_gelu_norm_first",
       make<nn::TransformerEncoderLayer>(8, 4, nn::TransformerEncoderLayerOptions{.dimFeedforward = 12,
                                                                                  .activation = "gelu",
                                                                                  .layerNormEps = 1e-4,
                                                                                  .normFirst = true}),
       encoderWithPadding},
      {"sequential_mlp",
       [] {
         return std::make_shared<nn::Sequential>(std::initializer_list<ModulePtr>{
             std::make_shared<nn::Linear>(2, 16), std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(16, 16),
             std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(16, 3)});
       }},
      {"cnn",
       [] {
         return std::make_shared<nn::Sequential>(std::initializer_list<ModulePtr>{
             convBnRelu(3, 8), std::make_shared<nn::MaxPool2d>(2), convBnRelu(8, 16),
             std::make_shared<nn::AdaptiveAvgPool2d>(1), std::make_shared<nn::Flatten>(),
             std::make_shared<nn::Linear>(16, 10)});
       }},
  };
}

std::string dataPath(const std::string& file) { return std::string(KFUSE_PARITY_DIR) + "/" + file; }

// Arrays named <prefix>0, <prefix>1, ... in order.
std::vector<kfuse::Tensor> numbered(const kfuse::TensorMap& arrays, const std::string& prefix) {
  std::vector<kfuse::Tensor> out;
  for (size_t i = 0;; ++i) {
    auto it = arrays.find(prefix + std::to_string(i));
    if (it == arrays.end()) return out;
    out.push_back(it->second);
  }
}

class NnParity : public testing::TestWithParam<ParityCase> {};

TEST_P(NnParity, MatchesPyTorch) {
  const ParityCase& c = GetParam();
  auto data = kfuse::io::readNpz(dataPath(c.name + ".npz"));
  ASSERT_TRUE(data) << data.error().message();
  ModulePtr module = c.make();
  module->train(c.train);
  kfuse::Status loaded = module->loadWeights(dataPath(c.name + ".safetensors"));
  ASSERT_TRUE(loaded) << loaded.message();

  std::vector<kfuse::Tensor> inputs = numbered(*data, "in"), want = numbered(*data, "out");
  std::vector<TensorType> types;
  for (const kfuse::Tensor& t : inputs) types.push_back(t.type());
  auto traced = trace(
      [&](const std::vector<Tensor>& in) { return c.call ? c.call(*module, in) : module->forward(in[0]); }, types);
  ASSERT_TRUE(traced) << traced.error().message();
  auto result = kfuse::interpret(*(*traced)->functions()[0], inputs);
  ASSERT_TRUE(result) << result.error().message();

  ASSERT_EQ(result->outputs.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    double d = test::maxAbsDiff(result->outputs[i], want[i]);
    EXPECT_LE(d, kTolerance) << "output " << i << ": " << formatType(result->outputs[i].type()) << " vs torch "
                             << formatType(want[i].type());
    worst = std::max(worst, d);
  }
  // Training-mode state: the buffers after the step, as torch left them.
  for (const auto& [key, expected] : *data) {
    if (!key.starts_with("state.")) continue;
    auto it = result->updates.find(key.substr(6));
    ASSERT_NE(it, result->updates.end()) << "no state update of " << key.substr(6);
    double d = test::maxAbsDiff(*it->second, expected);
    EXPECT_LE(d, kTolerance) << key;
    worst = std::max(worst, d);
  }
  std::cout << "parity " << c.name << ": max abs diff " << worst << "\n";
  RecordProperty("max_abs_diff", std::to_string(worst));
}

INSTANTIATE_TEST_SUITE_P(Modules, NnParity, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<ParityCase>& info) { return info.param.name; });

// The generator and this file list the same cases.
TEST(NnParityCoverage, EveryGeneratedCaseIsChecked) {
  std::ifstream in(dataPath("cases.txt"));
  ASSERT_TRUE(in) << "run gen_parity.py first (CTest does, as the fixture trace.parity_data)";
  std::set<std::string> generated, checked;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) generated.insert(line);
  for (const ParityCase& c : cases()) checked.insert(c.name);
  EXPECT_EQ(generated, checked);
}

}  // namespace
