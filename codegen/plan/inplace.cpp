#include "codegen/plan/inplace.h"

#include <map>

#include "codegen/plan/buffer_plan.h"
#include "ir/op_registry.h"

namespace kfuse {
namespace {

bool sameMap(const kernel::IndexMap& a, const kernel::IndexMap& b) { return a.base == b.base && a.strides == b.strides; }

// Every point of the kernel reads its inputs, then writes its outputs, at
// that point only: no reduction, no row/final stores, no folds over points.
bool pointwise(const kernel::Kernel& k) {
  if (!k.reduce.empty() || !k.prologue.empty() || !k.globals.empty() || !k.reductions.empty()) return false;
  for (const kernel::Store& s : k.stores)
    if (s.scope != kernel::StoreScope::Element) return false;
  return true;
}

// The single map through which kernel buffer `out` is stored, if all its
// stores use one map and the kernel has one point per element of it.
const kernel::IndexMap* storeMap(const kernel::Kernel& k, int out) {
  const kernel::IndexMap* map = nullptr;
  for (const kernel::Store& s : k.stores) {
    if (s.buffer != out) continue;
    if (s.gathered || (map && !sameMap(*map, s.map))) return nullptr;
    map = &s.map;
  }
  if (map && k.outerPoints() != k.buffers[static_cast<size_t>(out)].type.numElements()) return nullptr;
  return map;
}

// Kernel buffer `in` is loaded, and only through `map`.
bool loadedOnlyThrough(const kernel::Kernel& k, int in, const kernel::IndexMap& map) {
  bool any = false;
  for (const kernel::Load& l : k.loads) {
    if (l.buffer != in) continue;
    // A gathered load reads rows other points may already have written.
    if (l.gathered || !sameMap(l.map, map)) return false;
    any = true;
  }
  return any;
}

class InPlace {
 public:
  explicit InPlace(Plan& p) : p_(p) {
    // The parameter buffer each updated value is the new state of.
    std::map<std::string, int> paramBuffer;
    for (size_t i = 0; i < p.buffers.size(); ++i)
      if (p.buffers[i].kind == BufferKind::Param) paramBuffer.emplace(p.buffers[i].param, static_cast<int>(i));
    for (const auto& [param, b] : p.updates)
      if (auto it = paramBuffer.find(param); it != paramBuffer.end()) updateOf_[b] = it->second;
  }

  size_t run() {
    computeLifetimes(p_);
    for (size_t s = 0; s < p_.steps.size(); ++s) {
      const Step& step = p_.steps[s];
      if (step.kind() == StepKind::Reference) {
        referenceStep(step, static_cast<int>(s));
        continue;
      }
      if (step.kind() == StepKind::Collective) {
        collectiveStep(step, static_cast<int>(s));
        continue;
      }
      for (size_t k = 0; k < step.kernels.size(); ++k) kernelInStep(step, static_cast<int>(s), k);
    }
    return count_;
  }

 private:
  const PlanBuffer& buf(int b) const { return p_.buffers[static_cast<size_t>(b)]; }

  // May `out` (written at step s) take over the storage of `in`?
  bool fits(int out, int in, int s) const {
    const PlanBuffer& o = buf(out);
    if (o.kind != BufferKind::Temp) return false;
    int storage = p_.storageOf(in);
    const PlanBuffer& st = buf(storage);
    bool ownUpdate = false;
    if (auto it = updateOf_.find(out); it != updateOf_.end()) ownUpdate = it->second == storage;
    if (st.kind != BufferKind::Temp && !(st.kind == BufferKind::Param && ownUpdate)) return false;
    if (st.lastUse != s) return false;
    const TensorType &ot = o.type, &it = buf(in).type;
    return ot.byteSize() == it.byteSize() && st.type.byteSize() == ot.byteSize() &&
           dtypeSize(ot.dtype) == dtypeSize(it.dtype);
  }

  void alias(int out, int in) {
    PlanBuffer& o = p_.buffers[static_cast<size_t>(out)];
    o.kind = BufferKind::Alias;
    o.aliasOf = p_.storageOf(in);
    o.inPlace = true;
    ++count_;
    computeLifetimes(p_);  // the input's storage now lives as long as the output
  }

