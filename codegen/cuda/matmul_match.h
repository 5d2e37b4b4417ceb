// Which GEMM steps cuBLASLt runs in one call, epilogue included: the
// epilogue kernel of a plan's GEMM step is matched against the expressions
// the op registry defines (so "bias add" means exactly what `add` computes):
//
//   product                      DEFAULT (or no epilogue at all)
//   product + bias               BIAS          bias: a vector along the
//   relu(product [+ bias])       RELU[_BIAS]   product's last dim
//   gelu_tanh(product [+ bias])  GELU[_BIAS]   (cuBLASLt's GELU is the tanh form)
//   ... and the pre-activation   GELU_AUX[_BIAS]  (the GELU input saved for backward)
//
// ReLU with a saved pre-activation does not match: cuBLASLt's ReLU aux
// output is a bit mask, which no kfuse value is, and the backward forms
// (DRELU_BGRAD, DGELU_BGRAD, BGRADA/B) need the forward's aux or a bias
// gradient fused with its GEMM, which plans do not group today; they are
// listed in docs/cuda.md with what the plan would need.
#pragma once

#include <optional>
#include <string>

#include "runtime/cuda/program.h"
#include "exec/plan.h"

namespace kfuse::cuda {

struct MatmulMatch {
  std::optional<MatmulCall> call;  // set when the whole step is one cuBLASLt call
  std::string why;                 // otherwise, why not
};

// The plan GEMM (without its epilogue) as a strided-batch cuBLASLt call
// writing `d`, or why there is none (batch strides that do not flatten to
// one stride per operand, dtypes cuBLASLt does not take).
Expected<MatmulCall> plainMatmul(const Plan& plan, const GemmSpec& g);

// The whole GEMM step, epilogue included, as one call.
MatmulMatch matchMatmul(const Plan& plan, size_t stepIndex);

}  // namespace kfuse::cuda
