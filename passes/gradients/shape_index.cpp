// Gradient rules of slice, pad, gather and interleave (the ops:
// ir/ops/shape_index.cpp).
#include "passes/gradients/rules.h"

#include "ir/ops/op_helpers.h"
#include "passes/gradients/grad_helpers.h"

namespace kfuse::gradients {
namespace {

using ops::SliceAxis;
using ops::sliceAxes;

// Slicing with unit steps takes a box; its gradient pads dy back with zeros.
std::vector<Value*> sliceGrad(GradBuilder& b, const Node& n, std::span<Value* const> dy) {
  std::vector<TensorType> types{n.operand(0)->type()};
  auto axes = sliceAxes(OpCall{n.op(), n.attrs(), types, &n});
  if (!axes) {
    b.fail(axes.error().message());
    return {nullptr};
  }
  const Shape& shape = n.operand(0)->type().shape;
  std::vector<int64_t> begins, ends;
  for (size_t d = 0; d < axes->size(); ++d) {
    const SliceAxis& a = (*axes)[d];
    if (a.step != 1 && a.count > 1) {
      b.fail(str("slice with step ", a.step, " on axis ", d, " has no gradient rule yet (only unit steps)"));
      return {nullptr};
    }
    begins.push_back(a.count == 0 ? 0 : a.start);
    ends.push_back(shape[d] - (a.count == 0 ? 0 : a.start) - a.count);
  }
  begins.insert(begins.end(), ends.begin(), ends.end());
  return {b.op(Op::Pad, {dy[0]}, {{"pads", Attribute(begins)}})};
}

// Constant padding places x inside the result: padding dy with the negated
// pads crops it back (and negative pads, which cropped x, pad with zeros).
std::vector<Value*> padGrad(GradBuilder& b, const Node& n, std::span<Value* const> dy) {
  if (n.attr("mode").asString() != "constant") {
    b.fail(str("pad mode \"", n.attr("mode").asString(), "\" has no gradient rule yet (only \"constant\")"));
    return {nullptr};
  }
  std::vector<int64_t> pads = n.attr("pads").asInts();
  for (int64_t& p : pads) p = -p;
  return {b.op(Op::Pad, {dy[0]}, {{"pads", Attribute(pads)}})};
}

std::vector<Value*> gatherGrad(GradBuilder& b, const Node& n, std::span<Value* const> dy) {
  int64_t axis = *normalizeAxis(n.attr("axis").asInt(), static_cast<int64_t>(n.operand(0)->type().rank()));
  return {b.op(Op::GatherGrad, {dy[0], n.operand(1)},
               {{"axis", Attribute(axis)}, {"size", Attribute(n.operand(0)->type().shape[axis])}}),
          nullptr};
}

// Operand i filled the result's lattice offsets[i] + steps * j: its
// gradient is that strided slice of dy.
std::vector<Value*> interleaveGrad(GradBuilder& b, const Node& n, std::span<Value* const> dy) {
  const std::vector<int64_t>& steps = n.attr("steps").asInts();
  const std::vector<int64_t>& offsets = n.attr("offsets").asInts();
  const std::vector<int64_t>& shape = n.attr("shape").asInts();
  const size_t rank = steps.size();
  std::vector<int64_t> axes(rank);
  for (size_t d = 0; d < rank; ++d) axes[d] = static_cast<int64_t>(d);
  std::vector<Value*> grads;
  for (size_t i = 0; i < n.numOperands(); ++i) {
    std::vector<int64_t> starts(offsets.begin() + static_cast<std::ptrdiff_t>(i * rank),
                                offsets.begin() + static_cast<std::ptrdiff_t>((i + 1) * rank));
    grads.push_back(b.op(Op::Slice, {dy[0]},
                         {{"starts", Attribute(starts)}, {"ends", Attribute(shape)}, {"axes", Attribute(axes)},
                          {"steps", Attribute(steps)}}));
  }
  return grads;
}

}  // namespace

void addShapeIndexRules(GradientRules& r) {
  r.add("interleave", interleaveGrad);
  r.add("slice", sliceGrad);
  r.add("pad", padGrad);
  r.add("gather", gatherGrad);
}

}  // namespace kfuse::gradients
