#include "ir/ops/op_helpers.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace kfuse::ops {

Status requireFloat(const OpCall& c, size_t i) {
  if (isFloat(c.inputs[i].dtype)) return Status::ok();
  return Error(str("operand ", i, " must be floating-point, got ", formatType(c.inputs[i])));
}

Status requireNumeric(const OpCall& c, size_t i) {
  if (c.inputs[i].dtype != DType::Bool) return Status::ok();
  return Error(str("operand ", i, " must be numeric, got ", formatType(c.inputs[i])));
}

Status requireDType(const OpCall& c, size_t i, DType t) {
  if (c.inputs[i].dtype == t) return Status::ok();
  return Error(str("operand ", i, " must be ", dtypeName(t), ", got ", formatType(c.inputs[i])));
}

Status requireRank(const OpCall& c, size_t i, size_t rank) {
  if (c.inputs[i].rank() == rank) return Status::ok();
  return Error(str("operand ", i, " must have rank ", rank, ", got ", formatType(c.inputs[i])));
}

Status requireSameDType(const OpCall& c, size_t a, size_t b) {
  if (c.inputs[a].dtype == c.inputs[b].dtype) return Status::ok();
  return Error(str("operands ", a, " and ", b, " must have the same dtype, got ", formatType(c.inputs[a]), " and ",
                   formatType(c.inputs[b])));
}

Expected<Layout> resultLayout(const OpCall& c, size_t rank) {
  Layout out = Layout::Plain;
  for (const TensorType& t : c.inputs) {
    if (t.rank() != rank || t.layout == Layout::Plain) continue;
    if (out != Layout::Plain && out != t.layout)
      return Error(str("operands have different layouts (", layoutName(out), " and ", layoutName(t.layout), ")"));
    out = t.layout;
  }
  return out;
}

Expected<int64_t> axisAttr(const OpCall& c, std::string_view name, int64_t rank) {
  int64_t axis = c.getInt(name);
  auto norm = normalizeAxis(axis, rank);
  if (!norm) return Error(str("attribute ", name, " = ", axis, " is out of range for rank ", rank));
  return *norm;
}

Expected<std::vector<int64_t>> axesAttr(const OpCall& c, std::string_view name, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t a : c.getInts(name)) {
    auto norm = normalizeAxis(a, rank);
    if (!norm) return Error(str("attribute ", name, " contains axis ", a, ", out of range for rank ", rank));
    out.push_back(*norm);
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    return Error(str("attribute ", name, " repeats an axis: [", join(c.getInts(name)), "]"));
  return out;
}

std::vector<TensorType> one(TensorType t) { return {std::move(t)}; }

std::string listText(const std::vector<int64_t>& v) { return "[" + join(v) + "]"; }

std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  if (a > std::numeric_limits<int64_t>::max() - b) return std::nullopt;
  return a + b;
}

std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  if (b != 0 && a > std::numeric_limits<int64_t>::max() / b) return std::nullopt;
  return a * b;
}

Expected<std::vector<int64_t>> resolvePermutation(const std::vector<int64_t>& perm, const TensorType& x) {
  auto rank = static_cast<int64_t>(x.rank());
  if (perm.empty()) {
    std::vector<int64_t> reversed;
    for (int64_t i = rank - 1; i >= 0; --i) reversed.push_back(i);
    return reversed;
  }
  if (static_cast<int64_t>(perm.size()) != rank)
    return Error(str("attribute perm = ", listText(perm), " has ", perm.size(), " entries, but ", formatType(x),
                     " has rank ", rank));
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[static_cast<size_t>(p)])
      return Error(str("attribute perm = ", listText(perm), " is not a permutation of 0..", rank - 1));
    seen[static_cast<size_t>(p)] = true;
  }
  return perm;
}

int64_t readIndex(const Tensor& t, int64_t i) {
  if (t.dtype() == DType::I32) {
    int32_t v;
    std::memcpy(&v, t.data() + static_cast<size_t>(i) * sizeof v, sizeof v);
    return v;
  }
  int64_t v;
  std::memcpy(&v, t.data() + static_cast<size_t>(i) * sizeof v, sizeof v);
  return v;
}

void copyElement(const Tensor& src, int64_t from, Tensor& dst, int64_t to) {
  size_t n = dtypeSize(src.dtype());
  std::memcpy(dst.data() + static_cast<size_t>(to) * n, src.data() + static_cast<size_t>(from) * n, n);
}

