// The device-side support code every generated CUDA source starts with:
// fixed-width types (NVRTC has no standard headers), storage conversions
// bit-identical to ir/dtype.cpp (f16 and bf16 round to nearest even in
// integer code, so NaN payloads and subnormals match the host exactly),
// saturating float-to-integer conversions, NaN-propagating max/min,
// integer division where x / 0 == 0, combiners, warp and block reductions
// in a fixed order, aligned vector loads and stores, dynamic shared memory,
// the grid barrier of cooperative launches and the last-block protocol of
// grid-wide reductions.
//
// Everything is `static __device__ __forceinline__`, so a source that does
// not call a helper pays nothing for it. The same text compiles as host C++
// with tests/cuda/cuda_emulation.h included first: that is how the emitted
// code's logic is tested on machines without a GPU.
#pragma once

#include <string_view>

namespace kfuse::cuda {

// The core helpers (every source).
std::string_view corePrelude();
// The tiled GEMM and direct convolution main loops (sources with a
// generated GEMM or convolution step).
std::string_view gemmPrelude();

}  // namespace kfuse::cuda
