#include "codegen/cuda/prelude.h"

namespace kfuse::cuda {

namespace {

constexpr std::string_view kCore = R"KFUSE(// ---- kfuse prelude: types, storage conversions, reductions ----
// Float division by a constant zero is IEEE's (inf or NaN, e.g. the mean
// of an empty axis), which is what the IR means: not worth a warning.
#pragma nv_diag_suppress 39
typedef signed char kf_i8;
typedef unsigned char kf_u8;
typedef unsigned short kf_u16;
typedef int kf_i32;
typedef unsigned int kf_u32;
typedef long long kf_i64;
typedef unsigned long long kf_u64;

#define KF_FN __device__ __forceinline__
#define KF_SUM 0
#define KF_MAX 1
#define KF_MIN 2

// f16 and bf16 <-> f32, bit-identical to ir/dtype.cpp (round to nearest even;
// NaN keeps its sign and becomes quiet).
KF_FN float kf_half_to_float(kf_u16 h) {
  const kf_u32 sign = (kf_u32)(h & 0x8000u) << 16;
  const kf_u32 exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0x1fu) return __uint_as_float(sign | 0x7f800000u | (mant << 13));
  if (exp == 0u) return __uint_as_float(sign | __float_as_uint((float)mant * 5.9604644775390625e-8f));
  return __uint_as_float(sign | ((exp + 112u) << 23) | (mant << 13));
}
KF_FN kf_u16 kf_float_to_half(float f) {
  const kf_u32 x = __float_as_uint(f);
  const kf_u32 sign = (x >> 16) & 0x8000u, exp = (x >> 23) & 0xffu;
  kf_u32 mant = x & 0x7fffffu;
  if (exp == 0xffu) return (kf_u16)(sign | 0x7c00u | (mant ? 0x200u : 0u));
  const int e = (int)exp - 112;
  if (e >= 0x1f) return (kf_u16)(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return (kf_u16)sign;
    mant |= 0x800000u;
    const kf_u32 shift = (kf_u32)(14 - e);
    kf_u32 half = mant >> shift;
    const kf_u32 rem = mant & ((1u << shift) - 1u), mid = 1u << (shift - 1u);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return (kf_u16)(sign | half);
  }
  kf_u32 half = ((kf_u32)e << 10) | (mant >> 13);
  const kf_u32 rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
  return (kf_u16)(sign | half);
}
KF_FN float kf_bf16_to_float(kf_u16 b) { return __uint_as_float((kf_u32)b << 16); }
KF_FN kf_u16 kf_float_to_bf16(float f) {
  kf_u32 x = __float_as_uint(f);
  if (f != f) return (kf_u16)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (kf_u16)(x >> 16);
}

// i64 arithmetic wraps (two's complement) as LLVM's does; x / 0 == 0.
KF_FN kf_i64 kf_add(kf_i64 a, kf_i64 b) { return (kf_i64)((kf_u64)a + (kf_u64)b); }
KF_FN kf_i64 kf_sub(kf_i64 a, kf_i64 b) { return (kf_i64)((kf_u64)a - (kf_u64)b); }
KF_FN kf_i64 kf_mul(kf_i64 a, kf_i64 b) { return (kf_i64)((kf_u64)a * (kf_u64)b); }
KF_FN kf_i64 kf_neg(kf_i64 a) { return (kf_i64)(0ull - (kf_u64)a); }
KF_FN kf_i64 kf_iabs(kf_i64 a) { return a < 0 ? kf_neg(a) : a; }
KF_FN kf_i64 kf_idiv(kf_i64 a, kf_i64 b) { return b == 0 ? 0 : b == -1 ? kf_neg(a) : a / b; }
KF_FN kf_i64 kf_imax(kf_i64 a, kf_i64 b) { return a > b ? a : b; }
KF_FN kf_i64 kf_imin(kf_i64 a, kf_i64 b) { return a < b ? a : b; }

// Philox4x32-10's first output for counter (index, step) and key (klo,
// khi): dropout's random bits, ir/philox.h's dropoutBits bit for bit.
KF_FN kf_i64 kf_philox(kf_i64 index, kf_i64 step, kf_i64 klo, kf_i64 khi) {
  kf_u32 c0 = (kf_u32)(kf_u64)index, c1 = (kf_u32)((kf_u64)index >> 32);
  kf_u32 c2 = (kf_u32)(kf_u64)step, c3 = (kf_u32)((kf_u64)step >> 32);
  kf_u32 k0 = (kf_u32)(kf_u64)klo, k1 = (kf_u32)(kf_u64)khi;
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const kf_u64 p0 = (kf_u64)0xD2511F53u * c0, p1 = (kf_u64)0xCD9E8D57u * c2;
    c0 = (kf_u32)(p1 >> 32) ^ c1 ^ k0;
    c1 = (kf_u32)p1;
    c2 = (kf_u32)(p0 >> 32) ^ c3 ^ k1;
    c3 = (kf_u32)p0;
  }
  return (kf_i64)c0;
}

