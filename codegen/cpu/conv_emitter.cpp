#include "codegen/cpu/conv_emitter.h"

#include <algorithm>
#include <functional>

#include "codegen/cpu/llvm_emitter.h"
#include "codegen/cpu/vector_code.h"
#include "ir/support/strings.h"
#include "passes/direct_conv.h"

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
  ConvEmitter(const ConvSpec& c, const ConvTiling& t, llvm::Module& m, const std::string& symbol)
      : c_(c), t_(t), code_(m, symbol, t.lanes), b_(code_.b()), cg_(c.c / c.groups), og_(c.o / c.groups) {}

  Expected<llvm::Function*> run();

 private:
  int64_t tapOffset(int64_t kx) const { return kx * c_.dilW - c_.padLeft; }
  std::vector<ColumnBlock> columnBlocks() const;
  // Whether output column ox reads an input column inside the image at tap kx.
  bool laneReads(int64_t ox, int64_t kx) const {
    const int64_t ix = ox * c_.strideW + tapOffset(kx);
    return ox < c_.ow && ix >= 0 && ix < c_.wd;
  }
  Value* loadInputs(Value* rowStart, Value* ox0, int p, int64_t first, int64_t kx, bool clean);

  Value* i64(int64_t v) { return code_.i64(v); }
  Value* weightIndex(Value* o, Value* ci, Value* ky, int64_t kx);

  void emitRow(Value* n, Value* g, Value* oy);
  void emitBlock(Value* n, Value* g, Value* oy, Value* o0, int channels, const ColumnBlock& blk, Value* ox0);
  void emitTaps(Value* n, Value* g, Value* iy, Value* ky, Value* o0, int channels, const ColumnBlock& blk,
                Value* ox0);

  const ConvSpec& c_;
  ConvTiling t_;
  VectorCode code_;
  llvm::IRBuilder<>& b_;
  int64_t cg_, og_;
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

Expected<llvm::Function*> ConvEmitter::run() {
  x_ = code_.floatBuffer(0, "x");
  w_ = code_.floatBuffer(1, "w");
  if (c_.bias >= 0) bias_ = code_.floatBuffer(2, "bias");
  y_ = code_.floatBuffer(3, "y");
  for (int i = 0; i < t_.channels * t_.vectors; ++i) acc_.push_back(code_.accumulator());
  // Work units (exec/parallel.h): output rows, (image, group, row) row-major.
  code_.loopRange(code_.begin(), code_.end(), "row", [&](Value* u) {
    Value* oy = b_.CreateURem(u, i64(c_.oh));
    Value* ng = b_.CreateUDiv(u, i64(c_.oh));
    emitRow(b_.CreateUDiv(ng, i64(c_.groups)), b_.CreateURem(ng, i64(c_.groups)), oy);
  });
  return code_.finish();
}

