// CUDA's device built-ins for host C++: what lets the CUDA C kfuse emits
// (codegen/cuda: the prelude, kernel, step and GEMM emitters) compile with
// g++ and run on the simulator (runtime/cuda/sim/scheduler.h), each CUDA
// thread a fiber. It covers exactly what the emitters use, with CUDA's
// semantics where they matter for correctness:
//
//   threadIdx, blockIdx, blockDim, gridDim, warpSize;
//   __syncthreads and __syncthreads_or/and/count: every thread of the block
//     must reach the same barrier (the simulator reports divergence);
//   __shfl_sync/_up/_down/_xor, __ballot_sync, __any_sync, __all_sync,
//     __syncwarp: 32 lanes, the mask (the calling lane must be in it; every
//     non-exited lane of it must reach the same operation), the width, and
//     no wrap-around (PTX shfl.sync's clamp rules);
//   dynamic shared memory (kf_smem(), the prelude's accessor), NaN-filled
//     before each block; static __shared__ variables are refused at
//     compile time (the emitters use none);
//   atomics, fences, __nanosleep (a point where other threads run), the
//   cache-hinted loads (__ldcg, ...) and the bit casts.
//
// The module reaches the simulator only through `kfsim_api_ptr`
// (runtime/cuda/sim/abi.h), which kfsim_module_init sets when the module
// is loaded. KFSIM_MODULE(...) at the end of a unit lists its entries.
#ifndef KFUSE_RUNTIME_CUDA_SIM_DEVICE_H
#define KFUSE_RUNTIME_CUDA_SIM_DEVICE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <type_traits>
#include <utility>

#include "runtime/cuda/sim/abi.h"

#define KFUSE_SIMULATOR 1

extern "C" const struct kfsim_api* kfsim_api_ptr;

// Qualifiers: host functions all.
#define __device__
#define __global__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
// One copy of a static __shared__ variable per block needs storage the
// simulator places per block; kfuse's code uses dynamic shared memory only.
#define __shared__ static_assert(false, "the kfuse simulator has no static __shared__ variables: use kf_smem()");

typedef kfsim_dim3 uint3;
#define warpSize 32

#define threadIdx (kfsim_api_ptr->self()->threadIdx)
#define blockIdx (kfsim_api_ptr->self()->blockIdx)
#define blockDim (kfsim_api_ptr->self()->blockDim)
#define gridDim (kfsim_api_ptr->self()->gridDim)

// The prelude's accessor of dynamic shared memory (it leaves it to us
// under KFUSE_SIMULATOR).
inline unsigned char* kf_smem() { return kfsim_api_ptr->self()->smem; }

// The prelude's vector loads and stores check their alignment here (a
// misaligned 16-byte access faults on a GPU; on x86 it would not).
#define KF_SIM_CHECK_ALIGNED(p, bytes) kfsim::check_aligned((const void*)(p), (bytes), __LINE__)

// ---- barriers ----
#define __syncthreads() ((void)kfsim_api_ptr->barrier(KFSIM_BAR_SYNC, 0, __LINE__))
#define __syncthreads_or(p) kfsim_api_ptr->barrier(KFSIM_BAR_OR, (p) != 0, __LINE__)
#define __syncthreads_and(p) kfsim_api_ptr->barrier(KFSIM_BAR_AND, (p) != 0, __LINE__)
#define __syncthreads_count(p) kfsim_api_ptr->barrier(KFSIM_BAR_COUNT, (p) != 0, __LINE__)

// ---- warp operations (a macro each, for the caller's line) ----
#define __shfl_sync(...) kfsim::shfl(__LINE__, KFSIM_SHFL_IDX, __VA_ARGS__)
#define __shfl_up_sync(...) kfsim::shfl(__LINE__, KFSIM_SHFL_UP, __VA_ARGS__)
#define __shfl_down_sync(...) kfsim::shfl(__LINE__, KFSIM_SHFL_DOWN, __VA_ARGS__)
#define __shfl_xor_sync(...) kfsim::shfl(__LINE__, KFSIM_SHFL_XOR, __VA_ARGS__)
#define __ballot_sync(mask, p) \
  ((unsigned int)kfsim_api_ptr->warp(KFSIM_BALLOT, (mask), (p) != 0, 0, 32, __LINE__))
#define __any_sync(mask, p) ((int)kfsim_api_ptr->warp(KFSIM_ANY, (mask), (p) != 0, 0, 32, __LINE__))
#define __all_sync(mask, p) ((int)kfsim_api_ptr->warp(KFSIM_ALL, (mask), (p) != 0, 0, 32, __LINE__))
#define __syncwarp(...) kfsim::syncwarp(__LINE__, ##__VA_ARGS__)

