#include "codegen/cpu/storage.h"

#include <cmath>

#include <llvm/ADT/APFloat.h>
#include <llvm/IR/Intrinsics.h>

namespace kfuse::cpu {

using llvm::IRBuilderBase;
using llvm::Value;

llvm::Type* computeTypeOf(llvm::LLVMContext& ctx, DType t) {
  switch (t) {
    case DType::F32: return llvm::Type::getFloatTy(ctx);
    case DType::F64: return llvm::Type::getDoubleTy(ctx);
    case DType::I64: return llvm::Type::getInt64Ty(ctx);
    case DType::Bool: return llvm::Type::getInt1Ty(ctx);
    default: return nullptr;
  }
}

llvm::Type* storageTypeOf(llvm::LLVMContext& ctx, DType t) {
  switch (t) {
    case DType::F32: return llvm::Type::getFloatTy(ctx);
    case DType::F64: return llvm::Type::getDoubleTy(ctx);
    case DType::F16:
    case DType::BF16: return llvm::Type::getInt16Ty(ctx);
    case DType::I64: return llvm::Type::getInt64Ty(ctx);
    case DType::I32: return llvm::Type::getInt32Ty(ctx);
    case DType::I8:
    case DType::U8:
    case DType::Bool: return llvm::Type::getInt8Ty(ctx);
  }
  return nullptr;
}

namespace {

// The half/bfloat16 conversions below are ir/dtype.h's, written branch-free
// (every case computed, one selected) so that they vectorize.

// h + 1 when the remainder `rem` of a right shift rounds up (to nearest,
// ties to even), as floatToHalf does.
Value* roundShifted(IRBuilderBase& b, Value* h, Value* rem, Value* mid) {
  Value* tie = b.CreateAnd(b.CreateICmpEQ(rem, mid), b.CreateTrunc(h, b.getInt1Ty()));
  Value* up = b.CreateOr(b.CreateICmpUGT(rem, mid), tie);
  return b.CreateAdd(h, b.CreateZExt(up, b.getInt32Ty()));
}

Value* floatToHalfBits(IRBuilderBase& b, Value* f) {
  auto c = [&](int32_t v) { return b.getInt32(static_cast<uint32_t>(v)); };
  Value* x = b.CreateBitCast(f, b.getInt32Ty());
  Value* sign = b.CreateAnd(b.CreateLShr(x, 16), c(0x8000));
  Value* exp = b.CreateAnd(b.CreateLShr(x, 23), c(0xff));
  Value* mant = b.CreateAnd(x, c(0x7fffff));
  Value* infNan = b.CreateOr(c(0x7c00), b.CreateSelect(b.CreateICmpNE(mant, c(0)), c(0x200), c(0)));
  Value* e = b.CreateSub(exp, c(127 - 15));
  Value* normal = roundShifted(b, b.CreateOr(b.CreateShl(e, 10), b.CreateLShr(mant, 13)), b.CreateAnd(mant, c(0x1fff)),
                               c(0x1000));
  // Subnormal halves shift the mantissa (with its implicit bit) right by
  // 14 - e; shifts past 24 leave nothing and a remainder below the midpoint,
  // which is floatToHalf's underflow to signed zero. Clamping keeps every
  // shift in range whichever case is selected.
  Value* shift = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin,
                                         b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, b.CreateSub(c(14), e), c(14)),
                                         c(31));
  Value* m = b.CreateOr(mant, c(0x800000));
  Value* subnormal = roundShifted(b, b.CreateLShr(m, shift), b.CreateAnd(m, b.CreateSub(b.CreateShl(c(1), shift), c(1))),
                                  b.CreateShl(c(1), b.CreateSub(shift, c(1))));
  Value* finite = b.CreateSelect(b.CreateICmpSGE(e, c(0x1f)), c(0x7c00),
                                 b.CreateSelect(b.CreateICmpSGT(e, c(0)), normal, subnormal));
  Value* magnitude = b.CreateSelect(b.CreateICmpEQ(exp, c(0xff)), infNan, finite);
  return b.CreateTrunc(b.CreateOr(sign, magnitude), b.getInt16Ty());
}

