/* The interface between a simulated module and the simulator (docs/cuda.md,
 * "The simulator"). A simulated module is the CUDA C kfuse emits, compiled
 * as host C++ with runtime/cuda/sim/device.h into a shared object. The
 * module calls the simulator only through `kfsim_api` (a table the loader
 * hands it), so it needs no symbol of the process that loads it; the
 * simulator calls the module only through the entries it lists.
 *
 * C, not C++: both sides are compiled separately (the module by g++ at
 * run time), and this layout is all they share. Bump KFSIM_ABI_VERSION with
 * any change; the loader refuses a module of another version. */
#ifndef KFUSE_RUNTIME_CUDA_SIM_ABI_H
#define KFUSE_RUNTIME_CUDA_SIM_ABI_H

#ifdef __cplusplus
extern "C" {
#endif

#define KFSIM_ABI_VERSION 1

struct kfsim_dim3 {
  unsigned int x, y, z;
};

/* What device code reads of the thread it runs as. */
struct kfsim_thread {
  struct kfsim_dim3 threadIdx, blockIdx, blockDim, gridDim;
  unsigned char* smem; /* the block's dynamic shared memory */
};

/* Warp-level operations (one call per participating lane). */
enum kfsim_warp_op {
  KFSIM_SHFL_IDX = 0,
  KFSIM_SHFL_UP = 1,
  KFSIM_SHFL_DOWN = 2,
  KFSIM_SHFL_XOR = 3,
  KFSIM_BALLOT = 4,
  KFSIM_ANY = 5,
  KFSIM_ALL = 6,
  KFSIM_SYNCWARP = 7
};

/* Block-level barriers: __syncthreads and its predicate forms. */
enum kfsim_barrier_op { KFSIM_BAR_SYNC = 0, KFSIM_BAR_OR = 1, KFSIM_BAR_AND = 2, KFSIM_BAR_COUNT = 3 };

struct kfsim_api {
  int version; /* KFSIM_ABI_VERSION */
  /* The thread running now. */
  const struct kfsim_thread* (*self)(void);
  /* __syncthreads* at `line`: returns the block's OR / AND / count of
   * `pred` (0 for KFSIM_BAR_SYNC). */
  int (*barrier)(int op, int pred, int line);
  /* A warp operation at `line` over the lanes of `mask`: `value` is this
   * lane's payload (a shuffle's 4 or 8 bytes, a vote's predicate), `arg`
   * the source lane, delta or xor mask, `width` the segment width. Returns
   * the shuffled payload or the vote's result. */
  unsigned long long (*warp)(int op, unsigned int mask, unsigned long long value, int arg, int width, int line);
  /* __nanosleep: lets every other thread run first. */
  void (*yield)(void);
  /* A check in device code failed (misaligned vector access, ...): the
   * launch ends with `what`; never returns. */
  void (*fault)(const char* what, int line);
};

/* Calls an entry: `params` as cuLaunchKernel's kernelParams (a pointer to
 * each argument's value). */
typedef void (*kfsim_thunk)(void* const* params);

struct kfsim_entry {
  const char* name;
  kfsim_thunk thunk;
  int num_params;
  const unsigned int* param_sizes;        /* bytes of each parameter */
  const unsigned char* param_is_pointer; /* 1 where the parameter is a pointer */
  int max_threads;                        /* __launch_bounds__; 0: none */
};

/* The one symbol a simulated module exports: takes the simulator's table,
 * returns the module's entries, its ABI version and its name (what it
 * computes, for messages). */
typedef const struct kfsim_entry* (*kfsim_module_init_fn)(const struct kfsim_api* api, int* num_entries,
                                                           int* abi_version, const char** module_name);
#define KFSIM_MODULE_INIT_SYMBOL "kfsim_module_init"

#ifdef __cplusplus
}
#endif

#endif /* KFUSE_RUNTIME_CUDA_SIM_ABI_H */
