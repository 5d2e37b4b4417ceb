#include "codegen/cpu/inline_math.h"

#include <llvm/IR/Intrinsics.h>

namespace kfuse::cpu {

using llvm::Value;

// e^x = 2^n * e^r with n = round(x / ln 2) and |r| <= ln 2 / 2:
//   - x is clamped to [-104, 89] first (compares are false for NaN, which
//     passes): e^-104 rounds to 0 and e^89 past the largest float;
//   - n comes from adding 1.5 * 2^23, which rounds x / ln 2 to an integer
//     held in the sum's low mantissa bits (read back as an integer, so no
//     float-to-int conversion, whose NaN is poison to LLVM);
//   - r = x - n * ln 2 in two steps, ln 2's high part having few enough bits
//     that n times it is exact;
//   - e^r = 1 + r + c2 r^2 + ... + c6 r^6, a minimax fit (relative error
//     3e-9 on the interval, fitted for this function);
//   - 2^n as two powers 2^(n/2) (each a float's exponent field), so that
//     results between the smallest normal float and 0 are rounded once.
// Measured over all 2^32 inputs against exp in double: 0.91 ulp at most
// with FMA, 1.17 without. libmvec's 16-lane expf took twice as long in a
// SiLU (bench/README.md).
Value* emitExpF32(llvm::IRBuilderBase& b, Value* x) {
  llvm::Type* f = x->getType();
  llvm::Type* i = f->isVectorTy() ? llvm::VectorType::get(b.getInt32Ty(), llvm::cast<llvm::VectorType>(f))
                                  : static_cast<llvm::Type*>(b.getInt32Ty());
  auto fc = [&](double v) { return llvm::ConstantFP::get(f, v); };
  auto ic = [&](int64_t v) { return llvm::ConstantInt::get(i, static_cast<uint64_t>(v), true); };
  auto madd = [&](Value* a, Value* m, Value* c) { return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {f}, {a, m, c}); };
  x = b.CreateSelect(b.CreateFCmpOLT(x, fc(-104.0)), fc(-104.0), x);
  x = b.CreateSelect(b.CreateFCmpOGT(x, fc(89.0)), fc(89.0), x);
  constexpr double kRound = 12582912.0;  // 1.5 * 2^23, float bits 0x4B400000
  Value* t = madd(x, fc(1.44269504088896341), fc(kRound));
  Value* n = b.CreateFSub(t, fc(kRound));
  Value* ni = b.CreateSub(b.CreateBitCast(t, i), ic(0x4B400000));
  Value* r = madd(n, fc(-0.693145751953125), x);
  r = madd(n, fc(-1.428606765330187045e-06), r);
  static constexpr float kPoly[] = {1.381461043e-03f, 8.368710056e-03f, 4.166838899e-02f, 1.666652113e-01f,
                                    4.999999404e-01f, 1.0f, 1.0f};
  Value* p = fc(kPoly[0]);
  for (size_t k = 1; k < std::size(kPoly); ++k) p = madd(p, r, fc(kPoly[k]));
  Value* n1 = b.CreateAShr(ni, ic(1));
  Value* n2 = b.CreateSub(ni, n1);
  auto power = [&](Value* e) { return b.CreateBitCast(b.CreateShl(b.CreateAdd(e, ic(127)), ic(23)), f); };
  return b.CreateFMul(b.CreateFMul(p, power(n1)), power(n2));
}

// erf(x) = x P(x^2) / Q(x^2) inside (-4, 4), and +-1 from +-4 on: erf(4)
// rounds to 1 and the fit gives 1 ulp below, but GELU's
// 0.5 x (1 + erf(x / sqrt 2)) must be NaN at -inf, as the interpreter's
// is. x is clamped first, so that nothing overflows; compares are false
// for NaN, which passes. P has degree 6 and Q degree 5 in x^2, fitted here
// for relative error (2e-9 over [0, 4], in double), the coefficients
// rounded to f32. In f32 the evaluation's rounding dominates near 1:
// measured over every float against erf in double, with FMA, 5.93 ulp at
// most (x = 3.749). No exponential, no branch, one division: half the time
// of libmvec's erff (subtarget.h's inlineErf).
Value* emitErfF32(llvm::IRBuilderBase& b, Value* x) {
  llvm::Type* f = x->getType();
  auto fc = [&](double v) { return llvm::ConstantFP::get(f, v); };
  auto madd = [&](Value* a, Value* m, Value* c) { return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {f}, {a, m, c}); };
  Value* below = b.CreateFCmpOLE(x, fc(-4.0));
  Value* above = b.CreateFCmpOGE(x, fc(4.0));
  x = b.CreateSelect(below, fc(-4.0), b.CreateSelect(above, fc(4.0), x));
  Value* t = b.CreateFMul(x, x);
  static constexpr float kP[] = {-1.320241427e-08f, 4.684814485e-06f, 3.796100791e-04f, 3.849608591e-03f,
                                 5.431691930e-02f,  1.852030456e-01f, 1.128379226e+00f};
  static constexpr float kQ[] = {6.311092875e-05f, 1.307570841e-03f, 1.546208747e-02f,
                                 1.139583737e-01f, 4.974653423e-01f, 1.0f};
  Value* p = fc(kP[0]);
  for (size_t k = 1; k < std::size(kP); ++k) p = madd(p, t, fc(kP[k]));
  Value* q = fc(kQ[0]);
  for (size_t k = 1; k < std::size(kQ); ++k) q = madd(q, t, fc(kQ[k]));
  Value* y = b.CreateFDiv(b.CreateFMul(x, p), q);
  return b.CreateSelect(below, fc(-1.0), b.CreateSelect(above, fc(1.0), y));
}

namespace {

// Every call of `callee` in `module` (declared only where a kernel calls it:
// LLVM 14 has no lookup that would not declare it) replaced by emit's code.
void replaceCalls(llvm::Module& module, const char* callee, Value* (*emit)(llvm::IRBuilderBase&, Value*)) {
  llvm::Function* fn = module.getFunction(callee);
  if (!fn) return;
  std::vector<llvm::CallInst*> calls;
  for (llvm::User* u : fn->users())
    if (auto* call = llvm::dyn_cast<llvm::CallInst>(u)) calls.push_back(call);
  for (llvm::CallInst* call : calls) {
    llvm::IRBuilder<> b(call);
    call->replaceAllUsesWith(emit(b, call->getArgOperand(0)));
    call->eraseFromParent();
  }
}

}  // namespace

void inlineExponentials(llvm::Module& module) { replaceCalls(module, "llvm.exp.f32", emitExpF32); }

void inlineErfs(llvm::Module& module) { replaceCalls(module, "erff", emitErfF32); }

}  // namespace kfuse::cpu
