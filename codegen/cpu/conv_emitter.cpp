#include "codegen/cpu/conv_emitter.h"

#include <algorithm>
#include <functional>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include "codegen/cpu/llvm_emitter.h"
#include "ir/support/strings.h"
#include "runtime/direct_conv.h"

namespace kfuse::cpu {
namespace {

using llvm::Value;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Output columns [ox0, ox0 + vectors * lanes) of a row; `count` such blocks
// side by side when the run is clean (a loop in the generated code).
struct ColumnBlock {
  int64_t ox0 = 0;
  int vectors = 1;
  int64_t count = 1;
  bool clean = true;  // no tap reads padding, no lane is past the row's end
};

class ConvEmitter {
 public:
  ConvEmitter(const ConvSpec& c, const ConvTiling& t, llvm::Module& m)
      : c_(c), t_(t), m_(m), ctx_(m.getContext()), b_(ctx_), cg_(c.c / c.groups), og_(c.o / c.groups) {}

  llvm::Function* run(const std::string& symbol);

 private:
  int64_t tapOffset(int64_t kx) const { return kx * c_.dilW - c_.padLeft; }
  std::vector<ColumnBlock> columnBlocks() const;
  bool laneReads(int64_t ox, int64_t kx) const {
    return ox < c_.ow && ox + tapOffset(kx) >= 0 && ox + tapOffset(kx) < c_.wd;
  }

  Value* i64(int64_t v) { return b_.getInt64(static_cast<uint64_t>(v)); }
  void loop(int64_t count, const char* name, const std::function<void(Value*)>& body);
  Value* at(Value* base, Value* index) { return b_.CreateGEP(b_.getFloatTy(), base, index); }
  // LLVM 14's typed pointers: vector accesses go through a vector pointer.
  Value* vectorAt(Value* base, Value* index) { return b_.CreateBitCast(at(base, index), vec_->getPointerTo()); }
  Value* weightIndex(Value* o, Value* ci, Value* ky, int64_t kx);
  llvm::Constant* mask(const std::function<bool(int64_t lane)>& on);
  bool allOn(const llvm::Constant* m) const { return m->isAllOnesValue(); }

  void emitRow(Value* n, Value* g, Value* oy);
  void emitBlock(Value* n, Value* g, Value* oy, Value* o0, int channels, const ColumnBlock& blk, Value* ox0);
  void emitTaps(Value* n, Value* g, Value* iy, Value* ky, Value* o0, int channels, const ColumnBlock& blk,
                Value* ox0);

  const ConvSpec& c_;
  ConvTiling t_;
  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  int64_t cg_, og_;
  llvm::Function* fn_ = nullptr;
  llvm::VectorType* vec_ = nullptr;
  Value *x_ = nullptr, *w_ = nullptr, *bias_ = nullptr, *y_ = nullptr;
  std::vector<llvm::AllocaInst*> acc_;  // channel-major, t_.vectors per channel
};

// Blocks of t_.vectors vectors from the left; runs of clean blocks merge.
std::vector<ColumnBlock> ConvEmitter::columnBlocks() const {
  const int64_t width = int64_t{t_.vectors} * t_.lanes;
  std::vector<ColumnBlock> out;
  for (int64_t ox0 = 0; ox0 < c_.ow; ox0 += width) {
    ColumnBlock blk;
    blk.ox0 = ox0;
    blk.vectors = static_cast<int>(std::min<int64_t>(t_.vectors, ceilDiv(c_.ow - ox0, t_.lanes)));
    const int64_t end = ox0 + int64_t{blk.vectors} * t_.lanes;
    for (int64_t kx = 0; kx < c_.kw; ++kx) blk.clean = blk.clean && laneReads(ox0, kx) && laneReads(end - 1, kx);
    if (!out.empty() && out.back().clean && blk.clean && out.back().vectors == blk.vectors)
      ++out.back().count;
    else
      out.push_back(blk);
  }
  return out;
}

void ConvEmitter::loop(int64_t count, const char* name, const std::function<void(Value*)>& body) {
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
  b_.CreateCondBr(b_.CreateICmpULT(next, i64(count)), header, exit);
  iv->addIncoming(next, b_.GetInsertBlock());
  b_.SetInsertPoint(exit);
}

// OIHW: w[o, ci, ky, kx]; OHWI: w[o, ky, kx, ci].
Value* ConvEmitter::weightIndex(Value* o, Value* ci, Value* ky, int64_t kx) {
  if (c_.filterLast)
    return b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.CreateMul(o, i64(c_.kh)), ky),
                                                               i64(c_.kw)),
                                                  i64(kx)),
                                     i64(cg_)),
                        ci);
  Value* oc = b_.CreateAdd(b_.CreateMul(o, i64(cg_)), ci);
  return b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.CreateMul(oc, i64(c_.kh)), ky), i64(c_.kw)), i64(kx));
}

