// Turning a forward function into a whole training step: loss, backward and
// optimizer update as one graph, which the usual passes then fuse and plan
// like any other.
#pragma once

#include <string>

#include "ir/graph.h"

namespace kfuse {

enum class LossKind { None, CrossEntropy, MSE };
enum class OptimizerKind { None, SGD, Adam, AdamW };

struct OptimizerOptions {
  OptimizerKind kind = OptimizerKind::SGD;
  double momentum = 0, dampening = 0, weightDecay = 0;
  bool nesterov = false;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
};

struct TrainingOptions {
  // None: the function's first result already is the (rank-0) loss.
  LossKind loss = LossKind::CrossEntropy;
  OptimizerOptions optimizer;
  // Also return the function's original results after the loss.
  bool keepOutputs = false;
  // Batch-norm running statistics: new = (1 - m) * old + m * batch (torch).
  double bnMomentum = 0.1;
  // cross_entropy: labels equal to it are left out of the loss (torch's
  // ignore_index; -100 is torch's default and what HF models pad labels with).
  int64_t ignoreIndex = -100;
  // Mixed into every dropout's seed: seed + dropoutSeed * 0x9E3779B97F4A7C15
  // (mod 2^64), so that 0 keeps the model's own seeds and each other value
  // draws other masks (`kfuse train --seed`).
  uint64_t dropoutSeed = 0;
};

// Rewrites `g` (a forward function) in place into a training step:
//   arguments: the forward's, then %labels (when there is a loss to add),
//              %lr : f32[] and %step : i64[] (1-based), runtime values so that
//              changing either never recompiles;
//              %labels are i64 [batch] for cross_entropy over logits
//              [batch, classes]; for logits of rank 3 or more the classes
//              are the last axis (token logits [B, S, V]) and the labels
//              have the other axes ([B, S]): the loss is torch's
//              cross_entropy(logits.view(-1, V), labels.view(-1)), the mean
//              over the positions whose label is not ignoreIndex;
//   results:   the loss (then the forward's results with keepOutputs);
//   state:     every trainable parameter the loss depends on is updated by
//              the optimizer, with its state in buffers named as in
//              torch.optim's state (<param>.momentum_buffer, <param>.exp_avg,
//              <param>.exp_avg_sq), created zero-filled in the module;
//              batch norms over buffer statistics switch to training mode and
//              update running_mean / running_var (and num_batches_tracked
//              when the module has it); dropouts draw their mask from %step
//              (and their seed mixed with dropoutSeed).
// Errors name what does not fit: a loss that does not match the output, an
// op without a gradient rule between a parameter and the loss, a function
// that already updates a trainable parameter (updates of buffers, like
// running statistics of a forward traced in training mode, are kept).
Status makeTrainingStep(Graph& g, const TrainingOptions& opts);

// Parses the names used by the autodiff pass and kfuse train.
Expected<LossKind> parseLossKind(std::string_view s);
Expected<OptimizerKind> parseOptimizerKind(std::string_view s);

}  // namespace kfuse
