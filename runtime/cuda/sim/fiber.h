// Fibers for the simulator's CUDA threads: a stack (with a guard page
// below it, memory.h) and a saved context.
//
// On x86-64 a switch saves the callee-saved registers and the floating
// point control words on the stack and swaps stack pointers (a dozen
// instructions, as Boost.Context's fcontext does). Elsewhere glibc's
// ucontext does it; swapcontext also saves the signal mask with a system
// call, which made it half of a simulated training step's time. Neither
// needs a library beyond the C library (the GPU machines build kfuse
// without Debian's -dev packages).
#pragma once

#include <cstddef>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace kfuse::cuda::sim {

// The scheduler's own context, which fibers switch back to.
struct HostContext {
#if defined(__x86_64__)
  void* sp = nullptr;
#else
  ucontext_t context{};
#endif
};

class Fiber {
 public:
  static constexpr size_t kStackBytes = 128 * 1024;

  Fiber() = default;
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;
  ~Fiber();

  // Prepares the fiber to run fn() from the top of its stack when first
  // entered; false when no stack could be allocated. fn must never
  // return: it ends by leaving for good.
  bool prepare(void (*fn)());
  // Saves the running context in `from` and continues this fiber.
  void enter(HostContext& from);
  // Saves this fiber and continues `to` (a fiber's way back to its scheduler).
  void leave(HostContext& to);

 private:
  void* stack_ = nullptr;
#if defined(__x86_64__)
  void* sp_ = nullptr;
#else
  ucontext_t context_{};
  bool initialised_ = false;
#endif
};

}  // namespace kfuse::cuda::sim
