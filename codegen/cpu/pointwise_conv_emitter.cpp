// Convolutions with a packed filter (exec/packed_filter.h): output
// channels across the lanes. A block is ConvTiling::pointwisePixels pixels
// x up to pointwiseVectors vectors of output channels in registers; per
// input channel it loads one vector of the packed filter per vector of
// channels and broadcasts one input per pixel, as a packed GEMM does with
// the input's plane as A's transpose. The block's sums go to the output
// planes lane by lane (a scatter: each lane is another channel's plane).
//
// Work units (exec/parallel.h, packedFilterRowUnits) are a 1x1 layer's
// output rows, (image, row, output channel) row-major, and a layer with
// taps' output planes, (image, output channel) row-major, ranges starting
// on whole vectors of channels (kPackedFilterChannels): each pass over the
// units takes as many whole vectors as the tiling's block and the range
// allow, and runs the epilogue over them once their row or planes are
// complete. The units count the channels the packed copy pads
// (ops::packedFilterOutputs): a last vector of the image's channels that
// is not whole is a block of its own, its bias loaded and its sums stored
// through a mask, and vectors past it are skipped.
//
// Each block folds every input channel: the packed filter's panels are
// read in order, from the second-level cache for every block of pixels
// after the first. (In chunks of input channels whose slice of the filter
// fit the first-level cache, with the sums between chunks kept in the
// frame, ResNet-50's 1x1 layers over 7x7 ran 2-8% slower: 24 KB chunks
// 1023-1133 us, 96 KB 1009-1087, whole 985-1069; Zen 4, one thread.)
#include <algorithm>

#include "codegen/cpu/conv_blocks.h"
#include "codegen/cpu/llvm_emitter.h"
#include "ir/support/strings.h"
#include "exec/packed_filter.h"

namespace kfuse::cpu {
namespace {

using llvm::Value;

class PointwiseEmitter {
 public:
  PointwiseEmitter(const DirectConv& conv, llvm::Module& m, const std::string& symbol)
      : conv_(conv), c_(conv.spec), t_(conv.tiling), code_(m, symbol, conv.tiling.lanes), b_(code_.b()),
        pixels_(c_.oh * c_.ow), lanes_(t_.lanes) {}

  Expected<llvm::Function*> run();

 private:
  Value* i64(int64_t v) { return code_.i64(v); }
  // Channels [o0, o0 + channels): `vectors` vectors of lanes, the last
  // one's lanes past `channels` left out.
  void emitChannels(Value* n, Value* oy, Value* o0, int vectors, int64_t channels);
  void emitRowChannels(Value* n, Value* oy, Value* o0, int vectors, int64_t channels);
  void emitPlaneChannels(Value* n, Value* o0, int vectors, int64_t channels);
  void runEpilogue(Value* n, Value* o0, Value* oy, int64_t channels, int64_t rows);
  void emitBlock(Value* n, Value* o0, int vectors, int64_t channels, Value* p0, int rows);
  void emitTapBlock(Value* n, Value* o0, int vectors, int64_t channels, Value* oy, int64_t knownOy, int64_t ox0,
                    int columns);
  // Whether output row oy's filter row ky reads a row of the input plane.
  bool rowInPlane(int64_t oy, int64_t ky) const {
    const int64_t iy = oy * c_.strideH + ky - c_.padTop;
    return iy >= 0 && iy < c_.h;
  }
  // The lanes of vector v of a block of `channels` channels that hold one.
  llvm::Constant* liveLanes(int v, int64_t channels) {
    return code_.mask([&](int64_t l) { return int64_t{v} * lanes_ + l < channels; });
  }
  void startBlock(Value* o0, int vectors, int64_t channels, int rows);
  std::vector<Value*> panelStarts(Value* o0, int vectors);
  void addProducts(const std::vector<Value*>& panelStart, Value* row, int vectors,
                   const std::vector<std::pair<int, Value*>>& pixels);
  void storeToPlanes(Value* n, Value* o0, int vectors, int64_t channels, Value* p0, int rows);
  llvm::AllocaInst* acc(int r, int v) { return acc_[static_cast<size_t>(r * t_.pointwiseVectors + v)]; }

