// MultiheadAttention and TransformerEncoderLayer, as their torch.nn
// namesakes (batch-first by default here; post-norm by default, as torch).
#pragma once

#include <optional>
#include <string>

#include "frontend/trace/nn/dropout.h"
#include "frontend/trace/nn/linear.h"
#include "frontend/trace/nn/normalization.h"

namespace kfuse::nn {

struct MultiheadAttentionOptions {
  double dropout = 0.0;  // on the attention weights, in training mode
  bool bias = true;      // in_proj_bias and out_proj.bias
  // Inputs [N, L, E] when true (kfuse's default), [L, N, E] when false
  // (torch's default).
  bool batchFirst = true;
};

// Masks of an attention call; absent when nullopt. A bool mask marks
// positions to leave out (true = masked); a float mask is added to the
// attention scores.
struct AttentionMasks {
  std::optional<Tensor> attnMask = std::nullopt;        // [L, S] or [N * numHeads, L, S]
  std::optional<Tensor> keyPaddingMask = std::nullopt;  // [N, S]
};

// Scaled dot-product attention over numHeads heads. Parameters as torch:
// in_proj_weight [3E, E] (xavier_uniform_), in_proj_bias [3E] (zeros),
// out_proj.weight [E, E] (Linear's default) and out_proj.bias [E] (zeros).
// The attention weights are not returned (torch's need_weights=False).
class MultiheadAttention : public Module {
 public:
  MultiheadAttention(int64_t embedDim, int64_t numHeads, MultiheadAttentionOptions options = {});
  // Self-attention: forward(x, x, x).
  Tensor forward(const Tensor& x) override;
  Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value, const AttentionMasks& masks = {});

  const int64_t embedDim, numHeads;
  const MultiheadAttentionOptions options;
  std::shared_ptr<Linear> outProj;

 protected:
  void initParameters(Generator& gen) override;

 private:
  Tensor attend(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionMasks& masks);
  Tensor masked(const Tensor& scores, const AttentionMasks& masks, const Shape& nhls);
  int64_t dropoutSeed_ = 0;
};

struct TransformerEncoderLayerOptions {
  int64_t dimFeedforward = 2048;
  double dropout = 0.1;
  std::string activation = "relu";  // or "gelu"
  double layerNormEps = 1e-5;
  bool batchFirst = true;  // see MultiheadAttentionOptions
  bool normFirst = false;  // torch's default: post-norm
};

// x = norm1(x + dropout1(self_attn(x))); x = norm2(x + dropout2(ff(x))),
// ff(x) = linear2(dropout(activation(linear1(x)))); with normFirst the
// norms move inside the residual branches. Children (state_dict names):
// self_attn, linear1, dropout, linear2, norm1, norm2, dropout1, dropout2.
class TransformerEncoderLayer : public Module {
 public:
  TransformerEncoderLayer(int64_t dModel, int64_t nhead, TransformerEncoderLayerOptions options = {});
  Tensor forward(const Tensor& src) override;
  Tensor forward(const Tensor& src, const AttentionMasks& masks);

  const TransformerEncoderLayerOptions options;
  std::shared_ptr<MultiheadAttention> selfAttn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<Dropout> dropout, dropout1, dropout2;
  std::shared_ptr<LayerNorm> norm1, norm2;

 private:
  Tensor selfAttentionBlock(const Tensor& x, const AttentionMasks& masks);
  Tensor feedForwardBlock(const Tensor& x);
};

}  // namespace kfuse::nn