Value* halfBitsToFloat(IRBuilderBase& b, Value* bits) {
  auto c = [&](int32_t v) { return b.getInt32(static_cast<uint32_t>(v)); };
  Value* h = b.CreateZExt(bits, b.getInt32Ty());
  Value* sign = b.CreateShl(b.CreateAnd(h, c(0x8000)), 16);
  Value* exp = b.CreateAnd(b.CreateLShr(h, 10), c(0x1f));
  Value* mant = b.CreateAnd(h, c(0x3ff));
  Value* normal = b.CreateOr(b.CreateShl(b.CreateAdd(exp, c(127 - 15)), 23), b.CreateShl(mant, 13));
  Value* infNan = b.CreateOr(c(0x7f800000), b.CreateShl(mant, 13));
  // A subnormal half is mant * 2^-24, which a float holds exactly.
  Value* scaled = b.CreateFMul(b.CreateUIToFP(mant, b.getFloatTy()), llvm::ConstantFP::get(b.getFloatTy(), 0x1p-24));
  Value* subnormal = b.CreateBitCast(scaled, b.getInt32Ty());
  Value* magnitude = b.CreateSelect(b.CreateICmpEQ(exp, c(0x1f)), infNan,
                                    b.CreateSelect(b.CreateICmpEQ(exp, c(0)), subnormal, normal));
  return b.CreateBitCast(b.CreateOr(sign, magnitude), b.getFloatTy());
}

Value* floatToBFloat16Bits(IRBuilderBase& b, Value* f) {
  Value* x = b.CreateBitCast(f, b.getInt32Ty());
  Value* high = b.CreateLShr(x, 16);
  Value* quietNan = b.CreateOr(high, b.getInt32(0x40));
  Value* lsb = b.CreateAnd(high, b.getInt32(1));
  Value* rounded = b.CreateLShr(b.CreateAdd(b.CreateAdd(x, b.getInt32(0x7fff)), lsb), 16);
  Value* bits = b.CreateSelect(b.CreateFCmpUNO(f, f), quietNan, rounded);
  return b.CreateTrunc(bits, b.getInt16Ty());
}

Value* bfloat16BitsToFloat(IRBuilderBase& b, Value* bits) {
  return b.CreateBitCast(b.CreateShl(b.CreateZExt(bits, b.getInt32Ty()), 16), b.getFloatTy());
}

bool isFloatCompute(DType t) { return t == DType::F32 || t == DType::F64; }

// A float to an integer of `bits` bits as saturateInt<I> does: truncate
// toward zero, NaN -> 0, clamp to the range, whose top for i64 is the
// largest double below 2^63 (INT64_MAX is no double). Written as a clamp in
// the float domain and a plain fptosi, which vectorize (LLVM 14 keeps
// llvm.fptosi.sat scalar): values above the largest float that converts in
// range take the range's top directly.
Value* floatToSaturatedInt(IRBuilderBase& b, Value* f, unsigned bits, bool isSigned) {
  llvm::Type* ft = f->getType();
  int width = static_cast<int>(bits);
  double lo = isSigned ? -std::ldexp(1.0, width - 1) : 0.0;
  // The largest float of f's type below 2^(bits-1) (2^bits unsigned), and
  // the integer every float above it becomes.
  llvm::APFloat below(std::ldexp(1.0, isSigned ? width - 1 : width));
  bool inexact = false;
  below.convert(ft->getFltSemantics(), llvm::APFloat::rmTowardZero, &inexact);  // exact: a power of two
  below.next(/*nextDown=*/true);
  uint64_t top = bits == 64 ? 0x7ffffffffffffc00 : (uint64_t{1} << (isSigned ? bits - 1 : bits)) - 1;

  Value* v = b.CreateSelect(b.CreateFCmpUNO(f, f), llvm::ConstantFP::get(ft, 0.0), f);
  llvm::Constant* loC = llvm::ConstantFP::get(ft, lo);
  llvm::Constant* belowC = llvm::ConstantFP::get(b.getContext(), below);
  v = b.CreateSelect(b.CreateFCmpOLT(v, loC), loC, v);
  Value* over = b.CreateFCmpOGT(v, belowC);
  v = b.CreateSelect(over, belowC, v);
  unsigned convertBits = bits < 32 ? 32 : bits;  // i8/u8 convert through i32
  Value* r = b.CreateTrunc(b.CreateFPToSI(v, b.getIntNTy(convertBits)), b.getIntNTy(bits));
  return b.CreateSelect(over, b.getIntN(bits, top), r);
}

