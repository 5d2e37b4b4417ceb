#include "codegen/cpu/llvm_emitter.h"

#include <array>
#include <functional>
#include <limits>
#include <optional>
#include <string_view>

#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include "codegen/kernel/kernel_walk.h"
#include "exec/parallel.h"
#include "codegen/kernel/scalar_rules.h"
#include "codegen/cpu/combiners.h"
#include "codegen/cpu/scalar_emitter.h"
#include "codegen/cpu/storage.h"
#include "ir/support/strings.h"

namespace kfuse::cpu {
namespace {

using kernel::Kernel;
using kernel::StoreScope;
using llvm::Value;
using Point = kernel::Point<Value*>;

// Column order bounds its accumulator arrays (on the stack) to this many
// outer points.
constexpr int64_t kMaxColumnPoints = 8192;

// A loop this long is vectorised itself; loops around it are not unrolled.
constexpr int64_t kLongLoop = 8;
// LLVM's loop vectorizer leaves loops of fewer iterations alone unless told
// (its TinyTripCountVectorThreshold).
constexpr int64_t kShortTripCount = 16;

// A row (a reduce space) of this many points is not unrolled whole; LLVM 14
// unrolls whole loops of up to about a hundred simple iterations, not this
// many.
constexpr int64_t kManyRowPoints = 64;
constexpr int64_t kUnrolledWhole = 128;

// The kernel walk (codegen/kernel/kernel_walk.h) as LLVM IR: loop nests over
// the merged index spaces, accumulators in allocas that mem2reg promotes.
class KernelEmitter final : public kernel::KernelWalk<Value*> {
 public:
  KernelEmitter(const Kernel& k, llvm::Module& m)
      : KernelWalk(k), ctx_(m.getContext()), m_(m), b_(ctx_), entry_(ctx_), outer_(s_.spaces.outer) {
    // Split across threads by its first outer dim when its points are
    // independent (exec/parallel.h).
    if (kernelWork(k).units > 1) outer_.dims[0].ranged = true;
  }

  llvm::Function* run();

 private:
  // values and effects
  Value* loadValue(const Point& p, size_t i) override;
  Value* gatheredValue(const Point& p, size_t i, Value* index) override;
  Value* gatheredPtr(const Point& p, size_t access, int buffer, const kernel::Gathered& g, Value* index);
  Value* indexValue(const Point& p, size_t d) override { return p.index[d]; }
  Value* accumulatorValue(size_t r) override { return accs_[r]; }
  Value* globalValue(size_t g) override { return b_.CreateLoad(globals_[g]->getAllocatedType(), globals_[g]); }
  Value* convert(Value* v, DType from, DType to) override { return emitConvert(b_, v, from, to); }
  Value* scalarNode(const ScalarNode& n, const std::vector<Value*>& args) override {
    return ScalarEmitter(b_).node(n, args);
  }
  void storeValue(const Point& p, size_t s, Value* v) override;
  void scatterValue(const Point& p, size_t s, Value* v, Value* index) override;
  void foldReduction(size_t r, Value* v) override;
  void foldGlobal(size_t g, Value* v) override;

  // structure
  void declareGlobal(size_t g) override;
  void beforeLoops() override { hoistInvariantLoads(); }
  // Over every outer point, whatever this call's range (exec/parallel.h).
  void prologueLoop(const Body& body) override { emitNest(s_.spaces.outer, 0, origin(), body); }
  void mainLoops() override;
  void beginGroup(size_t first, size_t last, const Point& p) override;
  void reduceLoop(const Point& p, size_t first, size_t last, const Body& body) override;
  void endGroup(size_t first, size_t last) override;
  void afterReducePoint(Site& site, size_t first, size_t last) override;
  // Its iterations touch disjoint memory, as a kept sum's do (reduceLoop).
  // None where the sum kept the whole element store (KeptSum::whole).
  void elementLoop(const Point& p, const Body& body) override {
    if (!column_ && s_.keptSum && s_.keptSum->whole) return;
    if (!s_.spaces.reduce.empty()) emitNest(s_.spaces.reduce, 0, p, body, 0);
  }
  void beforeElementStores(Site& site) override;
  void rowLevel(const Point& p, const Body& body) override { body(p); }
  void finish() override { finalPoint(origin()); }

