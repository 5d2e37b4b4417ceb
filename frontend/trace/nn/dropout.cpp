#include "frontend/trace/nn/dropout.h"

#include "frontend/trace/ops.h"
#include "ir/support/strings.h"

namespace kfuse::nn {

// ---------------------------------------------------------------- Dropout

Dropout::Dropout(double prob) : Module("Dropout"), p(prob) {
  if (!(p >= 0.0 && p <= 1.0)) reportProblem(str("probability p = ", p, " must be in [0, 1]"));
  initParameters(defaultGenerator());
}

void Dropout::initParameters(Generator& gen) { seed_ = static_cast<int64_t>(gen.nextU64()); }

Tensor Dropout::forward(const Tensor& x) {
  auto s = scope(x);
  if (!problem().empty()) return fail(x, problem());
  if (!isTraining() || p == 0.0) return x;
  if (p == 1.0) return x * 0.0;
  return trace::dropout(x, p, x.tracer().seedFor(this, seed_));
}

// ---------------------------------------------------------------- Flatten

// flatten(start = 1, end = last) is the registry's flatten op; any other
// range is a reshape that keeps the axes outside it.
Tensor Flatten::forward(const Tensor& x) {
  auto s = scope(x);
  if (!x.ok()) return trace::identity(x);  // passes x's problem on
  int64_t rank = std::max<int64_t>(x.rank(), 1);
  auto start = normalizeAxis(startDim, rank), end = normalizeAxis(endDim, rank);
  if (!start || !end || *start > *end)
    return fail(x, str("dims ", startDim, " to ", endDim, " are not a valid range for ", formatType(x.type())));
  if (x.rank() == 0) return trace::reshape(x, {1});
  if (*start == 1 && *end == rank - 1) return trace::flatten(x, 1);
  Shape shape(x.shape().begin(), x.shape().begin() + *start);
  int64_t merged = 1;
  for (int64_t d = *start; d <= *end; ++d) merged *= x.shape()[static_cast<size_t>(d)];
  shape.push_back(merged);
  shape.insert(shape.end(), x.shape().begin() + *end + 1, x.shape().end());
  return trace::reshape(x, shape);
}

}  // namespace kfuse::nn
