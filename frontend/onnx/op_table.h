// The ONNX op table: for each ONNX op type, the schema versions kfuse lowers
// and the function that lowers a node into kfuse ops. Each group of ops has
// its own file (lower_*.cpp) holding its part of the table; an ONNX op that
// maps onto several kfuse ops is lowered into them rather than getting a
// near-duplicate kfuse op.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/onnx/import_context.h"

namespace kfuse::onnx_import {

using LowerFn = Status (*)(LoweringContext&);

struct OpLowering {
  std::string_view opType;
  // ONNX schema versions (since_version) handled; the model's opset selects
  // the newest version at or below it (Softmax at opset 12 is Softmax-11).
  std::vector<int> versions;
  LowerFn lower;
  std::string_view loweredTo;  // for docs/onnx-support.md
};

std::span<const OpLowering> attentionLowerings();      // lower_attention.cpp
std::span<const OpLowering> constantLowerings();       // lower_constant.cpp
std::span<const OpLowering> convTransposeLowerings();  // lower_conv_transpose.cpp
std::span<const OpLowering> einsumLowerings();         // lower_einsum.cpp
std::span<const OpLowering> elementwiseLowerings();    // lower_elementwise.cpp
std::span<const OpLowering> compositeMathLowerings();  // lower_composite_math.cpp
std::span<const OpLowering> gatherLowerings();       // lower_gather.cpp
std::span<const OpLowering> lossLowerings();         // lower_loss.cpp
std::span<const OpLowering> mathLowerings();         // lower_math.cpp
std::span<const OpLowering> nnLowerings();           // lower_nn.cpp
std::span<const OpLowering> normLowerings();         // lower_norm.cpp
std::span<const OpLowering> numericLowerings();      // lower_numeric.cpp
std::span<const OpLowering> resizeLowerings();       // lower_resize.cpp
std::span<const OpLowering> scatterLowerings();      // lower_scatter.cpp
std::span<const OpLowering> shapeLowerings();        // lower_shape.cpp

// Every lowering, sorted by op type.
std::vector<const OpLowering*> allLowerings();

// How a node of the default domain resolves at a given opset.
struct OpResolution {
  const OpLowering* lowering = nullptr;  // null: unsupported
  int version = 0;                       // schema since_version, 0 if the op is unknown to ONNX
  std::string reason;                    // why unsupported
};
OpResolution resolveOp(const std::string& domain, const std::string& opType, int64_t opset);

}  // namespace kfuse::onnx_import
