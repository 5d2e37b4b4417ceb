#include "codegen/cpu/conv_emitter.h"

#include <algorithm>
#include <functional>

#include "codegen/cpu/conv_blocks.h"
#include "codegen/cpu/llvm_emitter.h"
#include "codegen/cpu/vector_code.h"
#include "ir/support/strings.h"
#include "exec/packed_filter.h"
#include "passes/direct_conv.h"

namespace kfuse::cpu {
namespace {

using llvm::Value;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The block tiling `t` gives convolution c (ConvTiling::forConv).
ConvTiling blockTiling(const ConvSpec& c, const ConvTiling& t) {
  return t.forConv(c.groups, c.kh * c.kw, c.wholePlanes(), !c.liveTaps.empty());
}

// The longest filter whose rows the row code unrolls to leave dead taps out
// (a 3x3 stride-2 layer over its phases: 2 rows).
constexpr int64_t kUnrolledFilterRows = 2;

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
  ConvEmitter(const DirectConv& conv, llvm::Module& m, const std::string& symbol)
      : conv_(conv), c_(conv.spec), t_(blockTiling(c_, conv.tiling)), code_(m, symbol, conv.tiling.lanes), b_(code_.b()),
        cg_(c_.c / c_.groups), og_(c_.o / c_.groups) {}

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
  struct WeightRow {
    Value* base;
    int64_t offset;
  };
  WeightRow weightRow(Value* o0, Value* ci, Value* ky);
  Value* weightIndex(const WeightRow& row, int co, int64_t kx);

  void emitRow(Value* n, Value* g, Value* oy);
  void runPlanes();
  void runPlaneUnits();
  int64_t planeChunkChannels() const;
  void planeChannels(const char* name, const std::function<void(Value*, int64_t)>& body);
  void initPlaneAccumulators(Value* n, Value* o0, int channels, Value* q0, int64_t firstPixel, int vectors);
  Value* planeBlockPtr(Value* n, Value* o0, int co, Value* q0, int p);
  void emitPlanes(Value* n, Value* g, Value* o0, int channels);
  void emitPlaneBlock(Value* n, Value* g, Value* o0, int channels, int64_t q0, int vectors);
  void emitInteriorBlock(Value* n, Value* g, Value* o0, int channels, Value* i);
  void storePlaneBlock(Value* n, Value* o0, int channels, Value* q0, int64_t firstPixel, int vectors);
  Value* loadPlaneInputs(Value* planeStart, int64_t q0, int64_t ky, int64_t kx);
  // Whether lane l of the vector at pixel q of the flattened plane reads an
  // input inside the image at tap (ky, kx); and the tap's offset.
  bool planeLaneReads(int64_t q, int64_t ky, int64_t kx) const;
  int64_t planeTapOffset(int64_t ky, int64_t kx) const {
    return (ky * c_.dilH - c_.padTop) * c_.wd + kx * c_.dilW - c_.padLeft;
  }
  void planInteriorBlocks();
  void initAccumulators(Value* o0, int channels, int vectors);
  Value* inputPlane(Value* n, Value* g, Value* ci);
  void foldTap(Value* o0, Value* ci, Value* ky, int64_t kx, int channels, const std::vector<Value*>& in);
  void emitBlock(Value* n, Value* g, Value* oy, Value* o0, int channels, const ColumnBlock& blk, Value* ox0);
  void emitTaps(Value* n, Value* g, Value* iy, Value* ky, int64_t knownKy, Value* o0, int channels,
                const ColumnBlock& blk, Value* ox0);
  void runEpilogue(Value* n, Value* o0, Value* oy, int64_t channels, int64_t rows);
  // body() for a block of `vectors` vectors of which `live` lanes are
  // computed: in vectors of half the lanes where the tiling says so
  // (ConvTiling::halveLastVector), with accumulators of that width.
  void blockOf(int vectors, int64_t live, const std::function<void()>& body);
  std::vector<llvm::AllocaInst*> accHalf_;

