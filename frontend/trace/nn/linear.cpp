#include "frontend/trace/nn/linear.h"

#include <cmath>

#include "frontend/trace/ops.h"
#include "ir/support/strings.h"

namespace kfuse::nn {

namespace {

kfuse::Tensor f32(Shape s) { return kfuse::Tensor(TensorType(DType::F32, std::move(s))); }

}  // namespace

// ---------------------------------------------------------------- Linear

Linear::Linear(int64_t in, int64_t out, bool bias)
    : Module("Linear"), inFeatures(std::max<int64_t>(in, 0)), outFeatures(std::max<int64_t>(out, 0)), hasBias(bias) {
  if (in < 0 || out < 0) reportProblem(str("sizes in = ", in, ", out = ", out, " must be >= 0"));
  registerParameter("weight", f32({outFeatures, inFeatures}));
  if (hasBias) registerParameter("bias", f32({outFeatures}));
  initParameters(defaultGenerator());
}

void Linear::initParameters(Generator& gen) {
  kfuse::Tensor w = f32({outFeatures, inFeatures});
  (void)init::kaimingUniform(w, std::sqrt(5.0), gen);  // rank 2: cannot fail
  (void)setTensor("weight", std::move(w));
  if (!hasBias) return;
  kfuse::Tensor b = f32({outFeatures});
  double bound = inFeatures > 0 ? 1.0 / std::sqrt(static_cast<double>(inFeatures)) : 0.0;
  init::uniform(b, -bound, bound, gen);
  (void)setTensor("bias", std::move(b));
}

Tensor Linear::forward(const Tensor& x) {
  auto s = scope(x);
  Tensor y = trace::matmul(x, param(x, "weight"), false, true);
  return hasBias ? y + param(x, "bias") : y;
}

// ---------------------------------------------------------------- Embedding

Embedding::Embedding(int64_t num, int64_t dim)
    : Module("Embedding"), numEmbeddings(std::max<int64_t>(num, 0)), embeddingDim(std::max<int64_t>(dim, 0)) {
  if (num < 0 || dim < 0) reportProblem(str("sizes num = ", num, ", dim = ", dim, " must be >= 0"));
  registerParameter("weight", f32({numEmbeddings, embeddingDim}));
  initParameters(defaultGenerator());
}

void Embedding::initParameters(Generator& gen) {
  kfuse::Tensor w = f32({numEmbeddings, embeddingDim});
  init::normal(w, 0.0, 1.0, gen);
  (void)setTensor("weight", std::move(w));
}

Tensor Embedding::forward(const Tensor& indices) {
  auto s = scope(indices);
  return trace::gather(param(indices, "weight"), indices, 0);
}

}  // namespace kfuse::nn