void forEachIndex(const Shape& shape, const std::function<void(const std::vector<int64_t>&, int64_t)>& fn) {
  int64_t n = numElements(shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    fn(idx, flat);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

int64_t broadcastOffset(const std::vector<int64_t>& outIdx, const Shape& inShape) {
  size_t lead = outIdx.size() - inShape.size();
  int64_t off = 0;
  for (size_t d = 0; d < inShape.size(); ++d) off = off * inShape[d] + (inShape[d] == 1 ? 0 : outIdx[lead + d]);
  return off;
}

int64_t flatOffset(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t off = 0;
  for (size_t d = 0; d < shape.size(); ++d) off = off * shape[d] + idx[d];
  return off;
}

Expected<std::vector<Tensor>> referenceFromScalar(const OpCall& c, std::span<const Tensor* const> in,
                                                  std::span<const TensorType> out) {
  std::vector<Scalar> args;
  for (size_t i = 0; i < in.size(); ++i) args.push_back(Scalar::input(static_cast<int>(i), in[i]->dtype()));
  std::vector<Scalar> exprs = c.op.scalar(c, args);
  std::vector<Tensor> results;
  for (const TensorType& t : out) results.emplace_back(t);
  std::vector<double> vals(in.size());
  forEachIndex(out[0].shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
    for (size_t i = 0; i < in.size(); ++i) vals[i] = in[i]->at(broadcastOffset(idx, in[i]->shape()));
    for (size_t r = 0; r < exprs.size(); ++r) results[r].set(flat, evaluateScalar(*exprs[r].node(), vals));
  });
  return results;
}

// The result type when `axes` of `in` are reduced: those axes become 1
// (keepdims) or disappear. Only keepdims keeps the axes, and so the layout.
TensorType reducedType(const TensorType& in, const std::vector<int64_t>& axes, bool keepdims, DType dtype) {
  Shape shape;
  for (int64_t d = 0; d < static_cast<int64_t>(in.rank()); ++d) {
    if (std::find(axes.begin(), axes.end(), d) == axes.end())
      shape.push_back(in.shape[d]);
    else if (keepdims)
      shape.push_back(1);
  }
  return TensorType(dtype, shape, keepdims ? in.layout : Layout::Plain);
}

// The channel axis of x (named `what` in messages): the last axis when x is
// tagged NHWC, axis 1 otherwise (plain and NCHW: [N, C, ...]).
Expected<int64_t> channelAxisOf(const TensorType& x, std::string_view what) {
  if (x.rank() < 2) return Error(str(what, " must have rank >= 2 (batch and channel axes), got ", formatType(x)));
  switch (x.layout) {
    case Layout::Plain:
    case Layout::NCHW: return 1;
    case Layout::NHWC: return static_cast<int64_t>(x.rank()) - 1;
    default:
      return Error(str(what, " has layout ", layoutName(x.layout),
                       ", but batch norm needs an activation layout (plain, nchw or nhwc)"));
  }
}


// ONNX Slice on one axis of size d: negative starts/ends count from the end,
// then both are clamped ([0, d] for positive steps, [0, d-1] / [-1, d-1] for
// negative ones), so INT64_MAX and INT64_MIN mean "to the end".
SliceAxis sliceAxis(int64_t start, int64_t end, int64_t step, int64_t d) {
  if (start < 0) start += d;
  if (end < 0) end += d;
  SliceAxis a;
  a.step = step;
  if (step > 0) {
    a.start = std::min(std::max(start, int64_t{0}), d);
    end = std::min(std::max(end, int64_t{0}), d);
    a.count = end > a.start ? 1 + (end - a.start - 1) / step : 0;
  } else {
    a.start = std::min(std::max(start, int64_t{0}), d - 1);
    end = std::min(std::max(end, int64_t{-1}), d - 1);
    // |INT64_MIN| does not fit; any magnitude above the distance gives one element.
    int64_t mag = step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
    a.count = a.start > end ? 1 + (a.start - end - 1) / mag : 0;
  }
  return a;
}

// Validates the attributes and resolves them to one SliceAxis per dimension
// (untouched dimensions read everything).
Expected<std::vector<SliceAxis>> sliceAxes(const OpCall& c) {
  const TensorType& x = c.inputs[0];
  auto rank = static_cast<int64_t>(x.rank());
  const auto &starts = c.getInts("starts"), &ends = c.getInts("ends");
  const auto &axes = c.getInts("axes"), &steps = c.getInts("steps");
  size_t n = starts.size();
  if (ends.size() != n)
    return Error(str("attributes starts = ", ops::listText(starts), " and ends = ", ops::listText(ends), " differ in length"));
  if (!axes.empty() && axes.size() != n)
    return Error(str("attribute axes = ", ops::listText(axes), " has ", axes.size(), " entries, but starts has ", n));
  if (!steps.empty() && steps.size() != n)
    return Error(str("attribute steps = ", ops::listText(steps), " has ", steps.size(), " entries, but starts has ", n));
  if (axes.empty() && static_cast<int64_t>(n) > rank)
    return Error(str("attribute starts has ", n, " entries, more than the rank of ", formatType(x)));
  std::vector<SliceAxis> out;
  for (int64_t d : x.shape) out.push_back({0, 1, d});
  std::vector<bool> seen(x.rank(), false);
  for (size_t i = 0; i < n; ++i) {
    int64_t axis = axes.empty() ? static_cast<int64_t>(i) : axes[i];
    auto norm = normalizeAxis(axis, rank);
    if (!norm) return Error(str("attribute axes contains axis ", axis, ", out of range for rank ", rank));
    if (seen[*norm]) return Error(str("attribute axes = ", ops::listText(axes), " repeats axis ", *norm));
    seen[*norm] = true;
    int64_t step = steps.empty() ? 1 : steps[i];
    if (step == 0) return Error(str("attribute steps = ", ops::listText(steps), " contains 0; steps must be nonzero"));
    out[*norm] = sliceAxis(starts[i], ends[i], step, x.shape[*norm]);
  }
  return out;
}

}  // namespace kfuse::ops
