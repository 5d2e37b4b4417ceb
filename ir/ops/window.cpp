#include "ir/ops/window.h"

#include <algorithm>

namespace kfuse::ops {

Expected<Image> imageOfType(const TensorType& t, std::string_view what) {
  if (t.rank() != 4) return Error(str(what, " must have rank 4, got ", formatType(t)));
  const Shape& s = t.shape;
  if (t.layout == Layout::Plain || t.layout == Layout::NCHW) return Image{s[0], s[1], s[2], s[3], false};
  if (t.layout == Layout::NHWC) return Image{s[0], s[3], s[1], s[2], true};
  return Error(str(what, " has layout ", layoutName(t.layout), ", expected nchw or nhwc, got ", formatType(t)));
}

Expected<Filter> filterOfType(const TensorType& t, std::string_view what) {
  if (t.rank() != 4) return Error(str(what, " must have rank 4, got ", formatType(t)));
  const Shape& s = t.shape;
  if (t.layout == Layout::Plain || t.layout == Layout::OIHW) return Filter{s[0], s[1], s[2], s[3], false};
  if (t.layout == Layout::OHWI) return Filter{s[0], s[3], s[1], s[2], true};
  return Error(str(what, " has layout ", layoutName(t.layout), ", expected oihw or ohwi, got ", formatType(t)));
}

Expected<std::vector<int64_t>> intsAttr(const OpCall& c, std::string_view name, size_t count, int64_t min) {
  const std::vector<int64_t>& v = c.getInts(name);
  if (v.size() != count) return Error(str("attribute ", name, " must have ", count, " values, got ", listText(v)));
  for (int64_t x : v)
    if (x < min) return Error(str("attribute ", name, " must have values >= ", min, ", got ", listText(v)));
  return v;
}

Expected<int64_t> windowSpan(const WindowAxis& a) {
  std::optional<int64_t> dilated = checkedMul(a.dilation, a.kernel - 1);
  std::optional<int64_t> span = dilated ? checkedAdd(*dilated, 1) : std::nullopt;
  if (!span)
    return Error(str("window along ", a.name, " overflows int64 (kernel ", a.kernel, ", dilation ", a.dilation, ")"));
  return *span;
}

Expected<int64_t> outputExtent(const WindowAxis& a) {
  KF_ASSIGN_OR_RETURN(int64_t span, windowSpan(a));
  std::optional<int64_t> leftPadded = checkedAdd(a.in, a.padBegin);
  std::optional<int64_t> padded = leftPadded ? checkedAdd(*leftPadded, a.padEnd) : std::nullopt;
  if (!padded)
    return Error(str("window along ", a.name, " overflows int64 (input ", a.in, ", pads ", a.padBegin, " + ",
                     a.padEnd, ")"));
  if (span > *padded)
    return Error(str("kernel ", a.name, " ", a.kernel, " (dilated to ", span, ") exceeds the padded input ", a.name,
                     " ", *padded, " (", a.in, " + pads ", a.padBegin, " + ", a.padEnd, ")"));
  int64_t room = *padded - span;
  int64_t out = room / a.stride + 1;
  if (!a.ceilMode || room % a.stride == 0) return out;
  // The extra ceil window starts at out * stride; keep it only if it starts
  // before the end padding. An overflowing start is certainly past it.
  std::optional<int64_t> lastStart = checkedMul(out, a.stride);
  return lastStart && *lastStart < *leftPadded ? out + 1 : out;
}

ClippedWindow clippedWindow(int64_t o, int64_t stride, int64_t kernel, int64_t padBegin, int64_t padEnd, int64_t in) {
  int64_t begin = o * stride - padBegin;
  int64_t end = std::min(begin + kernel, in + padEnd);
  return ClippedWindow{end - begin, std::max<int64_t>(begin, 0), std::min(end, in)};
}

}  // namespace kfuse::ops
