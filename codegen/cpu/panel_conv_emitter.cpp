// 1x1 convolutions over whole planes to no more channels than they read,
// their filter as it is (ConvSpec::pointwisePanels): pixels across the lanes, in work units of
// ops::kPointwisePanelPixels pixels of the flattened plane of one image
// (exec/parallel.h), every output channel each.
//
// Per unit and chunk of input channels, the unit's columns of the chunk's
// planes are copied into a contiguous panel in the frame; then every block
// of output channels (ConvTiling's rows block: channels x vectors) folds the
// chunk from the panel, one broadcast filter value per channel and input
// channel, its sums kept in y between chunks. After the last chunk each
// block of channels runs the epilogue over its unit's pixels, 1-2 KB in the
// first-level cache.
//
// Why a panel: the planes lie a plane apart (3 KB over 28x28), so a
// block's inputs read in place alias in the first-level cache's sets and,
// over hundreds of channels, do not fit in it; the panel holds them
// contiguous and every block of output channels reads them from there.
// bench/pointwise_probe.c's `panels` against blocks reading in place: 11-22%
// faster over 28x28 and 14x14 (Xeon, Emerald Rapids). And why units of
// pixels: the whole-plane code this replaces split a layer by output
// channels, so two threads each read the whole input, half of it written by
// the other core in the step before; here each reads its own pixels.
#include <algorithm>

#include "codegen/cpu/conv_blocks.h"
#include "codegen/cpu/llvm_emitter.h"
#include "ir/support/strings.h"

namespace kfuse::cpu {
namespace {

using llvm::Value;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

constexpr int64_t kUnit = ops::kPointwisePanelPixels;

// The panel's bytes at most (pointwisePanelChunk), of the first-level
// cache's 32-48 KB: 256 input channels of a unit.
constexpr int64_t kPanelBytes = 32 * 1024;

class PanelEmitter {
 public:
  PanelEmitter(const DirectConv& conv, llvm::Module& m, const std::string& symbol)
      : conv_(conv), c_(conv.spec), t_(panelBlock(conv.tiling)), code_(m, symbol, conv.tiling.lanes), b_(code_.b()),
        pixels_(c_.oh * c_.ow), lanes_(t_.lanes), width_(int64_t{t_.vectors} * lanes_),
        chunk_(pointwisePanelChunk(c_)) {}

  Expected<llvm::Function*> run();

 private:
  Value* i64(int64_t v) { return code_.i64(v); }
  void emitUnit(Value* n, Value* q0, int64_t cols);
  void pack(Value* n, Value* q0, Value* ci0, int64_t cols);
  void channelBlock(Value* n, Value* q0, Value* o0, int channels, Value* ci0, int64_t cols);
  void subBlock(Value* n, Value* q0, Value* o0, int channels, Value* ci0, int64_t s, int64_t cols);
  llvm::Constant* liveLanes(int64_t first, int64_t cols) {
    return code_.mask([&](int64_t l) { return first + l < cols; });
  }
  Value* yAt(Value* n, Value* o0, int co, Value* q0, int64_t offset);