// Every output channel of group g in output row oy: blocks of t_.channels,
// then the remainder.
void ConvEmitter::emitRow(Value* n, Value* g, Value* oy) {
  const std::vector<ColumnBlock> blocks = columnBlocks();
  auto channelBlock = [&](Value* o0, int channels) {
    for (const ColumnBlock& blk : blocks) {
      const int64_t width = int64_t{blk.vectors} * t_.lanes;
      code_.loop(blk.count, "ox", [&](Value* i) {
        emitBlock(n, g, oy, o0, channels, blk, b_.CreateAdd(i64(blk.ox0), b_.CreateMul(i, i64(width))));
      });
    }
  };
  Value* groupBase = b_.CreateMul(g, i64(og_));
  const int64_t full = og_ / t_.channels;
  if (full > 0)
    code_.loop(full, "o", [&](Value* ob) {
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
    Value* init = llvm::Constant::getNullValue(code_.vec());
    if (bias_) init = code_.splat(code_.loadFloat(bias_, b_.CreateAdd(o0, i64(co))));
    for (int p = 0; p < blk.vectors; ++p) b_.CreateStore(init, acc_[static_cast<size_t>(co * t_.vectors + p)]);
  }
  code_.loop(c_.kh, "ky", [&](Value* ky) {
    Value* iy = b_.CreateAdd(b_.CreateMul(oy, i64(c_.strideH)), b_.CreateSub(b_.CreateMul(ky, i64(c_.dilH)), i64(c_.padTop)));
    // Rows above or below the image read padding: nothing to add.
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    auto* inside = llvm::BasicBlock::Create(b_.getContext(), "row", fn);
    auto* next = llvm::BasicBlock::Create(b_.getContext(), "row.end", fn);
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
      Value* v = b_.CreateLoad(code_.vec(), acc_[static_cast<size_t>(co * t_.vectors + p)]);
      const int64_t first = blk.ox0 + int64_t{p} * t_.lanes;  // of the block's first copy
      Value* ptr = code_.vectorAt(y_, b_.CreateAdd(row, b_.CreateAdd(ox0, i64(int64_t{p} * t_.lanes))));
      code_.store(v, ptr, blk.clean ? code_.mask([](int64_t) { return true; })
                                    : code_.mask([&](int64_t l) { return first + l < c_.ow; }));
    }
  }
}

// For one filter row ky (input row iy, inside the image), every input
// channel of the group: per tap, a vector of inputs per block vector (masked
// where the tap reads padding), times a broadcast filter value per channel.
void ConvEmitter::emitTaps(Value* n, Value* g, Value* iy, Value* ky, Value* o0, int channels,
                           const ColumnBlock& blk, Value* ox0) {
  code_.loop(cg_, "ci", [&](Value* ci) {
    Value* plane = b_.CreateAdd(b_.CreateMul(n, i64(c_.c)), b_.CreateAdd(b_.CreateMul(g, i64(cg_)), ci));
    Value* rowStart = b_.CreateMul(b_.CreateAdd(b_.CreateMul(plane, i64(c_.h)), iy), i64(c_.wd));
    for (int64_t kx = 0; kx < c_.kw; ++kx) {
      std::vector<Value*> in(static_cast<size_t>(blk.vectors), nullptr);
      for (int p = 0; p < blk.vectors; ++p)
        in[static_cast<size_t>(p)] = loadInputs(rowStart, ox0, p, blk.ox0 + int64_t{p} * t_.lanes, kx, blk.clean);
      for (int co = 0; co < channels; ++co) {
        Value* wv = code_.splat(code_.loadFloat(w_, weightIndex(b_.CreateAdd(o0, i64(co)), ci, ky, kx)));
        for (int p = 0; p < blk.vectors; ++p)
          if (Value* x = in[static_cast<size_t>(p)]) code_.multiplyAdd(acc_[static_cast<size_t>(co * t_.vectors + p)], wv, x);
      }
    }
  });
}

// The inputs tap kx reads for vector p of a block (its first copy's first
// output column `first`), zero where they are padding; null when every lane
// reads padding. Stride 1: one (masked) load. Stride 2: the two vectors that
// cover the lanes' inputs, and their even elements; of a clean block every
// element but the last of the second vector lies inside the image (each is
// followed by one a lane reads), so the loads need no mask there.
Value* ConvEmitter::loadInputs(Value* rowStart, Value* ox0, int p, int64_t first, int64_t kx, bool clean) {
  const int64_t lanes = t_.lanes, stride = c_.strideW;
  Value* column = b_.CreateAdd(b_.CreateMul(b_.CreateAdd(ox0, i64(int64_t{p} * lanes)), i64(stride)), i64(tapOffset(kx)));
  Value* at = b_.CreateAdd(rowStart, column);
  if (stride == 1) {
    llvm::Constant* m = clean ? code_.mask([](int64_t) { return true; })
                              : code_.mask([&](int64_t l) { return laneReads(first + l, kx); });
    return m->isNullValue() ? nullptr : code_.load(code_.vectorAt(x_, at), m);
  }
  // Element e of the 2 * lanes the two vectors cover is lane e / 2's input
  // when e is even.
  auto needed = [&](int64_t e) { return e % 2 == 0 && laneReads(first + e / 2, kx); };
  llvm::Constant* m0 = clean ? code_.mask([](int64_t) { return true; }) : code_.mask([&](int64_t e) { return needed(e); });
  llvm::Constant* m1 = clean ? code_.mask([&](int64_t e) { return e != lanes - 1; })
                             : code_.mask([&](int64_t e) { return needed(lanes + e); });
  if (m0->isNullValue() && m1->isNullValue()) return nullptr;
  Value* v0 = code_.load(code_.vectorAt(x_, at), m0);
  Value* v1 = code_.load(code_.vectorAt(x_, b_.CreateAdd(at, i64(lanes))), m1);
  std::vector<int> even;
  for (int64_t l = 0; l < lanes; ++l) even.push_back(static_cast<int>(2 * l));
  return b_.CreateShuffleVector(v0, v1, even);
}

}  // namespace

bool directConvSupports(const ConvSpec& c) {
  if (c.direction != ConvDirection::Forward) return false;  // backward: im2col + GEMM
  if (!directConvComputes(c.channelsLast, c.strideW) || c.groups < 1 || c.c % c.groups != 0 || c.o % c.groups != 0)
    return false;
  return c.n >= 1 && c.ow >= 1 && c.oh >= 1 && c.kh >= 1 && c.kw >= 1 && c.strideH >= 1;
}

bool directConvFits(const ConvSpec& c, DType storage, const ConvTiling& t) {
  if (storage != DType::F32 && storage != DType::F16 && storage != DType::BF16) return false;
  return directConvSupports(c) && directConvRowsFill(c.ow, t.lanes, t.partialVectors);
}

std::function<bool(const ConvSpec&, DType)> im2colWorkspaces(const ConvTiling& t) {
  return [t](const ConvSpec& c, DType dt) { return !directConvFits(c, dt, t); };
}

std::vector<size_t> directConvSteps(const Plan& plan, const ConvTiling& t) {
  std::vector<size_t> out;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& step = plan.steps[s];
    if (step.kind() == StepKind::Conv &&
        directConvFits(step.conv(), plan.buffers[static_cast<size_t>(step.conv().y)].type.dtype, t))
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
  auto fn = ConvEmitter(conv.spec, t, module, symbol).run();
  if (!fn) return fail(fn.error().message());
  return fn;
}

std::string describeDirectConv(const ConvSpec& c, const ConvTiling& t) {
  const int64_t og = c.o / std::max<int64_t>(c.groups, 1);
  return str("direct, blocks of ", std::min<int64_t>(t.channels, og), " channels x ",
             std::min<int64_t>(t.vectors, ceilDiv(c.ow, t.lanes)), "x", t.lanes, " pixels");
}

}  // namespace kfuse::cpu
