// Fibers for the simulator's CUDA threads: a stack (with a guard page
// below it, memory.h) and a saved context, switched with glibc's ucontext.
// ucontext needs nothing beyond the C library (the GPU machines build
// kfuse without Debian's -dev packages) and AddressSanitizer knows it;
// a switch costs about 0.2 us (it saves the signal mask with a system
// call), which is what bounds the simulator's speed on kernels with many
// barriers.
#pragma once

#include <ucontext.h>

#include <cstddef>

namespace kfuse::cuda::sim {

class Fiber {
 public:
  static constexpr size_t kStackBytes = 128 * 1024;

  Fiber() = default;
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;
  ~Fiber();

  // Prepares the fiber to run fn() from the top of its stack when first
  // switched to; false when no stack could be allocated. fn must never
  // return: it ends by switching away for good.
  bool prepare(void (*fn)());
  // Saves the running context in `from` and continues this fiber.
  void enter(ucontext_t& from) { swapcontext(&from, &context_); }
  // Saves this fiber and continues `to` (a fiber's way back to its scheduler).
  void leave(const ucontext_t& to) { swapcontext(&context_, &to); }

 private:
  ucontext_t context_{};
  void* stack_ = nullptr;
  bool initialised_ = false;
};

}  // namespace kfuse::cuda::sim
