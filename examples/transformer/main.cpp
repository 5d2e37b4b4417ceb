// A transformer encoder block over token ids: token and learned position
// embeddings, one TransformerEncoderLayer (post-norm, as PyTorch's
// default), mean pooling over the sequence, and a linear head over 2
// classes. Input: i64 token ids [batch, length].
#include "examples/common/example_main.h"

using namespace kfuse::trace;
namespace nn = kfuse::nn;

constexpr int64_t kVocab = 100, kMaxLength = 16, kModel = 32, kHeads = 4;

struct TinyEncoder : nn::Module {
  TinyEncoder() : Module("TinyEncoder") {
    tokens = registerModule("tokens", std::make_shared<nn::Embedding>(kVocab, kModel));
    positions = registerModule("positions", std::make_shared<nn::Embedding>(kMaxLength, kModel));
    encoder = registerModule("encoder", std::make_shared<nn::TransformerEncoderLayer>(
                                            kModel, kHeads, nn::TransformerEncoderLayerOptions{.dimFeedforward = 64}));
    head = registerModule("head", std::make_shared<nn::Linear>(kModel, 2));
  }

  Tensor forward(const Tensor& ids) override {
    int64_t length = ids.rank() == 2 ? ids.shape()[1] : 0;
    if (length > kMaxLength) return ids.tracer().fail("sequences are limited to 16 tokens");
    // Positions 0 .. length-1, a constant of the graph.
    kfuse::Tensor index(TensorType(DType::I64, {length}));
    for (int64_t i = 0; i < length; ++i) index.set(i, static_cast<double>(i));
    Tensor x = tokens->forward(ids);                                  // [N, L, d]
    x = x + positions->forward(ids.tracer().constant(index));         // + [L, d], broadcast
    x = encoder->forward(x);
    return head->forward(reduceMean(x, {1}));
  }

  std::shared_ptr<nn::Embedding> tokens, positions;
  std::shared_ptr<nn::TransformerEncoderLayer> encoder;
  std::shared_ptr<nn::Linear> head;
};

// Two sequences of eight token ids.
kfuse::Tensor sampleTokens() {
  kfuse::Tensor ids(TensorType(DType::I64, {2, 8}));
  for (int64_t i = 0; i < ids.numElements(); ++i) ids.set(i, static_cast<double>((7 * i + 3) % kVocab));
  return ids;
}

int main(int argc, char** argv) {
  kfuse::examples::ExampleOptions opts;
  if (int status = kfuse::examples::parseExampleArgs(argc, argv, "A transformer encoder block traced from C++.", opts);
      status >= 0)
    return status;
  nn::manualSeed(0);
  TinyEncoder model;
  model.eval();
  return kfuse::examples::runExample(model, sampleTokens(), opts);
}