  Point origin();
  Value* elementPtr(const Point& p, size_t access, int buffer);
  Value* withBase(const Point& p, size_t access);
  Value* keptElement(const Point& p);
  // for (iv = begin; iv < end; ++iv); begin and end null: 0 and extent.
  // Whether LLVM may unroll a loop: freely, never, or only before the
  // vectorizer (which still interleaves it), not the vector loop it makes;
  // ShortVectorised: never, and vectorised although short (kShortTripCount).
  enum class Unroll { Free, Never, NotVectorised, ShortVectorised };
  void emitLoop(int64_t extent, const char* name, bool parallel, const std::function<void(Value*)>& body,
                Unroll unroll = Unroll::Free, Value* begin = nullptr, Value* end = nullptr);
  // Loops over space.dims[level..]; dims from `parallelFrom` on belong to
  // the outer space (their iterations touch disjoint elements).
  void emitNest(const kernel::Space& space, size_t level, const Point& at, const Body& body, size_t parallelFrom = 0);
  bool storesMoveWith(const kernel::Space& space, const kernel::SpaceDim& dim) const;
  bool storesRunAlong(const kernel::Space& space, const kernel::SpaceDim& dim) const;
  bool storedIn(const kernel::Space& space, size_t s) const;
  void tagBufferAccesses();
  void hoistInvariantLoads();
  std::vector<size_t> hoistLoopLoads(const kernel::Space& space, size_t level, const Point& at);
  bool columnOrder() const;
  void emitColumnOrder();
  void loadColumnAccumulators(const Point& p, size_t count);
  bool keeping(size_t first, size_t last) const {
    return !column_ && s_.keptSum && s_.keptSum->reduction >= first && s_.keptSum->reduction < last;
  }
  llvm::AllocaInst* slot(DType t, const char* name);
  // `count` > 1: an array of that many.
  llvm::AllocaInst* slot(llvm::Type* t, const char* name, int64_t count = 1);

  llvm::LLVMContext& ctx_;
  llvm::Module& m_;
  llvm::Function* fn_ = nullptr;
  llvm::IRBuilder<> b_;
  llvm::IRBuilder<> entry_;                 // allocas, at the top of the entry block
  std::vector<Value*> buffers_;             // typed pointers to element 0
  std::vector<Value*> accs_;                // this outer point's accumulators
  std::vector<Value*> accSlots_;            // per reduction: where its running value is (row order: an alloca)
  std::vector<bool> keyed_;                 // per reduction: the slot holds an integer key (combiners.h)
  std::vector<Value*> invariantLoads_;      // per load: read once at entry, or null
  std::vector<Value*> loopLoads_;           // per load: read once in the enclosing loop's body, or null
  std::vector<llvm::AllocaInst*> globals_;  // prologue, then main
  bool column_ = false;                     // column order (below)
  std::vector<llvm::AllocaInst*> columns_;  // column order: one accumulator per outer point, per reduction
  llvm::MDNode* accessGroup_ = nullptr;     // the buffers' loads and stores, once a loop is parallel
  kernel::Space outer_;                     // the outer space, its first dim ranged when the kernel splits
  Value* rangeBegin_ = nullptr;             // the function's range of units (exec/parallel.h)
  Value* rangeEnd_ = nullptr;
};

llvm::Function* KernelEmitter::run() {
  llvm::Type* bytePtr = llvm::Type::getInt8PtrTy(ctx_);
  auto* type = llvm::FunctionType::get(b_.getVoidTy(), {bytePtr->getPointerTo(), b_.getInt64Ty(), b_.getInt64Ty()},
                                       false);
  fn_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage, symbolName(k_.name), m_);
  fn_->setDoesNotThrow();
  fn_->addParamAttr(0, llvm::Attribute::NoCapture);
  fn_->addParamAttr(0, llvm::Attribute::ReadOnly);
  llvm::Argument* arg = fn_->getArg(0);
  arg->setName("buffers");
  rangeBegin_ = fn_->getArg(1);
  rangeEnd_ = fn_->getArg(2);
  rangeBegin_->setName("begin");
  rangeEnd_->setName("end");

