// Collectives: values combined across the ranks of a data-parallel run.
// The graph says what is combined and in which bucket; the plan turns each
// node into a start step and a wait step (codegen/plan/collective_waits.h)
// and a runner's communicator does the exchange (runtime/comm/). As the
// reference, a graph runs as rank 0 of a world of one, where the mean over
// the ranks is the value itself.
#include "ir/ops/op_helpers.h"

namespace kfuse {

void registerCollectiveOps(OpRegistry& r) {
  OpDef d;
  d.name = "all_reduce";
  d.summary =
      "(y0, ...) = the mean over the ranks of (x0, ...), one bucket exchanged as one message (world of one: the "
      "identity)";
  d.minInputs = 1;
  d.maxInputs = -1;
  d.attrs = {{"bucket", AttrKind::Int, Attribute(int64_t{0})}, {"reduce", AttrKind::String, Attribute("mean")}};
  d.fusion = FusionClass::Opaque;
  d.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> {
    if (c.getString("reduce") != "mean")
      return Error(str("attribute reduce = \"", c.getString("reduce"), "\": only \"mean\" is supported"));
    std::vector<TensorType> out;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      KF_RETURN_IF_ERROR(ops::requireFloat(c, i));
      out.push_back(c.inputs[i]);
    }
    return out;
  };
  d.reference = [](const OpCall&, std::span<const Tensor* const> in, std::span<const TensorType>)
      -> Expected<std::vector<Tensor>> {
    std::vector<Tensor> out;
    for (const Tensor* t : in) out.push_back(*t);
    return out;
  };
  r.add(std::move(d));
}

}  // namespace kfuse
