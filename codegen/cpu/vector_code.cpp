#include "codegen/cpu/vector_code.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include "codegen/cpu/llvm_emitter.h"
#include "exec/parallel.h"

namespace kfuse::cpu {

using llvm::Value;

VectorCode::VectorCode(llvm::Module& m, const std::string& symbol, int lanes)
    : ctx_(m.getContext()), b_(ctx_), lanes_(lanes) {
  llvm::Type* bytePtr = llvm::Type::getInt8PtrTy(ctx_);
  auto* type = llvm::FunctionType::get(b_.getVoidTy(), {bytePtr->getPointerTo(), b_.getInt64Ty(), b_.getInt64Ty()},
                                       false);
  fn_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage, symbol, m);
  fn_->setDoesNotThrow();
  fn_->addParamAttr(0, llvm::Attribute::NoCapture);
  fn_->addParamAttr(0, llvm::Attribute::ReadOnly);
  // The blocks are written for vectors of `lanes` floats; without this, x86
  // code generation for CPUs that prefer 256-bit vectors splits 512-bit ones.
  fn_->addFnAttr("min-legal-vector-width", std::to_string(32 * lanes));
  fn_->getArg(0)->setName("buffers");
  fn_->getArg(1)->setName("begin");
  fn_->getArg(2)->setName("end");
  entry_ = llvm::BasicBlock::Create(ctx_, "entry", fn_);
  b_.SetInsertPoint(entry_);
  vec_ = llvm::FixedVectorType::get(b_.getFloatTy(), static_cast<unsigned>(lanes));
}

Value* VectorCode::floatBuffer(int i, const char* name) {
  return b_.CreateBitCast(byteBuffer(i, ""), b_.getFloatTy()->getPointerTo(), name);
}

Value* VectorCode::byteBuffer(int i, const char* name) {
  llvm::Type* bytePtr = llvm::Type::getInt8PtrTy(ctx_);
  Value* slot = b_.CreateConstInBoundsGEP1_64(bytePtr, fn_->getArg(0), static_cast<uint64_t>(i));
  return b_.CreateAlignedLoad(bytePtr, slot, llvm::Align(8), name);
}

llvm::AllocaInst* VectorCode::frameSlot(llvm::Type* t, int64_t count, const char* name) {
  llvm::IRBuilder<> atEntry(entry_, entry_->begin());
  return atEntry.CreateAlloca(t, i64(count), name);
}

Expected<llvm::Function*> VectorCode::finish() {
  b_.CreateRetVoid();
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyFunction(*fn_, &os)) return Error("generated LLVM IR does not verify: " + os.str());
  return fn_;
}

void VectorCode::loop(int64_t count, const char* name, const std::function<void(Value*)>& body, bool rolled) {
  if (count < 1) return;
  if (count == 1) return body(i64(0));
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, name, fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* iv = b_.CreatePHI(b_.getInt64Ty(), 2, name);
  iv->addIncoming(i64(0), pre);
  body(iv);
  Value* next = b_.CreateAdd(iv, i64(1), "", /*HasNUW=*/true, /*HasNSW=*/true);
  auto* exit = llvm::BasicBlock::Create(ctx_, std::string(name) + ".end", fn_);
  llvm::BranchInst* latch = b_.CreateCondBr(b_.CreateICmpULT(next, i64(count)), header, exit);
  if (minor_ > 0 || rolled) keepRolled(latch);
  iv->addIncoming(next, b_.GetInsertBlock());
  b_.SetInsertPoint(exit);
}

// A distinct loop ID (its first operand itself) that asks for no unrolling.
void VectorCode::keepRolled(llvm::BranchInst* latch) {
  llvm::Metadata* noUnroll = llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")});
  llvm::MDNode* id = llvm::MDNode::getDistinct(ctx_, {nullptr, noUnroll});
  id->replaceOperandWith(0, id);
  latch->setMetadata(llvm::LLVMContext::MD_loop, id);
}

void VectorCode::part(double share, const std::function<void()>& body) {
  const bool minor = share < 1.0 / 8;
  minor_ += minor;
  body();
  minor_ -= minor;
}

void VectorCode::loopRange(Value* begin, Value* end, const char* name, const std::function<void(Value*)>& body) {
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, name, fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, std::string(name) + ".end", fn_);
  b_.CreateCondBr(b_.CreateICmpSLT(begin, end), header, exit);
  b_.SetInsertPoint(header);
  llvm::PHINode* iv = b_.CreatePHI(b_.getInt64Ty(), 2, name);
  iv->addIncoming(begin, pre);
  body(iv);
  Value* next = b_.CreateAdd(iv, i64(1), "", /*HasNUW=*/true, /*HasNSW=*/true);
  b_.CreateCondBr(b_.CreateICmpSLT(next, end), header, exit);
  iv->addIncoming(next, b_.GetInsertBlock());
  b_.SetInsertPoint(exit);
}