  auto* entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
  b_.SetInsertPoint(entry);
  for (size_t i = 0; i < k_.buffers.size(); ++i) {
    const kernel::Buffer& buf = k_.buffers[i];
    Value* raw = b_.CreateAlignedLoad(bytePtr, b_.CreateConstInBoundsGEP1_64(bytePtr, arg, i), llvm::Align(8),
                                      buf.name + ".raw");
    buffers_.push_back(b_.CreateBitCast(raw, storageTypeOf(ctx_, buf.type.dtype)->getPointerTo(), buf.name));
  }
  invariantLoads_.assign(k_.loads.size(), nullptr);
  loopLoads_.assign(k_.loads.size(), nullptr);
  accs_.assign(k_.reductions.size(), nullptr);
  accSlots_.assign(k_.reductions.size(), nullptr);
  keyed_.assign(k_.reductions.size(), false);
  column_ = columnOrder();
  walk();
  b_.CreateRetVoid();
  tagBufferAccesses();
  return fn_;
}

void KernelEmitter::declareGlobal(size_t g) {
  const kernel::Global& gl = g < k_.prologue.size() ? k_.prologue[g] : k_.globals[g - k_.prologue.size()];
  globals_.push_back(slot(s_.globals[g], g < k_.prologue.size() ? "prologue" : "global"));
  b_.CreateStore(initialValue(b_, gl.combiner, s_.globals[g]), globals_.back());
}

void KernelEmitter::mainLoops() {
  if (column_) {
    emitColumnOrder();
  } else {
    emitNest(outer_, 0, origin(), [&](const Point& p) { pointwise() ? wholePoint(p) : outerPoint(p); });
  }
}

// A load that reads the same element at every point (a scalar operand: the
// step count, a learning rate) of a buffer the kernel never writes is read
// once before the loops. LLVM cannot hoist it itself, since it cannot prove
// the buffer differs from the ones stored to, and then everything computed
// from it (Adam's bias corrections: two pow calls) would run per element.
// Only with iterations: a load of an empty space's operand may be out of
// bounds (walk() calls this only when there are outer points).
void KernelEmitter::hoistInvariantLoads() {
  for (size_t i = 0; i < k_.loads.size(); ++i) {
    if (!s_.invariantLoads[i]) continue;
    const kernel::Load& l = k_.loads[i];
    DType t = k_.buffers[static_cast<size_t>(l.buffer)].type.dtype;
    Value* ptr = b_.CreateInBoundsGEP(storageTypeOf(ctx_, t), buffers_[static_cast<size_t>(l.buffer)],
                                      b_.getInt64(static_cast<uint64_t>(l.map.base)));
    invariantLoads_[i] = emitLoadElement(b_, ptr, t);
  }
}

// The read-only loads whose element stays the same in every loop inside
// space.dims[level] (and in the reduce loops an outer nest holds), read at
// `at` in that loop's body; returns them. LLVM cannot hoist them itself,
// for the reason hoistInvariantLoads gives: a squeeze-excitation gate,
// sigmoid(g[c]) times x[c, :, :], took an exp per pixel, 278 us for
// 144x56x56 where a multiply takes 84. Each is read before the loops
// inside; a buffer is written in place only element for element
// (docs/memory.md), so no store inside can change it.
std::vector<size_t> KernelEmitter::hoistLoopLoads(const kernel::Space& space, size_t level, const Point& at) {
  const kernel::Space* inside = &space == &s_.spaces.reduce ? nullptr : &s_.spaces.reduce;
  if (level + 1 == space.dims.size() && (!inside || inside->dims.empty())) return {};
  std::vector<size_t> hoisted;
  for (size_t i = 0; i < k_.loads.size(); ++i) {
    if (!s_.readOnlyLoads[i] || invariantLoads_[i] || loopLoads_[i]) continue;
    bool moves = false;
    for (size_t d = level + 1; d < space.dims.size(); ++d) moves |= space.dims[d].strides[i] != 0;
    if (inside)
      for (const kernel::SpaceDim& d : inside->dims) moves |= d.strides[i] != 0;
    if (moves) continue;
    loopLoads_[i] = emitLoadElement(b_, elementPtr(at, i, k_.loads[i].buffer),
                                    k_.buffers[static_cast<size_t>(k_.loads[i].buffer)].type.dtype);
    hoisted.push_back(i);
  }
  return hoisted;
}

Value* KernelEmitter::loadValue(const Point& p, size_t i) {
  if (Value* once = invariantLoads_[i]) return once;
  if (Value* once = loopLoads_[i]) return once;
  int buffer = k_.loads[i].buffer;
  return emitLoadElement(b_, elementPtr(p, i, buffer), k_.buffers[static_cast<size_t>(buffer)].type.dtype);
}

// Access `a`'s element at the row gatheredRow picks, computed branch-free
// (select, smax, smin) so that a loop over it still vectorises.
Value* KernelEmitter::gatheredPtr(const Point& p, size_t a, int buffer, const kernel::Gathered& g, Value* index) {
  Value* wrapped = b_.CreateSelect(b_.CreateICmpSLT(index, b_.getInt64(0)),
                                   b_.CreateAdd(index, b_.getInt64(static_cast<uint64_t>(g.size))), index);
  Value* row = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, wrapped, b_.getInt64(0));
  row = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, row, b_.getInt64(static_cast<uint64_t>(g.size - 1)));
  Value* rowOffset = b_.CreateMul(row, b_.getInt64(static_cast<uint64_t>(g.stride)), "", false, true);
  DType t = k_.buffers[static_cast<size_t>(buffer)].type.dtype;
  return b_.CreateInBoundsGEP(storageTypeOf(ctx_, t), buffers_[static_cast<size_t>(buffer)],
                              b_.CreateAdd(withBase(p, a), rowOffset, "", false, true));
}

