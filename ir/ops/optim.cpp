// Optimizer updates as elementwise graph ops, with the exact arithmetic of
// torch.optim (PyTorch 1.13, single-tensor path). Each takes a parameter, its
// gradient and its state, plus the learning rate and the 1-based step number
// as rank-0 runtime operands (so changing either never recompiles), and
// returns the new parameter and state. The training pipeline writes the
// results back with state updates; the in-place pass later makes them
// overwrite the old buffers.
#include <cmath>

#include "ir/ops/op_helpers.h"

namespace kfuse {
namespace {

using ops::one;
using ScalarList = std::vector<Scalar>;

// Operands [0, nTensors) are same-typed float tensors; then lr (float scalar
// of the same dtype) and, if `withStep`, step (i64 scalar).
Status checkUpdateOperands(const OpCall& c, size_t nTensors, bool withStep) {
  KF_RETURN_IF_ERROR(ops::requireFloat(c, 0));
  for (size_t i = 1; i < nTensors; ++i)
    if (!(c.inputs[i] == c.inputs[0]))
      return Error(str("operand ", i, " ", formatType(c.inputs[i]), " must have the parameter's type ",
                       formatType(c.inputs[0])));
  const TensorType& lr = c.inputs[nTensors];
  if (lr.rank() != 0 || lr.dtype != c.inputs[0].dtype)
    return Error(str("the learning rate (operand ", nTensors, ") must be ", dtypeName(c.inputs[0].dtype),
                     "[], got ", formatType(lr)));
  if (withStep) {
    const TensorType& step = c.inputs[nTensors + 1];
    if (step.rank() != 0 || step.dtype != DType::I64)
      return Error(str("the step (operand ", nTensors + 1, ") must be i64[], got ", formatType(step)));
  }
  return Status::ok();
}

Status checkRange(const OpCall& c, std::string_view name, double lo, double hi) {
  double v = c.getFloat(name);
  if (!(v >= lo && v <= hi)) return Error(str("attribute ", name, " = ", v, " must be in [", lo, ", ", hi, "]"));
  return Status::ok();
}

OpDef updateOp(std::string name, std::string summary, int arity, std::vector<AttrSpec> attrs, InferFn infer,
               ScalarFn scalar) {
  OpDef d;
  d.name = std::move(name);
  d.summary = std::move(summary);
  d.minInputs = d.maxInputs = arity;
  d.attrs = std::move(attrs);
  d.fusion = FusionClass::Broadcast;  // lr and step broadcast over the parameter
  d.infer = std::move(infer);
  d.reference = ops::referenceFromScalar;
  d.scalar = std::move(scalar);
  d.gradientOperand = 1;  // (p, g, ...)
  return d;
}

// sgd_update(p, g, lr) -> p'  (momentum == 0)
// sgd_update(p, g, buf, lr, step) -> (p', buf')
//   d = g + weight_decay * p
//   buf' = step == 1 ? d : momentum * buf + (1 - dampening) * d
//   d' = nesterov ? d + momentum * buf' : buf'
//   p' = p - lr * d'
void registerSgd(OpRegistry& r) {
  OpDef d = updateOp(
      "sgd_update", "torch.optim.SGD step: (p, g, lr) -> p', or with momentum (p, g, buf, lr, step) -> (p', buf')",
      3,
      {{"momentum", AttrKind::Float, Attribute(0.0)},
       {"dampening", AttrKind::Float, Attribute(0.0)},
       {"nesterov", AttrKind::Bool, Attribute(false)},
       {"weight_decay", AttrKind::Float, Attribute(0.0)}},
      [](const OpCall& c) -> Expected<std::vector<TensorType>> {
        bool withMomentum = c.getFloat("momentum") != 0;
        size_t want = withMomentum ? 5 : 3;
        if (c.inputs.size() != want)
          return Error(str("takes ", want, " operands ", withMomentum ? "(p, g, buf, lr, step) with momentum"
                                                                      : "(p, g, lr) without momentum",
                           ", got ", c.inputs.size()));
        KF_RETURN_IF_ERROR(checkUpdateOperands(c, withMomentum ? 3 : 2, withMomentum));
        KF_RETURN_IF_ERROR(checkRange(c, "momentum", 0, 1));
        KF_RETURN_IF_ERROR(checkRange(c, "dampening", 0, 1));
        KF_RETURN_IF_ERROR(checkRange(c, "weight_decay", 0, INFINITY));
        if (c.getBool("nesterov") && (!withMomentum || c.getFloat("dampening") != 0))
          return Error("nesterov needs momentum and zero dampening (as torch.optim.SGD)");
        std::vector<TensorType> out{c.inputs[0]};
        if (withMomentum) out.push_back(c.inputs[0]);
        return out;
      },
      [](const OpCall& c, std::span<const Scalar> in) {
        double momentum = c.getFloat("momentum"), wd = c.getFloat("weight_decay");
        const Scalar& p = in[0];
        Scalar d = wd != 0 ? in[1] + wd * p : in[1];
        if (momentum == 0) return ScalarList{p - in[2] * d};
        Scalar first = equal(in[4], Scalar::constant(1, DType::I64));
        Scalar buf = select(first, d, momentum * in[2] + (1.0 - c.getFloat("dampening")) * d);
        Scalar dir = c.getBool("nesterov") ? d + momentum * buf : buf;
        return ScalarList{p - in[3] * dir, buf};
      });
  d.maxInputs = 5;
  d.inPlace = {0, 2};  // p' over p, buf' over buf
  r.add(std::move(d));
}

// adam_update(p, g, m, v, lr, step) -> (p', m', v'), torch.optim.Adam, or
// AdamW when `decoupled`:
//   AdamW: p <- p * (1 - lr * weight_decay);  Adam: g <- g + weight_decay * p
//   m' = beta1 * m + (1 - beta1) * g
//   v' = beta2 * v + (1 - beta2) * g * g
//   p' = p - (lr / (1 - beta1^step)) * m' / (sqrt(v') / sqrt(1 - beta2^step) + eps)
void registerAdam(OpRegistry& r) {
  OpDef& d = r.add(updateOp(
      "adam_update",
      "torch.optim.Adam step (AdamW when decoupled): (p, g, m, v, lr, step) -> (p', m', v')", 6,
      {{"beta1", AttrKind::Float, Attribute(0.9)},
       {"beta2", AttrKind::Float, Attribute(0.999)},
       {"eps", AttrKind::Float, Attribute(1e-8)},
       {"weight_decay", AttrKind::Float, Attribute(0.0)},
       {"decoupled", AttrKind::Bool, Attribute(false)}},
      [](const OpCall& c) -> Expected<std::vector<TensorType>> {
        KF_RETURN_IF_ERROR(checkUpdateOperands(c, 4, true));
        KF_RETURN_IF_ERROR(checkRange(c, "beta1", 0, 1));
        KF_RETURN_IF_ERROR(checkRange(c, "beta2", 0, 1));
        KF_RETURN_IF_ERROR(checkRange(c, "eps", 0, INFINITY));
        KF_RETURN_IF_ERROR(checkRange(c, "weight_decay", 0, INFINITY));
        return std::vector<TensorType>(3, c.inputs[0]);
      },
      [](const OpCall& c, std::span<const Scalar> in) {
        double b1 = c.getFloat("beta1"), b2 = c.getFloat("beta2"), wd = c.getFloat("weight_decay");
        Scalar p = in[0], g = in[1], lr = in[4];
        // The bias corrections in double, as torch computes them (Python
        // floats), then rounded: in f32, 1 - beta2^step loses three digits
        // to cancellation and to beta2's rounding (0.999f), a 1e-5 relative
        // error in every early step's size.
        Scalar step = cast(in[5], DType::F64);
        if (c.getBool("decoupled")) {
          if (wd != 0) p = p * (1.0 - lr * wd);
        } else if (wd != 0) {
          g = g + wd * p;
        }
        Scalar m = b1 * in[2] + (1.0 - b1) * g;
        Scalar v = b2 * in[3] + (1.0 - b2) * g * g;
        Scalar correction1 = cast(1.0 - pow(Scalar::constant(b1, DType::F64), step), p.type());
        Scalar correction2 = cast(1.0 - pow(Scalar::constant(b2, DType::F64), step), p.type());
        Scalar denom = sqrt(v) / sqrt(correction2) + c.getFloat("eps");
        return ScalarList{p - (lr / correction1) * m / denom, m, v};
      }));
  d.inPlace = {0, 2, 3};  // p', m', v' over p, m, v
}

}  // namespace

void registerOptimizerOps(OpRegistry& r) {
  registerSgd(r);
  registerAdam(r);
}

}  // namespace kfuse