llvm::Constant* ConvEmitter::mask(const std::function<bool(int64_t)>& on) {
  std::vector<llvm::Constant*> bits;
  for (int64_t l = 0; l < t_.lanes; ++l) bits.push_back(b_.getInt1(on(l)));
  return llvm::ConstantVector::get(bits);
}

llvm::Function* ConvEmitter::run(const std::string& symbol) {
  llvm::Type* bytePtr = llvm::Type::getInt8PtrTy(ctx_);
  auto* type = llvm::FunctionType::get(b_.getVoidTy(), {bytePtr->getPointerTo()}, false);
  fn_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage, symbol, m_);
  fn_->setDoesNotThrow();
  fn_->addParamAttr(0, llvm::Attribute::NoCapture);
  fn_->addParamAttr(0, llvm::Attribute::ReadOnly);
  // The blocks are written for vectors of t_.lanes floats; without this, x86
  // code generation for CPUs that prefer 256-bit vectors splits 512-bit ones.
  fn_->addFnAttr("min-legal-vector-width", std::to_string(32 * t_.lanes));
  llvm::Argument* arg = fn_->getArg(0);
  arg->setName("buffers");
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn_));
  vec_ = llvm::FixedVectorType::get(b_.getFloatTy(), static_cast<unsigned>(t_.lanes));
  auto buffer = [&](int i, const char* name) {
    Value* raw = b_.CreateAlignedLoad(bytePtr, b_.CreateConstInBoundsGEP1_64(bytePtr, arg, i), llvm::Align(8));
    return b_.CreateBitCast(raw, b_.getFloatTy()->getPointerTo(), name);
  };
  x_ = buffer(0, "x");
  w_ = buffer(1, "w");
  if (c_.bias >= 0) bias_ = buffer(2, "bias");
  y_ = buffer(3, "y");
  // Accumulators live in allocas that SROA turns into registers.
  for (int i = 0; i < t_.channels * t_.vectors; ++i) acc_.push_back(b_.CreateAlloca(vec_, nullptr, "acc"));

  loop(c_.n, "n", [&](Value* n) {
    loop(c_.groups, "g", [&](Value* g) { loop(c_.oh, "oy", [&](Value* oy) { emitRow(n, g, oy); }); });
  });
  b_.CreateRetVoid();
  return fn_;
}

// Every output channel of group g in output row oy: blocks of t_.channels,
// then the remainder.
void ConvEmitter::emitRow(Value* n, Value* g, Value* oy) {
  const std::vector<ColumnBlock> blocks = columnBlocks();
  auto channelBlock = [&](Value* o0, int channels) {
    for (const ColumnBlock& blk : blocks) {
      const int64_t width = int64_t{blk.vectors} * t_.lanes;
      loop(blk.count, "ox", [&](Value* i) {
        emitBlock(n, g, oy, o0, channels, blk, b_.CreateAdd(i64(blk.ox0), b_.CreateMul(i, i64(width))));
      });
    }
  };
  Value* groupBase = b_.CreateMul(g, i64(og_));
  const int64_t full = og_ / t_.channels;
  if (full > 0)
    loop(full, "o", [&](Value* ob) {
      channelBlock(b_.CreateAdd(groupBase, b_.CreateMul(ob, i64(t_.channels))), t_.channels);
    });
  if (og_ % t_.channels != 0)
    channelBlock(b_.CreateAdd(groupBase, i64(full * t_.channels)), static_cast<int>(og_ % t_.channels));
}

