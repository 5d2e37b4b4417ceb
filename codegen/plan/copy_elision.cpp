#include "codegen/plan/copy_elision.h"

#include <algorithm>

#include "exec/index_space.h"

namespace kfuse {
namespace {

// Whether `m` walks `space` in row-major order, from element 0 or (with
// `anyBase`) from wherever it starts.
bool rowMajor(const kernel::IndexMap& m, const Shape& space, bool anyBase = false) {
  if ((m.base != 0 && !anyBase) || m.strides.size() != space.size()) return false;
  const std::vector<int64_t> strides = stridesOf(space);
  for (size_t d = 0; d < space.size(); ++d)
    if (space[d] != 1 && m.strides[d] != strides[d]) return false;
  return true;
}

// What a Piece op's kernels are: one element store of a constant (a fill)
// or of the kernel's one load, unchanged (a copy).
enum class BlockKind { None, Fill, Copy };

BlockKind blockKind(const kernel::Kernel& k) {
  if (k.stores.size() != 1 || !k.reduce.empty() || !k.reductions.empty() || !k.prologue.empty() || !k.globals.empty())
    return BlockKind::None;
  const kernel::Store& s = k.stores[0];
  if (s.scope != kernel::StoreScope::Element || s.gathered || s.accumulate || !s.value) return BlockKind::None;
  if (k.loads.empty()) return s.value->op == ScalarOp::Const ? BlockKind::Fill : BlockKind::None;
  if (k.loads.size() != 1 || k.loads[0].gathered || s.value->op != ScalarOp::Input || s.value->input != 0)
    return BlockKind::None;
  const DType from = k.buffers[static_cast<size_t>(k.loads[0].buffer)].type.dtype;
  return from == k.buffers[static_cast<size_t>(s.buffer)].type.dtype ? BlockKind::Copy : BlockKind::None;
}

class Elider {
 public:
  explicit Elider(Plan& p) : p_(p), dead_(p.buffers.size(), false) {}

  size_t run() {
    size_t count = 0;
    for (size_t s = 0; s < p_.steps.size(); ++s) {
      if (!blockStep(s)) continue;
      for (size_t j = 0; j < p_.steps[s].kernels.size();)
        if (elide(s, j))
          ++count;
        else
          ++j;
    }
    if (count > 0) {
      dropEmpty();
      dropBuffers(p_, dead_);
    }
    return count;
  }

 private:
  const PlanBuffer& buf(int b) const { return p_.buffers[static_cast<size_t>(b)]; }
  const kernel::Kernel& kernelOf(const Step& st, size_t j) const {
    return p_.kernels[static_cast<size_t>(st.kernels[j])];
  }
  bool touches(const std::vector<int>& buffers, int storage) const {
    return std::any_of(buffers.begin(), buffers.end(), [&](int b) { return b >= 0 && p_.storageOf(b) == storage; });
  }
  bool stepTouches(size_t t, int storage) const { return touches(stepBuffers(p_.steps[t]), storage); }

  // Step s is a Piece op's: fills and copies into one storage, which none
  // of them reads.
  bool blockStep(size_t s) const {
    const Step& st = p_.steps[s];
    if (st.kind() != StepKind::Kernels || st.kernels.empty()) return false;
    int result = -1;
    for (size_t j = 0; j < st.kernels.size(); ++j) {
      const kernel::Kernel& k = kernelOf(st, j);
      if (blockKind(k) == BlockKind::None) return false;
      const int r = p_.storageOf(st.kernelBuffers[j][static_cast<size_t>(k.stores[0].buffer)]);
      if (result >= 0 && r != result) return false;
      result = r;
    }
    for (size_t j = 0; j < st.kernels.size(); ++j)
      for (const kernel::Load& l : kernelOf(st, j).loads)
        if (p_.storageOf(st.kernelBuffers[j][static_cast<size_t>(l.buffer)]) == result) return false;
    return true;
  }

  // Whether `b` is read outside the plan's steps or through another buffer.
  bool escapes(int b) const {
    if (std::find(p_.outputs.begin(), p_.outputs.end(), b) != p_.outputs.end()) return true;
    for (const auto& update : p_.updates)
      if (update.second == b) return true;
    for (const PlanBuffer& other : p_.buffers)
      if (other.kind == BufferKind::Alias && other.aliasOf == b) return true;
    return false;
  }

  // The one step before s that touches `source`, or -1.
  int writerOf(int source, size_t s) const {
    int writer = -1;
    for (size_t t = 0; t < p_.steps.size(); ++t) {
      if (t == s || !stepTouches(t, source)) continue;
      if (writer >= 0 || t > s) return -1;
      writer = static_cast<int>(t);
    }
    return writer;
  }

