// Linear and Embedding, as torch.nn.Linear and torch.nn.Embedding.
#pragma once

#include "frontend/trace/nn/module.h"

namespace kfuse::nn {

// y = x W^T + b over the last axis of x. Parameters: weight [out, in],
// bias [out], both U(-1/sqrt(in), 1/sqrt(in)) (torch's kaiming_uniform_
// with a = sqrt(5), and its bias bound).
class Linear : public Module {
 public:
  Linear(int64_t inFeatures, int64_t outFeatures, bool bias = true);
  Tensor forward(const Tensor& x) override;

  const int64_t inFeatures, outFeatures;
  const bool hasBias;

 protected:
  void initParameters(Generator& gen) override;
};

// Rows of weight [num, dim] picked by integer indices (i64 or i32) of any
// shape: y.shape = indices.shape + [dim]. weight ~ N(0, 1).
class Embedding : public Module {
 public:
  Embedding(int64_t numEmbeddings, int64_t embeddingDim);
  Tensor forward(const Tensor& indices) override;

  const int64_t numEmbeddings, embeddingDim;

 protected:
  void initParameters(Generator& gen) override;
};

}  // namespace kfuse::nn
