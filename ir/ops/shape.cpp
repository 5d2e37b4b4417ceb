// Data-movement ops: constants and ops that only rearrange elements.
#include "ir/ops/op_helpers.h"

namespace kfuse {
namespace {
using ops::one;

void registerConstant(OpRegistry& r) {
  OpDef d;
  d.name = "constant";
  d.summary = "a tensor given by the `value` attribute";
  d.attrs = {{"value", AttrKind::Tensor, std::nullopt}};
  d.fusion = FusionClass::Injective;
  d.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> { return one(c.attr("value").asTensor().type()); };
  d.reference = [](const OpCall& c, std::span<const Tensor* const>,
                   std::span<const TensorType>) -> Expected<std::vector<Tensor>> {
    return std::vector<Tensor>{c.attr("value").asTensor()};
  };
  r.add(std::move(d));
}
}  // namespace

void registerShapeOps(OpRegistry& r) { registerConstant(r); }

}  // namespace kfuse
