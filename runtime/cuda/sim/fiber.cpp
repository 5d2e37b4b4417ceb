#include "runtime/cuda/sim/fiber.h"

#include "runtime/cuda/sim/memory.h"

namespace kfuse::cuda::sim {

Fiber::~Fiber() { freeRegion(stack_); }

bool Fiber::prepare(void (*fn)()) {
  if (!stack_) {
    stack_ = allocateRegion(kStackBytes, 16, RegionKind::Stack);
    if (!stack_) return false;
  }
  // getcontext (a system call) once per fiber; makecontext again on the
  // saved context each time the fiber is reused for another thread.
  if (!initialised_) {
    if (getcontext(&context_) != 0) return false;
    initialised_ = true;
  }
  context_.uc_stack.ss_sp = stack_;
  context_.uc_stack.ss_size = kStackBytes;
  context_.uc_link = nullptr;
  makecontext(&context_, fn, 0);
  return true;
}

}  // namespace kfuse::cuda::sim
