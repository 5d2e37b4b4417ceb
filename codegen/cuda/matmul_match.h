// Which GEMM steps cuBLASLt runs in one call, epilogue included: the
// epilogue kernel of a plan's GEMM step is matched against the expressions
// the op registry defines (so "bias add" means exactly what `add` computes):
//
//   product                      DEFAULT (or no epilogue at all)
//   product + bias               BIAS          bias: a vector along the
//   relu(product [+ bias])       RELU[_BIAS]   product's last dim
//   gelu_tanh(product [+ bias])  GELU[_BIAS]   (cuBLASLt's GELU is the tanh form)
//   ... and the pre-activation   GELU_AUX[_BIAS]  (the GELU input saved for backward)
//   gelu_grad_tanh(product, pre) DGELU_BGRAD     (backward: with its sum over
//   and its sum over the batch                    the batch, the bias gradient)
//
// A store that writes the product over its own storage (in-place) is one
// cuBLASLt writes too, so readers of that storage elsewhere do not stop a
// match. ReLU with a saved pre-activation does not match: cuBLASLt's ReLU
// aux output is a bit mask, which no kfuse value is (so no DRELU_BGRAD
// either); BGRADA/B would need the bias gradient grouped with the weight
// gradient's GEMM, where plans do not put it (docs/cuda.md).
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