  const DirectConv& conv_;
  const ConvSpec& c_;
  ConvTiling t_;
  VectorCode code_;
  llvm::IRBuilder<>& b_;
  int64_t cg_, og_;
  Value *x_ = nullptr, *w_ = nullptr, *bias_ = nullptr, *y_ = nullptr;
  std::vector<llvm::AllocaInst*> acc_;  // channel-major, t_.vectors per channel
  std::vector<Value*> epilogueBuffers_;  // the epilogue kernel's, as byte pointers
  Status epilogueStatus_ = Status::ok();  // the first error of runEpilogue
  // Whole planes: blocks [interiorLo_, interiorHi_) of t_.vectors whole
  // vectors read nothing outside the plane at any tap, and run as one loop
  // whose lanes that read padding are zeroed by a mask from interiorMasks_
  // ([block - interiorLo_][tap][vector] of lanes x i32), except the
  // (tap, vector) pairs in which every such lane reads the image.
  int64_t interiorLo_ = 0, interiorHi_ = 0;
  llvm::GlobalVariable* interiorMasks_ = nullptr;
  std::vector<bool> interiorClean_;  // [tap][vector]
  // Whole planes folded in chunks of input channels (planeChunkChannels):
  // this chunk's first channel of the group, and whether it is the first
  // chunk (the others start from the partial sums in y). Null: one chunk.
  Value *ciBegin_ = nullptr, *firstChunk_ = nullptr, *lastChunk_ = nullptr;
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

// OIHW: w[o, ci, ky, kx]; OHWI: w[o, ky, kx, ci]. The index of (o0 + co,
// ci, ky, kx) is `base` plus a constant per channel and tap: emitted once
// per tap rather than whole per filter value, the index arithmetic was 9 of
// a 3x3 convolution's 20 thousand instructions and most of its compile time
// (InstCombine folds it back to this form).
ConvEmitter::WeightRow ConvEmitter::weightRow(Value* o0, Value* ci, Value* ky) {
  const int64_t taps = c_.kh * c_.kw;
  const int64_t perO = cg_ * taps, perCi = c_.filterLast ? 1 : taps, perKy = c_.filterLast ? c_.kw * cg_ : c_.kw;
  WeightRow row{b_.CreateAdd(b_.CreateMul(o0, i64(perO)), b_.CreateMul(ci, i64(perCi))), 0};
  if (auto* known = llvm::dyn_cast<llvm::ConstantInt>(ky))
    row.offset = known->getSExtValue() * perKy;
  else
    row.base = b_.CreateAdd(row.base, b_.CreateMul(ky, i64(perKy)));
  return row;
}

Value* ConvEmitter::weightIndex(const WeightRow& row, int co, int64_t kx) {
  const int64_t perO = cg_ * c_.kh * c_.kw, perKx = c_.filterLast ? cg_ : 1;
  return b_.CreateAdd(row.base, i64(row.offset + co * perO + kx * perKx));
}

Expected<llvm::Function*> ConvEmitter::run() {
  ConvArguments a = convArguments(code_, conv_);
  x_ = a.x, w_ = a.w, bias_ = a.bias, y_ = a.y, epilogueBuffers_ = std::move(a.epilogue);
  for (int i = 0; i < t_.channels * t_.vectors; ++i) acc_.push_back(code_.accumulator());
  if (c_.wholePlanes()) {
    planInteriorBlocks();
    runPlanes();
  } else {
    // Work units (exec/parallel.h): output rows, (image, group, row) row-major.
    code_.loopRange(code_.begin(), code_.end(), "row", [&](Value* u) {
      Value* oy = b_.CreateURem(u, i64(c_.oh));
      Value* ng = b_.CreateUDiv(u, i64(c_.oh));
      emitRow(b_.CreateUDiv(ng, i64(c_.groups)), b_.CreateURem(ng, i64(c_.groups)), oy);
    });
  }
  KF_RETURN_IF_ERROR(epilogueStatus_);
  return code_.finish();
}

void ConvEmitter::blockOf(int vectors, int64_t live, const std::function<void()>& body) {
  if (!t_.halveLastVector || vectors != 1 || t_.lanes < 8 || 2 * live > t_.lanes) return body();
  code_.halved([&] {
    if (accHalf_.empty())
      for (size_t i = 0; i < acc_.size(); ++i) accHalf_.push_back(code_.accumulator());
    std::swap(acc_, accHalf_);
    body();
    std::swap(acc_, accHalf_);
  });
}

// The epilogue over output channels [o0, o0 + channels) of image n, rows
// [oy, oy + rows) (callConvEpilogue).
void ConvEmitter::runEpilogue(Value* n, Value* o0, Value* oy, int64_t channels, int64_t rows) {
  if (!conv_.epilogue) return;
  // Called from the emitters' loop bodies, which return nothing: the first
  // error is kept for run().
  if (Status s = callConvEpilogue(code_, conv_, epilogueBuffers_, n, o0, oy, channels, rows); !s && epilogueStatus_)
    epilogueStatus_ = s;
}

// Every output channel of group g in output row oy: blocks of t_.channels,
// then the remainder.
void ConvEmitter::emitRow(Value* n, Value* g, Value* oy) {
  const std::vector<ColumnBlock> blocks = columnBlocks();
  auto channelBlock = [&](Value* o0, int channels) {
    for (const ColumnBlock& blk : blocks) {
      const int64_t width = int64_t{blk.vectors} * t_.lanes;
      code_.loop(blk.count, "ox", [&](Value* i) {
        blockOf(blk.vectors, c_.ow - blk.ox0, [&] {
          emitBlock(n, g, oy, o0, channels, blk, b_.CreateAdd(i64(blk.ox0), b_.CreateMul(i, i64(width))));
        });
      });
    }
    runEpilogue(n, o0, oy, channels, 1);
  };
  Value* groupBase = b_.CreateMul(g, i64(og_));
  const int64_t full = og_ / t_.channels;
  if (full > 0)
    code_.loop(full, "o", [&](Value* ob) {
      channelBlock(b_.CreateAdd(groupBase, b_.CreateMul(ob, i64(t_.channels))), t_.channels);
    });
  if (const int64_t rest = og_ % t_.channels; rest != 0)
    code_.part(static_cast<double>(rest) / static_cast<double>(og_),
               [&] { channelBlock(b_.CreateAdd(groupBase, i64(full * t_.channels)), static_cast<int>(rest)); });
}

// Output channels [o0, o0 + channels) at columns `blk` (starting at ox0) of
// row oy: the bias, plus every tap of every input row inside the image.
void ConvEmitter::emitBlock(Value* n, Value* g, Value* oy, Value* o0, int channels, const ColumnBlock& blk,
                            Value* ox0) {
  initAccumulators(o0, channels, blk.vectors);
  auto filterRow = [&](Value* ky, int64_t knownKy) {
    Value* iy = b_.CreateAdd(b_.CreateMul(oy, i64(c_.strideH)), b_.CreateSub(b_.CreateMul(ky, i64(c_.dilH)), i64(c_.padTop)));
    // Rows above or below the image read padding: nothing to add.
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    auto* inside = llvm::BasicBlock::Create(b_.getContext(), "row", fn);
    auto* next = llvm::BasicBlock::Create(b_.getContext(), "row.end", fn);
    b_.CreateCondBr(b_.CreateICmpULT(iy, i64(c_.h)), inside, next);
    b_.SetInsertPoint(inside);
    emitTaps(n, g, iy, ky, knownKy, o0, channels, blk, ox0);
    b_.CreateBr(next);
    b_.SetInsertPoint(next);
  };
  // With live taps (a first layer over its input's phases) each row of a
  // short filter is its own code, leaving out its dead taps. Longer ones
  // stay a loop and fold their zeros: ResNet's 7x7 first layer (4 phase
  // rows, 49 of 64 taps live) compiled 1.5-2 s longer unrolled.
  if (c_.liveTaps.empty() || c_.kh > kUnrolledFilterRows)
    code_.loop(c_.kh, "ky", [&](Value* ky) { filterRow(ky, -1); });
  else
    for (int64_t ky = 0; ky < c_.kh; ++ky) filterRow(i64(ky), ky);
  for (int co = 0; co < channels; ++co) {
    Value* row = b_.CreateMul(b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.CreateMul(n, i64(c_.o)), b_.CreateAdd(o0, i64(co))),
                                                        i64(c_.oh)),
                                           oy),
                              i64(c_.ow));
    for (int p = 0; p < blk.vectors; ++p) {
      Value* v = b_.CreateLoad(code_.vec(), acc_[static_cast<size_t>(co * t_.vectors + p)]);
      const int64_t first = blk.ox0 + int64_t{p} * code_.lanes();  // of the block's first copy
      Value* ptr = code_.vectorAt(y_, b_.CreateAdd(row, b_.CreateAdd(ox0, i64(int64_t{p} * code_.lanes()))));
      code_.store(v, ptr, blk.clean ? code_.mask([](int64_t) { return true; })
                                    : code_.mask([&](int64_t l) { return first + l < c_.ow; }));
    }
  }
}

