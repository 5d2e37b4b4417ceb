// The models of the CUDA suite as plans for the cuda target, built with the
// C++ tracing frontend (no ONNX needed, so the GPU machine, which builds
// without ONNX, has the same models): the spiral MLP training step (Adam),
// the larger MLP 784-512-512-10 training step (Adam), an MLP with GELU
// (tanh) activations training step (cuBLASLt's GELU epilogues), a small CNN
// (conv-bn-relu, pooling, linear) training step and inference, ResNet-18
// inference and a transformer encoder block inference. Shapes are small:
// kernel source does not depend on batch size beyond its constants.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/interpreter.h"
#include "exec/plan.h"
#include "codegen/trainer.h"
#include "runtime/executor.h"

namespace kfuse::test {

struct SuiteModel {
  std::string name;
  bool training = false;
  std::unique_ptr<Module> module;     // inference: the module, prepared for the target
  std::unique_ptr<Trainer> trainer;   // training: owns the module and @train_step
  const Graph* function = nullptr;    // the function to plan / run
  std::vector<Tensor> sampleInputs;   // inference: the inputs; training: the batch
  Tensor sampleLabels;                // training only
};

// Names of every suite model, in a fixed order.
std::vector<std::string> suiteModelNames();
// Builds `name` for `target` (fusion on). Training models get their trainer
// created with `target` and `execution` (e.g. the simulated cuda device).
Expected<SuiteModel> buildSuiteModel(const std::string& name, const std::string& target,
                                     const ExecutionOptions& execution = {});

// Compares a training step's state updates with the reference's: Adam's
// moments (`P.exp_avg`, `P.exp_avg_sq`) within (atol, rtol), and each
// parameter within them too except where Adam's step is ill-conditioned.
// Adam moves an element by about lr * g / |g| on its first step, so where
// the gradient is near zero (below 1e-4 of the tensor's largest, i.e.
// within float rounding of a sum that cancels) any float implementation
// may move it by anything up to lr either way; such elements are checked
// through their moments only. Returns "" or the first difference.
std::string compareTrainingUpdates(const InterpreterResult& got, const InterpreterResult& want, double atol, double rtol);

}  // namespace kfuse::test
