// The op registry: one definition per op. Shape/type inference, the
// reference implementation, the fusion class and (for elementwise ops) the
// scalar expression all live in a single OpDef; every other part of kfuse
// (parser, verifier, interpreter, passes, emitters) reads them from here.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attribute.h"
#include "ir/op.h"
#include "ir/graph.h"
#include "ir/row_kernel.h"
#include "ir/scalar_expr.h"
#include "ir/support/expected.h"
#include "ir/tensor.h"
#include "ir/types.h"

namespace kfuse {

class Node;

// How an op may be fused (TVM's op patterns, in increasing order of
// restriction): elementwise ops map each output element to the same input
// element; broadcast ops read inputs through broadcasting index maps;
// injective ops move data without arithmetic (transpose, slice, concat);
// reductions combine along axes; GEMM-like ops (matmul, conv) accept an
// elementwise epilogue; opaque ops are never fused.
enum class FusionClass : uint8_t { Elementwise, Broadcast, Injective, Reduction, GemmLike, Opaque };
std::string_view fusionClassName(FusionClass c);

struct AttrSpec {
  std::string name;
  AttrKind kind;
  std::optional<Attribute> defaultValue;  // nullopt: required
};

// An op applied to concrete operand types and attributes: what inference
// and the reference implementation see.
struct OpCall {
  const struct OpDef& op;
  const AttrMap& attrs;
  std::span<const TensorType> inputs;
  const Node* node = nullptr;  // set when the call comes from a graph node
  const Graph* body = nullptr;  // the body of an op that has one (fused)