// The bias of channels [o0, o0 + channels), or zero, in the block's
// accumulators.
void ConvEmitter::initAccumulators(Value* o0, int channels, int vectors) {
  for (int co = 0; co < channels; ++co) {
    Value* init = llvm::Constant::getNullValue(code_.vec());
    if (bias_) init = code_.splat(code_.loadFloat(bias_, b_.CreateAdd(o0, i64(co))));
    for (int p = 0; p < vectors; ++p) b_.CreateStore(init, acc_[static_cast<size_t>(co * t_.vectors + p)]);
  }
}

// Input channel ci of group g of image n: its plane's index in x.
Value* ConvEmitter::inputPlane(Value* n, Value* g, Value* ci) {
  return b_.CreateAdd(b_.CreateMul(n, i64(c_.c)), b_.CreateAdd(b_.CreateMul(g, i64(cg_)), ci));
}

// One tap's inputs (a vector per block vector, null where every lane reads
// padding) folded into the accumulators of channels [o0, o0 + channels),
// times a broadcast filter value per channel; nothing when all are null.
void ConvEmitter::foldTap(Value* o0, Value* ci, Value* ky, int64_t kx, int channels, const std::vector<Value*>& in) {
  if (std::all_of(in.begin(), in.end(), [](Value* x) { return x == nullptr; })) return;
  const WeightRow row = weightRow(o0, ci, ky);
  for (int co = 0; co < channels; ++co) {
    Value* wv = code_.splat(code_.loadFloat(w_, weightIndex(row, co, kx)));
    for (size_t p = 0; p < in.size(); ++p)
      if (in[p]) code_.multiplyAdd(acc_[static_cast<size_t>(co * t_.vectors) + p], wv, in[p]);
  }
}

