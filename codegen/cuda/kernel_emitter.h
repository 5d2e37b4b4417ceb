// Kernel IR -> a CUDA C device function with kernel_ir.h's semantics:
//
//   static __device__ __forceinline__ void <name>(<T>* out0, const <T>* in0,
//       ..., unsigned char* scratch, int block, int nblocks);
//
// one parameter per kernel buffer (kernel order, storage C types, inputs
// const), then the kernel's global scratch when it has globals, then the
// block's index among the `nblocks` blocks given to this kernel: a launch
// that runs several kernels hands each a range of blockIdx.x (see
// program_emitter.h), a cooperative GEMM step hands its whole grid to its
// epilogue. The function is written for `opts.threads` threads per block and
// any number of blocks (grid-stride loops); the schedule says how many
// blocks it wants and how much shared memory and scratch it needs.
#pragma once

#include <string>
#include <vector>

#include "codegen/cuda/kernel_schedule.h"
#include "ir/support/expected.h"

namespace kfuse::cuda {

// What the launch around a kernel knows about its buffers.
struct KernelEmitContext {
  // Per kernel buffer: no other buffer of the kernel shares its memory, so
  // the pointer may be __restrict__ (empty: none may).
  std::vector<bool> noAlias;
  // Per kernel buffer: written earlier in the same launch (a GEMM's result
  // before its epilogue), so it is read through L2 (__ldcg), not L1.
  std::vector<bool> writtenBefore;
};

struct KernelFunction {
  std::string name;
  std::string source;
  KernelSchedule schedule;
};

// Errors name the kernel: it does not verify, or uses an op/type pair the
// backend does not implement.
Expected<KernelFunction> emitKernelFunction(const kernel::Kernel& k, const std::string& name, const EmitOptions& opts,
                                            const KernelEmitContext& ctx = {});

// An epilogue evaluated per output element inside a GEMM or convolution
// tile, with the product in a register instead of memory:
//
//   static __device__ __forceinline__ void <name>(<buffers as above>,
//       kf_i64 i0, ..., kf_i64 i<outer rank - 1>, <acc type> product);
//
// `productBuffer` is the kernel buffer the product would be read from; every
// load of it must read the element at the point itself (isPointwiseEpilogue).
std::string emitPointFunction(const kernel::Kernel& k, const std::string& name, int productBuffer, DType accType,
                              const KernelEmitContext& ctx = {});

// Whether `k` can run as a point function of a product of shape
// `productShape` held in `productBuffer`: no reduce dims, globals or
// prologue, outer space equal to the product's shape, and every load of the
// product at the point itself (row-major identity map).
bool isPointwiseEpilogue(const kernel::Kernel& k, int productBuffer, const Shape& productShape);

}  // namespace kfuse::cuda