// Output channels [o0, o0 + channels) at columns `blk` (starting at ox0) of
// row oy: the bias, plus every tap of every input row inside the image.
void ConvEmitter::emitBlock(Value* n, Value* g, Value* oy, Value* o0, int channels, const ColumnBlock& blk,
                            Value* ox0) {
  for (int co = 0; co < channels; ++co) {
    Value* init = llvm::Constant::getNullValue(vec_);
    if (bias_) {
      Value* v = b_.CreateAlignedLoad(b_.getFloatTy(), at(bias_, b_.CreateAdd(o0, i64(co))), llvm::Align(4));
      init = b_.CreateVectorSplat(static_cast<unsigned>(t_.lanes), v);
    }
    for (int p = 0; p < blk.vectors; ++p) b_.CreateStore(init, acc_[static_cast<size_t>(co * t_.vectors + p)]);
  }
  loop(c_.kh, "ky", [&](Value* ky) {
    Value* iy = b_.CreateAdd(b_.CreateMul(oy, i64(c_.strideH)), b_.CreateSub(b_.CreateMul(ky, i64(c_.dilH)), i64(c_.padTop)));
    // Rows above or below the image read padding: nothing to add.
    auto* inside = llvm::BasicBlock::Create(ctx_, "row", fn_);
    auto* next = llvm::BasicBlock::Create(ctx_, "row.end", fn_);
    b_.CreateCondBr(b_.CreateICmpULT(iy, i64(c_.h)), inside, next);
    b_.SetInsertPoint(inside);
    emitTaps(n, g, iy, ky, o0, channels, blk, ox0);
    b_.CreateBr(next);
    b_.SetInsertPoint(next);
  });
  for (int co = 0; co < channels; ++co) {
    Value* row = b_.CreateMul(b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.CreateMul(n, i64(c_.o)), b_.CreateAdd(o0, i64(co))),
                                                        i64(c_.oh)),
                                           oy),
                              i64(c_.ow));
    for (int p = 0; p < blk.vectors; ++p) {
      Value* v = b_.CreateLoad(vec_, acc_[static_cast<size_t>(co * t_.vectors + p)]);
      const int64_t first = blk.ox0 + int64_t{p} * t_.lanes;  // of the block's first copy
      Value* ptr = vectorAt(y_, b_.CreateAdd(row, b_.CreateAdd(ox0, i64(int64_t{p} * t_.lanes))));
      llvm::Constant* m = mask([&](int64_t l) { return first + l < c_.ow; });
      if (blk.clean || allOn(m))
        b_.CreateAlignedStore(v, ptr, llvm::Align(4));
      else
        b_.CreateMaskedStore(v, ptr, llvm::Align(4), m);
    }
  }
}

// For one filter row ky (input row iy, inside the image), every input
// channel of the group: per tap, a vector of inputs per block vector (masked
// where the tap reads padding), times a broadcast filter value per channel.
void ConvEmitter::emitTaps(Value* n, Value* g, Value* iy, Value* ky, Value* o0, int channels,
                           const ColumnBlock& blk, Value* ox0) {
  loop(cg_, "ci", [&](Value* ci) {
    Value* plane = b_.CreateAdd(b_.CreateMul(n, i64(c_.c)), b_.CreateAdd(b_.CreateMul(g, i64(cg_)), ci));
    Value* rowStart = b_.CreateMul(b_.CreateAdd(b_.CreateMul(plane, i64(c_.h)), iy), i64(c_.wd));
    for (int64_t kx = 0; kx < c_.kw; ++kx) {
      std::vector<Value*> in(static_cast<size_t>(blk.vectors), nullptr);
      for (int p = 0; p < blk.vectors; ++p) {
        const int64_t first = blk.ox0 + int64_t{p} * t_.lanes;
        llvm::Constant* m = mask([&](int64_t l) { return laneReads(first + l, kx); });
        if (!blk.clean && m->isNullValue()) continue;  // every lane reads padding
        // Not inbounds: a masked load's address may lie before the row.
        Value* ptr = vectorAt(x_, b_.CreateAdd(rowStart, b_.CreateAdd(ox0, i64(int64_t{p} * t_.lanes + tapOffset(kx)))));
        Value*& v = in[static_cast<size_t>(p)];
        if (blk.clean || allOn(m))
          v = b_.CreateAlignedLoad(vec_, ptr, llvm::Align(4));
        else
          v = b_.CreateMaskedLoad(vec_, ptr, llvm::Align(4), m, llvm::Constant::getNullValue(vec_));
      }
      for (int co = 0; co < channels; ++co) {
        Value* wi = weightIndex(b_.CreateAdd(o0, i64(co)), ci, ky, kx);
        Value* wv = b_.CreateVectorSplat(static_cast<unsigned>(t_.lanes),
                                         b_.CreateAlignedLoad(b_.getFloatTy(), at(w_, wi), llvm::Align(4)));
        for (int p = 0; p < blk.vectors; ++p) {
          if (!in[static_cast<size_t>(p)]) continue;
          llvm::AllocaInst* slot = acc_[static_cast<size_t>(co * t_.vectors + p)];
          Value* sum = b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vec_},
                                          {wv, in[static_cast<size_t>(p)], b_.CreateLoad(vec_, slot)});
          b_.CreateStore(sum, slot);
        }
      }
    }
  });
}

}  // namespace