  const DirectConv& conv_;
  const ConvSpec& c_;
  ConvTiling t_;
  VectorCode code_;
  llvm::IRBuilder<>& b_;
  int64_t pixels_, lanes_, width_, chunk_;
  Value *x_ = nullptr, *w_ = nullptr, *bias_ = nullptr, *y_ = nullptr, *panel_ = nullptr;
  std::vector<llvm::AllocaInst*> acc_;  // channel-major, t_.vectors per channel
  std::vector<Value*> epilogueBuffers_;
  // Chunked: whether this is the first chunk (the others start from the
  // sums in y) and the last (the sums are final). Null: one chunk.
  Value *firstChunk_ = nullptr, *lastChunk_ = nullptr;
  Status status_ = Status::ok();  // the first error of an epilogue
};

Expected<llvm::Function*> PanelEmitter::run() {
  ConvArguments a = convArguments(code_, conv_);
  x_ = a.x, w_ = a.w, bias_ = a.bias, y_ = a.y, epilogueBuffers_ = std::move(a.epilogue);
  for (int i = 0; i < t_.channels * t_.vectors; ++i) acc_.push_back(code_.accumulator());
  panel_ = b_.CreateBitCast(code_.frameSlot(code_.vec(), chunk_ * kUnit / lanes_, "panel"),
                            b_.getFloatTy()->getPointerTo());
  // Work units: (image, block of kUnit pixels) row-major; each image's last
  // may hold fewer pixels.
  const int64_t units = ops::pointwisePanelUnits(pixels_), tail = pixels_ - (units - 1) * kUnit;
  code_.loopRange(code_.begin(), code_.end(), "unit", [&](Value* u) {
    Value* n = b_.CreateUDiv(u, i64(units));
    Value* j = b_.CreateURem(u, i64(units));
    Value* q0 = b_.CreateMul(j, i64(kUnit));
    if (tail == kUnit) return emitUnit(n, q0, kUnit);
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    auto* whole = llvm::BasicBlock::Create(b_.getContext(), "whole", fn);
    auto* last = llvm::BasicBlock::Create(b_.getContext(), "last", fn);
    auto* done = llvm::BasicBlock::Create(b_.getContext(), "unit.end", fn);
    b_.CreateCondBr(b_.CreateICmpULT(j, i64(units - 1)), whole, last);
    b_.SetInsertPoint(whole);
    emitUnit(n, q0, kUnit);
    b_.CreateBr(done);
    b_.SetInsertPoint(last);
    code_.part(1.0 / static_cast<double>(units), [&] { emitUnit(n, q0, tail); });
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  });
  KF_RETURN_IF_ERROR(status_);
  return code_.finish();
}

// Pixels [q0, q0 + cols) of image n, every output channel: per chunk of
// input channels, the panel, then every block of output channels.
void PanelEmitter::emitUnit(Value* n, Value* q0, int64_t cols) {
  auto chunk = [&](Value* ci0) {
    pack(n, q0, ci0, cols);
    const int64_t full = c_.o / t_.channels, rest = c_.o % t_.channels;
    code_.loop(full, "o", [&](Value* ob) {
      channelBlock(n, q0, b_.CreateMul(ob, i64(t_.channels)), t_.channels, ci0, cols);
    });
    if (rest != 0)
      code_.part(static_cast<double>(rest) / static_cast<double>(c_.o),
                 [&] { channelBlock(n, q0, i64(full * t_.channels), static_cast<int>(rest), ci0, cols); });
  };
  const int64_t chunks = c_.c / chunk_;
  if (chunks == 1) return chunk(i64(0));
  code_.loop(chunks, "chunk", [&](Value* k) {
    // Opaque to scalar evolution, as conv_emitter.cpp's planeChunkChannels
    // says why: the chunk's index in every address slowed LLVM down.
    Value* ci0 = b_.CreateFreeze(b_.CreateMul(k, i64(chunk_)));
    firstChunk_ = b_.CreateICmpEQ(k, i64(0));
    lastChunk_ = b_.CreateICmpEQ(k, i64(chunks - 1));
    chunk(ci0);
    firstChunk_ = lastChunk_ = nullptr;
  }, /*rolled=*/true);
}

// The chunk's input channels from ci0, pixels [q0, q0 + cols), into the
// panel: kUnit floats per channel, zeros past cols.
void PanelEmitter::pack(Value* n, Value* q0, Value* ci0, int64_t cols) {
  llvm::Constant* all = code_.mask([](int64_t) { return true; });
  code_.loop(chunk_, "pack", [&](Value* ci) {
    Value* plane = b_.CreateAdd(b_.CreateMul(n, i64(c_.c)), b_.CreateAdd(ci0, ci));
    Value* from = b_.CreateAdd(b_.CreateMul(plane, i64(pixels_)), q0);
    Value* to = b_.CreateMul(ci, i64(kUnit));
    for (int64_t p = 0; p * lanes_ < cols; ++p)
      code_.store(code_.load(code_.vectorAt(x_, b_.CreateAdd(from, i64(p * lanes_))), liveLanes(p * lanes_, cols)),
                  code_.vectorAt(panel_, b_.CreateAdd(to, i64(p * lanes_))), all);
  });
}

// Output channels [o0, o0 + channels) over the unit's pixels, block by
// block of width_, then (after the last chunk) their epilogue.
void PanelEmitter::channelBlock(Value* n, Value* q0, Value* o0, int channels, Value* ci0, int64_t cols) {
  for (int64_t s = 0; s * width_ < cols; ++s) subBlock(n, q0, o0, channels, ci0, s, cols);
  if (!conv_.epilogue) return;
  auto epilogue = [&] {
    if (Status st = callConvEpilogue(code_, conv_, epilogueBuffers_, n, o0, i64(0), channels, 1, q0, cols);
        !st && status_)
      status_ = st;
  };
  if (lastChunk_)
    code_.when(lastChunk_, "epilogue", epilogue);
  else
    epilogue();
}

Value* PanelEmitter::yAt(Value* n, Value* o0, int co, Value* q0, int64_t offset) {
  Value* plane = b_.CreateAdd(b_.CreateMul(n, i64(c_.o)), b_.CreateAdd(o0, i64(co)));
  return code_.vectorAt(y_, b_.CreateAdd(b_.CreateAdd(b_.CreateMul(plane, i64(pixels_)), q0), i64(offset)));
}

// Block s of the unit (pixels [s * width_, ...) of it): the bias, or the
// sums in y after the first chunk, plus the chunk's channels from the panel.
void PanelEmitter::subBlock(Value* n, Value* q0, Value* o0, int channels, Value* ci0, int64_t s, int64_t cols) {
  const int vectors = static_cast<int>(std::min<int64_t>(t_.vectors, ceilDiv(cols - s * width_, lanes_)));
  llvm::Constant* all = code_.mask([](int64_t) { return true; });
  auto acc = [&](int co, int p) { return acc_[static_cast<size_t>(co * t_.vectors + p)]; };
  for (int co = 0; co < channels; ++co) {
    Value* start = bias_ ? code_.splat(code_.loadFloat(bias_, b_.CreateAdd(o0, i64(co))))
                         : llvm::Constant::getNullValue(code_.vec());
    for (int p = 0; p < vectors; ++p) {
      const int64_t first = s * width_ + p * lanes_;
      // A select rather than a branch; the first chunk's load is discarded.
      Value* init = firstChunk_ ? b_.CreateSelect(firstChunk_, start,
                                                  code_.load(yAt(n, o0, co, q0, first), liveLanes(first, cols)))
                                : start;
      b_.CreateStore(init, acc(co, p));
    }
  }
  code_.loop(chunk_, "ci", [&](Value* ci) {
    std::vector<Value*> in;
    for (int p = 0; p < vectors; ++p)
      in.push_back(code_.load(code_.vectorAt(panel_, b_.CreateAdd(b_.CreateMul(ci, i64(kUnit)), i64(s * width_ + p * lanes_))), all));
    // A 1x1 filter reads w[o][ci] in OIHW and OHWI alike.
    Value* row = b_.CreateAdd(b_.CreateMul(o0, i64(c_.c)), b_.CreateAdd(ci0, ci));
    for (int co = 0; co < channels; ++co) {
      Value* wv = code_.splat(code_.loadFloat(w_, b_.CreateAdd(row, i64(int64_t{co} * c_.c))));
      for (int p = 0; p < vectors; ++p) code_.multiplyAdd(acc(co, p), wv, in[static_cast<size_t>(p)]);
    }
  });
  for (int co = 0; co < channels; ++co)
    for (int p = 0; p < vectors; ++p) {
      const int64_t first = s * width_ + p * lanes_;
      code_.store(b_.CreateLoad(code_.vec(), acc(co, p)), yAt(n, o0, co, q0, first), liveLanes(first, cols));
    }
}

}  // namespace

ConvTiling panelBlock(const ConvTiling& t) {
  ConvTiling b = t.forConv(1, 1, /*wholePlanes=*/false, /*phases=*/false);
  while (b.vectors > 1 && kUnit % (int64_t{b.vectors} * b.lanes) != 0) --b.vectors;
  return b;
}

int64_t pointwisePanelChunk(const ConvSpec& c) {
  return chunkDividing(c.c, std::max<int64_t>(1, kPanelBytes / (kUnit * int64_t{sizeof(float)})));
}

Expected<llvm::Function*> emitPanelConv(const DirectConv& conv, llvm::Module& module, const std::string& symbol) {
  const ConvTiling t = panelBlock(conv.tiling);
  if (t.lanes < 1 || kUnit % t.lanes != 0)
    return Error(str("vectors of ", t.lanes, " lanes do not divide a panel's units of ", kUnit, " pixels"));
  return PanelEmitter(conv, module, symbol).run();
}

}  // namespace kfuse::cpu
