// Building kernel IR by hand in tests, and the common kernels the CPU code
// generator is checked on (softmax, column sums, a label lookup, a mean loss).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "exec/kernel_ir.h"

namespace kfuse::testing {

using kernel::Combiner;
using kernel::Kernel;
using kernel::StoreScope;

// Leaves may be created in any order: accumulators and globals get
// provisional numbers that build() rewrites into kernel_ir.h's numbering.
class KernelBuilder {
 public:
  KernelBuilder(std::string name, Shape outer, Shape reduce = {});

  int input(DType dtype, Shape shape);
  int output(DType dtype, Shape shape);

  // A load through explicit strides over all kernel dims.
  Scalar load(int buffer, std::vector<int64_t> strides, int64_t base = 0);
  // A gathered load (exec/kernel_ir.h): `strides` and `base` as load's, plus
  // `stride` elements per row of the `size` that `index` (an i64) picks.
  Scalar gather(int buffer, std::vector<int64_t> strides, const Scalar& index, int64_t stride, int64_t size,
                int64_t base = 0);
  // A load where buffer axis a walks kernel dim axes[a] (-1: the axis has
  // extent 1); kernel dims not named are broadcast (stride 0).
  Scalar loadAxes(int buffer, const std::vector<int>& axes);
  // A load of a buffer whose shape equals the outer shape (row-major).
  Scalar loadOuter(int buffer);

  // The accumulator's leaf, of the value's type unless `leafType` says
  // otherwise (a sum of bools read as an i64 count).
  Scalar reduce(Combiner c, const Scalar& value, std::optional<DType> leafType = std::nullopt);
  Scalar prologue(Combiner c, const Scalar& value);  // the global's leaf
  Scalar global(Combiner c, const Scalar& value);

  void store(int buffer, std::vector<int64_t> strides, const Scalar& value, StoreScope scope = StoreScope::Element,
             int64_t base = 0);
  // An accumulating gathered store (a scatter-add, exec/kernel_ir.h):
  // buffer[strides . i + stride * row] += value, the row `index` picks.
  void scatterAdd(int buffer, std::vector<int64_t> strides, const Scalar& value, const Scalar& index, int64_t stride,
                  int64_t size);
  void storeAxes(int buffer, const std::vector<int>& axes, const Scalar& value, StoreScope scope = StoreScope::Element);
  void storeOuter(int buffer, const Scalar& value);

  Kernel build() const;

 private:
  std::vector<int64_t> stridesFor(int buffer, const std::vector<int>& axes) const;

  Kernel k_;
};

// out = f(in0, in1, ...) over `shape`, every buffer of that shape.
Kernel elementwiseKernel(const std::string& name, const Shape& shape, const std::vector<DType>& inputs, DType output,
                         const std::function<Scalar(const std::vector<Scalar>&)>& f);

// Row softmax of x[rows, cols]: max, sum of exp, element store.
Kernel softmaxKernel(int64_t rows, int64_t cols, DType dtype);
// out[c] = sum over n of x[n, c] (the gradient of a bias): a reduction along
// the strided axis.
Kernel columnSumKernel(int64_t n, int64_t c, DType in, DType out);
// out[n] = sum over c of select(c == label[n], x[n, c], 0): reads an Index leaf.
Kernel labelLookupKernel(int64_t n, int64_t c);
// Cross-entropy with ignored labels (-1), averaged over the labels not
// ignored: prologue count, per-row max / sum-exp / picked logit reductions,
// a global sum of losses, a final store of sum / count.
Kernel meanLossKernel(int64_t n, int64_t c);
// Its gradient: (softmax - onehot) / count per row, 0 for ignored rows; a
// prologue count and element stores, no globals.
Kernel meanLossGradKernel(int64_t n, int64_t c);
// Layer norm over the last axis: mean, then variance (reads the mean), then
// the normalized element store; also stores the mean and rstd per row.
Kernel layerNormKernel(int64_t rows, int64_t cols);

}  // namespace kfuse::testing
