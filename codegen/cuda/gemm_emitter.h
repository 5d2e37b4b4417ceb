// GEMM and convolution steps as generated kernels, epilogue included, one
// launch each (the alternative to cuBLASLt + a separate epilogue launch for
// the small GEMMs of MLP training, where launches cost more than FLOPs).
//
// The product is computed in 64x64 tiles (prelude's kf_gemm_tile) or, for
// convolutions, directly per output element. Then:
//   - a pointwise epilogue (isPointwiseEpilogue: bias, activation, the
//     optimizer update of a weight gradient) runs per element on the value
//     in registers; the product is stored only when another step reads it;
//   - any other epilogue (row reductions over the product: cross-entropy,
//     bias gradients) runs after a grid barrier over the stored product,
//     as the kernel function kernel_emitter.h writes, on the same grid; the
//     launch is cooperative so that the barrier cannot deadlock.
#pragma once

#include "codegen/cuda/step_emitter.h"

namespace kfuse::cuda {

// Whether plan buffer `buffer` is read by a step other than `self`, or is a
// result or state update of the plan.
bool readOutsideStep(const Plan& plan, int buffer, size_t self);

Expected<StepSource> emitGemmStep(const Plan& plan, size_t stepIndex, const StepEmitOptions& opts);
Expected<StepSource> emitConvStep(const Plan& plan, size_t stepIndex, const StepEmitOptions& opts);

}  // namespace kfuse::cuda