Expected<ConvTiling> convTilingFor(const CpuTarget& target) {
  KF_ASSIGN_OR_RETURN(std::vector<std::string> features, enabledFeatures(target));
  auto has = [&](std::string_view f) { return std::find(features.begin(), features.end(), f) != features.end(); };
  // channels x vectors accumulators plus a vector of inputs per block
  // vector and a broadcast filter value stay within the register file.
  if (has("avx512f")) return ConvTiling{16, 2, 8};
  if (has("avx")) return ConvTiling{8, 2, 4};
  return ConvTiling{4, 2, 4};
}

bool directConvSupports(const ConvSpec& c) {
  if (!directConvComputes(c.channelsLast, c.strideW) || c.groups < 1 || c.c % c.groups != 0 || c.o % c.groups != 0)
    return false;
  return c.n >= 1 && c.ow >= 1 && c.oh >= 1 && c.kh >= 1 && c.kw >= 1 && c.strideH >= 1;
}

bool directConvFits(const ConvSpec& c, DType storage, const ConvTiling& t) {
  if (storage != DType::F32 && storage != DType::F16 && storage != DType::BF16) return false;
  return directConvSupports(c) && directConvRowsFill(c.ow, t.lanes);
}

std::function<bool(const ConvSpec&, DType)> im2colWorkspaces(const ConvTiling& t) {
  return [t](const ConvSpec& c, DType dt) { return !directConvFits(c, dt, t); };
}

std::vector<size_t> directConvSteps(const Plan& plan, const ConvTiling& t) {
  std::vector<size_t> out;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& step = plan.steps[s];
    if (step.kind == StepKind::Conv &&
        directConvFits(step.conv, plan.buffers[static_cast<size_t>(step.conv.y)].type.dtype, t))
      out.push_back(s);
  }
  return out;
}

Expected<llvm::Function*> emitDirectConv(const DirectConv& conv, llvm::Module& module) {
  const ConvTiling& t = conv.tiling;
  auto fail = [&](const std::string& msg) { return Error(str("convolution @", conv.name, ": ", msg)); };
  if (!directConvSupports(conv.spec)) return fail("has no direct form (cpu/conv_emitter.h)");
  if (t.lanes < 1 || t.vectors < 1 || t.channels < 1) return fail("tiling with an empty block");
  const std::string symbol = symbolName(conv.name);
  if (module.getNamedValue(symbol)) return fail("the module already defines a symbol of that name");
  llvm::Function* fn = ConvEmitter(conv.spec, t, module).run(symbol);
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyFunction(*fn, &os)) return fail("generated LLVM IR does not verify: " + os.str());
  return fn;
}

std::string describeDirectConv(const ConvSpec& c, const ConvTiling& t) {
  const int64_t og = c.o / std::max<int64_t>(c.groups, 1);
  return str("direct, blocks of ", std::min<int64_t>(t.channels, og), " channels x ",
             std::min<int64_t>(t.vectors, ceilDiv(c.ow, t.lanes)), "x", t.lanes, " pixels");
}

}  // namespace kfuse::cpu
