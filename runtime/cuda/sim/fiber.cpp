#include "runtime/cuda/sim/fiber.h"

#include <cstdint>
#include <cstring>

#include "runtime/cuda/sim/memory.h"

#if defined(__x86_64__)
// void kfuse_sim_switch(void** save, void* next): pushes the System V
// callee-saved registers and MXCSR / the x87 control word, stores the stack
// pointer in *save, loads `next` and pops the same from there. A new
// fiber's stack is laid out as if it had switched away just before its
// entry function (Fiber::prepare).
asm(R"(
  .text
  .globl kfuse_sim_switch
  .hidden kfuse_sim_switch
  .type kfuse_sim_switch, @function
kfuse_sim_switch:
  .cfi_startproc
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .cfi_endproc
  .size kfuse_sim_switch, .-kfuse_sim_switch
)");
extern "C" void kfuse_sim_switch(void** save, void* next);
#endif

namespace kfuse::cuda::sim {

Fiber::~Fiber() { freeRegion(stack_); }

#if defined(__x86_64__)

bool Fiber::prepare(void (*fn)()) {
  if (!stack_) {
    stack_ = allocateRegion(kStackBytes, 16, RegionKind::Stack);
    if (!stack_) return false;
  }
  // From the top: a null return address for fn (it never returns), fn's
  // address for the switch's `ret` (16-byte aligned, so fn starts with the
  // stack as after a call), six zeroed registers, and the control words
  // of the thread preparing it.
  auto* top = reinterpret_cast<uint64_t*>(static_cast<char*>(stack_) + kStackBytes);
  uint64_t* sp = top - 2;
  sp[1] = 0;
  sp[0] = reinterpret_cast<uint64_t>(fn);
  sp -= 6;
  std::memset(sp, 0, 6 * sizeof(uint64_t));
  sp -= 1;
  uint32_t mxcsr = 0;
  uint16_t fcw = 0;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(fcw));
  std::memcpy(sp, &mxcsr, 4);
  std::memcpy(reinterpret_cast<char*>(sp) + 4, &fcw, 2);
  sp_ = sp;
  return true;
}

void Fiber::enter(HostContext& from) { kfuse_sim_switch(&from.sp, sp_); }
void Fiber::leave(HostContext& to) { kfuse_sim_switch(&sp_, to.sp); }

#else

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

void Fiber::enter(HostContext& from) { swapcontext(&from.context, &context_); }
void Fiber::leave(HostContext& to) { swapcontext(&context_, &to.context); }

#endif

}  // namespace kfuse::cuda::sim