  const DirectConv& conv_;
  const ConvSpec& c_;
  const ConvTiling& t_;
  VectorCode code_;
  llvm::IRBuilder<>& b_;
  int64_t pixels_, lanes_;
  Value *x_ = nullptr, *w_ = nullptr, *bias_ = nullptr, *y_ = nullptr;
  std::vector<llvm::AllocaInst*> acc_;  // pixel-major, pointwiseVectors per pixel
  std::vector<Value*> epilogueBuffers_;
  Status status_ = Status::ok();  // the first error of an epilogue
};

Expected<llvm::Function*> PointwiseEmitter::run() {
  ConvArguments a = convArguments(code_, conv_);
  x_ = a.x, w_ = a.w, bias_ = a.bias, y_ = a.y, epilogueBuffers_ = std::move(a.epilogue);
  for (int i = 0; i < t_.pointwisePixels * t_.pointwiseVectors; ++i) acc_.push_back(code_.accumulator());

  // One pass per block of channels: the widest whole-vector block the
  // range and the image's whole vectors leave (ranges start and end on
  // whole vectors), or the image's last vector where it is not whole, or a
  // vector of the padding, skipped. No block reaches past the image's
  // channels: its epilogue would.
  const int64_t outputs = packedFilterOutputs(c_.o), whole = c_.o / lanes_ * lanes_, tail = c_.o - whole;
  const int widest = static_cast<int>(std::min<int64_t>(t_.pointwiseVectors, whole / lanes_));
  const bool byRows = packedFilterRowUnits(c_);
  code_.unitSteps("channels", [&](Value* u, const std::function<void(int64_t)>& advance) {
    Value* outer = b_.CreateUDiv(u, i64(outputs));  // (image, row) by rows, else the image
    Value* n = byRows ? b_.CreateUDiv(outer, i64(c_.oh)) : outer;
    Value* oy = byRows ? b_.CreateURem(outer, i64(c_.oh)) : nullptr;
    Value* o0 = b_.CreateURem(u, i64(outputs));
    Value* left = b_.CreateSub(code_.end(), u);
    Value* inImage = b_.CreateSub(i64(whole), o0);
    left = b_.CreateSelect(b_.CreateICmpSLT(left, inImage), left, inImage);
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    auto path = [&](Value* taken, const char* name, double share, const std::function<void()>& body, int64_t step) {
      auto* yes = llvm::BasicBlock::Create(b_.getContext(), name, fn);
      auto* no = llvm::BasicBlock::Create(b_.getContext(), "", fn);
      b_.CreateCondBr(taken, yes, no);
      b_.SetInsertPoint(yes);
      code_.part(share, body);
      advance(step);
      b_.SetInsertPoint(no);
    };
    if (whole + (tail > 0 ? lanes_ : 0) < outputs) path(b_.CreateICmpUGE(o0, i64(c_.o)), "padding", 0.0, [] {}, lanes_);
    if (tail > 0)
      path(b_.CreateICmpEQ(o0, i64(whole)), "tail", 0.0, [&] { emitChannels(n, oy, o0, 1, tail); }, lanes_);
    for (int v = widest; v >= 1; --v) {
      const int64_t channels = int64_t{v} * lanes_;
      path(v == 1 ? b_.getTrue() : b_.CreateICmpSGE(left, i64(channels)), "vectors", v == widest ? 1.0 : 0.0,
           [&] { emitChannels(n, oy, o0, v, channels); }, channels);
    }
  });
  KF_RETURN_IF_ERROR(status_);
  return code_.finish();
}

void PointwiseEmitter::emitChannels(Value* n, Value* oy, Value* o0, int vectors, int64_t channels) {
  if (oy)
    emitRowChannels(n, oy, o0, vectors, channels);
  else
    emitPlaneChannels(n, o0, vectors, channels);
}

// Channels [o0, o0 + channels) of row oy of image n (a 1x1 filter: blocks
// of the row's pixels), then the epilogue over them.
void PointwiseEmitter::emitRowChannels(Value* n, Value* oy, Value* o0, int vectors, int64_t channels) {
  const int64_t pixels = t_.pointwisePixels, full = c_.ow / pixels, rest = c_.ow % pixels;
  Value* rowStart = b_.CreateMul(oy, i64(c_.ow));
  code_.loop(full, "pixels", [&](Value* i) {
    emitBlock(n, o0, vectors, channels, b_.CreateAdd(rowStart, b_.CreateMul(i, i64(pixels))),
              static_cast<int>(pixels));
  });
  if (rest > 0)
    code_.part(static_cast<double>(rest) / static_cast<double>(c_.ow), [&] {
      emitBlock(n, o0, vectors, channels, b_.CreateAdd(rowStart, i64(full * pixels)), static_cast<int>(rest));
    });
  runEpilogue(n, o0, oy, channels, 1);
}

// Channels [o0, o0 + channels) of image n: blocks of each output
// row, whose columns (known here) say which taps fall into padding: the
// rows whose every filter row lies in the plane as one loop, those above
// and below it as code of their own, whose rows in the padding are known
// too; then the epilogue over their planes.
void PointwiseEmitter::emitPlaneChannels(Value* n, Value* o0, int vectors, int64_t channels) {
  const int64_t rows = t_.pointwisePixels;
  auto inside = [&](int64_t oy) {
    for (int64_t ky = 0; ky < c_.kh; ++ky)
      if (!rowInPlane(oy, ky)) return false;
    return true;
  };
  int64_t lo = 0;
  while (lo < c_.oh && !inside(lo)) ++lo;
  int64_t hi = lo;
  while (hi < c_.oh && inside(hi)) ++hi;
  auto row = [&](Value* oy, int64_t known) {
    for (int64_t ox0 = 0; ox0 < c_.ow; ox0 += rows)
      emitTapBlock(n, o0, vectors, channels, oy, known, ox0, static_cast<int>(std::min(rows, c_.ow - ox0)));
  };
  for (int64_t oy = 0; oy < lo; ++oy) row(i64(oy), oy);
  code_.loop(hi - lo, "oy", [&](Value* i) { row(b_.CreateAdd(i, i64(lo)), -1); });
  for (int64_t oy = hi; oy < c_.oh; ++oy) row(i64(oy), oy);
  runEpilogue(n, o0, i64(0), channels, c_.oh);
}

// The epilogue over channels [o0, o0 + channels) of image n, output rows
// [oy, oy + rows): the first error is kept for run().
void PointwiseEmitter::runEpilogue(Value* n, Value* o0, Value* oy, int64_t channels, int64_t rows) {
  if (!conv_.epilogue) return;
  if (Status s = callConvEpilogue(code_, conv_, epilogueBuffers_, n, o0, oy, channels, rows);
      !s && status_)
    status_ = s;
}

// The accumulators of `rows` pixels x `vectors` vectors of channels from
// o0, set to the bias (of the `channels` there are).
void PointwiseEmitter::startBlock(Value* o0, int vectors, int64_t channels, int rows) {
  for (int v = 0; v < vectors; ++v) {
    Value* init = bias_ ? code_.load(code_.vectorAt(bias_, b_.CreateAdd(o0, i64(int64_t{v} * lanes_))),
                                     liveLanes(v, channels))
                        : llvm::Constant::getNullValue(code_.vec());
    for (int r = 0; r < rows; ++r) b_.CreateStore(init, acc(r, v));
  }
}

// packedFilterIndex(o, 0) of each vector's first channel o; a vector lies
// in one panel (its lanes divide the panel's).
std::vector<Value*> PointwiseEmitter::panelStarts(Value* o0, int vectors) {
  std::vector<Value*> out;
  for (int v = 0; v < vectors; ++v) {
    Value* o = b_.CreateAdd(o0, i64(int64_t{v} * lanes_));
    Value* panel = b_.CreateUDiv(o, i64(kPackedFilterChannels));
    out.push_back(b_.CreateAdd(b_.CreateMul(panel, i64(packedFilterRows(c_) * kPackedFilterChannels)),
                               b_.CreateURem(o, i64(kPackedFilterChannels))));
  }
  return out;
}

// How far ahead of a block's pixels, in each input channel's plane, the
// block asks for the input: one line. A block of 7 pixels reads one or two
// lines of each of the C planes, a stride too scattered for the hardware's
// prefetchers, and in a split across threads half of those lines were
// written by the other core in the step before: fetched one at a time, a
// 576-channel input's lines cost MobileNetV2's 576 -> 96 projections over
// 14x14 about 40 us of their 100 at two threads. The line one ahead is
// read by the block after next; two lines ahead did worse (the planes'
// lines no longer fit the first-level cache together), and so did half a
// line (Xeon, Emerald Rapids; docs/fusion.md).
constexpr int64_t kInputPrefetchFloats = 16;

// Pixels [p0, p0 + rows) of channels [o0, o0 + channels): the bias plus
// every input channel, to y.
void PointwiseEmitter::emitBlock(Value* n, Value* o0, int vectors, int64_t channels, Value* p0, int rows) {
  startBlock(o0, vectors, channels, rows);
  const std::vector<Value*> panelStart = panelStarts(o0, vectors);
  code_.loop(c_.c, "ci", [&](Value* ci) {
    Value* xRow = b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.CreateMul(n, i64(c_.c)), ci), i64(pixels_)), p0);
    code_.prefetch(x_, b_.CreateAdd(xRow, i64(kInputPrefetchFloats)));
    std::vector<std::pair<int, Value*>> pixels;
    for (int r = 0; r < rows; ++r) pixels.emplace_back(r, b_.CreateAdd(xRow, i64(r)));
    addProducts(panelStart, ci, vectors, pixels);
  });
  storeToPlanes(n, o0, vectors, channels, p0, rows);
}

