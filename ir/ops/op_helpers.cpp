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

}  // namespace kfuse::ops