// Input channels a whole-plane convolution folds over all its output
// channels before the next ones: as many as fill tiling.chunkBytes with
// their planes, so that they are read from L2 by every block of output
// channels; all of the group where they fit. Each block otherwise read
// the group's whole input: ResNet-50's 1x1 layers over 1024 channels of
// 14x14 (800 KB) ran at 53 GFLOP/s, its 3x3 layers over 256 at 80.
// Chunks divide the group, so that every channel loop keeps a constant
// count, and a chunk's first channel is opaque to LLVM's scalar evolution
// (a freeze): with a shorter last chunk (run-time bounds) and the chunk's
// index in every address, LLVM spent up to five times as long on each
// chunked convolution (EfficientNet-B0 compiled in 9.7 s instead of 3.1).
// Without a divisor of at least half what fits, one chunk.
int64_t ConvEmitter::planeChunkChannels() const {
  // In whole periods of the live taps' pattern (planeChannels unrolls
  // one), of which only the channels with a live tap are read.
  const int64_t period = c_.livePeriod(), units = cg_ / period;
  int64_t read = 0;
  for (int64_t phase = 0; phase < period; ++phase) {
    bool any = false;
    for (int64_t t = 0; t < c_.kh * c_.kw; ++t) any = any || c_.liveTap(phase, t / c_.kw, t % c_.kw);
    read += any;
  }
  const int64_t planeBytes = c_.h * c_.wd * int64_t{sizeof(float)};
  const int64_t fit = std::max<int64_t>(1, t_.chunkBytes / (planeBytes * std::max<int64_t>(read, 1)));
  const int64_t per = chunkDividing(units, fit);
  return per == units ? cg_ : per * period;
}

// Whole planes, in chunks of input channels where they do not fit.
void ConvEmitter::runPlanes() {
  const int64_t per = planeChunkChannels();
  if (per == cg_) return runPlaneUnits();
  code_.loop(cg_ / per, "chunk", [&](Value* k) {
    ciBegin_ = b_.CreateFreeze(b_.CreateMul(k, i64(per)));  // planeChunkChannels says why
    firstChunk_ = b_.CreateICmpEQ(k, i64(0));
    lastChunk_ = b_.CreateICmpEQ(k, i64(cg_ / per - 1));
    runPlaneUnits();
  }, /*rolled=*/true);  // each chunk's code is the whole convolution's
}

// The group's input channels, or this chunk's, with each one's place in
// the live taps' period (ConvSpec::liveTap): the loop runs over periods,
// their channels unrolled, so that each channel's dead taps are left out.
void ConvEmitter::planeChannels(const char* name, const std::function<void(Value*, int64_t)>& body) {
  const int64_t period = c_.livePeriod(), count = ciBegin_ ? planeChunkChannels() : cg_;
  code_.loop(count / period, name, [&](Value* i) {
    Value* first = period == 1 ? i : b_.CreateMul(i, i64(period));
    if (ciBegin_) first = b_.CreateAdd(ciBegin_, first);
    for (int64_t phase = 0; phase < period; ++phase) body(phase == 0 ? first : b_.CreateAdd(first, i64(phase)), phase);
  });
}

// The accumulators of a plane block: the bias in the first chunk, the
// partial sums stored in y after the others (the same sums in the same
// order as in one chunk: float in registers, float in y). A select rather
// than a branch in every block; the first chunk's load of y is discarded.
void ConvEmitter::initPlaneAccumulators(Value* n, Value* o0, int channels, Value* q0, int64_t firstPixel,
                                        int vectors) {
  initAccumulators(o0, channels, vectors);
  if (!firstChunk_) return;
  const int64_t lanes = code_.lanes(), pixels = c_.oh * c_.ow;
  for (int co = 0; co < channels; ++co)
    for (int p = 0; p < vectors; ++p) {
      const int64_t first = firstPixel + p * lanes;
      llvm::AllocaInst* acc = acc_[static_cast<size_t>(co * t_.vectors + p)];
      Value* partial = code_.load(planeBlockPtr(n, o0, co, q0, p),
                                  code_.mask([&](int64_t l) { return firstPixel < 0 || first + l < pixels; }));
      b_.CreateStore(b_.CreateSelect(firstChunk_, b_.CreateLoad(code_.vec(), acc), partial), acc);
    }
}

// Where vector p of channel o0 + co's block at pixel q0 lies in y.
Value* ConvEmitter::planeBlockPtr(Value* n, Value* o0, int co, Value* q0, int p) {
  Value* planeStart = b_.CreateMul(b_.CreateAdd(b_.CreateMul(n, i64(c_.o)), b_.CreateAdd(o0, i64(co))),
                                   i64(c_.oh * c_.ow));
  return code_.vectorAt(y_, b_.CreateAdd(planeStart, b_.CreateAdd(q0, i64(p * code_.lanes()))));
}