  // Storage touched by the step outside kernel `k`: by its library call
  // (which runs first), by earlier kernels, or by later kernels.
  bool touchedOutside(const Step& step, size_t k, int storage, bool before, bool after) const {
    auto hits = [&](int b) { return b >= 0 && p_.storageOf(b) == storage; };
    if (before) {
      if (step.kind() == StepKind::Gemm && (hits(step.gemm().a) || hits(step.gemm().b) || hits(step.gemm().c)))
        return true;
      if (step.kind() == StepKind::Conv)
        for (int b : {step.conv().x, step.conv().w, step.conv().bias, step.conv().y, step.conv().workspace})
          if (hits(b)) return true;
    }
    for (size_t j = 0; j < step.kernels.size(); ++j) {
      if (j == k || (j < k && !before) || (j > k && !after)) continue;
      for (int b : step.kernelBuffers[j])
        if (hits(b)) return true;
    }
    return false;
  }

  void kernelInStep(const Step& step, int s, size_t k) {
    const kernel::Kernel& K = p_.kernels[static_cast<size_t>(step.kernels[k])];
    if (!pointwise(K)) return;
    const std::vector<int>& bufs = step.kernelBuffers[k];
    for (size_t o = 0; o < K.buffers.size(); ++o) {
      if (!K.buffers[o].output) continue;
      int out = bufs[o];
      if (buf(out).kind != BufferKind::Temp) continue;
      // The output must be born here: nothing before this kernel touches it.
      if (touchedOutside(step, k, out, true, false)) continue;
      const kernel::IndexMap* map = storeMap(K, static_cast<int>(o));
      if (!map) continue;
      // Parameters first: an update overwriting its own parameter frees
      // a whole parameter-sized buffer for the rest of the step.
      int chosen = -1;
      for (size_t i = 0; i < K.buffers.size(); ++i) {
        if (K.buffers[i].output) continue;
        int in = bufs[i];
        int storage = p_.storageOf(in);
        if (!fits(out, in, s) || !loadedOnlyThrough(K, static_cast<int>(i), *map)) continue;
        // No other buffer of this kernel may share the storage (a second
        // view of it read through another map), nor any later kernel.
        bool shared = false;
        for (size_t j = 0; j < bufs.size(); ++j)
          if (j != i && p_.storageOf(bufs[j]) == storage) shared = true;
        if (shared || touchedOutside(step, k, storage, false, true)) continue;
        if (chosen < 0 || buf(storage).kind == BufferKind::Param) chosen = in;
      }
      if (chosen >= 0) alias(out, chosen);
    }
  }

  void referenceStep(const Step& step, int s) {
    for (size_t r = 0; r < step.reference().outputs.size() && r < step.reference().op->inPlace.size(); ++r) {
      int operand = step.reference().op->inPlace[r];
      if (operand < 0 || static_cast<size_t>(operand) >= step.reference().inputs.size()) continue;
      int in = step.reference().inputs[static_cast<size_t>(operand)], out = step.reference().outputs[r];
      if (!fits(out, in, s)) continue;
      int storage = p_.storageOf(in);
      size_t uses = 0;
      for (int b : step.reference().inputs) uses += p_.storageOf(b) == storage;
      for (int b : step.reference().outputs) uses += p_.storageOf(b) == storage;
      if (uses == 1) alias(out, in);
    }
  }

  // A bucket exchanged where its values were computed: no copy at the start.
  void collectiveStep(const Step& step, int s) {
    const CollectiveSpec& c = step.collective();
    if (c.op != CollectiveOp::AllReduce) return;  // a shard is not the tensor
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      int in = c.inputs[i], out = c.outputs[i];
      if (!fits(out, in, s)) continue;
      int storage = p_.storageOf(in);
      size_t uses = 0;
      for (int b : c.inputs) uses += p_.storageOf(b) == storage;
      if (uses == 1) alias(out, in);
    }
  }

  Plan& p_;
  std::map<int, int> updateOf_;  // updated value buffer -> its parameter's buffer
  size_t count_ = 0;
};

}  // namespace

size_t rewriteInPlace(Plan& p) { return InPlace(p).run(); }

}  // namespace kfuse