// Float -> integer as a store rounds (ir/dtype.cpp saturateInt): toward
// zero, NaN -> 0, clamped; `below` is the largest value of the float type
// under the integer range's end, above which the result is `top`.
KF_FN kf_i64 kf_sat_f32(float v, float lo, float below, kf_i64 top) {
  if (v != v) return 0;
  if (v < lo) return (kf_i64)lo;
  if (v > below) return top;
  return (kf_i64)v;
}
KF_FN kf_i64 kf_sat_f64(double v, double lo, double below, kf_i64 top) {
  if (v != v) return 0;
  if (v < lo) return (kf_i64)lo;
  if (v > below) return top;
  return (kf_i64)v;
}
KF_FN kf_i64 kf_clamp(kf_i64 v, kf_i64 lo, kf_i64 hi) { return v < lo ? lo : (v > hi ? hi : v); }

// max/min propagate NaN (torch.maximum), else x > y ? x : y.
KF_FN float kf_nanmax(float x, float y) { return (x != x || y != y) ? __uint_as_float(0x7fc00000u) : (x > y ? x : y); }
KF_FN float kf_nanmin(float x, float y) { return (x != x || y != y) ? __uint_as_float(0x7fc00000u) : (x < y ? x : y); }
KF_FN double kf_nanmax(double x, double y) {
  return (x != x || y != y) ? __longlong_as_double(0x7ff8000000000000ll) : (x > y ? x : y);
}
KF_FN double kf_nanmin(double x, double y) {
  return (x != x || y != y) ? __longlong_as_double(0x7ff8000000000000ll) : (x < y ? x : y);
}

// Combiners of reductions and globals, by KF_SUM / KF_MAX / KF_MIN.
template <int C> struct kf_comb;
template <> struct kf_comb<KF_SUM> {
  static __device__ __forceinline__ float apply(float a, float b) { return a + b; }
  static __device__ __forceinline__ double apply(double a, double b) { return a + b; }
  static __device__ __forceinline__ kf_i64 apply(kf_i64 a, kf_i64 b) { return kf_add(a, b); }
};
template <> struct kf_comb<KF_MAX> {
  static __device__ __forceinline__ float apply(float a, float b) { return kf_nanmax(a, b); }
  static __device__ __forceinline__ double apply(double a, double b) { return kf_nanmax(a, b); }
  static __device__ __forceinline__ kf_i64 apply(kf_i64 a, kf_i64 b) { return kf_imax(a, b); }
  static __device__ __forceinline__ bool apply(bool a, bool b) { return a || b; }
};
template <> struct kf_comb<KF_MIN> {
  static __device__ __forceinline__ float apply(float a, float b) { return kf_nanmin(a, b); }
  static __device__ __forceinline__ double apply(double a, double b) { return kf_nanmin(a, b); }
  static __device__ __forceinline__ kf_i64 apply(kf_i64 a, kf_i64 b) { return kf_imin(a, b); }
  static __device__ __forceinline__ bool apply(bool a, bool b) { return a && b; }
};
template <int C, typename T> KF_FN T kf_combine(T a, T b) { return kf_comb<C>::apply(a, b); }

