// The dataset side of `kfuse train`: loading the arrays, checking them against
// the model, batching and shuffling.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/training.h"
#include "tools/common/tensor_args.h"

namespace kfuse::cli {

struct Dataset {
  // One array per input of the model, in order (--x-key A,B,...), each
  // [N, ...]: one sample per row (floats, or integer token ids).
  std::vector<Tensor> xs;
  std::vector<std::string> xKeys;
  // cross_entropy: i64 class labels, [N] for logits [batch, classes], [N, S]
  // for token logits [batch, S, V] (ignore_index marks positions left out);
  // mse: [N, ...] targets.
  Tensor y;
  int64_t size() const { return xs.empty() || xs[0].shape().empty() ? 0 : xs[0].shape()[0]; }
  // Rows `order[begin, begin + count)` of every input array.
  std::vector<Tensor> inputRows(const std::vector<int64_t>& order, int64_t begin, int64_t count) const;
};

// Reads the arrays named by `xKeys` (comma-separated: one per model input)
// and `yKey` from a .npz or safetensors file. Integer labels are converted
// to i64 for cross_entropy.
Expected<Dataset> loadDataset(const std::string& path, const std::string& xKeys, const std::string& yKey,
                              LossKind loss);

// Checks the data against the forward function for training with batches
// of `batch` samples: sample shapes and dtypes, label shape, dtype and range
// (cross_entropy: labels in [0, classes) or equal to ignoreIndex), target
// shapes (mse). Messages say what to change. `inputs` and `outputs` are the
// forward's signature.
Status checkDataset(const Dataset& d, const std::string& forward, const std::vector<NamedType>& inputs,
                    const std::vector<TensorType>& outputs, int64_t batch, LossKind loss, int64_t ignoreIndex);

// The order of samples in an epoch: 0..N-1, or a permutation drawn from a
// seeded SplitMix64 generator with Fisher-Yates (the same on every platform).
std::vector<int64_t> epochOrder(int64_t n, bool shuffle, uint64_t seed, int64_t epoch);

// Rows `order[begin, begin + count)` of t, as a new tensor [count, ...].
Tensor gatherRows(const Tensor& t, const std::vector<int64_t>& order, int64_t begin, int64_t count);

}  // namespace kfuse::cli