// Output row oy, columns [ox0, ox0 + columns), of channels [o0, o0 +
// channels): the bias plus every input channel's live taps. Output pixel
// (oy, ox) reads tap (ky, kx) at input row oy * stride + ky - pad and column
// ox * stride + kx - pad: a strided layer reads its input where it lies
// (ops::packedFilterStrided), each pixel's input a broadcast of its own.
// Every filter row runs where the row is inside (knownOy < 0: emitChannels's
// loop over the rows whose every filter row lies in the plane), else those
// whose input row lies in the plane of row knownOy; a pixel whose tap reads a
// padding column, and a tap the filter's live_taps say is zero for the input
// channel (a strided layer's phases: conv-phases), are left out where the
// code is generated, the channels unrolled by the taps' period for that.
// All of an input channel's taps are one loop body, so the block reads the
// packed filter's rows in order, one pass over the panel: with a pass per
// filter row (each a test of its row, reading 3 of every 9 rows), ResNet-18's
// 3x3 layers over 7x7 took 2158-2258 us, 1914-1935 in one (Zen 4, one
// thread, medians of 8 alternated runs); with a pass per tap, 2.52 ms.
void PointwiseEmitter::emitTapBlock(Value* n, Value* o0, int vectors, int64_t channels, Value* oy, int64_t knownOy,
                                    int64_t ox0, int columns) {
  startBlock(o0, vectors, channels, columns);
  const std::vector<Value*> panelStart = panelStarts(o0, vectors);
  const int64_t period = c_.livePeriod();
  std::vector<int64_t> rowsIn;
  for (int64_t ky = 0; ky < c_.kh; ++ky)
    if (knownOy < 0 || rowInPlane(knownOy, ky)) rowsIn.push_back(ky);
  Value* top = b_.CreateSub(b_.CreateMul(oy, i64(c_.strideH)), i64(c_.padTop));
  if (!rowsIn.empty())
    code_.loop(c_.c / period, "ci", [&](Value* cb) {
      for (int64_t phase = 0; phase < period; ++phase) {
        Value* ci = b_.CreateAdd(b_.CreateMul(cb, i64(period)), i64(phase));
        Value* plane = b_.CreateMul(b_.CreateAdd(b_.CreateMul(n, i64(c_.c)), ci), i64(c_.h));
        for (int64_t ky : rowsIn) {
          Value* xRow = b_.CreateMul(b_.CreateAdd(plane, b_.CreateAdd(top, i64(ky))), i64(c_.wd));
          Value* filterRow = b_.CreateMul(b_.CreateAdd(b_.CreateMul(ci, i64(c_.kh)), i64(ky)), i64(c_.kw));
          for (int64_t kx = 0; kx < c_.kw; ++kx) {
            if (!c_.liveTap(phase, ky, kx)) continue;
            std::vector<std::pair<int, Value*>> pixels;
            for (int r = 0; r < columns; ++r)
              if (const int64_t ix = (ox0 + r) * c_.strideW + kx - c_.padLeft; ix >= 0 && ix < c_.wd)
                pixels.emplace_back(r, b_.CreateAdd(xRow, i64(ix)));
            addProducts(panelStart, b_.CreateAdd(filterRow, i64(kx)), vectors, pixels);
          }
        }
      }
    });
  storeToPlanes(n, o0, vectors, channels, b_.CreateAdd(b_.CreateMul(oy, i64(c_.ow)), i64(ox0)), columns);
}