KF_FN float kf_shfl_down(float v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
KF_FN double kf_shfl_down(double v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
KF_FN kf_i64 kf_shfl_down(kf_i64 v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
KF_FN bool kf_shfl_down(bool v, int d) { return __shfl_down_sync(0xffffffffu, (int)v, d) != 0; }
KF_FN float kf_shfl_first(float v) { return __shfl_sync(0xffffffffu, v, 0); }
KF_FN double kf_shfl_first(double v) { return __shfl_sync(0xffffffffu, v, 0); }
KF_FN kf_i64 kf_shfl_first(kf_i64 v) { return __shfl_sync(0xffffffffu, v, 0); }
KF_FN bool kf_shfl_first(bool v) { return __shfl_sync(0xffffffffu, (int)v, 0) != 0; }

// A warp's 32 values folded by a fixed tree into lane 0, then given to
// every lane: the same bits in every lane and in every run.
template <int C, typename T> KF_FN T kf_warp_reduce(T v) {
  for (int d = 16; d > 0; d >>= 1) v = kf_combine<C>(v, kf_shfl_down(v, d));
  return kf_shfl_first(v);
}
// The whole block's values, every thread gets the result. `tmp` is shared
// memory for blockDim.x / 32 values. All threads of the block must call it.
template <int C, typename T> KF_FN T kf_block_reduce(T v, T* tmp) {
  v = kf_warp_reduce<C>(v);
  const int warps = (int)(blockDim.x / 32);
  if (threadIdx.x % 32 == 0) tmp[threadIdx.x / 32] = v;
  __syncthreads();
  T r = tmp[0];
  for (int w = 1; w < warps; ++w) r = kf_combine<C>(r, tmp[w]);
  __syncthreads();
  return r;
}
// Columns: lane l of every warp holds a partial of column l; each thread gets
// its column's total, folded warp 0 first. `tmp`: blockDim.x values.
template <int C, typename T> KF_FN T kf_column_reduce(T v, T* tmp) {
  const int warps = (int)(blockDim.x / 32), lane = (int)(threadIdx.x % 32);
  tmp[threadIdx.x] = v;
  __syncthreads();
  T r = tmp[lane];
  for (int w = 1; w < warps; ++w) r = kf_combine<C>(r, tmp[w * 32 + lane]);
  __syncthreads();
  return r;
}

// Dynamic shared memory, sized per launch by the host. The simulator
// (runtime/cuda/sim/device.h) gives each block its own and defines
// kf_smem and KF_SIM_CHECK_ALIGNED itself.
#ifndef KFUSE_SIMULATOR
KF_FN unsigned char* kf_smem() {
  extern __shared__ double kf_dynamic_smem[];
  return reinterpret_cast<unsigned char*>(kf_dynamic_smem);
}
#define KF_SIM_CHECK_ALIGNED(p, bytes)
#endif

// Aligned vectors of N elements: one 16-byte (or narrower) memory access per
// 16 bytes. Callers guarantee the alignment.
template <typename T, int N> struct alignas(sizeof(T) * N) kf_vec { T v[N]; };
template <typename T, int N> KF_FN kf_vec<T, N> kf_vload(const T* p) {
  KF_SIM_CHECK_ALIGNED(p, sizeof(T) * N);
  return *reinterpret_cast<const kf_vec<T, N>*>(p);
}
template <typename T, int N> KF_FN void kf_vstore(T* p, const kf_vec<T, N>& v) {
  KF_SIM_CHECK_ALIGNED(p, sizeof(T) * N);
  *reinterpret_cast<kf_vec<T, N>*>(p) = v;
}
KF_FN bool kf_aligned(const void* p, kf_u64 bytes) { return ((kf_u64)p & (bytes - 1u)) == 0u; }

// Grid-wide reductions without atomics on values: every block publishes a
// partial, the block that arrives last (counter == nblocks - 1) folds the
// partials in block order and resets the counter for the next launch. The
// result is the same bits in every run.
KF_FN bool kf_last_block(kf_u32* counter, kf_u32 nblocks) {
  int last = 0;
  if (threadIdx.x == 0) {
    __threadfence();
    last = atomicAdd(counter, 1u) == nblocks - 1u;
  }
  last = __syncthreads_or(last);
  if (last) {
    __threadfence();
    if (threadIdx.x == 0) atomicExch(counter, 0u);
  }
  return last != 0;
}

// All blocks of a cooperative launch (which are co-resident) meet here.
// bar[0] counts arrivals and is 0 again after the barrier; bar[1] is the
// generation the waiting blocks watch.
KF_FN void kf_grid_barrier(kf_u32* bar, kf_u32 nblocks) {
  __syncthreads();
  if (threadIdx.x == 0) {
    volatile kf_u32* generation = bar + 1;
    const kf_u32 g = *generation;
    __threadfence();
    if (atomicAdd(bar, 1u) == nblocks - 1u) {
      atomicExch(bar, 0u);
      __threadfence();
      atomicAdd(bar + 1, 1u);
    } else {
      while (*generation == g) __nanosleep(32);
    }
    __threadfence();
  }
  __syncthreads();
}
// ---- end of prelude ----
)KFUSE";

constexpr std::string_view kGemm = R"KFUSE(// ---- kfuse prelude: GEMM and convolution main loops ----
// Storage dtypes of GEMM operands, by kfuse's DType order.
template <int DT> struct kf_dt;
template <> struct kf_dt<0> {  // f32
  typedef float storage;
  typedef float acc;
  static __device__ __forceinline__ float load(float v) { return v; }
  static __device__ __forceinline__ float store(float v) { return v; }
};
template <> struct kf_dt<1> {  // f16
  typedef kf_u16 storage;
  typedef float acc;
  static __device__ __forceinline__ float load(kf_u16 v) { return kf_half_to_float(v); }
  static __device__ __forceinline__ kf_u16 store(float v) { return kf_float_to_half(v); }
};
template <> struct kf_dt<2> {  // bf16
  typedef kf_u16 storage;
  typedef float acc;
  static __device__ __forceinline__ float load(kf_u16 v) { return kf_bf16_to_float(v); }
  static __device__ __forceinline__ kf_u16 store(float v) { return kf_float_to_bf16(v); }
};
template <> struct kf_dt<3> {  // f64
  typedef double storage;
  typedef double acc;
  static __device__ __forceinline__ double load(double v) { return v; }
  static __device__ __forceinline__ double store(double v) { return v; }
};

// One 64x64 tile of C = op(A) @ op(B) (row-major; op transposes when TA /
// TB), k in steps of 16 through shared memory. 256 threads: thread (tx, ty)
// of 16x16 owns rows row0 + ty + 16i and columns col0 + tx + 16j, i, j < 4,
// so that stores of a row are contiguous across tx. Out-of-range elements
// read as 0. `smem` holds 2 * 16 * 64 accumulator values.
template <int DA, int DB, bool TA, bool TB>
KF_FN void kf_gemm_tile(const typename kf_dt<DA>::storage* A, const typename kf_dt<DB>::storage* B, kf_i64 m,
                        kf_i64 n, kf_i64 k, kf_i64 row0, kf_i64 col0, typename kf_dt<DA>::acc (&acc)[4][4],
                        typename kf_dt<DA>::acc* smem) {
  typedef typename kf_dt<DA>::acc T;
  T* As = smem;            // [16][64]: As[kk * 64 + r]
  T* Bs = smem + 16 * 64;  // [16][64]: Bs[kk * 64 + c]
  const int tid = (int)threadIdx.x, tx = tid % 16, ty = tid / 16;
  const kf_i64 lda = TA ? m : k, ldb = TB ? k : n;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = (T)0;
  for (kf_i64 k0 = 0; k0 < k; k0 += 16) {
#pragma unroll
    for (int q = 0; q < 4; ++q) {  // A: contiguous memory runs go to consecutive threads
      const int e = tid + q * 256;
      const int r = TA ? e % 64 : e / 16, kk = TA ? e / 64 : e % 16;
      const kf_i64 gr = row0 + r, gk = k0 + kk;
      T v = (T)0;
      if (gr < m && gk < k) v = kf_dt<DA>::load(TA ? A[gk * lda + gr] : A[gr * lda + gk]);
      As[kk * 64 + r] = v;
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int e = tid + q * 256;
      const int c = TB ? e / 16 : e % 64, kk = TB ? e % 16 : e / 64;
      const kf_i64 gc = col0 + c, gk = k0 + kk;
      T v = (T)0;
      if (gc < n && gk < k) v = kf_dt<DB>::load(TB ? B[gc * ldb + gk] : B[gk * ldb + gc]);
      Bs[kk * 64 + c] = v;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < 16; ++kk) {
      T a[4], b[4];
      for (int i = 0; i < 4; ++i) a[i] = As[kk * 64 + ty + 16 * i];
      for (int j = 0; j < 4; ++j) b[j] = Bs[kk * 64 + tx + 16 * j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
}
// ---- end of GEMM prelude ----
)KFUSE";

}  // namespace

std::string_view corePrelude() { return kCore; }
std::string_view gemmPrelude() { return kGemm; }

}  // namespace kfuse::cuda
