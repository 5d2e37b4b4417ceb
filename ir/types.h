// Tensor types of the graph IR: element type, static shape, layout tag.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/dtype.h"
#include "ir/support/expected.h"

namespace kfuse {

inline constexpr int kMaxRank = 6;
// No real tensor comes near 2^48 elements; the bound keeps every element
// count, stride and index product well inside int64.
inline constexpr int64_t kMaxElements = int64_t{1} << 48;

// Shapes are static: every dimension is a known non-negative extent.
using Shape = std::vector<int64_t>;

int64_t numElements(const Shape& s);
// Rejects negative sizes and shapes beyond kMaxElements. Zero-size dims count
// as 1, so that [0, 2^62] (no elements, but absurd strides) is rejected too.
// Messages read "<what> [2,-1] contains the negative size -1".
Status checkShapeBounds(const Shape& s, std::string_view what);
// Row-major strides in elements.
std::vector<int64_t> stridesOf(const Shape& s);
// NumPy broadcasting of two shapes; an Error names both shapes on mismatch.
Expected<Shape> broadcastShapes(const Shape& a, const Shape& b);
// Normalises a possibly negative axis against `rank`; nullopt if out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

// What the axes of a value mean. Shapes are always listed in memory order:
// an NHWC value of a 1x3x32x32 image has shape [1,32,32,3]. Plain is ordinary
// row-major data whose axes carry no image/filter meaning.
enum class Layout : uint8_t { Plain, NCHW, NHWC, OIHW, OHWI };

std::string_view layoutName(Layout l);  // "plain", "nchw", ...
std::optional<Layout> parseLayout(std::string_view name);
// Number of axes a layout tag applies to (4 for all but Plain).
bool layoutFitsRank(Layout l, size_t rank);

struct TensorType {
  DType dtype = DType::F32;
  Shape shape;
  Layout layout = Layout::Plain;

  TensorType() = default;
  TensorType(DType d, Shape s, Layout l = Layout::Plain) : dtype(d), shape(std::move(s)), layout(l) {}

  size_t rank() const { return shape.size(); }
  int64_t numElements() const { return kfuse::numElements(shape); }
  size_t byteSize() const { return static_cast<size_t>(numElements()) * dtypeSize(dtype); }
  bool operator==(const TensorType&) const = default;
};

// Whether t is a rank-4 image with channels before its planes (NCHW, or
// untagged).
inline bool isChannelsFirstImage(const TensorType& t) {
  return t.rank() == 4 && (t.layout == Layout::Plain || t.layout == Layout::NCHW);
}

// "f32[256,64]" or "f32[1,32,32,3]#nhwc".
std::string formatType(const TensorType& t);

}  // namespace kfuse