// Packed-filter row `row`'s vectors of channels (one load each) times each
// of `pixels`' inputs (block pixel r, x's element; a broadcast each), added
// to the block's sums.
void PointwiseEmitter::addProducts(const std::vector<Value*>& panelStart, Value* row, int vectors,
                                   const std::vector<std::pair<int, Value*>>& pixels) {
  llvm::Constant* all = code_.mask([](int64_t) { return true; });
  Value* wRow = b_.CreateMul(row, i64(kPackedFilterChannels));
  std::vector<Value*> wv;
  for (int v = 0; v < vectors; ++v)
    wv.push_back(code_.load(code_.vectorAt(w_, b_.CreateAdd(panelStart[static_cast<size_t>(v)], wRow)), all));
  for (const auto& [r, at] : pixels) {
    Value* a = code_.splat(code_.loadFloat(x_, at));
    for (int v = 0; v < vectors; ++v) code_.multiplyAdd(acc(r, v), a, wv[static_cast<size_t>(v)]);
  }
}

// The block's sums to y: lane l of vector v of pixel p0 + r to that pixel
// of channel o0 + v * lanes + l's plane, for the `channels` there are.
void PointwiseEmitter::storeToPlanes(Value* n, Value* o0, int vectors, int64_t channels, Value* p0, int rows) {
  std::vector<llvm::Constant*> steps;
  for (int64_t l = 0; l < lanes_; ++l) steps.push_back(llvm::ConstantInt::get(b_.getInt64Ty(), l * pixels_));
  llvm::Constant* planeSteps = llvm::ConstantVector::get(steps);
  Value* first = b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.CreateMul(n, i64(c_.o)), o0), i64(pixels_)), p0);
  for (int v = 0; v < vectors; ++v)
    for (int r = 0; r < rows; ++r) {
      Value* at = b_.CreateAdd(first, i64(int64_t{v} * lanes_ * pixels_ + r));
      Value* ptrs = b_.CreateGEP(b_.getFloatTy(), code_.at(y_, at), planeSteps);
      b_.CreateMaskedScatter(b_.CreateLoad(code_.vec(), acc(r, v)), ptrs, llvm::Align(4), liveLanes(v, channels));
    }
}

}  // namespace

Expected<llvm::Function*> emitPointwiseConv(const DirectConv& conv, llvm::Module& module, const std::string& symbol) {
  const ConvTiling& t = conv.tiling;
  if (t.pointwisePixels < 1 || t.pointwiseVectors < 1 || kPackedFilterChannels % t.lanes != 0)
    return Error(str("a tiling of ", t.pointwisePixels, " pixels x ", t.pointwiseVectors, "x", t.lanes,
                     " channels does not divide the packed filter's blocks of ", kPackedFilterChannels, " channels"));
  return PointwiseEmitter(conv, module, symbol).run();
}

}  // namespace kfuse::cpu