Value* KernelEmitter::gatheredValue(const Point& p, size_t i, Value* index) {
  const kernel::Load& l = k_.loads[i];
  return emitLoadElement(b_, gatheredPtr(p, i, l.buffer, *l.gathered, index),
                         k_.buffers[static_cast<size_t>(l.buffer)].type.dtype);
}

// The element's value plus v, in the buffer's compute type, stored back.
void KernelEmitter::scatterValue(const Point& p, size_t s, Value* v, Value* index) {
  const kernel::Store& st = k_.stores[s];
  DType storage = k_.buffers[static_cast<size_t>(st.buffer)].type.dtype, t = computeType(storage);
  Value* ptr = gatheredPtr(p, k_.loads.size() + s, st.buffer, *st.gathered, index);
  Value* old = emitLoadElement(b_, ptr, storage);
  Value* add = emitConvert(b_, v, st.value->type, t);
  Value* sum = t == DType::Bool ? b_.CreateOr(old, add) : isFloat(t) ? b_.CreateFAdd(old, add) : b_.CreateAdd(old, add);
  emitStoreElement(b_, ptr, sum, t, storage);
}

Value* KernelEmitter::elementPtr(const Point& p, size_t access, int buffer) {
  llvm::Type* t = storageTypeOf(ctx_, k_.buffers[static_cast<size_t>(buffer)].type.dtype);
  return b_.CreateInBoundsGEP(t, buffers_[static_cast<size_t>(buffer)], withBase(p, access));
}

// The access's offset at `p`: its map's constant added last. Added first,
// where the loops' offsets start, instcombine moved it out of the sums and
// dropped their nsw, and LLVM's vectorizer, unable to prove that a stride-2
// access does not wrap, read SqueezeNet's max-pool windows at odd offsets
// (x[2j + 111]) by gathers: 246 us for its first pool, 167 with this order.
Value* KernelEmitter::withBase(const Point& p, size_t access) {
  const int64_t base = access < k_.loads.size() ? k_.loads[access].map.base
                                                : k_.stores[access - k_.loads.size()].map.base;
  if (base == 0) return p.offsets[access];
  return b_.CreateAdd(p.offsets[access], b_.getInt64(static_cast<uint64_t>(base)), "", false, true);
}

void KernelEmitter::storeValue(const Point& p, size_t s, Value* v) {
  const kernel::Store& store = k_.stores[s];
  DType storage = k_.buffers[static_cast<size_t>(store.buffer)].type.dtype;
  emitStoreElement(b_, elementPtr(p, k_.loads.size() + s, store.buffer), v, store.value->type, storage);
}

// Allocas go to the top of the entry block, where mem2reg promotes them.
llvm::AllocaInst* KernelEmitter::slot(DType t, const char* name) { return slot(computeTypeOf(ctx_, t), name); }

llvm::AllocaInst* KernelEmitter::slot(llvm::Type* t, const char* name, int64_t count) {
  llvm::BasicBlock& entry = fn_->getEntryBlock();
  entry_.SetInsertPoint(&entry, entry.getFirstInsertionPt());
  return entry_.CreateAlloca(t, count > 1 ? b_.getInt64(static_cast<uint64_t>(count)) : nullptr, name);
}

Point KernelEmitter::origin() {
  Point p;
  // Each access's constant is added where it is read (withBase).
  p.offsets.assign(k_.loads.size() + k_.stores.size(), b_.getInt64(0));
  p.index.assign(k_.numDims(), b_.getInt64(0));
  return p;
}

