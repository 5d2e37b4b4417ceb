// conv2d on the CPU as im2col + GEMM (BLAS), for a plan's Conv steps.
#pragma once

#include <cstddef>

#include "ir/dtype.h"
#include "runtime/blas.h"
#include "exec/plan.h"

namespace kfuse {

// y = conv2d(x, w) (+ bias), for f32 or f64 storage; `x`, `w`, `bias` (may
// be null) and `y` point to the buffers in the layouts the spec names.
// `workspace` holds one image-group's patch matrix (the plan's workspace
// buffer, c.c / c.groups * c.kh * c.kw * c.oh * c.ow elements of `dtype`):
// the convolution allocates nothing itself.
void runConv2d(const Blas& blas, const ConvSpec& c, DType dtype, const std::byte* x, const std::byte* w,
               const std::byte* bias, std::byte* y, std::byte* workspace);

}  // namespace kfuse
