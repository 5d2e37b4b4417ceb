#include "codegen/cpu/scalar_emitter.h"

#include <cmath>
#include <limits>
#include <unordered_set>

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include "codegen/cpu/storage.h"
#include "codegen/kernel/scalar_rules.h"
#include "ir/philox.h"
#include "ir/support/strings.h"

namespace kfuse::cpu {

using llvm::Value;

namespace {

using Kind = kernel::ScalarKind;
using kernel::arity;
using kernel::isComparison;
using kernel::isFloatType;
using kernel::kindOf;

}  // namespace

Status checkEmittable(const ScalarNode& root) { return kernel::checkScalarProgram(root, "CPU"); }

Value* emitNanMax(llvm::IRBuilderBase& b, Value* x, Value* y) {
  Value* larger = b.CreateSelect(b.CreateFCmpOGT(x, y), x, y);
  return b.CreateSelect(b.CreateFCmpUNO(x, y), llvm::ConstantFP::getNaN(x->getType()), larger);
}

Value* emitNanMin(llvm::IRBuilderBase& b, Value* x, Value* y) {
  Value* smaller = b.CreateSelect(b.CreateFCmpOLT(x, y), x, y);
  return b.CreateSelect(b.CreateFCmpUNO(x, y), llvm::ConstantFP::getNaN(x->getType()), smaller);
}

Value* ScalarEmitter::node(const ScalarNode& n, const std::vector<Value*>& args) {
  if (n.op == ScalarOp::Const) return emitConstant(n);
  if (n.op == ScalarOp::Input || n.op == ScalarOp::Index) return args[0];
  auto truthy = [&](size_t i) { return emitTruthy(b_, args[i], n.args[i]->type); };
  switch (n.op) {
    case ScalarOp::Cast: return emitConvert(b_, args[0], n.args[0]->type, n.type);
    case ScalarOp::Not: return b_.CreateNot(truthy(0));
    case ScalarOp::And: return b_.CreateAnd(truthy(0), truthy(1));
    case ScalarOp::Or: return b_.CreateOr(truthy(0), truthy(1));
    case ScalarOp::Select: return b_.CreateSelect(truthy(0), args[1], args[2]);
    case ScalarOp::Philox: return emitPhilox(args);
    default: break;
  }
  if (isComparison(n.op)) return emitCompare(n.op, n.args[0]->type, args[0], args[1]);
  if (kindOf(n.op) == Kind::Unary) return emitUnary(n, args[0]);
  return emitBinary(n, args[0], args[1]);
}

Value* ScalarEmitter::emitConstant(const ScalarNode& n) {
  llvm::Type* type = computeTypeOf(b_.getContext(), n.type);
  double c = n.constant;
  if (isFloatType(n.type)) return llvm::ConstantFP::get(type, c);
  if (n.type == DType::Bool) return b_.getInt1(c != 0);
  // Integer constants are integral by construction; anything else truncates
  // and saturates the way a cast to i64 does.
  constexpr double kTwo63 = 0x1p63;
  int64_t i = std::isnan(c) ? 0 : c >= kTwo63 ? std::numeric_limits<int64_t>::max()
                                  : c < -kTwo63 ? std::numeric_limits<int64_t>::min()
                                                : static_cast<int64_t>(c);
  return b_.getInt64(static_cast<uint64_t>(i));
}

Value* ScalarEmitter::callLibm(const char* name, DType type, Value* x) {
  llvm::Module* m = b_.GetInsertBlock()->getModule();
  std::string symbol = type == DType::F32 ? str(name, "f") : std::string(name);
  llvm::Type* t = x->getType();
  llvm::FunctionCallee callee = m->getOrInsertFunction(symbol, llvm::FunctionType::get(t, {t}, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    // errno is no part of a kernel's behaviour, so these are pure functions
    // to the optimizer: it may hoist, sink and CSE them.
    f->setDoesNotAccessMemory();
    f->setDoesNotThrow();
    f->setWillReturn();
  }
  llvm::CallInst* call = b_.CreateCall(callee, {x});
  call->setDoesNotAccessMemory();
  call->setDoesNotThrow();
  return call;
}

// Philox4x32-10 (ir/philox.h) in 32-bit lanes: each round's two 32x32->64
// products are i64 multiplies of zero-extended halves, which the vectorizer
// turns into pmuludq.
Value* ScalarEmitter::emitPhilox(const std::vector<Value*>& args) {
  llvm::Type* i32 = b_.getInt32Ty();
  llvm::Type* i64 = b_.getInt64Ty();
  auto low = [&](Value* v) { return b_.CreateTrunc(v, i32); };
  auto high = [&](Value* v) { return b_.CreateTrunc(b_.CreateLShr(v, 32), i32); };
  Value *c0 = low(args[0]), *c1 = high(args[0]), *c2 = low(args[1]), *c3 = high(args[1]);
  Value *k0 = low(args[2]), *k1 = low(args[3]);
  auto product = [&](uint32_t m, Value* c) { return b_.CreateMul(b_.getInt64(m), b_.CreateZExt(c, i64)); };
  for (int r = 0; r < philox::kRounds; ++r) {
    if (r > 0) {
      k0 = b_.CreateAdd(k0, b_.getInt32(philox::kW0));
      k1 = b_.CreateAdd(k1, b_.getInt32(philox::kW1));
    }
    Value* p0 = product(philox::kM0, c0);
    Value* p1 = product(philox::kM1, c2);
    c0 = b_.CreateXor(b_.CreateXor(high(p1), c1), k0);
    c1 = low(p1);
    c2 = b_.CreateXor(b_.CreateXor(high(p0), c3), k1);
    c3 = low(p0);
  }
  return b_.CreateZExt(c0, i64);
}

Value* ScalarEmitter::emitUnary(const ScalarNode& n, Value* x) {
  namespace I = llvm::Intrinsic;
  if (n.type == DType::I64) {
    switch (n.op) {
      case ScalarOp::Neg: return b_.CreateNeg(x);
      case ScalarOp::Abs: return b_.CreateBinaryIntrinsic(I::abs, x, b_.getFalse());
      default: return x;  // Floor, Ceil
    }
  }
  switch (n.op) {
    case ScalarOp::Neg: return b_.CreateFNeg(x);
    case ScalarOp::Abs: return b_.CreateUnaryIntrinsic(I::fabs, x);
    case ScalarOp::Exp: return b_.CreateUnaryIntrinsic(I::exp, x);
    case ScalarOp::Log: return b_.CreateUnaryIntrinsic(I::log, x);
    case ScalarOp::Sqrt: return b_.CreateUnaryIntrinsic(I::sqrt, x);
    case ScalarOp::Rsqrt:
      return b_.CreateFDiv(llvm::ConstantFP::get(x->getType(), 1.0), b_.CreateUnaryIntrinsic(I::sqrt, x));
    case ScalarOp::Floor: return b_.CreateUnaryIntrinsic(I::floor, x);
    case ScalarOp::Ceil: return b_.CreateUnaryIntrinsic(I::ceil, x);
    case ScalarOp::Expm1: return callLibm("expm1", n.type, x);
    case ScalarOp::Log1p: return callLibm("log1p", n.type, x);
    case ScalarOp::Tanh: return callLibm("tanh", n.type, x);
    case ScalarOp::Erf: return callLibm("erf", n.type, x);
    case ScalarOp::Sin: return callLibm("sin", n.type, x);
    case ScalarOp::Cos: return callLibm("cos", n.type, x);
    default: return x;  // unreachable after checkEmittable
  }
}

namespace {

// evaluateScalar's integer division: truncates toward zero, x / 0 is 0. The
// divisor is made safe before the sdiv, since x86 traps on x / 0 and on
// INT64_MIN / -1 (which wraps to INT64_MIN here).
Value* emitIntDiv(llvm::IRBuilderBase& b, Value* x, Value* y) {
  Value* zero = b.CreateICmpEQ(y, b.getInt64(0));
  Value* minusOne = b.CreateICmpEQ(y, b.getInt64(static_cast<uint64_t>(-1)));
  Value* safe = b.CreateSelect(b.CreateOr(zero, minusOne), b.getInt64(1), y);
  Value* q = b.CreateSelect(minusOne, b.CreateNeg(x), b.CreateSDiv(x, safe));
  return b.CreateSelect(zero, b.getInt64(0), q);
}

// pow of two i64s: evaluateScalar computes it in double; the result is
// truncated back to i64 (exact for every result an i64 store can hold
// below 2^53).
Value* emitIntPow(llvm::IRBuilderBase& b, Value* x, Value* y) {
  llvm::Type* f64 = b.getDoubleTy();
  Value* p = b.CreateBinaryIntrinsic(llvm::Intrinsic::pow, b.CreateSIToFP(x, f64), b.CreateSIToFP(y, f64));
  return emitConvert(b, p, DType::F64, DType::I64);
}

}  // namespace

Value* ScalarEmitter::emitBinary(const ScalarNode& n, Value* x, Value* y) {
  namespace I = llvm::Intrinsic;
  if (n.type == DType::Bool) {  // only Mul, Max, Min: and, or, and
    return n.op == ScalarOp::Max ? b_.CreateOr(x, y) : b_.CreateAnd(x, y);
  }
  if (n.type == DType::I64) {
    switch (n.op) {
      case ScalarOp::Add: return b_.CreateAdd(x, y);
      case ScalarOp::Sub: return b_.CreateSub(x, y);
      case ScalarOp::Mul: return b_.CreateMul(x, y);
      case ScalarOp::Div: return emitIntDiv(b_, x, y);
      case ScalarOp::Pow: return emitIntPow(b_, x, y);
      case ScalarOp::Max: return b_.CreateBinaryIntrinsic(I::smax, x, y);
      default: return b_.CreateBinaryIntrinsic(I::smin, x, y);
    }
  }
  switch (n.op) {
    case ScalarOp::Add: return b_.CreateFAdd(x, y);
    case ScalarOp::Sub: return b_.CreateFSub(x, y);
    case ScalarOp::Mul: return b_.CreateFMul(x, y);
    case ScalarOp::Div: return b_.CreateFDiv(x, y);
    case ScalarOp::Pow: return b_.CreateBinaryIntrinsic(I::pow, x, y);
    case ScalarOp::Max: return emitNanMax(b_, x, y);
    default: return emitNanMin(b_, x, y);
  }
}

Value* ScalarEmitter::emitCompare(ScalarOp op, DType type, Value* x, Value* y) {
  using P = llvm::CmpInst::Predicate;
  // Ordered float predicates are false on NaN; Ne is unordered, true on NaN.
  static constexpr P kFloat[] = {P::FCMP_OLT, P::FCMP_OLE, P::FCMP_OGT, P::FCMP_OGE, P::FCMP_OEQ, P::FCMP_UNE};
  static constexpr P kSigned[] = {P::ICMP_SLT, P::ICMP_SLE, P::ICMP_SGT, P::ICMP_SGE, P::ICMP_EQ, P::ICMP_NE};
  static constexpr P kBool[] = {P::ICMP_ULT, P::ICMP_ULE, P::ICMP_UGT, P::ICMP_UGE, P::ICMP_EQ, P::ICMP_NE};
  auto i = static_cast<size_t>(op) - static_cast<size_t>(ScalarOp::Lt);
  if (isFloatType(type)) return b_.CreateFCmp(kFloat[i], x, y);
  return b_.CreateICmp(type == DType::Bool ? kBool[i] : kSigned[i], x, y);
}

}  // namespace kfuse::cpu
