#include "codegen/cpu/llvm_emitter.h"

#include <array>
#include <functional>
#include <limits>
#include <optional>
#include <string_view>

#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include "exec/index_space.h"
#include "codegen/kernel/kept_sum.h"
#include "codegen/kernel/scalar_rules.h"
#include "codegen/cpu/combiners.h"
#include "codegen/cpu/scalar_emitter.h"
#include "codegen/cpu/storage.h"
#include "ir/support/strings.h"

namespace kfuse::cpu {
namespace {

using kernel::Combiner;
using kernel::Kernel;
using kernel::StoreScope;
using llvm::Value;

// A position in the index space: the element offset of every access (loads,
// then stores) and the index of every kernel dim.
struct Point {
  std::vector<Value*> offsets;
  std::vector<Value*> index;
};

class KernelEmitter {
 public:
  KernelEmitter(const Kernel& k, llvm::Module& m)
      : k_(k), loops_(kernel::buildSpaces(k)), ctx_(m.getContext()), m_(m), b_(ctx_), entry_(ctx_) {}

  llvm::Function* run();

 private:
  class Site;
  using Body = std::function<void(const Point&)>;

  Point origin();
  void emitLoop(int64_t extent, const char* name, bool parallel, const std::function<void(Value*)>& body,
                bool keepRolled = false);
  // Loops over space.dims[level..]; dims from `parallelFrom` on belong to
  // the outer space (their iterations touch disjoint elements).
  void emitNest(const kernel::Space& space, size_t level, const Point& at, const Body& body,
                size_t parallelFrom = 0);
  bool storesMoveWith(const kernel::SpaceDim& dim) const;
  bool storesRunAlong(const kernel::SpaceDim& dim) const;
  void tagBufferAccesses();
  void emitPrologue();
  void emitOuterPoint(const Point& p);
  bool columnOrder() const;
  void emitColumnOrder();
  void loadColumnAccumulators(const Point& p, size_t count);
  void emitReductionGroup(size_t first, size_t last, const Point& p);
  void emitElementStores(const Point& p);
  void emitRowLevel(const Point& p);
  void emitFinalStores();
  void hoistInvariantLoads();
  void emitStores(Site& site, StoreScope scope);
  Value* keptElement(Site& site);
  void foldGlobal(const kernel::Global& g, llvm::AllocaInst* slot, Value* v);
  llvm::AllocaInst* slot(DType t, const char* name);
  // `count` > 1: an array of that many.
  llvm::AllocaInst* slot(llvm::Type* t, const char* name, int64_t count = 1);

  const Kernel& k_;
  kernel::KernelSpaces loops_;
  llvm::LLVMContext& ctx_;
  llvm::Module& m_;
  llvm::Function* fn_ = nullptr;
  llvm::IRBuilder<> b_;
  llvm::IRBuilder<> entry_;                  // allocas, at the top of the entry block
  std::vector<Value*> buffers_;              // typed pointers to element 0
  std::vector<Value*> accs_;                 // this outer point's accumulators
  std::vector<Value*> invariantLoads_;       // per load: read once at entry, or null
  std::vector<llvm::AllocaInst*> globals_;  // prologue, then main
  std::vector<llvm::AllocaInst*> columns_;  // column order: one accumulator per outer point, per reduction
  llvm::MDNode* accessGroup_ = nullptr;     // the buffers' loads and stores, once a loop is parallel
  // Row order: a sum each element store reads back instead of recomputing
  // it (codegen/kernel/kept_sum.h).
  std::optional<kernel::KeptSum> keptSum_;
};

// Column order bounds its accumulator arrays (on the stack) to this many
// outer points.
constexpr int64_t kMaxColumnPoints = 8192;

// One evaluation point: loads happen on first use, every node once.
class KernelEmitter::Site {
 public:
  Site(KernelEmitter& e, const Point& p)
      : e_(e), p_(p), loads_(e.k_.loads.size(), nullptr),
        scalars_(e.b_, [this](const ScalarNode& n) { return leaf(n); }) {}

  Value* eval(const ScalarRef& e) { return scalars_.emit(*e); }
  void seed(const ScalarNode& n, Value* v) { scalars_.seed(n, v); }

  Value* elementPtr(size_t access, int buffer) {
    llvm::Type* t = storageTypeOf(e_.ctx_, e_.k_.buffers[static_cast<size_t>(buffer)].type.dtype);
    return e_.b_.CreateInBoundsGEP(t, e_.buffers_[static_cast<size_t>(buffer)], p_.offsets[access]);
  }