#define __nanosleep(ns) kfsim_api_ptr->yield()

namespace kfsim {

// CUDA's shuffle overloads: 4- and 8-byte integers and floats (no bool, no
// char: CUDA has none, and the prelude casts).
template <typename T>
inline constexpr bool shuffleable =
    std::is_same_v<T, int> || std::is_same_v<T, unsigned int> || std::is_same_v<T, long> ||
    std::is_same_v<T, unsigned long> || std::is_same_v<T, long long> || std::is_same_v<T, unsigned long long> ||
    std::is_same_v<T, float> || std::is_same_v<T, double>;

template <typename T>
inline T shfl(int line, int op, unsigned int mask, T v, int arg, int width = 32) {
  static_assert(shuffleable<T>, "CUDA has no shuffle of this type");
  unsigned long long bits = 0;
  memcpy(&bits, &v, sizeof(T));
  bits = kfsim_api_ptr->warp(op, mask, bits, arg, width, line);
  T out;
  memcpy(&out, &bits, sizeof(T));
  return out;
}

inline void syncwarp(int line, unsigned int mask = 0xffffffffu) {
  (void)kfsim_api_ptr->warp(KFSIM_SYNCWARP, mask, 0, 0, 32, line);
}

inline void check_aligned(const void* p, unsigned long long bytes, int line) {
  if ((uintptr_t)p % bytes != 0) kfsim_api_ptr->fault("a misaligned vector access", line);
}

}  // namespace kfsim

// ---- atomics: the fibers of a launch take turns on one host thread, so a
// read-modify-write is atomic as written; __atomic builtins keep it so
// should blocks ever run on several host threads. ----
#define KFSIM_ATOMIC_RMW(name, builtin, T) \
  inline T name(T* p, T v) { return builtin(p, v, __ATOMIC_SEQ_CST); }
KFSIM_ATOMIC_RMW(atomicAdd, __atomic_fetch_add, int)
KFSIM_ATOMIC_RMW(atomicAdd, __atomic_fetch_add, unsigned int)
KFSIM_ATOMIC_RMW(atomicAdd, __atomic_fetch_add, unsigned long long)
KFSIM_ATOMIC_RMW(atomicSub, __atomic_fetch_sub, int)
KFSIM_ATOMIC_RMW(atomicSub, __atomic_fetch_sub, unsigned int)
KFSIM_ATOMIC_RMW(atomicAnd, __atomic_fetch_and, int)
KFSIM_ATOMIC_RMW(atomicAnd, __atomic_fetch_and, unsigned int)
KFSIM_ATOMIC_RMW(atomicOr, __atomic_fetch_or, int)
KFSIM_ATOMIC_RMW(atomicOr, __atomic_fetch_or, unsigned int)
KFSIM_ATOMIC_RMW(atomicXor, __atomic_fetch_xor, int)
KFSIM_ATOMIC_RMW(atomicXor, __atomic_fetch_xor, unsigned int)
KFSIM_ATOMIC_RMW(atomicExch, __atomic_exchange_n, int)
KFSIM_ATOMIC_RMW(atomicExch, __atomic_exchange_n, unsigned int)
KFSIM_ATOMIC_RMW(atomicExch, __atomic_exchange_n, unsigned long long)
#undef KFSIM_ATOMIC_RMW