  // The store through which the one kernel of step w touching `source`
  // writes all of it, in row-major order over the kernel's space, and only
  // writes it; sets `kernel` and `slot` (the kernel's buffer) to where it is.
  kernel::Store* storeOf(size_t w, int source, size_t& kernel, size_t& slot) {
    Step& st = p_.steps[w];
    if (st.kind() != StepKind::Kernels && st.kind() != StepKind::Conv) return nullptr;
    if (st.kind() == StepKind::Conv) {
      const ConvSpec& c = st.conv();
      for (int b : {c.x, c.w, c.bias, c.y, c.workspace})
        if (b >= 0 && p_.storageOf(b) == source) return nullptr;
    }
    kernel = st.kernels.size();
    for (size_t i = 0; i < st.kernels.size(); ++i) {
      if (!touches(st.kernelBuffers[i], source)) continue;
      if (kernel != st.kernels.size()) return nullptr;
      kernel = i;
    }
    if (kernel == st.kernels.size() || uses(st.kernels[kernel]) != 1) return nullptr;
    kernel::Kernel& k = p_.kernels[static_cast<size_t>(st.kernels[kernel])];
    slot = k.buffers.size();
    for (size_t i = 0; i < k.buffers.size(); ++i) {
      if (p_.storageOf(st.kernelBuffers[kernel][i]) != source) continue;
      if (slot != k.buffers.size()) return nullptr;
      slot = i;
    }
    if (slot == k.buffers.size() || !k.buffers[slot].output) return nullptr;
    for (const kernel::Load& l : k.loads)
      if (static_cast<size_t>(l.buffer) == slot) return nullptr;
    kernel::Store* store = nullptr;
    for (kernel::Store& s : k.stores) {
      if (static_cast<size_t>(s.buffer) != slot) continue;
      if (store) return nullptr;
      store = &s;
    }
    if (!store || store->scope != kernel::StoreScope::Element || store->gathered || store->accumulate) return nullptr;
    const Shape space = k.space();
    if (!rowMajor(store->map, space) || numElements(space) != buf(source).type.numElements()) return nullptr;
    return store;
  }

  size_t uses(int kernel) const {
    size_t n = 0;
    for (const Step& st : p_.steps) n += static_cast<size_t>(std::count(st.kernels.begin(), st.kernels.end(), kernel));
    return n;
  }

  // Kernel j of block step s, if it copies a whole value that its writer
  // can store in place: the writer's store redirected, the copy dropped.
  bool elide(size_t s, size_t j) {
    Step& st = p_.steps[s];
    const kernel::Kernel& copy = kernelOf(st, j);
    if (blockKind(copy) != BlockKind::Copy) return false;
    const int source = st.kernelBuffers[j][static_cast<size_t>(copy.loads[0].buffer)];
    const int result = st.kernelBuffers[j][static_cast<size_t>(copy.stores[0].buffer)];
    if (buf(source).kind != BufferKind::Temp || buf(result).kind != BufferKind::Temp || escapes(source)) return false;
    if (!rowMajor(copy.loads[0].map, copy.outer) || copy.outerPoints() != buf(source).type.numElements())
      return false;
    // Only into one run of the result (a concat along its first long
    // axis): a padded result's rows, each ending in the border, cost the
    // writer more than the copy did. ResNet-18's first layer writing into
    // its max pool's -inf border took 2022 us instead of 1497, and the copy
    // it saved 229 (Xeon, one thread, medians of 8 alternated runs).
    if (!rowMajor(copy.stores[0].map, copy.outer, /*anyBase=*/true)) return false;
    for (size_t i = 0; i < st.kernels.size(); ++i)
      if (i != j && touches(st.kernelBuffers[i], source)) return false;
    const int writer = writerOf(source, s);
    if (writer < 0) return false;
    for (size_t t = static_cast<size_t>(writer); t < s; ++t)
      if (stepTouches(t, result)) return false;
    size_t kernel = 0, slot = 0;
    kernel::Store* store = storeOf(static_cast<size_t>(writer), source, kernel, slot);
    if (!store) return false;
    Step& w = p_.steps[static_cast<size_t>(writer)];
    kernel::Kernel& k = p_.kernels[static_cast<size_t>(w.kernels[kernel])];
    auto strides = kernel::restride(copy.outer, copy.stores[0].map.strides, k.space());
    if (!strides) return false;
    store->map = kernel::IndexMap{copy.stores[0].map.base, *strides};
    k.buffers[slot].type = buf(result).type;
    w.kernelBuffers[kernel][slot] = result;
    st.kernels.erase(st.kernels.begin() + static_cast<std::ptrdiff_t>(j));
    st.kernelBuffers.erase(st.kernelBuffers.begin() + static_cast<std::ptrdiff_t>(j));
    dead_[static_cast<size_t>(source)] = true;  // now named by nothing
    return true;
  }

  // Steps left without a kernel go, and then kernels no step runs.
  void dropEmpty() {
    std::erase_if(p_.steps, [](const Step& st) { return st.kind() == StepKind::Kernels && st.kernels.empty(); });
    std::vector<bool> used(p_.kernels.size(), false);
    for (const Step& st : p_.steps)
      for (int k : st.kernels) used[static_cast<size_t>(k)] = true;
    std::vector<int> renumbered(p_.kernels.size(), -1);
    std::vector<kernel::Kernel> kept;
    for (size_t k = 0; k < p_.kernels.size(); ++k)
      if (used[k]) {
        renumbered[k] = static_cast<int>(kept.size());
        kept.push_back(std::move(p_.kernels[k]));
      }
    p_.kernels = std::move(kept);
    for (Step& st : p_.steps)
      for (int& k : st.kernels) k = renumbered[static_cast<size_t>(k)];
  }

  Plan& p_;
  std::vector<bool> dead_;  // sources whose copies went
};

}  // namespace

size_t elideCopies(Plan& p) { return Elider(p).run(); }

}  // namespace kfuse