// A bottom-tested counted loop: callers only emit loops of extent >= 1. A
// ranged one (begin and end given) is guarded: its range may be empty.
void KernelEmitter::emitLoop(int64_t extent, const char* name, bool parallel,
                             const std::function<void(Value*)>& body, Unroll unroll, Value* begin, Value* end) {
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, name, fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, std::string(name) + ".end", fn_);
  if (begin) {
    b_.CreateCondBr(b_.CreateICmpSLT(begin, end), header, exit);
  } else {
    b_.CreateBr(header);
  }
  b_.SetInsertPoint(header);
  llvm::PHINode* iv = b_.CreatePHI(b_.getInt64Ty(), 2, name);
  iv->addIncoming(begin ? begin : b_.getInt64(0), pre);
  body(iv);
  Value* next = b_.CreateAdd(iv, b_.getInt64(1), "", /*HasNUW=*/true, /*HasNSW=*/true);
  Value* more = end ? b_.CreateICmpSLT(next, end) : b_.CreateICmpULT(next, b_.getInt64(static_cast<uint64_t>(extent)));
  llvm::BranchInst* latch = b_.CreateCondBr(more, header, exit);
  std::vector<llvm::Metadata*> properties = {nullptr};
  if (parallel) {
    if (!accessGroup_) accessGroup_ = llvm::MDNode::getDistinct(ctx_, {});
    llvm::Metadata* parallelAccesses[] = {llvm::MDString::get(ctx_, "llvm.loop.parallel_accesses"), accessGroup_};
    properties.push_back(llvm::MDNode::get(ctx_, parallelAccesses));
  }
  llvm::MDNode* noUnroll = llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")});
  if (unroll == Unroll::Never || unroll == Unroll::ShortVectorised) properties.push_back(noUnroll);
  if (unroll == Unroll::ShortVectorised) {
    llvm::Metadata* enable[] = {llvm::MDString::get(ctx_, "llvm.loop.vectorize.enable"),
                                llvm::ConstantAsMetadata::get(b_.getTrue())};
    properties.push_back(llvm::MDNode::get(ctx_, enable));
  }
  if (unroll == Unroll::NotVectorised) {
    // The vector loop's own attributes; the loop itself keeps none, so the
    // vectorizer picks its interleaving (with unroll.disable on the loop it
    // ran reductions on one accumulator).
    llvm::Metadata* followup[] = {llvm::MDString::get(ctx_, "llvm.loop.vectorize.followup_vectorized"), noUnroll};
    properties.push_back(llvm::MDNode::get(ctx_, followup));
  }
  if (properties.size() > 1) {
    llvm::MDNode* id = llvm::MDNode::getDistinct(ctx_, properties);
    id->replaceOperandWith(0, id);
    latch->setMetadata(llvm::LLVMContext::MD_loop, id);
  }
  iv->addIncoming(next, b_.GetInsertBlock());
  b_.SetInsertPoint(exit);
}

