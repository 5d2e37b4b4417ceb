#include "ir/types.h"

#include <algorithm>

#include "ir/support/strings.h"

namespace kfuse {

int64_t numElements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Status checkShapeBounds(const Shape& s, std::string_view what) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) return Error(str(what, " ", formatDims(s, ", "), " contains the negative size ", d));
    int64_t e = std::max<int64_t>(d, 1);
    if (e > kMaxElements / n) return Error(str(what, " ", formatDims(s), " has more than 2^48 elements"));
    n *= e;
  }
  return Status::ok();
}

std::vector<int64_t> stridesOf(const Shape& s) {
  std::vector<int64_t> strides(s.size(), 1);
  for (int64_t i = static_cast<int64_t>(s.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * s[i + 1];
  return strides;
}

Expected<Shape> broadcastShapes(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return Error(str("shapes ", formatDims(a), " and ", formatDims(b), " do not broadcast"));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

std::string_view layoutName(Layout l) {
  switch (l) {
    case Layout::Plain: return "plain";
    case Layout::NCHW: return "nchw";
    case Layout::NHWC: return "nhwc";
    case Layout::OIHW: return "oihw";
    case Layout::OHWI: return "ohwi";
  }
  return "?";
}

std::optional<Layout> parseLayout(std::string_view name) {
  for (Layout l : {Layout::Plain, Layout::NCHW, Layout::NHWC, Layout::OIHW, Layout::OHWI})
    if (layoutName(l) == name) return l;
  return std::nullopt;
}

bool layoutFitsRank(Layout l, size_t rank) { return l == Layout::Plain || rank == 4; }

std::string formatType(const TensorType& t) {
  std::string s = std::string(dtypeName(t.dtype)) + formatDims(t.shape);
  if (t.layout != Layout::Plain) s += "#" + std::string(layoutName(t.layout));
  return s;
}

}  // namespace kfuse
