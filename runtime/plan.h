// The executable plan: what a device runs for one function, as data. Buffers
// (inputs, parameters, constants, temporaries, and aliases that share
// another buffer's storage, e.g. reshapes), and steps in order, each one
// launch: a bundle of generated kernels, a GEMM (a library call with its
// epilogue kernel), or an op run by its reference implementation (ops with
// no kernel form yet).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codegen/kernel/kernel_ir.h"
#include "ir/attribute.h"
#include "ir/graph.h"

namespace kfuse {

struct OpDef;

enum class BufferKind : uint8_t { Input, Param, Constant, Temp, Alias };

struct PlanBuffer {
  std::string name;  // for printing: the value's name in the IR
  TensorType type;
  BufferKind kind = BufferKind::Temp;
  size_t input = 0;                        // Input: argument index
  std::string param;                       // Param: module parameter
  std::shared_ptr<const Tensor> constant;  // Constant: its data
  int aliasOf = -1;                        // Alias: the buffer whose storage it shares
};

// C[b] = op(A[b]) @ op(B[b]) for every batch index b, row-major matrices;
// batch offsets in elements (0 for a broadcast operand).
struct GemmSpec {
  int a = -1, b = -1, c = -1;
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
  Shape batch;
  std::vector<int64_t> aBatchStrides, bBatchStrides, cBatchStrides;
};

// conv2d as GEMMs: each image's patches (im2col) times the filter, per group;
// geometry in logical NCHW / OIHW terms, the layouts say the memory order.
struct ConvSpec {
  int x = -1, w = -1, bias = -1, y = -1;
  int64_t n = 0, c = 0, h = 0, wd = 0;  // input
  int64_t o = 0, kh = 0, kw = 0;        // filter
  int64_t oh = 0, ow = 0, groups = 1;
  int64_t strideH = 1, strideW = 1, padTop = 0, padLeft = 0, dilH = 1, dilW = 1;
  bool channelsLast = false;  // x and y NHWC
  bool filterLast = false;    // w OHWI
};

enum class StepKind : uint8_t { Kernels, Gemm, Conv, Reference };

struct Step {
  StepKind kind = StepKind::Kernels;
  std::string name;
  Phase phase = Phase::Forward;  // of the node it comes from
  size_t ops = 1;                // graph ops it computes (more than 1: fused)
  // Kernels: run in order; Gemm: the epilogue (empty when the GEMM writes
  // its result directly). Plan buffer per kernel buffer.
  std::vector<int> kernels;
  std::vector<std::vector<int>> kernelBuffers;
  GemmSpec gemm;
  ConvSpec conv;  // Conv (its epilogue in `kernels`, as a GEMM's)
  // Reference: the op, its attributes and its operand / result buffers.
  const OpDef* op = nullptr;
  AttrMap attrs;
  std::vector<int> inputs, outputs;
};

struct Plan {
  std::string function;
  std::vector<PlanBuffer> buffers;
  std::vector<kernel::Kernel> kernels;
  std::vector<Step> steps;
  std::vector<int> inputs;   // per function argument
  std::vector<int> outputs;  // per function result
  std::vector<std::pair<std::string, int>> updates;  // parameter <- buffer

  // One launch per step: a kernel bundle, a GEMM with its epilogue, or a
  // reference op.
  size_t launches() const { return steps.size(); }
  // The buffer whose storage `b` uses (itself unless an alias).
  int storageOf(int b) const;
};

// One line per buffer and per step.
std::string printPlan(const Plan& p);

}  // namespace kfuse