// Loops over space.dims[level..] around `body`. Each loop adds its stride
// times its counter to the offsets of the accesses that move with it, so the
// innermost loop does one add per moving access (loop-invariant parts stay
// in the loops they belong to).
void KernelEmitter::emitNest(const kernel::Space& space, size_t level, const Point& at, const Body& body,
                             size_t parallelFrom) {
  if (level == space.dims.size()) {
    body(at);
    return;
  }
  const kernel::SpaceDim& dim = space.dims[level];
  const char* name = level >= parallelFrom ? "outer" : "reduce";
  // An innermost loop along which every store is contiguous stays a loop
  // for the vectorizer: fully unrolled first (LLVM does that to short
  // loops), its copies were vectorised across the next loop out instead,
  // as gathers and scatters (a [64,16,32] -> [16,64,32] transpose took 16 us
  // for 32K floats). Under 16 iterations LLVM vectorises it only when told:
  // the split of a conv-phases layer's 28x28 input, 14-float rows read at
  // stride 2, ran scalar (600 KB in 74-121 us; 36 us vectorised).
  //
  // A loop around a long innermost loop stays rolled too: LLVM fully
  // unrolled such loops of a few iterations, and partly unrolled longer ones,
  // copying the vectorised loop inside tens of times (a [2,128,4,64]
  // transpose became 2900 lines of IR and 0.46 s of compile time, a fifth of
  // a BERT encoder's; a batch norm's [16,32,32] reduction 1.4 s), for no
  // speed: the loop inside already runs long. Around a short innermost loop
  // (a 3x3 window) LLVM may unroll, to vectorise the loop outside instead.
  //
  // A long innermost reduction loop stays rolled as well: the vectorizer
  // already runs it with four vector accumulators, and LLVM then unrolled
  // that vector loop 16 times over (a batch norm's statistics over
  // [16,32,32]: 1900 lines of IR per kernel, a hundred milliseconds of
  // compile time each, for no speed).
  //
  // A row kernel's outer loops hold its reduce loops, whose innermost loop is
  // the nest's: with that one long, they stay rolled too (a layer norm's rows
  // were unrolled 4 times around its three vector loops once its element
  // loop was parallel).
  //
  // A row of many points (a batch norm's [16, 4x4] statistics and element
  // pass) keeps its loops rolled, and the loops around it, all but a long
  // innermost reduction loop: LLVM unrolled the short loops whole and
  // vectorised the loop around them, across images, as gathers; with those
  // rolled, it unrolled the loop over channels around them 4 times. A
  // [16, 2x2] batch norm kernel compiled in 57 ms and a [16, 4x4] one in
  // 59 ms, now in about 15, each plane read as whole vectors.
  const bool holdsReduce = &space == &outer_ && !s_.spaces.reduce.dims.empty();
  const kernel::SpaceDim& last = holdsReduce ? s_.spaces.reduce.dims.back() : space.dims.back();
  const bool innermost = !holdsReduce && level + 1 == space.dims.size();
  const bool manyRowPoints =
      (&space == &s_.spaces.reduce || holdsReduce) && s_.spaces.reduce.points >= kManyRowPoints;
  const Unroll unroll = manyRowPoints ? (innermost && level < parallelFrom && dim.extent >= kUnrolledWhole
                                             ? Unroll::NotVectorised
                                             : Unroll::Never)
                        : !innermost              ? (last.extent >= kLongLoop ? Unroll::Never : Unroll::Free)
                        : level >= parallelFrom   ? (!storesRunAlong(space, dim)     ? Unroll::Free
                                                     : dim.extent < kShortTripCount ? Unroll::ShortVectorised
                                                                                     : Unroll::Never)
                        : dim.extent >= kLongLoop ? Unroll::NotVectorised
                                                  : Unroll::Free;
  emitLoop(dim.extent, name, level >= parallelFrom && storesMoveWith(space, dim), [&](Value* iv) {
    Point inner = at;
    for (size_t a = 0; a < inner.offsets.size(); ++a) {
      int64_t stride = dim.strides[a];
      if (stride == 0) continue;
      Value* step = stride == 1 ? iv : b_.CreateMul(iv, b_.getInt64(static_cast<uint64_t>(stride)), "", false, true);
      auto* base = llvm::dyn_cast<llvm::ConstantInt>(at.offsets[a]);
      inner.offsets[a] = base && base->isZero() ? step : b_.CreateAdd(at.offsets[a], step, "", false, true);
    }
    if (dim.kernelDim >= 0) inner.index[static_cast<size_t>(dim.kernelDim)] = iv;
    std::vector<size_t> hoisted = hoistLoopLoads(space, level, inner);
    emitNest(space, level + 1, inner, body, parallelFrom);
    for (size_t i : hoisted) loopLoads_[i] = nullptr;
  }, unroll, dim.ranged ? rangeBegin_ : nullptr, dim.ranged ? rangeEnd_ : nullptr);
}

// An outer-space loop is parallel (LLVM may vectorise it without runtime
// alias checks, which in-place outputs would fail anyway) when every store
// moves with it: its iterations then write disjoint elements, and a point
// reads an element another point writes only where a buffer is written in
// place, element for element, which each point reads before it writes
// (docs/memory.md). Without this, Adam's update (4 loads, 3 stores, each
// output over its input) ran scalar: LLVM's runtime checks gave up.
//
// A reduce-space loop (the element pass, or a pass keeping a sum) is held
// to the same rule over the stores made inside it, its element stores: row
// and final stores come after it. Counting them, a batch norm's element
// pass (its output and ReLU6's masks) ran scalar; a scatter-add, whose rows
// may meet, keeps it sequential.
bool KernelEmitter::storesMoveWith(const kernel::Space& space, const kernel::SpaceDim& dim) const {
  for (size_t s = 0; s < k_.stores.size(); ++s) {
    if (!storedIn(space, s)) continue;
    if (dim.strides[k_.loads.size() + s] == 0 || (&space == &s_.spaces.reduce && k_.stores[s].accumulate))
      return false;
  }
  return true;
}

// Whether every store made in `space` walks memory contiguously along
// `dim` (stride 1), and the loop is long enough to fill a vector.
bool KernelEmitter::storesRunAlong(const kernel::Space& space, const kernel::SpaceDim& dim) const {
  if (dim.extent < kLongLoop) return false;
  bool any = false;
  for (size_t s = 0; s < k_.stores.size(); ++s) {
    if (!storedIn(space, s)) continue;
    if (dim.strides[k_.loads.size() + s] != 1) return false;
    any = true;
  }
  return any;
}