template <typename T>
inline T atomicCAS(T* p, T compare, T value) {
  static_assert(std::is_same_v<T, int> || std::is_same_v<T, unsigned int> || std::is_same_v<T, unsigned long long>,
                "CUDA's atomicCAS takes int, unsigned int or unsigned long long");
  __atomic_compare_exchange_n(p, &compare, value, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return compare;  // the old value either way
}

template <typename T>
inline T kfsim_atomic_update(T* p, T (*f)(T, T), T v) {
  T old = *p;
  *p = f(old, v);
  return old;
}
inline float atomicAdd(float* p, float v) {
  return kfsim_atomic_update<float>(p, [](float a, float b) { return a + b; }, v);
}
inline double atomicAdd(double* p, double v) {
  return kfsim_atomic_update<double>(p, [](double a, double b) { return a + b; }, v);
}
inline float atomicExch(float* p, float v) {
  return kfsim_atomic_update<float>(p, [](float, float b) { return b; }, v);
}
#define KFSIM_ATOMIC_MINMAX(T)                                                                          \
  inline T atomicMax(T* p, T v) { return kfsim_atomic_update<T>(p, [](T a, T b) { return a > b ? a : b; }, v); } \
  inline T atomicMin(T* p, T v) { return kfsim_atomic_update<T>(p, [](T a, T b) { return a < b ? a : b; }, v); }
KFSIM_ATOMIC_MINMAX(int)
KFSIM_ATOMIC_MINMAX(unsigned int)
KFSIM_ATOMIC_MINMAX(long long)
KFSIM_ATOMIC_MINMAX(unsigned long long)
#undef KFSIM_ATOMIC_MINMAX

// Fences order memory for other threads; the simulator's threads see every
// write at once (a memory-model race beyond a missing barrier is beyond it).
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

// Cache-hinted loads and stores: plain memory accesses here.
template <typename T> inline T __ldg(const T* p) { return *p; }
template <typename T> inline T __ldcg(const T* p) { return *p; }
template <typename T> inline T __ldca(const T* p) { return *p; }
template <typename T> inline T __ldcs(const T* p) { return *p; }
template <typename T> inline T __ldlu(const T* p) { return *p; }
template <typename T> inline T __ldcv(const T* p) { return *p; }
template <typename T> inline void __stcg(T* p, T v) { *p = v; }
template <typename T> inline void __stwb(T* p, T v) { *p = v; }
template <typename T> inline void __stcs(T* p, T v) { *p = v; }

// Bit casts.
template <typename To, typename From>
inline To kfsim_bits(From v) {
  static_assert(sizeof(To) == sizeof(From), "a bit cast keeps the size");
  To out;
  memcpy(&out, &v, sizeof(To));
  return out;
}
inline float __uint_as_float(unsigned int v) { return kfsim_bits<float>(v); }
inline float __int_as_float(int v) { return kfsim_bits<float>(v); }
inline unsigned int __float_as_uint(float v) { return kfsim_bits<unsigned int>(v); }
inline int __float_as_int(float v) { return kfsim_bits<int>(v); }
inline double __longlong_as_double(long long v) { return kfsim_bits<double>(v); }
inline long long __double_as_longlong(double v) { return kfsim_bits<long long>(v); }

// ---- the module's entries: KFSIM_MODULE("what it is", KFSIM_ENTRY(name,
// max_threads) ...) after the kernels. `max_threads` is the entry's __launch_bounds__ (0:
// none); a launch with a larger block fails as it would on a GPU. ----
namespace kfsim {

template <auto F>
struct entry_of;
template <typename... A, void (*F)(A...)>
struct entry_of<F> {
  template <size_t... I>
  static void call(void* const* p, std::index_sequence<I...>) {
    F(*static_cast<A*>(p[I])...);
  }
  static void thunk(void* const* p) { call(p, std::index_sequence_for<A...>{}); }
  static constexpr int count = sizeof...(A);
  static constexpr unsigned int sizes[sizeof...(A) + 1] = {static_cast<unsigned int>(sizeof(A))..., 0u};
  static constexpr unsigned char pointers[sizeof...(A) + 1] = {static_cast<unsigned char>(std::is_pointer_v<A>)...,
                                                               0u};
};

}  // namespace kfsim

#define KFSIM_ENTRY(name, max_threads)                                                                       \
  {#name, &kfsim::entry_of<&name>::thunk, kfsim::entry_of<&name>::count, kfsim::entry_of<&name>::sizes, \
   kfsim::entry_of<&name>::pointers, (max_threads)},

#define KFSIM_MODULE(module_name, ...)                                                                          \
  extern "C" {                                                                                                  \
  const struct kfsim_api* kfsim_api_ptr = 0;                                                                    \
  }                                                                                                             \
  static const struct kfsim_entry kfsim_module_entries[] = {__VA_ARGS__};                                      \
  extern "C" __attribute__((visibility("default"))) const struct kfsim_entry* kfsim_module_init(               \
      const struct kfsim_api* api, int* num_entries, int* abi_version, const char** name) {                     \
    kfsim_api_ptr = api;                                                                                        \
    *name = module_name;                                                                                        \
    *num_entries = (int)(sizeof(kfsim_module_entries) / sizeof(kfsim_module_entries[0]));                      \
    *abi_version = KFSIM_ABI_VERSION;                                                                           \
    return kfsim_module_entries;                                                                                \
  }

#endif  // KFUSE_RUNTIME_CUDA_SIM_DEVICE_H
