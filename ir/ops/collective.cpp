// Collectives: values combined across the ranks of a data-parallel run.
// The graph says what is combined and in which bucket; the plan turns each
// node into a start step and a wait step (codegen/plan/collective_waits.h)
// and a runner's communicator does the exchange (runtime/comm/). As the
// reference, a graph runs as rank 0 of ranks that all hold the same values:
// the mean over the ranks is the value itself.
//
// ZeRO-1 (passes/data_parallel.cpp, zero=true) cuts a tensor of L elements,
// flattened and padded with zeros to N * S elements (S = ceil(L / N)), into
// N shards of S, shard r on rank r: reduce_scatter and shard give this
// rank's shard (of the mean over the ranks, or of the value), all_gather
// the tensor from every rank's shard.
#include "ir/ops/op_helpers.h"

namespace kfuse {
namespace {

int64_t shardSize(int64_t elements, int64_t ranks) { return (elements + ranks - 1) / ranks; }

Status checkRanks(const OpCall& c) {
  if (c.getInt("ranks") < 1) return Error(str("attribute ranks = ", c.getInt("ranks"), " must be at least 1"));
  return Status::ok();
}

// reduce_scatter and shard: x -> this rank's shard [S] (rank 0's here).
OpDef shardingOp(std::string name, std::string summary, std::vector<AttrSpec> attrs) {
  OpDef d;
  d.name = std::move(name);
  d.summary = std::move(summary);
  d.minInputs = d.maxInputs = 1;
  d.attrs = std::move(attrs);
  d.fusion = FusionClass::Opaque;
  d.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> {
    KF_RETURN_IF_ERROR(checkRanks(c));
    KF_RETURN_IF_ERROR(ops::requireFloat(c, 0));
    return ops::one(TensorType(c.inputs[0].dtype, {shardSize(c.inputs[0].numElements(), c.getInt("ranks"))}));
  };
  d.reference = [](const OpCall&, std::span<const Tensor* const> in, std::span<const TensorType> out)
      -> Expected<std::vector<Tensor>> {
    Tensor y(out[0]);
    for (int64_t i = 0; i < y.numElements() && i < in[0]->numElements(); ++i) ops::copyElement(*in[0], i, y, i);
    return std::vector<Tensor>{std::move(y)};
  };
  return d;
}

}  // namespace

void registerCollectiveOps(OpRegistry& r) {
  r.add(shardingOp("reduce_scatter",
                   "y = this rank's shard (ZeRO-1: ceil(size / ranks) elements of x flattened, zero-padded) of the "
                   "mean over the ranks of x",
                   {{"ranks", AttrKind::Int, std::nullopt}, {"bucket", AttrKind::Int, Attribute(int64_t{0})}}));
  r.add(shardingOp("shard", "y = this rank's shard (ZeRO-1: ceil(size / ranks) elements of x flattened, zero-padded)",
                   {{"ranks", AttrKind::Int, std::nullopt}}));
  {
    OpDef d;
    d.name = "all_gather";
    d.summary = "y (of type shape) = every rank's shard x [ceil(size / ranks)] in rank order, the padding dropped";
    d.minInputs = d.maxInputs = 1;
    d.attrs = {{"ranks", AttrKind::Int, std::nullopt},
               {"shape", AttrKind::Ints, std::nullopt},
               {"bucket", AttrKind::Int, Attribute(int64_t{0})}};
    d.fusion = FusionClass::Opaque;
    d.infer = [](const OpCall& c) -> Expected<std::vector<TensorType>> {
      KF_RETURN_IF_ERROR(checkRanks(c));
      KF_RETURN_IF_ERROR(ops::requireFloat(c, 0));
      TensorType t(c.inputs[0].dtype, Shape(c.getInts("shape").begin(), c.getInts("shape").end()));
      for (int64_t d : t.shape)
        if (d < 0) return Error(str("attribute shape = ", ops::listText(c.getInts("shape")), " has a negative size"));
      if (c.inputs[0].rank() != 1 || c.inputs[0].shape[0] != shardSize(t.numElements(), c.getInt("ranks")))
        return Error(str("operand 0 ", formatType(c.inputs[0]), " is not a shard of ", formatType(t), " over ",
                         c.getInt("ranks"), " ranks"));
      return ops::one(t);
    };
    // Every rank holds this shard.
    d.reference = [](const OpCall&, std::span<const Tensor* const> in, std::span<const TensorType> out)
        -> Expected<std::vector<Tensor>> {
      Tensor y(out[0]);
      const int64_t s = in[0]->numElements();
      for (int64_t i = 0; i < y.numElements(); ++i) ops::copyElement(*in[0], s ? i % s : 0, y, i);
      return std::vector<Tensor>{std::move(y)};
    };
    r.add(std::move(d));
  }
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