// Whole planes (ConvSpec::wholePlanes). Work units (exec/parallel.h):
// output planes, (image, channel) row-major, in blocks of t_.channels
// channels where the range and the group allow and one channel elsewhere
// (a channel's sums are the same either way, so results do not depend on
// how the units are split).
void ConvEmitter::runPlaneUnits() {
  code_.unitSteps("plane", [&](Value* u, const std::function<void(int64_t)>& advance) {
    Value* n = b_.CreateUDiv(u, i64(c_.o));
    Value* o0 = b_.CreateURem(u, i64(c_.o));
    Value* g = b_.CreateUDiv(o0, i64(og_));
    auto path = [&](int channels) {
      emitPlanes(n, g, o0, channels);
      // Chunked, the sums are final in the last chunk only.
      if (!lastChunk_)
        runEpilogue(n, o0, i64(0), channels, c_.oh);
      else
        code_.when(lastChunk_, "epilogue", [&] { runEpilogue(n, o0, i64(0), channels, c_.oh); });
      advance(channels);
    };
    // Blocks of `wide` channels from each group's first, then its last
    // `rest` channels as one block; one channel at a time only where a
    // range of units starts or ends inside a block (threads' shares).
    const int wide = static_cast<int>(std::min<int64_t>(t_.channels, og_));
    const int rest = static_cast<int>(og_ % wide);
    Value* inGroup = b_.CreateURem(o0, i64(og_));
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    auto block = [&](int channels, Value* fits) {
      auto* taken = llvm::BasicBlock::Create(b_.getContext(), str("channels", channels), fn);
      auto* other = llvm::BasicBlock::Create(b_.getContext(), "", fn);
      b_.CreateCondBr(b_.CreateAnd(b_.CreateICmpSLE(b_.CreateAdd(u, i64(channels)), code_.end()), fits), taken,
                      other);
      b_.SetInsertPoint(taken);
      path(channels);
      b_.SetInsertPoint(other);
    };
    if (wide > 1) block(wide, b_.CreateICmpULE(b_.CreateAdd(inGroup, i64(wide)), i64(og_)));
    if (rest > 1)
      code_.part(static_cast<double>(rest) / og_, [&] { block(rest, b_.CreateICmpEQ(inGroup, i64(og_ - rest))); });
    code_.part(wide > 1 ? 0.0 : 1.0, [&] { path(1); });  // beside blocks, only at the ends of a range
  });
}

// Channels [o0, o0 + channels) of image n over the whole plane, in blocks
// of t_.vectors vectors: the blocks at the plane's edges as straight-line
// code (constant masks), those between as one loop.
void ConvEmitter::emitPlanes(Value* n, Value* g, Value* o0, int channels) {
  const int64_t pixels = c_.oh * c_.ow, width = int64_t{t_.vectors} * t_.lanes;
  auto edge = [&](int64_t b) {
    const int64_t q0 = b * width;
    const int vectors = static_cast<int>(std::min<int64_t>(t_.vectors, ceilDiv(pixels - q0, t_.lanes)));
    blockOf(vectors, pixels - q0, [&] { emitPlaneBlock(n, g, o0, channels, q0, vectors); });
  };
  const int64_t blocks = ceilDiv(pixels, width), interior = interiorHi_ - interiorLo_;
  const double edgeShare = static_cast<double>(blocks - interior) / static_cast<double>(blocks);
  code_.part(edgeShare, [&] {
    for (int64_t b = 0; b < interiorLo_; ++b) edge(b);
  });
  code_.loop(interior, "block", [&](Value* i) { emitInteriorBlock(n, g, o0, channels, i); });
  code_.part(edgeShare, [&] {
    for (int64_t b = std::max(interiorHi_, interiorLo_); b < blocks; ++b) edge(b);
  });
}

bool ConvEmitter::planeLaneReads(int64_t q, int64_t ky, int64_t kx) const {
  if (q >= c_.oh * c_.ow) return false;
  const int64_t iy = q / c_.ow + ky * c_.dilH - c_.padTop, ix = q % c_.ow + kx * c_.dilW - c_.padLeft;
  return iy >= 0 && iy < c_.h && ix >= 0 && ix < c_.wd;
}

// The interior blocks and their masks: a block is interior when its
// vectors are whole and every tap's loads lie inside the input plane.
void ConvEmitter::planInteriorBlocks() {
  const int64_t pixels = c_.oh * c_.ow, lanes = t_.lanes, vectors = t_.vectors, width = vectors * lanes;
  const int64_t taps = c_.kh * c_.kw;
  int64_t lowest = 0, highest = 0;
  for (int64_t ky = 0; ky < c_.kh; ++ky)
    for (int64_t kx = 0; kx < c_.kw; ++kx) {
      lowest = std::min(lowest, planeTapOffset(ky, kx));
      highest = std::max(highest, planeTapOffset(ky, kx));
    }
  auto interior = [&](int64_t b) {
    const int64_t q0 = b * width;
    return q0 + width <= pixels && q0 + lowest >= 0 && q0 + width + highest <= c_.h * c_.wd;
  };
  const int64_t blocks = ceilDiv(pixels, width);
  interiorLo_ = 0;
  while (interiorLo_ < blocks && !interior(interiorLo_)) ++interiorLo_;
  interiorHi_ = interiorLo_;
  while (interiorHi_ < blocks && interior(interiorHi_)) ++interiorHi_;
  interiorClean_.assign(static_cast<size_t>(taps * vectors), true);
  std::vector<llvm::Constant*> bits;
  llvm::Type* i32 = b_.getInt32Ty();
  for (int64_t b = interiorLo_; b < interiorHi_; ++b)
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t p = 0; p < vectors; ++p)
        for (int64_t l = 0; l < lanes; ++l) {
          const bool on = planeLaneReads(b * width + p * lanes + l, t / c_.kw, t % c_.kw);
          if (!on) interiorClean_[static_cast<size_t>(t * vectors + p)] = false;
          bits.push_back(llvm::ConstantInt::get(i32, on ? 0xFFFFFFFFu : 0u));
        }
  if (bits.empty()) return;
  llvm::Module& m = *b_.GetInsertBlock()->getModule();
  auto* type = llvm::ArrayType::get(i32, bits.size());
  interiorMasks_ = new llvm::GlobalVariable(m, type, /*isConstant=*/true, llvm::GlobalValue::PrivateLinkage,
                                            llvm::ConstantArray::get(type, bits), "plane.masks");
  interiorMasks_->setAlignment(llvm::Align(64));
}