  const Attribute& attr(std::string_view name) const;
  int64_t getInt(std::string_view n) const { return attr(n).asInt(); }
  double getFloat(std::string_view n) const { return attr(n).asFloat(); }
  bool getBool(std::string_view n) const { return attr(n).asBool(); }
  const std::string& getString(std::string_view n) const { return attr(n).asString(); }
  const std::vector<int64_t>& getInts(std::string_view n) const { return attr(n).asInts(); }
  const std::vector<double>& getFloats(std::string_view n) const { return attr(n).asFloats(); }
};

// Node n's call: its op, attributes, body, and its operands' types, which
// `types` holds (the call points into it, so it must outlive the call).
OpCall callOf(const Node& n, std::vector<TensorType>& types);

using InferFn = std::function<Expected<std::vector<TensorType>>(const OpCall&)>;
// Computes the outputs from inputs whose types are those of the call and
// whose results have the types inference gave. Runtime failures (an index out
// of range) are Errors.
using ReferenceFn = std::function<Expected<std::vector<Tensor>>(const OpCall&, std::span<const Tensor* const> inputs,
                                                                 std::span<const TensorType> outputs)>;
// For elementwise/broadcast ops: output elements from input elements.
using ScalarFn = std::function<std::vector<Scalar>(const OpCall&, std::span<const Scalar> inputs)>;

// How an op treats rank-4 images stored in another axis order (NHWC rather
// than NCHW), read by layout selection (passes/layout.cpp) so that the pass
// holds no list of op names. P below is the permutation taking an operand's
// axes to the new order.
enum class LayoutClass : uint8_t {
  // The op reads its operands in the order it was built with (the default:
  // matmul, reshape, flatten, dropout's index-keyed mask, ...). A permuted
  // operand is transposed back before it.
  Fixed,
  // Each result element reads the operand elements at its own index
  // (elementwise and broadcast ops): permuting every operand by P permutes
  // the results by P. Lower-rank broadcast operands are padded and permuted.
  Pointwise,
  // Pointwise except along the axes named by the attributes in
  // `LayoutSpec::axisAttrs` (axes of operand 0: reductions, softmax,
  // concat), which are renumbered through P. A result whose rank is not 4
  // (a reduction without keepdims) must come out in the same order.
  AxisAttrs,
  // Reads the layout tags of its images (NCHW / NHWC) and filters (OIHW /
  // OHWI) and computes in any of them (convolution, pooling, batch norm);
  // results of rank 4 follow their image operand's tag.
  Native,
};

struct LayoutSpec {
  LayoutClass kind = LayoutClass::Fixed;
  std::vector<std::string> axisAttrs;  // AxisAttrs: "axes" or "axis"
  // Native: operands that are images and operands that are filters; other
  // operands (per-channel vectors) do not depend on the layout. Results
  // that are images (a filter gradient's layout is an attribute's).
  std::vector<size_t> imageOperands, filterOperands, imageResults;
  // Native: int-list attributes holding an image's shape in memory order
  // (the gradient ops' input_shape), permuted with the images.
  std::vector<std::string> imageShapeAttrs;
};

// A block of an op's result (possibly strided) that is a block of one
// operand, or one value throughout. Data-movement ops whose results are such blocks, but not an
// affine map of one operand (constant pad, concat), describe them so that
// code generators copy block by block: the blocks are disjoint and cover
// the result, so each element is written once.
struct Piece {
  int operand = -1;  // -1: every element is `fill`
  double fill = 0;
  Shape extent;                       // the block's shape
  std::vector<int64_t> resultStart;   // its first element in the result
  std::vector<int64_t> operandStart;  // and in the operand (operand >= 0)
  // The block's step in the result per dim (empty: 1): a strided block.
  std::vector<int64_t> resultStep;
};
using PiecesFn = std::function<Expected<std::vector<Piece>>(const OpCall&, const TensorType& result)>;

struct OpDef {
  std::string name;
  Op id{};  // its handle (ir/op.h), set on registration from the name
  std::string summary;  // one line, for `kfuse ops` and docs
  int minInputs = 0;
  int maxInputs = 0;    // -1: variadic
  std::vector<AttrSpec> attrs;
  FusionClass fusion = FusionClass::Opaque;
  InferFn infer;
  ReferenceFn reference;
  ScalarFn scalar;  // set for Elementwise and Broadcast ops
  // For elementwise ops whose value depends on where the element is (the
  // dropout mask): `scalar` receives one operand more than the node has,
  // last, the result element's flat row-major index (i64).
  bool scalarReadsIndex = false;
  // For ops that compute row by row (reductions, softmax, norms, losses):
  // their loop structure and scalar program inside a fused kernel.
  RowSpecFn rowSpec;
  RowFn row;
  // For injective ops: operand 0's index as an affine map of the result's.
  AffineFn affine;
  // For gathers: the axis of operand 0 whose row is read from operand 1; a
  // kernel reads operand 0 through a gathered load (exec/kernel_ir.h).
  GatherAxisFn gatherAxis;
  // For a gather's gradient (operand 0 dy, operand 1 the indices): the
  // result axis dy's rows are added into, where the indices point (a
  // scatter-add: zeros, then one accumulating kernel, exec/kernel_ir.h).
  GatherAxisFn scatterAxis;
  // For injective ops without one: the result as blocks (Piece). Such a
  // node is its own launch of one copy per block; it fuses with nothing.
  PiecesFn pieces;
  // (Gradient rules are the compiler's: passes/gradients/rules.h.)
  // The op carries a body graph (fused): inference and the reference read it.
  bool hasBody = false;
  // The results depend only on the operands' types, never their values
  // (shape_of): constant folding may evaluate such a node at compile time.
  bool dependsOnlyOnTypes = false;
  // Behaviour under a change of image layout (layout selection).
  LayoutSpec layout;
  // In-place: inPlace[r] is the operand that result r may be written over
  // (same type, each element computed from the same element of it), or -1.
  // Buffer planning reads it for steps that run an op as such (reference
  // steps); generated kernels are checked on their index maps instead, which
  // is exact for fused groups. Optimizer updates list their parameter and
  // state operands: they are meant to overwrite them.
  std::vector<int> inPlace;
  // Optimizer updates: the operand holding the gradient they consume (its
  // buffer is a parameter's gradient in memory reports), else -1.
  int gradientOperand = -1;

  const AttrSpec* findAttr(std::string_view n) const;
};

class OpRegistry {
 public:
  // The registry with every built-in op.
  static const OpRegistry& global();

  const OpDef* find(std::string_view name) const;
  // Every op of ir/ops/ops.def is registered: a handle always finds its op.
  const OpDef& get(Op op) const { return *byId_[static_cast<size_t>(op)]; }
  std::vector<const OpDef*> all() const;  // sorted by name

  // Registration (used by the op family files).
  OpDef& add(OpDef def);

 private:
  std::vector<std::unique_ptr<OpDef>> ops_;
  std::array<const OpDef*, kOpCount> byId_{};
};

// Returns attrs completed with the op's defaults, or an Error naming the
// unknown or missing attribute or the expected kind (ints given where floats
// are expected are converted).
Expected<AttrMap> completeAttrs(const OpDef& op, AttrMap given);

// The op families; each registers its ops. Adding an op touches one of these.
void registerElementwiseOps(OpRegistry& r);
void registerReductionOps(OpRegistry& r);
void registerShapeOps(OpRegistry& r);
void registerLinalgOps(OpRegistry& r);
void registerPoolOps(OpRegistry& r);
void registerNormOps(OpRegistry& r);
void registerLossOps(OpRegistry& r);
void registerLogicOps(OpRegistry& r);
void registerOptimizerOps(OpRegistry& r);
void registerFusedOps(OpRegistry& r);
void registerCollectiveOps(OpRegistry& r);

}  // namespace kfuse