// Whether store `s` is made inside loops over `space`: every store inside
// the outer space's, only element stores inside the reduce space's.
bool KernelEmitter::storedIn(const kernel::Space& space, size_t s) const {
  return &space != &s_.spaces.reduce || k_.stores[s].scope == kernel::StoreScope::Element;
}

// The accesses a parallel loop's metadata covers: every load and store of a
// kernel buffer (not the allocas of accumulators, whose loop-carried use
// LLVM sees as a reduction).
void KernelEmitter::tagBufferAccesses() {
  if (!accessGroup_) return;
  for (llvm::BasicBlock& block : *fn_)
    for (llvm::Instruction& inst : block) {
      Value* ptr = nullptr;
      if (auto* l = llvm::dyn_cast<llvm::LoadInst>(&inst)) ptr = l->getPointerOperand();
      if (auto* s = llvm::dyn_cast<llvm::StoreInst>(&inst)) ptr = s->getPointerOperand();
      if (ptr && !llvm::isa<llvm::AllocaInst>(llvm::getUnderlyingObject(ptr)))
        inst.setMetadata(llvm::LLVMContext::MD_access_group, accessGroup_);
    }
}

void KernelEmitter::foldGlobal(size_t g, Value* v) {
  const kernel::Global& gl = g < k_.prologue.size() ? k_.prologue[g] : k_.globals[g - k_.prologue.size()];
  Value* acc = b_.CreateLoad(globals_[g]->getAllocatedType(), globals_[g]);
  b_.CreateStore(combine(b_, gl.combiner, s_.globals[g], acc, v), globals_[g]);
}

void KernelEmitter::foldReduction(size_t r, Value* v) {
  const kernel::Reduction& red = k_.reductions[r];
  Value* slot = accSlots_[r];
  if (keyed_[r]) {
    Value* key = toKey(b_, red.combiner, v);
    b_.CreateStore(combineKeys(b_, red.combiner, b_.CreateLoad(key->getType(), slot), key), slot);
    return;
  }
  // A row's float sum may be reassociated (combiners.h); a column's needs no such licence.
  Value* next = combine(b_, red.combiner, s_.accumulators[r], b_.CreateLoad(v->getType(), slot), v);
  b_.CreateStore(column_ ? next : reassociable(next), slot);
}

// Row order: each reduction of the group in its own slot (a float max or
// min on integer keys, which LLVM vectorises).
void KernelEmitter::beginGroup(size_t first, size_t last, const Point&) {
  for (size_t r = first; r < last; ++r) {
    const kernel::Reduction& red = k_.reductions[r];
    keyed_[r] = onKeys(red.combiner, s_.accumulators[r]);
    Value* init = initialValue(b_, red.combiner, s_.accumulators[r]);
    if (keyed_[r]) init = toKey(b_, red.combiner, init);
    llvm::AllocaInst* acc = slot(init->getType(), "acc");
    b_.CreateStore(init, acc);
    accSlots_[r] = acc;
  }
}

// Keeping a sum, the loop's iterations still touch disjoint memory (each
// writes its own output element after reading its own inputs): it may be
// marked parallel, so LLVM vectorises it without alias checks that an
// in-place output would fail.
void KernelEmitter::reduceLoop(const Point& p, size_t first, size_t last, const Body& body) {
  if (s_.spaces.reduce.empty()) return;
  emitNest(s_.spaces.reduce, 0, p, body, keeping(first, last) ? 0 : s_.spaces.reduce.dims.size());
}

void KernelEmitter::endGroup(size_t first, size_t last) {
  for (size_t r = first; r < last; ++r) {
    auto* slot = llvm::cast<llvm::AllocaInst>(accSlots_[r]);
    Value* acc = b_.CreateLoad(slot->getAllocatedType(), slot, "acc");
    accs_[r] = keyed_[r] ? fromKey(b_, acc, computeTypeOf(ctx_, s_.accumulators[r])) : acc;
  }
}

// The output element a kept sum's value goes to at a point (its store's).
Value* KernelEmitter::keptElement(const Point& p) {
  size_t store = s_.keptSum->store;
  return elementPtr(p, k_.loads.size() + store, k_.stores[store].buffer);
}

void KernelEmitter::afterReducePoint(Site& site, size_t first, size_t last) {
  if (!keeping(first, last)) return;
  const ScalarRef& kept = k_.reductions[s_.keptSum->reduction].value;
  emitStoreElement(b_, keptElement(site.point()), site.eval(kept), kept->type, kept->type);
}

void KernelEmitter::beforeElementStores(Site& site) {
  if (column_ || !s_.keptSum) return;
  site.seed(*s_.keptSum->inStore, emitLoadElement(b_, keptElement(site.point()), s_.keptSum->inStore->type));
}

