// How a reduction-class op computes inside a fused kernel: the registry's
// definition of its loop structure and scalar program, which the lowering
// to kernel IR instantiates (the counterpart of ScalarFn for elementwise ops).
//
// A row op iterates over the axes of its primary operand: `reduceAxes` form
// the row, the others the outer space. Every operand and result is indexed
// by a subset of those axes:
//   operand/result axes[j] = the primary axis its dim j follows, or -1 for a
//   dim of extent 1 (keepdims) that follows none.
// Results are stored per element (they span reduce axes), per row (outer
// axes only) or once (Global: rank-0 results folded across rows).
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "ir/scalar_expr.h"
#include "ir/support/expected.h"

namespace kfuse {

struct OpCall;

enum class RowCombiner : uint8_t { Sum, Max, Min };
enum class RowScope : uint8_t { Element, Row, Global };

struct RowSpec {
  size_t primary = 0;                          // operand whose axes define the loops
  std::vector<int64_t> reduceAxes;             // sorted axes of the primary operand
  std::vector<std::vector<int64_t>> operandAxes;
  std::vector<std::vector<int64_t>> resultAxes;
  std::vector<RowScope> resultScopes;
};

// Builds the scalar program. Reductions and globals return Scalars that
// stand for their final values (an accumulator is read after its row is
// folded; a global after all rows are).
class RowBuilder {
 public:
  virtual ~RowBuilder() = default;
  // acc = combine over the row of `value`.
  virtual Scalar reduce(RowCombiner c, const Scalar& value) = 0;
  // Folded over all rows before the main loop; `value` may read only
  // operands that do not span reduce axes (e.g. labels).
  virtual Scalar prologue(RowCombiner c, const Scalar& value) = 0;
  // Folded over all rows after each row's work: the value of a Global
  // result.
  virtual Scalar global(RowCombiner c, const Scalar& value) = 0;
  // The position along reduce axis `axis` of the primary operand (i64).
  virtual Scalar position(int64_t axis) = 0;
};

// Given the operands' values at the current point (each indexed as its
// RowSpec axes say), returns one value per result. A Global result's value
// must be built from builder.global(...) results.
using RowFn = std::function<std::vector<Scalar>(RowBuilder& b, const OpCall& c, std::span<const Scalar> operands)>;
// The loop structure for a particular call (axes depend on attributes).
using RowSpecFn = std::function<Expected<RowSpec>(const OpCall& c)>;

// Data movement as an index map: for injective ops whose operand element is
// an affine function of the result's index, operand index[j] = offset +
// scale * result index[resultAxis] (resultAxis -1: the constant offset).
// Lets kernels read through transposes, slices and broadcasts for free.
struct AxisMap {
  int64_t resultAxis = -1;
  int64_t scale = 1;
  int64_t offset = 0;
};
// One AxisMap per dim of operand 0; an Error when the call is not affine
// (a reshape that regroups axes).
using AffineFn = std::function<Expected<std::vector<AxisMap>>(const OpCall& c, const Shape& result)>;

// A gather's axis (ONNX Gather): the result is operand 0 with that axis
// replaced by operand 1's dims, each element the row operand 1 names there.
using GatherAxisFn = std::function<Expected<int64_t>(const OpCall& c)>;

}  // namespace kfuse
