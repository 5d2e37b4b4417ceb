// The executable plan: what a device runs for one function, as data. Buffers
// (inputs, parameters, constants, temporaries, and aliases that share
// another buffer's storage, e.g. reshapes), and steps in order, each one
// launch: a bundle of generated kernels, a GEMM (a library call with its
// epilogue kernel), or an op run by its reference implementation (ops with
// no kernel form yet).
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "exec/kernel_ir.h"
#include "ir/attribute.h"
#include "ir/graph.h"
#include "ir/ops/window.h"

namespace kfuse {

struct OpDef;

enum class BufferKind : uint8_t { Input, Param, Constant, Temp, Alias };

// Device memory is two regions, each allocated once per plan:
//   the arena: every Temp, at an offset chosen by buffer planning
//     (codegen/plan/buffer_plan.h) so that buffers whose lifetimes do not
//     overlap share bytes;
//   the resident region: every Input, Param (weights, optimizer state, other
//     buffers) and Constant, each at its own offset, alive for the whole run.
// Offsets and region sizes are multiples of kBufferAlignment (256: what
// cudaMalloc guarantees, and a multiple of every vector width).
inline constexpr uint64_t kBufferAlignment = 256;
// Bytes a buffer of `bytes` occupies in a region (at least one alignment unit,
// so that every buffer has a distinct address).
inline uint64_t alignedBytes(uint64_t bytes) {
  return (std::max<uint64_t>(bytes, 1) + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

struct PlanBuffer {
  std::string name;  // for printing: the value's name in the IR
  TensorType type;
  BufferKind kind = BufferKind::Temp;
  size_t input = 0;                        // Input: argument index
  std::string param;                       // Param: module parameter
  std::shared_ptr<const Tensor> constant;  // Constant: its data
  int aliasOf = -1;                        // Alias: the buffer whose storage it shares
  // Alias made by in-place rewriting (the step writing it overwrites
  // `aliasOf`, which dies there), rather than a view (reshape).
  bool inPlace = false;
  // Temp: scratch of a library call (a convolution's im2col patches).
  bool workspace = false;
  // Storage holding a parameter's gradient as an optimizer update reads it
  // (OpDef::gradientOperand), for memory reports. Gradients computed inside
  // the update's own fused launch have no buffer.
  bool gradient = false;
  // Byte offset: Temp in the arena, Input/Param/Constant in the resident
  // region; -1 for aliases (use Plan::storageOf) and before planning.
  int64_t offset = -1;
  // Storage buffers (not aliases): the first and last step touching the
  // storage through any alias; lastUse == steps.size() for storage that is
  // read after the last step (outputs, state updates). -1: untouched.
  int firstUse = -1, lastUse = -1;
};

// C[b] = op(A[b]) @ op(B[b]) for every batch index b, row-major matrices;
// batch offsets in elements (0 for a broadcast operand).
struct GemmSpec {
  int a = -1, b = -1, c = -1;
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
  Shape batch;
  std::vector<int64_t> aBatchStrides, bBatchStrides, cBatchStrides;
  // The cpu target runs the GEMM as generated code over a copy of B packed
  // once (exec/packed_gemm.h): decided when the plan was built, for the
  // CPU its code is for (PlanOptions::packGemms).
  bool packedB = false;
};

// Which of a convolution's three tensors a Conv step computes from the
// other two: y = conv2d(x, w) (+ bias) forward; backward, dx from (dy, w)
// (conv2d_grad_input) or dw from (dy, x) (conv2d_grad_weight). The buffers
// keep their forward roles (ConvSpec::y is dy in both gradients), so one
// geometry describes all three.
enum class ConvDirection : uint8_t { Forward, GradInput, GradWeight };
std::string_view convDirectionName(ConvDirection d);  // "forward", "grad_input", "grad_weight"

// conv2d as GEMMs: each image's patches (im2col) times the filter, per group;
// geometry in logical NCHW / OIHW terms, the layouts say the memory order.
// Backward: dw accumulates dy times the patches over images; dx is the
// filter's transpose times dy, scattered back over the patches (col2im).
struct ConvSpec {
  int x = -1, w = -1, bias = -1, y = -1;
  ConvDirection direction = ConvDirection::Forward;
  int64_t n = 0, c = 0, h = 0, wd = 0;  // input
  int64_t o = 0, kh = 0, kw = 0;        // filter
  int64_t oh = 0, ow = 0, groups = 1;
  int64_t strideH = 1, strideW = 1, padTop = 0, padLeft = 0, dilH = 1, dilW = 1;
  bool channelsLast = false;  // x and y NHWC
  bool filterLast = false;    // w OHWI
  // A Temp of taps x pixels elements (f64 for f64 convolutions, else f32)
  // holding one image-group's patch matrix; -1: none.
  int workspace = -1;
  // conv2d's live_taps: per (input channel of the group modulo
  // livePeriod(), tap ky * kw + kx), 0 where the filter is zero for every
  // output channel; empty: every tap may be nonzero. Code may skip the 0s.
  std::vector<int64_t> liveTaps;
  // The cpu target reads w as a packed copy (exec/packed_filter.h), output
  // channels across the lanes: decided when the plan was built, for the
  // CPU its code is for (PlanOptions::packFilters).
  bool packedFilter = false;

  int64_t livePeriod() const { return liveTaps.empty() ? 1 : static_cast<int64_t>(liveTaps.size()) / (kh * kw); }
  bool liveTap(int64_t ci, int64_t ky, int64_t kx) const {
    return liveTaps.empty() || liveTaps[static_cast<size_t>(((ci % livePeriod()) * kh + ky) * kw + kx)] != 0;
  }

  // A 1x1 filter at stride 1 without padding: each output pixel reads its
  // own input pixel, whatever rows the planes are cut into.
  bool pointwise() const {
    return kh == 1 && kw == 1 && strideH == 1 && strideW == 1 && padTop == 0 && padLeft == 0 && oh == h && ow == wd;
  }
  // A forward 1x1 NCHW convolution of one group over a plane
  // ops::convWholePlanes takes, its filter as it is (not packed), every
  // tap live, to no more channels than it reads: the cpu target's code
  // takes its planes in work units of ops::kPointwisePanelPixels pixels,
  // every output channel each, the input copied into panels
  // (codegen/cpu/panel_conv_emitter.cpp). Two threads then read half the
  // input each. Layers that widen keep whole planes split by channels: their
  // input is the small side, and the depthwise or 3x3 layer after them,
  // split by channels too, reads the planes the same thread wrote
  // (SqueezeNet's 32 -> 128 expansions over 27x27 took 69 us at two
  // threads by channels, 112 by pixels; docs/fusion.md).
  bool pointwisePanels() const {
    return direction == ConvDirection::Forward && !channelsLast && pointwise() && groups == 1 && liveTaps.empty() &&
           !packedFilter && o <= c && ops::convWholePlanes(strideH, strideW, oh, ow, wd, groups, kh * kw);
  }
  // An NCHW convolution whose planes a generated direct convolution takes
  // whole, vectors across rows (ops::convWholePlanes), one output channel's
  // plane at a time; not those over panels.
  bool wholePlanes() const {
    return !channelsLast && !pointwisePanels() && ops::convWholePlanes(strideH, strideW, oh, ow, wd, groups, kh * kw);
  }

  // The buffer the step writes (y, x or w by direction), and the two it
  // reads besides the bias.
  int result() const { return direction == ConvDirection::Forward ? y : direction == ConvDirection::GradInput ? x : w; }
  std::pair<int, int> operands() const {
    return direction == ConvDirection::Forward ? std::pair{x, w} : direction == ConvDirection::GradInput ? std::pair{y, w} : std::pair{y, x};
  }
};

// One bucket of a data-parallel run's all-reduce (the mean over the ranks,
// ir/ops/collective.cpp), as two steps so that the exchange overlaps the
// steps between them: Start copies each input into its output (nothing when
// in-place rewriting made them one storage) and hands the outputs to the
// runner's communicator; Wait, placed before the first later step that
// touches an output (codegen/plan/collective_waits.h), blocks until the
// exchange is done. In between the outputs belong to the communicator.
// ZeRO-1's collectives (ir/ops/collective.cpp) are steps of the same two
// phases: reduce_scatter and all_gather exchange, shard only copies this
// rank's part; each has one input and one output, and `ranks` says how the
// tensor is cut.
enum class CollectivePhase : uint8_t { Start, Wait };
enum class CollectiveOp : uint8_t { AllReduce, ReduceScatter, AllGather, Shard };
std::string_view collectiveOpName(CollectiveOp op);  // the op's registry name
struct CollectiveSpec {
  CollectivePhase phase = CollectivePhase::Start;
  int bucket = 0;
  std::vector<int> inputs;   // Start only
  std::vector<int> outputs;  // the bucket, in both phases
  CollectiveOp op = CollectiveOp::AllReduce;
  int64_t ranks = 0;  // ZeRO-1's ops: the shards' count
};

// What a step launches, one alternative per kind: a bundle of generated
// kernels, a GEMM or a convolution (a library call or generated code, each
// with an optional epilogue), an op run by its reference implementation, or
// one phase of a collective.
enum class StepKind : uint8_t { Kernels, Gemm, Conv, Reference, Collective };

// The step's kernels (Step::kernels), in order; nothing else.
struct KernelBundle {};

// An op with no kernel form yet: the op, its attributes and its operand /
// result buffers.
struct ReferenceOp {
  const OpDef* op = nullptr;
  AttrMap attrs;
  std::vector<int> inputs, outputs;
};

// In StepKind's order.
using StepBody = std::variant<KernelBundle, GemmSpec, ConvSpec, ReferenceOp, CollectiveSpec>;

struct Step {
  std::string name;
  Phase phase = Phase::Forward;  // of the node it comes from
  size_t ops = 1;                // graph ops it computes (more than 1: fused)
  // A bundle's kernels, run in order; a GEMM's or convolution's epilogue
  // (empty when it writes its result directly). Plan buffer per kernel
  // buffer.
  std::vector<int> kernels;
  std::vector<std::vector<int>> kernelBuffers;
  StepBody body;

  StepKind kind() const { return static_cast<StepKind>(body.index()); }
  // The body as its kind; asking for another kind is a bug (asserted).
  const GemmSpec& gemm() const { return as<GemmSpec>(); }
  GemmSpec& gemm() { return as<GemmSpec>(); }
  const ConvSpec& conv() const { return as<ConvSpec>(); }
  ConvSpec& conv() { return as<ConvSpec>(); }
  const ReferenceOp& reference() const { return as<ReferenceOp>(); }
  ReferenceOp& reference() { return as<ReferenceOp>(); }
  const CollectiveSpec& collective() const { return as<CollectiveSpec>(); }
  CollectiveSpec& collective() { return as<CollectiveSpec>(); }

 private:
  template <typename T>
  const T& as() const {
    const T* b = std::get_if<T>(&body);
    assert(b && "the step is of another kind");
    return *b;
  }
  template <typename T>
  T& as() {
    T* b = std::get_if<T>(&body);
    assert(b && "the step is of another kind");
    return *b;
  }
};

struct Plan {
  std::string function;
  std::vector<PlanBuffer> buffers;
  std::vector<kernel::Kernel> kernels;
  std::vector<Step> steps;
  std::vector<int> inputs;   // per function argument
  std::vector<int> outputs;  // per function result
  std::vector<std::pair<std::string, int>> updates;  // parameter <- buffer
  // Region sizes (multiples of kBufferAlignment), set by buffer planning:
  // what a device allocates to run the plan, and nothing else.
  uint64_t arenaBytes = 0;
  uint64_t residentBytes = 0;

  // One launch per step: a kernel bundle, a GEMM with its epilogue, or a
  // reference op.
  size_t launches() const { return steps.size(); }
  // The buffer whose storage `b` uses (itself unless an alias).
  int storageOf(int b) const;
  uint64_t deviceBytes() const { return arenaBytes + residentBytes; }
};

// Every buffer a step reads or writes (library operands, kernel buffers,
// reference operands and results, workspace), in no particular order.
std::vector<int> stepBuffers(const Step& s);

// Drops the buffers `drop` marks (none of which a step, an alias, an input,
// an output or an update may name) and renumbers every reference to the
// others, in order.
void dropBuffers(Plan& p, const std::vector<bool>& drop);

// The buffers step `s` of `p` writes: a GEMM's or convolution's result (and
// workspace), its epilogue's and a kernel bundle's outputs, a reference op's
// results.
std::vector<int> stepWrites(const Plan& p, const Step& s);

// The storages a GEMM's or convolution's epilogue (step.kernels[0]) writes,
// and per epilogue buffer whether a block of the step, running the
// epilogue over its own part of the step's result `result`, must keep to
// its own elements there: the buffer lies on the result's storage or on
// one the epilogue writes (exec/row_blocks.h, exec/conv_epilogue.h); and
// whether it is only stored, on a storage that no other buffer of the
// epilogue and not the result lies on (a block's writes there reach no
// element another block reads, wherever they land).
struct EpilogueStorage {
  std::vector<int> written;
  std::vector<bool> confined;
  std::vector<bool> storedOnly;
};
EpilogueStorage epilogueStorage(const Plan& p, const Step& s, int result);

// Whether buffer `b`'s storage is a parameter or constant that nothing
// writes while the plan runs (no step, no state update): an inference
// plan's weights. Runners may keep data derived from it between runs.
bool readOnlyWhileRunning(const Plan& p, int b);

// One line per buffer (with its offset, size and lifetime once planned)
// and per step.
std::string printPlan(const Plan& p);

}  // namespace kfuse