// An i64 clamped to [lo, hi] and truncated to `bits`.
Value* clampInt(IRBuilderBase& b, Value* v, int64_t lo, int64_t hi, unsigned bits) {
  Value* c = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, v, b.getInt64(static_cast<uint64_t>(lo)));
  c = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, c, b.getInt64(static_cast<uint64_t>(hi)));
  return b.CreateTrunc(c, b.getIntNTy(bits));
}

Value* toStoredInt(IRBuilderBase& b, Value* v, DType from, DType storage) {
  unsigned bits = static_cast<unsigned>(dtypeSize(storage) * 8);
  bool isSigned = storage != DType::U8;
  if (from == DType::Bool) return b.CreateZExt(v, b.getIntNTy(bits));
  if (isFloatCompute(from)) return floatToSaturatedInt(b, v, bits, isSigned);
  switch (storage) {  // from i64
    case DType::I32: return clampInt(b, v, INT32_MIN, INT32_MAX, 32);
    case DType::I8: return clampInt(b, v, INT8_MIN, INT8_MAX, 8);
    case DType::U8: return clampInt(b, v, 0, UINT8_MAX, 8);
    default: return v;
  }
}

}  // namespace

Value* emitTruthy(IRBuilderBase& b, Value* v, DType from) {
  if (from == DType::Bool) return v;
  if (isFloatCompute(from)) return b.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
  return b.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
}

Value* emitConvert(IRBuilderBase& b, Value* v, DType from, DType to) {
  if (from == to) return v;
  llvm::Type* type = computeTypeOf(b.getContext(), to);
  if (to == DType::Bool) return emitTruthy(b, v, from);
  if (isFloatCompute(to)) {
    if (isFloatCompute(from)) return b.CreateFPCast(v, type);
    return from == DType::Bool ? b.CreateUIToFP(v, type) : b.CreateSIToFP(v, type);
  }
  // to i64: saturating as an i64 store would, so that cast-then-store and
  // store agree with the reference for every input.
  if (from == DType::Bool) return b.CreateZExt(v, type);
  return floatToSaturatedInt(b, v, 64, /*isSigned=*/true);
}

Value* emitLoadElement(IRBuilderBase& b, Value* ptr, DType storage) {
  llvm::LLVMContext& ctx = b.getContext();
  Value* raw = b.CreateAlignedLoad(storageTypeOf(ctx, storage), ptr, llvm::Align(dtypeSize(storage)));
  switch (storage) {
    case DType::F16: return halfBitsToFloat(b, raw);
    case DType::BF16: return bfloat16BitsToFloat(b, raw);
    case DType::I32:
    case DType::I8: return b.CreateSExt(raw, b.getInt64Ty());
    case DType::U8: return b.CreateZExt(raw, b.getInt64Ty());
    case DType::Bool: return b.CreateICmpNE(raw, b.getInt8(0));  // any nonzero byte reads as true
    default: return raw;
  }
}

void emitStoreElement(IRBuilderBase& b, Value* ptr, Value* v, DType from, DType storage) {
  Value* stored = nullptr;
  switch (storage) {
    case DType::F32:
    case DType::F64: stored = emitConvert(b, v, from, storage); break;
    case DType::F16: stored = floatToHalfBits(b, emitConvert(b, v, from, DType::F32)); break;
    case DType::BF16: stored = floatToBFloat16Bits(b, emitConvert(b, v, from, DType::F32)); break;
    case DType::Bool: stored = b.CreateZExt(emitTruthy(b, v, from), b.getInt8Ty()); break;
    default: stored = toStoredInt(b, v, from, storage); break;
  }
  b.CreateAlignedStore(stored, ptr, llvm::Align(dtypeSize(storage)));
}

}  // namespace kfuse::cpu