// Column order (EmissionSchedule::rowsAcross) swaps the nests: the reduce
// loop outside, the outer points inside, where the loads are contiguous and
// vectorise, with one accumulator per outer point in a stack array. Each
// accumulator still adds its values in the same order, so results are
// bit-identical to row order.
// A scatter-add takes it without reductions (no accumulator arrays).
bool KernelEmitter::columnOrder() const {
  if (!s_.rowsAcross || s_.spaces.reduce.empty() || s_.spaces.outer.empty()) return false;
  return k_.reductions.empty() ? kernel::scatters(k_) : s_.spaces.outer.points <= kMaxColumnPoints;
}

// accs_[0..count) from the column arrays at `p`'s outer point (its last
// offset: the point's number in the outer space).
void KernelEmitter::loadColumnAccumulators(const Point& p, size_t count) {
  for (size_t r = 0; r < count; ++r) {
    llvm::Type* t = columns_[r]->getAllocatedType();
    accs_[r] = b_.CreateLoad(t, b_.CreateInBoundsGEP(t, columns_[r], p.offsets.back()), "acc");
  }
}

void KernelEmitter::emitColumnOrder() {
  // Both spaces with one more access: the outer point's number (row-major
  // over the outer dims; 0 along reduce dims), indexing the arrays.
  kernel::Space outer = outer_, reduce = s_.spaces.reduce;
  int64_t stride = 1;
  for (size_t d = outer.dims.size(); d-- > 0;) {
    outer.dims[d].strides.push_back(stride);
    stride *= outer.dims[d].extent;
  }
  for (kernel::SpaceDim& d : reduce.dims) d.strides.push_back(0);
  kernel::Space swapped = reduce;
  swapped.dims.insert(swapped.dims.end(), outer.dims.begin(), outer.dims.end());
  Point start = origin();
  start.offsets.push_back(b_.getInt64(0));

  for (size_t r = 0; r < k_.reductions.size(); ++r)
    columns_.push_back(slot(computeTypeOf(ctx_, s_.accumulators[r]), "column", outer.points));
  auto column = [&](size_t r, const Point& p) {
    return b_.CreateInBoundsGEP(columns_[r]->getAllocatedType(), columns_[r], p.offsets.back());
  };
  for (auto [first, last] : s_.groups) {
    emitNest(outer, 0, start, [&](const Point& p) {
      for (size_t r = first; r < last; ++r)
        b_.CreateStore(initialValue(b_, k_.reductions[r].combiner, s_.accumulators[r]), column(r, p));
    });
    emitNest(swapped, 0, start, [&](const Point& q) {
      loadColumnAccumulators(q, first);  // earlier groups' results (a softmax's max)
      for (size_t r = first; r < last; ++r) accSlots_[r] = column(r, q);
      reducePoint(first, last, q);
    }, reduce.dims.size());
  }
  if (s_.elementStores)
    emitNest(swapped, 0, start, [&](const Point& q) {
      loadColumnAccumulators(q, k_.reductions.size());
      elementPoint(q);
    }, reduce.dims.size());
  if (s_.rowLevel(k_))
    emitNest(outer, 0, start, [&](const Point& p) {
      loadColumnAccumulators(p, k_.reductions.size());
      rowPoint(p);
    });
}

}  // namespace

std::string symbolName(std::string_view kernelName) { return str("kfuse_", kernelName); }

Expected<llvm::Function*> emitKernel(const Kernel& k, llvm::LLVMContext& ctx, llvm::Module& module) {
  auto fail = [&](const std::string& msg) { return Error(str("kernel @", k.name, ": ", msg)); };
  if (&ctx != &module.getContext()) return fail("the module belongs to another LLVMContext");
  if (k.name.empty()) return Error("kernel has no name");
  if (module.getNamedValue(symbolName(k.name))) return fail("the module already defines a symbol of that name");
  KF_RETURN_IF_ERROR(verifyKernel(k));
  if (Status s = kernel::checkKernelScalars(k, "CPU"); !s) return fail(s.message());

  llvm::Function* fn = KernelEmitter(k, module).run();
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyFunction(*fn, &os)) {
    fn->eraseFromParent();
    return fail("generated LLVM IR does not verify: " + os.str());
  }
  return fn;
}

void markEpilogue(llvm::Function& fn) {
  fn.setLinkage(llvm::GlobalValue::InternalLinkage);
  fn.addFnAttr(kEpilogueAttribute);
}

}  // namespace kfuse::cpu