void VectorCode::unitSteps(const char* name,
                           const std::function<void(Value* u, const std::function<void(int64_t)>& advance)>& body) {
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, name, fn_);
  auto* latch = llvm::BasicBlock::Create(ctx_, std::string(name) + ".next", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, std::string(name) + ".end", fn_);
  b_.CreateCondBr(b_.CreateICmpSLT(begin(), end()), header, exit);
  b_.SetInsertPoint(header);
  llvm::PHINode* u = b_.CreatePHI(b_.getInt64Ty(), 2, "u");
  u->addIncoming(begin(), pre);
  std::vector<std::pair<llvm::BasicBlock*, int64_t>> paths;  // each path's last block and its step
  body(u, [&](int64_t step) {
    paths.emplace_back(b_.GetInsertBlock(), step);
    b_.CreateBr(latch);
  });
  if (!b_.GetInsertBlock()->getTerminator()) b_.CreateUnreachable();
  b_.SetInsertPoint(latch);
  llvm::PHINode* step = b_.CreatePHI(b_.getInt64Ty(), static_cast<unsigned>(paths.size()), "step");
  for (const auto& [bb, units] : paths) step->addIncoming(i64(units), bb);
  Value* next = b_.CreateAdd(u, step);
  b_.CreateCondBr(b_.CreateICmpSLT(next, end()), header, exit);
  u->addIncoming(next, latch);
  b_.SetInsertPoint(exit);
}

void VectorCode::when(Value* condition, const char* name, const std::function<void()>& body) {
  auto* then = llvm::BasicBlock::Create(ctx_, name, fn_);
  auto* after = llvm::BasicBlock::Create(ctx_, std::string(name) + ".end", fn_);
  b_.CreateCondBr(condition, then, after);
  b_.SetInsertPoint(then);
  body();
  b_.CreateBr(after);
  b_.SetInsertPoint(after);
}

void VectorCode::halved(const std::function<void()>& body) {
  llvm::VectorType* full = vec_;
  const int lanes = lanes_;
  lanes_ = lanes / 2;
  vec_ = llvm::FixedVectorType::get(b_.getFloatTy(), static_cast<unsigned>(lanes_));
  body();
  lanes_ = lanes;
  vec_ = full;
}

llvm::Constant* VectorCode::mask(const std::function<bool(int64_t)>& on) {
  std::vector<llvm::Constant*> bits;
  for (int64_t l = 0; l < lanes_; ++l) bits.push_back(b_.getInt1(on(l)));
  return llvm::ConstantVector::get(bits);
}

Value* VectorCode::load(Value* ptr, llvm::Constant* m) {
  if (m->isAllOnesValue()) return b_.CreateAlignedLoad(vec_, ptr, llvm::Align(4));
  if (m->isNullValue()) return llvm::Constant::getNullValue(vec_);
  return b_.CreateMaskedLoad(vec_, ptr, llvm::Align(4), m, llvm::Constant::getNullValue(vec_));
}

void VectorCode::store(Value* v, Value* ptr, llvm::Constant* m) {
  if (m->isAllOnesValue())
    b_.CreateAlignedStore(v, ptr, llvm::Align(4));
  else if (!m->isNullValue())
    b_.CreateMaskedStore(v, ptr, llvm::Align(4), m);
}

llvm::AllocaInst* VectorCode::accumulator() { return frameSlot(vec_, 1, "acc"); }

void VectorCode::prefetch(Value* base, Value* index) {
  llvm::Function* f = llvm::Intrinsic::getDeclaration(fn_->getParent(), llvm::Intrinsic::prefetch, {b_.getInt8PtrTy()});
  // A read (0), kept in every level (3), of data (1).
  b_.CreateCall(f, {b_.CreateBitCast(at(base, index), b_.getInt8PtrTy()), b_.getInt32(0), b_.getInt32(3), b_.getInt32(1)});
}

void VectorCode::multiplyAdd(llvm::AllocaInst* acc, Value* a, Value* x) {
  Value* sum = b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vec_}, {a, x, b_.CreateLoad(vec_, acc)});
  b_.CreateStore(sum, acc);
}

Status VectorCode::callEpilogue(const kernel::Kernel& k, const std::vector<Value*>& buffers) {
  llvm::Module& m = *fn_->getParent();
  llvm::Function* callee = m.getFunction(symbolName(k.name));
  if (!callee) {
    KF_ASSIGN_OR_RETURN(callee, emitKernel(k, ctx_, m));
    markEpilogue(*callee);
  }
  if (!epilogueArgs_ || epilogueArgsSize_ < buffers.size()) {
    epilogueArgs_ = frameSlot(b_.getInt8PtrTy(), static_cast<int64_t>(buffers.size()), "epilogue_args");
    epilogueArgsSize_ = buffers.size();
  }
  for (size_t i = 0; i < buffers.size(); ++i)
    b_.CreateStore(buffers[i], b_.CreateConstInBoundsGEP1_64(b_.getInt8PtrTy(), epilogueArgs_, i));
  b_.CreateCall(callee, {epilogueArgs_, i64(0), i64(kernelWork(k).units)});
  return Status::ok();
}

}  // namespace kfuse::cpu