// Interior block interiorLo_ + i: whole loads at every tap, the lanes that
// read padding zeroed by the block's masks, and whole stores.
void ConvEmitter::emitInteriorBlock(Value* n, Value* g, Value* o0, int channels, Value* i) {
  const int64_t lanes = t_.lanes, vectors = t_.vectors, width = vectors * lanes, taps = c_.kh * c_.kw;
  Value* q0 = b_.CreateMul(b_.CreateAdd(i, i64(interiorLo_)), i64(width));
  auto* maskVec = llvm::FixedVectorType::get(b_.getInt32Ty(), static_cast<unsigned>(lanes));
  Value* masks = b_.CreateBitCast(interiorMasks_, b_.getInt32Ty()->getPointerTo());
  initPlaneAccumulators(n, o0, channels, q0, -1, t_.vectors);
  planeChannels("ci", [&](Value* ci, int64_t phase) {
    Value* base = b_.CreateAdd(b_.CreateMul(inputPlane(n, g, ci), i64(c_.h * c_.wd)), q0);
    for (int64_t t = 0; t < taps; ++t) {
      const int64_t ky = t / c_.kw, kx = t % c_.kw;
      if (!c_.liveTap(phase, ky, kx)) continue;
      std::vector<Value*> in;
      for (int64_t p = 0; p < vectors; ++p) {
        Value* v = code_.load(code_.vectorAt(x_, b_.CreateAdd(base, i64(planeTapOffset(ky, kx) + p * lanes))),
                              code_.mask([](int64_t) { return true; }));
        if (!interiorClean_[static_cast<size_t>(t * vectors + p)]) {
          Value* at = b_.CreateMul(b_.CreateAdd(b_.CreateMul(i, i64(taps * vectors)), i64(t * vectors + p)), i64(lanes));
          Value* m = b_.CreateAlignedLoad(maskVec, b_.CreateBitCast(b_.CreateGEP(b_.getInt32Ty(), masks, at),
                                                                    maskVec->getPointerTo()),
                                          llvm::Align(4));
          v = b_.CreateBitCast(b_.CreateAnd(b_.CreateBitCast(v, maskVec), m), code_.vec());
        }
        in.push_back(v);
      }
      foldTap(o0, ci, i64(ky), kx, channels, in);
    }
  });
  storePlaneBlock(n, o0, channels, q0, -1, t_.vectors);
}

// The block's accumulators to y at pixel q0 of each channel's plane;
// `firstPixel` (q0 when known, -1 for an interior block, whose vectors are
// whole) masks the lanes past the plane's end.
void ConvEmitter::storePlaneBlock(Value* n, Value* o0, int channels, Value* q0, int64_t firstPixel, int vectors) {
  const int64_t lanes = code_.lanes(), pixels = c_.oh * c_.ow;
  for (int co = 0; co < channels; ++co)
    for (int p = 0; p < vectors; ++p) {
      Value* v = b_.CreateLoad(code_.vec(), acc_[static_cast<size_t>(co * t_.vectors + p)]);
      const int64_t first = firstPixel + p * lanes;
      code_.store(v, planeBlockPtr(n, o0, co, q0, p),
                  code_.mask([&](int64_t l) { return firstPixel < 0 || first + l < pixels; }));
    }
}

// Pixels [q0, q0 + vectors * lanes) of the flattened plane: the bias, plus
// every tap of every input channel of the group, taps whose every lane
// reads padding left out.
void ConvEmitter::emitPlaneBlock(Value* n, Value* g, Value* o0, int channels, int64_t q0, int vectors) {
  const int64_t lanes = code_.lanes();
  initPlaneAccumulators(n, o0, channels, i64(q0), q0, vectors);
  planeChannels("ci", [&](Value* ci, int64_t phase) {
    Value* start = b_.CreateMul(inputPlane(n, g, ci), i64(c_.h * c_.wd));
    for (int64_t ky = 0; ky < c_.kh; ++ky)
      for (int64_t kx = 0; kx < c_.kw; ++kx) {
        if (!c_.liveTap(phase, ky, kx)) continue;
        std::vector<Value*> in;
        for (int p = 0; p < vectors; ++p) in.push_back(loadPlaneInputs(start, q0 + p * lanes, ky, kx));
        foldTap(o0, ci, i64(ky), kx, channels, in);
      }
  });
  storePlaneBlock(n, o0, channels, i64(q0), q0, vectors);
}