 private:
  Value* leaf(const ScalarNode& n) {
    const Kernel& k = e_.k_;
    auto i = static_cast<size_t>(n.input);
    DType from = DType::I64;
    Value* v = nullptr;
    if (n.op == ScalarOp::Index) {
      v = p_.index[i];
    } else if (i < k.firstAccumulator()) {
      from = computeType(k.buffers[static_cast<size_t>(k.loads[i].buffer)].type.dtype);
      v = load(i);
    } else if (i < k.firstGlobal()) {
      size_t r = i - k.firstAccumulator();
      from = kernel::accumulatorType(k.reductions[r].combiner, k.reductions[r].value->type);
      v = e_.accs_[r];
    } else {
      llvm::AllocaInst* slot = e_.globals_[i - k.firstGlobal()];
      from = globalType(i - k.firstGlobal());
      v = e_.b_.CreateLoad(slot->getAllocatedType(), slot);
    }
    return emitConvert(e_.b_, v, from, n.type);
  }

  Value* load(size_t i) {
    if (Value* once = e_.invariantLoads_[i]) return once;
    if (!loads_[i]) {
      int buffer = e_.k_.loads[i].buffer;
      loads_[i] = emitLoadElement(e_.b_, elementPtr(i, buffer), e_.k_.buffers[static_cast<size_t>(buffer)].type.dtype);
    }
    return loads_[i];
  }

  DType globalType(size_t g) const {
    const Kernel& k = e_.k_;
    const kernel::Global& global = g < k.prologue.size() ? k.prologue[g] : k.globals[g - k.prologue.size()];
    return kernel::accumulatorType(global.combiner, global.value->type);
  }

  KernelEmitter& e_;
  const Point& p_;
  std::vector<Value*> loads_;
  ScalarEmitter scalars_;
};

llvm::Function* KernelEmitter::run() {
  llvm::Type* bytePtr = llvm::Type::getInt8PtrTy(ctx_);
  auto* type = llvm::FunctionType::get(b_.getVoidTy(), {bytePtr->getPointerTo()}, false);
  fn_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage, symbolName(k_.name), m_);
  fn_->setDoesNotThrow();
  fn_->addParamAttr(0, llvm::Attribute::NoCapture);
  fn_->addParamAttr(0, llvm::Attribute::ReadOnly);
  llvm::Argument* arg = fn_->getArg(0);
  arg->setName("buffers");

  auto* entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
  b_.SetInsertPoint(entry);
  for (size_t i = 0; i < k_.buffers.size(); ++i) {
    const kernel::Buffer& buf = k_.buffers[i];
    Value* raw = b_.CreateAlignedLoad(bytePtr, b_.CreateConstInBoundsGEP1_64(bytePtr, arg, i), llvm::Align(8),
                                      buf.name + ".raw");
    buffers_.push_back(b_.CreateBitCast(raw, storageTypeOf(ctx_, buf.type.dtype)->getPointerTo(), buf.name));
  }
  auto initGlobal = [&](const kernel::Global& g, const char* name) {
    DType t = kernel::accumulatorType(g.combiner, g.value->type);
    globals_.push_back(slot(t, name));
    b_.CreateStore(initialValue(b_, g.combiner, t), globals_.back());
  };
  for (const auto& g : k_.prologue) initGlobal(g, "prologue");
  for (const auto& g : k_.globals) initGlobal(g, "global");

