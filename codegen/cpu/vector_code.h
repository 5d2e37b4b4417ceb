// The IR-building of the CPU's hand-blocked generators (conv_emitter.h's
// direct convolutions): one function of llvm_emitter.h's ABI whose loops
// keep a block of outputs in vector registers. Extents are constants
// (the generators specialise to their shapes), so loops count to constants
// and masks for partial vectors are constant vectors.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "exec/kernel_ir.h"
#include "ir/support/expected.h"

namespace kfuse::cpu {

class VectorCode {
 public:
  // Starts `void symbol(void** buffers, int64_t begin, int64_t end)` in `m`
  // (exec/parallel.h: [begin, end) is the range of work units to do), with vectors of `lanes`
  // floats (x86 code generation splits wider vectors than it prefers
  // unless the function says it needs them).
  VectorCode(llvm::Module& m, const std::string& symbol, int lanes);

  // Buffer i of the ABI as a float pointer, and as a byte pointer.
  llvm::Value* floatBuffer(int i, const char* name);
  llvm::Value* byteBuffer(int i, const char* name);
  // Space for `count` values of type `t` in the function's frame.
  llvm::AllocaInst* frameSlot(llvm::Type* t, int64_t count, const char* name);
  // Closes the function and verifies it; errors carry LLVM's message.
  Expected<llvm::Function*> finish();

  llvm::Value* i64(int64_t v) { return b_.getInt64(static_cast<uint64_t>(v)); }
  // for (i = 0; i < count; ++i) body(i), as a loop unless count is 0 or 1;
  // LLVM may unroll it unless it is in a minor part() or `rolled`.
  void loop(int64_t count, const char* name, const std::function<void(llvm::Value*)>& body, bool rolled = false);
  // body() emits code that does `share` of the function's work (the
  // remainder of a blocked loop, the edges of a plane). Under an eighth,
  // LLVM is told not to unroll its loops: unrolled, such paths were half of
  // the code of a 1x1 convolution on a 7x7 plane, and of its compile time,
  // for a few percent of its work.
  void part(double share, const std::function<void()>& body);
  // for (i = begin; i < end; ++i) body(i), bounds known at run time.
  void loopRange(llvm::Value* begin, llvm::Value* end, const char* name,
                 const std::function<void(llvm::Value*)>& body);
  // if (condition) body().
  void when(llvm::Value* condition, const char* name, const std::function<void()>& body);
  // for (u = begin(); u < end(); u += step) over the function's work units,
  // each iteration's step chosen by the path it takes: body(u, advance)
  // emits the paths, and each ends by calling advance(step), which closes
  // it (a path a condition leads past every other is left unreachable).
  void unitSteps(const char* name,
                 const std::function<void(llvm::Value* u, const std::function<void(int64_t)>& advance)>& body);
  // The function's range of work units.
  llvm::Value* begin() { return fn_->getArg(1); }
  llvm::Value* end() { return fn_->getArg(2); }
  llvm::Value* at(llvm::Value* base, llvm::Value* index) { return b_.CreateGEP(b_.getFloatTy(), base, index); }
  // A vector at base[index] (LLVM 14's typed pointers); not inbounds: a
  // masked access may start before its row.
  llvm::Value* vectorAt(llvm::Value* base, llvm::Value* index) {
    return b_.CreateBitCast(at(base, index), vec_->getPointerTo());
  }
  // A constant lane mask.
  llvm::Constant* mask(const std::function<bool(int64_t lane)>& on);
  // Loads a vector where `m` is on (zero elsewhere) and stores one; a full
  // mask is a plain access, an empty one loads zeros.
  llvm::Value* load(llvm::Value* ptr, llvm::Constant* m);
  void store(llvm::Value* v, llvm::Value* ptr, llvm::Constant* m);
  llvm::Value* splat(llvm::Value* scalar) { return b_.CreateVectorSplat(static_cast<unsigned>(lanes_), scalar); }
  llvm::Value* loadFloat(llvm::Value* base, llvm::Value* index) {
    return b_.CreateAlignedLoad(b_.getFloatTy(), at(base, index), llvm::Align(4));
  }
  // A hint to bring base[index]'s line into the first-level cache (a read;
  // an address past the buffer is harmless: a prefetch never faults).
  void prefetch(llvm::Value* base, llvm::Value* index);
  // acc[slot] += a * x, the accumulators living in allocas SROA turns into
  // registers.
  llvm::AllocaInst* accumulator();
  void multiplyAdd(llvm::AllocaInst* acc, llvm::Value* a, llvm::Value* x);

  // Calls kernel `k` (an epilogue cut to a block: emitted into the module
  // once per name and marked for the optimiser, llvm_emitter.h's
  // markEpilogue) over all its work units, its buffer i at the byte
  // pointer buffers[i].
  Status callEpilogue(const kernel::Kernel& k, const std::vector<llvm::Value*>& buffers);

  // body() with vectors of half as many lanes (vec(), lanes(), masks,
  // loads, stores and splats): a block's only vector when at most half its
  // lanes are live.
  void halved(const std::function<void()>& body);

  llvm::IRBuilder<>& b() { return b_; }
  llvm::VectorType* vec() const { return vec_; }
  int lanes() const { return lanes_; }

 private:
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  llvm::Function* fn_;
  llvm::BasicBlock* entry_;
  llvm::VectorType* vec_;
  int lanes_;
  int minor_ = 0;  // depth of minor part() scopes
  llvm::AllocaInst* epilogueArgs_ = nullptr;  // callEpilogue's buffer array
  size_t epilogueArgsSize_ = 0;
  void keepRolled(llvm::BranchInst* latch);
};

}  // namespace kfuse::cpu