// The inputs tap (ky, kx) reads for the vector of pixels [q, q + lanes) of
// the flattened plane, zero where they are padding (or past the plane's
// end); null when every lane reads padding. Every lane reads the pixel a
// fixed distance from its own (rows are as wide in and out): inside the
// input plane, one whole load with the padding lanes zeroed; at the
// plane's edges, a masked load (nothing outside the plane is touched).
Value* ConvEmitter::loadPlaneInputs(Value* planeStart, int64_t q, int64_t ky, int64_t kx) {
  const int64_t lanes = code_.lanes();
  llvm::Constant* m = code_.mask([&](int64_t l) { return planeLaneReads(q + l, ky, kx); });
  if (m->isNullValue()) return nullptr;
  const int64_t offset = q + planeTapOffset(ky, kx);
  Value* ptr = code_.vectorAt(x_, b_.CreateAdd(planeStart, i64(offset)));
  if (offset < 0 || offset + lanes > c_.h * c_.wd) return code_.load(ptr, m);
  Value* v = code_.load(ptr, code_.mask([](int64_t) { return true; }));
  return m->isAllOnesValue() ? v : b_.CreateSelect(m, v, llvm::Constant::getNullValue(code_.vec()));
}

// For one filter row ky (input row iy, inside the image), every input
// channel of the group: per tap, a vector of inputs per block vector (masked
// where the tap reads padding), times a broadcast filter value per channel.
// With live taps, `knownKy` (the filter row, -1 where it varies at run
// time) and one period of channels per iteration, each channel leaving out
// its dead taps (ConvSpec::liveTap).
void ConvEmitter::emitTaps(Value* n, Value* g, Value* iy, Value* ky, int64_t knownKy, Value* o0, int channels,
                           const ColumnBlock& blk, Value* ox0) {
  const int64_t period = knownKy < 0 ? 1 : c_.livePeriod();
  code_.loop(cg_ / period, "ci", [&](Value* i) {
    for (int64_t phase = 0; phase < period; ++phase) {
      Value* ci = period == 1 ? i : b_.CreateAdd(b_.CreateMul(i, i64(period)), i64(phase));
      Value* rowStart = nullptr;
      for (int64_t kx = 0; kx < c_.kw; ++kx) {
        if (knownKy >= 0 && !c_.liveTap(phase, knownKy, kx)) continue;
        if (!rowStart) rowStart = b_.CreateMul(b_.CreateAdd(b_.CreateMul(inputPlane(n, g, ci), i64(c_.h)), iy), i64(c_.wd));
        std::vector<Value*> in;
        for (int p = 0; p < blk.vectors; ++p)
          in.push_back(loadInputs(rowStart, ox0, p, blk.ox0 + int64_t{p} * code_.lanes(), kx, blk.clean));
        foldTap(o0, ci, ky, kx, channels, in);
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
  const int64_t lanes = code_.lanes(), stride = c_.strideW;
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

ConvArguments convArguments(VectorCode& code, const DirectConv& conv) {
  ConvArguments a;
  a.x = code.floatBuffer(0, "x");
  a.w = code.floatBuffer(1, conv.packedFilter ? "w_packed" : "w");
  if (conv.spec.bias >= 0) a.bias = code.floatBuffer(2, "bias");
  a.y = code.floatBuffer(3, "y");
  if (conv.epilogue)
    for (size_t i = 0; i < conv.epilogue->buffers.size(); ++i)
      a.epilogue.push_back(code.byteBuffer(static_cast<int>(4 + i), conv.epilogue->buffers[i].name.c_str()));
  return a;
}

int64_t chunkDividing(int64_t count, int64_t fit) {
  if (count <= fit) return count;
  int64_t per = fit;
  while (count % per != 0) --per;
  return 2 * per >= fit ? per : count;
}

Status callConvEpilogue(VectorCode& code, const DirectConv& conv, const std::vector<Value*>& buffers, Value* n,
                        Value* o0, Value* oy, int64_t channels, int64_t rows, Value* ox0, int64_t cols) {
  const kernel::Kernel& k = *conv.epilogue;
  if (!ox0) cols = conv.spec.ow;
  kernel::Kernel cut = convBlockKernel(k, conv.blocks, channels, rows, cols);
  cut.name = str(conv.name, "_epilogue_", channels, "x", rows, ox0 ? str("x", cols) : std::string());
  llvm::IRBuilder<>& b = code.b();
  std::vector<Value*> moved;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const std::array<int64_t, 4>& s = conv.blocks.strides[i];
    const auto bytes = static_cast<int64_t>(dtypeSize(k.buffers[i].type.dtype));
    Value* at = b.CreateAdd(b.CreateMul(n, code.i64(s[0] * bytes)),
                            b.CreateAdd(b.CreateMul(o0, code.i64(s[1] * bytes)), b.CreateMul(oy, code.i64(s[2] * bytes))));
    if (ox0) at = b.CreateAdd(at, b.CreateMul(ox0, code.i64(s[3] * bytes)));
    moved.push_back(b.CreateGEP(b.getInt8Ty(), buffers[i], at));
  }
  return code.callEpilogue(cut, moved);
}

bool directConvSupports(const ConvSpec& c) {
  if (c.direction != ConvDirection::Forward) return false;  // backward: im2col + GEMM
  if (!directConvComputes(c.channelsLast, c.strideW) || c.groups < 1 || c.c % c.groups != 0 || c.o % c.groups != 0)
    return false;
  return c.n >= 1 && c.ow >= 1 && c.oh >= 1 && c.kh >= 1 && c.kw >= 1 && c.strideH >= 1;
}

bool directConvFits(const ConvSpec& c, DType storage, const ConvTiling& t) {
  if (storage != DType::F32 && storage != DType::F16 && storage != DType::BF16) return false;
  if (!directConvSupports(c)) return false;
  // Strided layers the CPU packs (ops::packedFilterStrided) run directly,
  // packed or, where the plan keeps the filter as it is (a training step's),
  // with pixels across the lanes: ResNet-18's stride-2 3x3 layers over
  // 14- and 7-pixel output rows took 1432 and 1725 us so in a training step,
  // 1460 and 1786 as im2col + GEMM (Zen 4, one thread).
  if (t.packedTaps && packedFilterShape(c)) return true;
  if (c.wholePlanes() || c.pointwisePanels()) return directConvPlaneFills(c.oh * c.ow, t.lanes);
  return directConvRowsFill(c.ow, t.lanes, t.partialVectors);
}

std::function<bool(const ConvSpec&, DType)> im2colWorkspaces(const ConvTiling& t) {
  return [t](const ConvSpec& c, DType dt) { return !directConvFits(c, dt, t); };
}

PackedFilterPolicy packedFilterPolicy(const ConvTiling& t) {
  return [t](const ConvSpec& c) { return c.pointwise() || t.packedTaps; };
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
  if (conv.epilogue && conv.blocks.strides.size() != conv.epilogue->buffers.size())
    return fail("the epilogue's blocks do not match its buffers");
  if (conv.packedFilter && !packedFilterShape(conv.spec)) return fail("has no form with a packed filter (exec/packed_filter.h)");
  auto fn = conv.packedFilter            ? emitPointwiseConv(conv, module, symbol)
            : conv.spec.pointwisePanels() ? emitPanelConv(conv, module, symbol)
                                          : ConvEmitter(conv, module, symbol).run();
  if (!fn) return fail(fn.error().message());
  return fn;
}

DirectConv directConvOf(const Plan& plan, size_t step, std::string name, const ConvTiling& t) {
  const Step& s = plan.steps[step];
  DirectConv conv{std::move(name), s.conv(), t};
  conv.packedFilter = packedFilterFits(plan, step);
  if (auto blocks = convEpilogue(plan, step)) {
    conv.epilogue = &plan.kernels[static_cast<size_t>(s.kernels[0])];
    conv.blocks = std::move(*blocks);
  }
  return conv;
}

std::string describeDirectConv(const ConvSpec& c, const ConvTiling& tiling, bool epilogue, bool packedFilter) {
  if (packedFilter)
    return str("direct, packed filter, blocks of ", std::min<int64_t>(tiling.pointwisePixels, c.oh * c.ow),
               " pixels x ", std::min<int64_t>(tiling.pointwiseVectors, c.o / tiling.lanes), "x", tiling.lanes,
               " channels", epilogue ? ", epilogue per block" : "");
  if (c.pointwisePanels()) {
    const ConvTiling t = panelBlock(tiling);
    return str("direct, panels of ", ops::kPointwisePanelPixels, " pixels x ", pointwisePanelChunk(c),
               " input channels, blocks of ", std::min<int64_t>(t.channels, c.o), " channels x ", t.vectors, "x",
               t.lanes, " pixels", epilogue ? ", epilogue per block" : "");
  }
  const ConvTiling t = blockTiling(c, tiling);
  const int64_t og = c.o / std::max<int64_t>(c.groups, 1);
  const bool whole = c.wholePlanes();
  return str("direct, ", whole ? str("whole ", c.oh, "x", c.ow, " planes, ") : std::string(), "blocks of ",
             std::min<int64_t>(t.channels, og), " channels x ",
             std::min<int64_t>(t.vectors, ceilDiv(whole ? c.oh * c.ow : c.ow, t.lanes)), "x", t.lanes, " pixels",
             epilogue ? ", epilogue per block" : "");
}

}  // namespace kfuse::cpu
