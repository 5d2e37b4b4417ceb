// Helpers shared by the op family files: operand checks with clear messages,
// index arithmetic for the reference implementations. Kept deliberately
// plain: the reference implementations are the oracle every backend is
// checked against, so clarity beats speed.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/op_registry.h"
#include "ir/support/strings.h"

namespace kfuse::ops {

// Messages name the operand and its type: "operand 1 must be floating-point, got i64[3]".
Status requireFloat(const OpCall& c, size_t i);
Status requireNumeric(const OpCall& c, size_t i);  // any dtype but bool
Status requireDType(const OpCall& c, size_t i, DType t);
Status requireRank(const OpCall& c, size_t i, size_t rank);
Status requireSameDType(const OpCall& c, size_t a, size_t b);
// The layout a result of `rank` inherits from operands of that rank; an Error
// if they disagree.
Expected<Layout> resultLayout(const OpCall& c, size_t rank);
// Axis attribute normalised against rank, or an Error naming the attribute.
Expected<int64_t> axisAttr(const OpCall& c, std::string_view name, int64_t rank);
// A list of axes (e.g. reduce axes), normalised, sorted, de-duplicated.
Expected<std::vector<int64_t>> axesAttr(const OpCall& c, std::string_view name, int64_t rank);

std::vector<TensorType> one(TensorType t);

// "[0, 0, 1]": an int list as written in the IR, for messages.
std::string listText(const std::vector<int64_t>& v);

// Non-negative arithmetic that reports overflow: attributes and static shapes
// may be huge, and inference must answer with an Error, not wrap around.
std::optional<int64_t> checkedAdd(int64_t a, int64_t b);
std::optional<int64_t> checkedMul(int64_t a, int64_t b);

// The permutation transposing a value of type x, with the default []
// spelled out as the reversed axes; an Error if `perm` is not a permutation.
Expected<std::vector<int64_t>> resolvePermutation(const std::vector<int64_t>& perm, const TensorType& x);

// Copies element `from` of src to element `to` of dst as raw bytes (exact for
// every dtype); both must have the same dtype.
void copyElement(const Tensor& src, int64_t from, Tensor& dst, int64_t to);

// Element i of an i64 or i32 index tensor, exactly (no detour through double).
int64_t readIndex(const Tensor& t, int64_t i);

// Calls fn(index, flat) for every multi-index of `shape` in row-major order.
void forEachIndex(const Shape& shape, const std::function<void(const std::vector<int64_t>&, int64_t)>& fn);
// Flat offset into a tensor of `inShape` read through NumPy broadcasting at
// output multi-index `outIdx` (inShape right-aligned against the output).
int64_t broadcastOffset(const std::vector<int64_t>& outIdx, const Shape& inShape);
// Flat offset of a multi-index.
int64_t flatOffset(const std::vector<int64_t>& idx, const Shape& shape);

// Elementwise reference: evaluates the op's scalar expression at every output
// element, reading inputs through broadcasting. Shared by every op with a
// ScalarFn, so elementwise semantics are defined exactly once.
Expected<std::vector<Tensor>> referenceFromScalar(const OpCall& c, std::span<const Tensor* const> in,
                                                  std::span<const TensorType> out);

// Shared by ops and their gradient rules (passes/gradients/).

// The result type when `axes` of `in` are reduced: those axes become 1
// (keepdims) or disappear. Only keepdims keeps the axes, and so the layout.
TensorType reducedType(const TensorType& in, const std::vector<int64_t>& axes, bool keepdims, DType dtype);

// The channel axis of x (named `what` in messages): the last axis when x is
// tagged NHWC, axis 1 otherwise (plain and NCHW: [N, C, ...]).
Expected<int64_t> channelAxisOf(const TensorType& x, std::string_view what);

// What slice reads along one axis: count elements starting at start, step apart.
struct SliceAxis {
  int64_t start = 0, step = 1, count = 0;
};

// slice's attributes validated and resolved to one SliceAxis per dimension
// (untouched dimensions read everything).
Expected<std::vector<SliceAxis>> sliceAxes(const OpCall& c);

}  // namespace kfuse::ops
