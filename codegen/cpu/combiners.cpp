#include "codegen/cpu/combiners.h"

#include <limits>

#include "codegen/cpu/scalar_emitter.h"
#include "codegen/cpu/storage.h"

namespace kfuse::cpu {

using kernel::Combiner;
using llvm::Value;

namespace {

// key(x) = bits(x) ^ (sign(x) ? 0x7f..f : 0): an involution on bit patterns.
Value* flipNegative(llvm::IRBuilderBase& b, Value* bits) {
  unsigned n = bits->getType()->getIntegerBitWidth();
  Value* magnitude = llvm::ConstantInt::get(bits->getType(), llvm::APInt::getSignedMaxValue(n));
  return b.CreateXor(bits, b.CreateAnd(b.CreateAShr(bits, n - 1), magnitude));
}

}  // namespace

// Accumulators hold the reduced value's compute type, except that a sum of
// bools counts (the reference sums 0/1 doubles).
Value* initialValue(llvm::IRBuilderBase& b, Combiner c, DType t) {
  if (t == DType::Bool) return b.getInt1(c == Combiner::Min);  // max of none: false
  if (t == DType::I64) {
    int64_t v = c == Combiner::Sum ? 0
                : c == Combiner::Max ? std::numeric_limits<int64_t>::min()
                                     : std::numeric_limits<int64_t>::max();
    return b.getInt64(static_cast<uint64_t>(v));
  }
  return llvm::ConstantFP::get(computeTypeOf(b.getContext(), t), kernel::combinerInit(c));
}

Value* combine(llvm::IRBuilderBase& b, Combiner c, DType t, Value* acc, Value* v) {
  namespace I = llvm::Intrinsic;
  bool isFloat = t == DType::F32 || t == DType::F64;
  switch (c) {
    case Combiner::Sum: return isFloat ? b.CreateFAdd(acc, v) : b.CreateAdd(acc, v);
    case Combiner::Max:
      if (isFloat) return emitNanMax(b, acc, v);
      return t == DType::Bool ? b.CreateOr(acc, v) : b.CreateBinaryIntrinsic(I::smax, acc, v);
    case Combiner::Min:
      if (isFloat) return emitNanMin(b, acc, v);
      return t == DType::Bool ? b.CreateAnd(acc, v) : b.CreateBinaryIntrinsic(I::smin, acc, v);
  }
  return acc;
}

// A row's float sum may be reassociated: the loop vectorizer then keeps one
// partial sum per lane (and per unrolled copy) and adds them at the end,
// instead of running the whole row, and everything computed for it
// (softmax's exponentials), one element at a time. The order is fixed by the
// compiled code, so a kernel gives the same bits on every run; it differs
// from the interpreter's left-to-right order by rounding, within the
// tests' reduction bounds (docs/fusion.md). Column sums need no such licence (column order).
Value* reassociable(Value* v) {
  if (auto* op = llvm::dyn_cast<llvm::BinaryOperator>(v); op && op->getOpcode() == llvm::Instruction::FAdd)
    op->setHasAllowReassoc(true);
  return v;
}

// A row's float maximum or minimum runs on integer keys that order as the
// floats do (negative floats' magnitude bits flipped), every NaN mapped to
// the extreme key so that it wins: LLVM 14 vectorises integer max/min
// reductions, never a NaN-propagating float one, and softmax's row maxima
// were a scalar chain of compares and selects. Zeros order -0 < +0; the
// extreme keys decode to NaNs.
bool onKeys(Combiner c, DType t) {
  return (c == Combiner::Max || c == Combiner::Min) && (t == DType::F32 || t == DType::F64);
}

llvm::APInt extremeKey(Combiner c, unsigned bits) {
  return c == Combiner::Max ? llvm::APInt::getSignedMaxValue(bits) : llvm::APInt::getSignedMinValue(bits);
}

Value* toKey(llvm::IRBuilderBase& b, Combiner c, Value* v) {
  unsigned n = v->getType()->getPrimitiveSizeInBits();
  Value* key = flipNegative(b, b.CreateBitCast(v, b.getIntNTy(n)));
  return b.CreateSelect(b.CreateFCmpUNO(v, v), b.getInt(extremeKey(c, n)), key);
}

Value* fromKey(llvm::IRBuilderBase& b, Value* key, llvm::Type* floatType) {
  return b.CreateBitCast(flipNegative(b, key), floatType);
}

Value* combineKeys(llvm::IRBuilderBase& b, Combiner c, Value* acc, Value* key) {
  return b.CreateBinaryIntrinsic(c == Combiner::Max ? llvm::Intrinsic::smax : llvm::Intrinsic::smin, acc, key);
}

}  // namespace kfuse::cpu
