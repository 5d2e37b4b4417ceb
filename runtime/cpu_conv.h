// conv2d and its gradients on the CPU as im2col + GEMM (BLAS), for a plan's
// Conv steps that are not generated direct convolutions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "ir/dtype.h"
#include "runtime/blas.h"
#include "exec/plan.h"

namespace kfuse {

// A convolution's buffers in their forward roles (ConvSpec): x, w, bias (may
// be null) and y, in the layouts the spec names; the spec's direction says
// which one is written.
struct ConvBuffers {
  std::byte *x = nullptr, *w = nullptr, *bias = nullptr, *y = nullptr;
};

// Units [begin, end) of the convolution in c.direction (exec/parallel.h's
// im2colConvWork and im2colSplit: images, tiles of output rows, blocks of
// channels forward and backward to the input, groups and blocks backward to
// the weights; a unit's result does not depend on the others run with it),
// for f32 or f64 storage, as im2col + GEMM per group over one image or
// several (exec/parallel.h's im2colImagesPerGemm) or over a unit's part of
// one (col2im after the GEMM for dx).
// `workspace` (`workspaceBytes`) holds the patch matrices of the images
// one GEMM covers (im2colWorkspaceRows rows of c.oh * c.ow elements of
// `dtype`), used by this call alone: the convolution allocates nothing
// itself, and covers fewer images per GEMM when the workspace holds fewer.
void runConv2d(const Blas& blas, const ConvSpec& c, DType dtype, const ConvBuffers& buffers, std::byte* workspace,
               uint64_t workspaceBytes, int64_t begin, int64_t end);

// The output columns ox of `c` whose input column ox * c.strideW + off
// lies inside the image: [lo, hi).
std::pair<int64_t, int64_t> validOutputColumns(const ConvSpec& c, int64_t off);

// The patch matrices a runner with `threads` threads holds beside the plan
// for its im2col convolutions (the Conv steps with a workspace): one per
// range of work after the first (which uses the plan's workspace), each as
// large as the largest workspace split that many ways. Bytes per slot; the
// runner allocates exactly these, and memory reports count them.
std::vector<uint64_t> convScratchSlots(const Plan& plan, int threads);

}  // namespace kfuse