  invariantLoads_.assign(k_.loads.size(), nullptr);
  if (!columnOrder()) keptSum_ = kernel::findKeptSum(k_);
  if (!loops_.outer.empty()) {
    hoistInvariantLoads();
    if (!k_.prologue.empty()) emitPrologue();
    if (columnOrder())
      emitColumnOrder();
    else
      emitNest(loops_.outer, 0, origin(), [&](const Point& p) { emitOuterPoint(p); });
  }
  emitFinalStores();
  b_.CreateRetVoid();
  tagBufferAccesses();
  return fn_;
}

// A load that reads the same element at every point (a scalar operand: the
// step count, a learning rate) of a buffer the kernel never writes is read
// once before the loops. LLVM cannot hoist it itself, since it cannot prove
// the buffer differs from the ones stored to, and then everything computed
// from it (Adam's bias corrections: two pow calls) would run per element.
// Only with iterations: a load of an empty space's operand may be out of
// bounds.
void KernelEmitter::hoistInvariantLoads() {
  std::vector<bool> stored(k_.buffers.size(), false);
  for (const auto& s : k_.stores) stored[static_cast<size_t>(s.buffer)] = true;
  for (size_t i = 0; i < k_.loads.size(); ++i) {
    const kernel::Load& l = k_.loads[i];
    bool invariant = true;
    for (size_t d = 0; d < k_.numDims(); ++d) invariant = invariant && !l.map.dependsOn(d);
    if (!invariant || stored[static_cast<size_t>(l.buffer)]) continue;
    DType t = k_.buffers[static_cast<size_t>(l.buffer)].type.dtype;
    Value* ptr = b_.CreateInBoundsGEP(storageTypeOf(ctx_, t), buffers_[static_cast<size_t>(l.buffer)],
                                      b_.getInt64(static_cast<uint64_t>(l.map.base)));
    invariantLoads_[i] = emitLoadElement(b_, ptr, t);
  }
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
  for (const auto& l : k_.loads) p.offsets.push_back(b_.getInt64(static_cast<uint64_t>(l.map.base)));
  for (const auto& s : k_.stores) p.offsets.push_back(b_.getInt64(static_cast<uint64_t>(s.map.base)));
  p.index.assign(k_.numDims(), b_.getInt64(0));
  return p;
}

// A bottom-tested counted loop: callers only emit loops of extent >= 1.
void KernelEmitter::emitLoop(int64_t extent, const char* name, bool parallel,
                             const std::function<void(Value*)>& body, bool keepRolled) {
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, name, fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* iv = b_.CreatePHI(b_.getInt64Ty(), 2, name);
  iv->addIncoming(b_.getInt64(0), pre);
  body(iv);
  Value* next = b_.CreateAdd(iv, b_.getInt64(1), "", /*HasNUW=*/true, /*HasNSW=*/true);
  auto* exit = llvm::BasicBlock::Create(ctx_, std::string(name) + ".end", fn_);
  llvm::BranchInst* latch =
      b_.CreateCondBr(b_.CreateICmpULT(next, b_.getInt64(static_cast<uint64_t>(extent))), header, exit);
  std::vector<llvm::Metadata*> properties = {nullptr};
  if (parallel) {
    if (!accessGroup_) accessGroup_ = llvm::MDNode::getDistinct(ctx_, {});
    llvm::Metadata* parallelAccesses[] = {llvm::MDString::get(ctx_, "llvm.loop.parallel_accesses"), accessGroup_};
    properties.push_back(llvm::MDNode::get(ctx_, parallelAccesses));
  }
  if (keepRolled) properties.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")}));
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
  // for 32K floats).
  const bool rolled = level + 1 == space.dims.size() && level >= parallelFrom && storesRunAlong(dim);
  emitLoop(dim.extent, name, level >= parallelFrom && storesMoveWith(dim), [&](Value* iv) {
    Point inner = at;
    for (size_t a = 0; a < inner.offsets.size(); ++a) {
      int64_t stride = dim.strides[a];
      if (stride == 0) continue;
      Value* step = stride == 1 ? iv : b_.CreateMul(iv, b_.getInt64(static_cast<uint64_t>(stride)), "", false, true);
      auto* base = llvm::dyn_cast<llvm::ConstantInt>(at.offsets[a]);
      inner.offsets[a] = base && base->isZero() ? step : b_.CreateAdd(at.offsets[a], step, "", false, true);
    }
    if (dim.kernelDim >= 0) inner.index[static_cast<size_t>(dim.kernelDim)] = iv;
    emitNest(space, level + 1, inner, body, parallelFrom);
  }, rolled);
}

// An outer-space loop is parallel (LLVM may vectorise it without runtime
// alias checks, which in-place outputs would fail anyway) when every store
// moves with it: its iterations then write disjoint elements, and a point
// reads an element another point writes only where a buffer is written in
// place, element for element, which each point reads before it writes
// (docs/memory.md). Without this, Adam's update (4 loads, 3 stores, each
// output over its input) ran scalar: LLVM's runtime checks gave up.
bool KernelEmitter::storesMoveWith(const kernel::SpaceDim& dim) const {
  for (size_t s = 0; s < k_.stores.size(); ++s)
    if (dim.strides[k_.loads.size() + s] == 0) return false;
  return true;
}

// Whether every store walks memory contiguously along `dim` (stride 1), and
// the loop is long enough to fill a vector.
bool KernelEmitter::storesRunAlong(const kernel::SpaceDim& dim) const {
  if (k_.stores.empty() || dim.extent < 8) return false;
  for (size_t s = 0; s < k_.stores.size(); ++s)
    if (dim.strides[k_.loads.size() + s] != 1) return false;
  return true;
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

void KernelEmitter::foldGlobal(const kernel::Global& g, llvm::AllocaInst* slot, Value* v) {
  DType t = kernel::accumulatorType(g.combiner, g.value->type);
  Value* acc = b_.CreateLoad(slot->getAllocatedType(), slot);
  b_.CreateStore(combine(b_, g.combiner, t, acc, emitConvert(b_, v, g.value->type, t)), slot);
}

void KernelEmitter::emitPrologue() {
  emitNest(loops_.outer, 0, origin(), [&](const Point& p) {
    Site site(*this, p);
    std::vector<Value*> values;
    for (const auto& g : k_.prologue) values.push_back(site.eval(g.value));
    for (size_t i = 0; i < values.size(); ++i) foldGlobal(k_.prologue[i], globals_[i], values[i]);
  });
}

void KernelEmitter::emitOuterPoint(const Point& p) {
  accs_.assign(k_.reductions.size(), nullptr);
  for (auto [first, last] : kernel::reductionGroups(k_)) emitReductionGroup(first, last, p);
  emitElementStores(p);
  emitRowLevel(p);
}

// A reduction over an axis that is not the contiguous one (a bias gradient:
// the sum over a batch's rows of each column) walks memory with a stride
// when each outer point runs its own reduce loop. Column order swaps the
// nests instead: the reduce loop outside, the outer points inside, where
// the loads are contiguous and vectorise, with one accumulator per outer
// point in a stack array. Each accumulator still adds its values in the
// same order, so results are bit-identical to row order.
bool KernelEmitter::columnOrder() const {
  if (k_.reductions.empty() || loops_.reduce.empty() || loops_.outer.dims.empty() || loops_.reduce.dims.empty())
    return false;
  if (loops_.outer.points > kMaxColumnPoints) return false;
  const kernel::SpaceDim &o = loops_.outer.dims.back(), &r = loops_.reduce.dims.back();
  bool contiguousAcross = false;
  for (size_t a = 0; a < k_.loads.size(); ++a) {
    if (r.strides[a] == 1) return false;  // the reduce axis is contiguous for some load: row order
    contiguousAcross |= o.strides[a] == 1 && r.strides[a] != 0;
  }
  return contiguousAcross;
}

// accs_[0..count) from the column arrays at `p`'s outer point (its last
// offset: the point's number in the outer space).
void KernelEmitter::loadColumnAccumulators(const Point& p, size_t count) {
  accs_.assign(k_.reductions.size(), nullptr);
  for (size_t r = 0; r < count; ++r) {
    llvm::Type* t = columns_[r]->getAllocatedType();
    accs_[r] = b_.CreateLoad(t, b_.CreateInBoundsGEP(t, columns_[r], p.offsets.back()), "acc");
  }
}

void KernelEmitter::emitColumnOrder() {
  // Both spaces with one more access: the outer point's number (row-major
  // over the outer dims; 0 along reduce dims), indexing the arrays.
  kernel::Space outer = loops_.outer, reduce = loops_.reduce;
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

  std::vector<DType> types;
  for (const kernel::Reduction& red : k_.reductions) {
    types.push_back(kernel::accumulatorType(red.combiner, red.value->type));
    columns_.push_back(slot(computeTypeOf(ctx_, types.back()), "column", outer.points));
  }
  auto column = [&](size_t r, const Point& p) {
    return b_.CreateInBoundsGEP(columns_[r]->getAllocatedType(), columns_[r], p.offsets.back());
  };
  for (auto [first, last] : kernel::reductionGroups(k_)) {
    emitNest(outer, 0, start, [&](const Point& p) {
      for (size_t r = first; r < last; ++r)
        b_.CreateStore(initialValue(b_, k_.reductions[r].combiner, types[r]), column(r, p));
    });
    emitNest(swapped, 0, start, [&](const Point& q) {
      loadColumnAccumulators(q, first);  // earlier groups' results (a softmax's max)
      Site site(*this, q);
      for (size_t r = first; r < last; ++r) {
        Value* v = emitConvert(b_, site.eval(k_.reductions[r].value), k_.reductions[r].value->type, types[r]);
        Value* acc = b_.CreateLoad(columns_[r]->getAllocatedType(), column(r, q));
        b_.CreateStore(combine(b_, k_.reductions[r].combiner, types[r], acc, v), column(r, q));
      }
    }, reduce.dims.size());
  }
  bool elementStores = false;
  for (const auto& s : k_.stores) elementStores |= s.scope == StoreScope::Element;
  if (elementStores)
    emitNest(swapped, 0, start, [&](const Point& q) {
      loadColumnAccumulators(q, k_.reductions.size());
      Site site(*this, q);
      emitStores(site, StoreScope::Element);
    }, reduce.dims.size());
  emitNest(outer, 0, start, [&](const Point& p) {
    loadColumnAccumulators(p, k_.reductions.size());
    emitRowLevel(p);
  });
}

void KernelEmitter::emitReductionGroup(size_t first, size_t last, const Point& p) {
  std::vector<llvm::AllocaInst*> slots;
  std::vector<DType> types;
  std::vector<bool> keyed;  // onKeys: the slot holds an integer key
  for (size_t r = first; r < last; ++r) {
    const kernel::Reduction& red = k_.reductions[r];
    types.push_back(kernel::accumulatorType(red.combiner, red.value->type));
    keyed.push_back(onKeys(red.combiner, types.back()));
    Value* init = initialValue(b_, red.combiner, types.back());
    if (keyed.back()) init = toKey(b_, red.combiner, init);
    slots.push_back(slot(init->getType(), "acc"));
    b_.CreateStore(init, slots.back());
  }
  const bool keeping = keptSum_ && keptSum_->reduction >= first && keptSum_->reduction < last;
  if (!loops_.reduce.empty()) {
    emitNest(loops_.reduce, 0, p, [&](const Point& q) {
      Site site(*this, q);
      for (size_t r = first; r < last; ++r) {
        const kernel::Reduction& red = k_.reductions[r];
        size_t i = r - first;
        Value* v = emitConvert(b_, site.eval(red.value), red.value->type, types[i]);
        Value* acc = b_.CreateLoad(slots[i]->getAllocatedType(), slots[i]);
        Value* next = keyed[i] ? combineKeys(b_, red.combiner, acc, toKey(b_, red.combiner, v))
                               : reassociable(combine(b_, red.combiner, types[i], acc, v));
        b_.CreateStore(next, slots[i]);
      }
      if (keeping) {
        const ScalarRef& kept = k_.reductions[keptSum_->reduction].value;
        emitStoreElement(b_, keptElement(site), site.eval(kept), kept->type, kept->type);
      }
      // Keeping, the loop's iterations still touch disjoint memory (each
      // writes its own output element after reading its own inputs): it may
      // be marked parallel, so LLVM vectorises it without alias checks that
      // an in-place output would fail.
    }, keeping ? 0 : loops_.reduce.dims.size());
  }
  for (size_t r = first; r < last; ++r) {
    size_t i = r - first;
    Value* acc = b_.CreateLoad(slots[i]->getAllocatedType(), slots[i], "acc");
    accs_[r] = keyed[i] ? fromKey(b_, acc, computeTypeOf(ctx_, types[i])) : acc;
  }
}

// Evaluates every store of `scope` at the site, then writes them: all loads
// of a point happen before its stores, as in the interpreter.
void KernelEmitter::emitStores(Site& site, StoreScope scope) {
  std::vector<std::pair<size_t, Value*>> values;
  for (size_t s = 0; s < k_.stores.size(); ++s)
    if (k_.stores[s].scope == scope) values.emplace_back(s, site.eval(k_.stores[s].value));
  for (auto [s, v] : values) {
    const kernel::Store& store = k_.stores[s];
    DType storage = k_.buffers[static_cast<size_t>(store.buffer)].type.dtype;
    emitStoreElement(b_, site.elementPtr(k_.loads.size() + s, store.buffer), v, store.value->type, storage);
  }
}

// The output element a kept sum's value goes to at the site (its store's).
Value* KernelEmitter::keptElement(Site& site) {
  return site.elementPtr(k_.loads.size() + keptSum_->store, k_.stores[keptSum_->store].buffer);
}

void KernelEmitter::emitElementStores(const Point& p) {
  bool any = false;
  for (const auto& s : k_.stores) any |= s.scope == StoreScope::Element;
  if (!any || loops_.reduce.empty()) return;
  emitNest(loops_.reduce, 0, p, [&](const Point& q) {
    Site site(*this, q);
    if (keptSum_)
      site.seed(*keptSum_->inStore, emitLoadElement(b_, keptElement(site), keptSum_->inStore->type));
    emitStores(site, StoreScope::Element);
  }, loops_.reduce.dims.size());
}

// Row stores and globals read row-invariant values: they are evaluated at
// reduce index 0, the point `p` stands for.
void KernelEmitter::emitRowLevel(const Point& p) {
  Site site(*this, p);
  std::vector<Value*> values;
  for (const auto& g : k_.globals) values.push_back(site.eval(g.value));
  emitStores(site, StoreScope::Row);
  for (size_t i = 0; i < values.size(); ++i) foldGlobal(k_.globals[i], globals_[k_.prologue.size() + i], values[i]);
}

void KernelEmitter::emitFinalStores() {
  Point p = origin();
  Site site(*this, p);
  emitStores(site, StoreScope::Final);
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

}  // namespace kfuse::cpu
