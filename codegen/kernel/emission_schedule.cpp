#include "codegen/kernel/emission_schedule.h"

#include "codegen/kernel/scalar_rules.h"

namespace kfuse::kernel {
namespace {

std::vector<bool> readOnlyLoads(const Kernel& k) {
  std::vector<bool> stored(k.buffers.size(), false);
  for (const auto& s : k.stores) stored[static_cast<size_t>(s.buffer)] = true;
  std::vector<bool> out(k.loads.size(), false);
  // A gathered load is read where its index is known, never hoisted.
  for (size_t i = 0; i < k.loads.size(); ++i)
    out[i] = !stored[static_cast<size_t>(k.loads[i].buffer)] && !k.loads[i].gathered;
  return out;
}

std::vector<bool> invariantLoads(const Kernel& k, std::vector<bool> out) {
  for (size_t i = 0; i < k.loads.size(); ++i)
    for (size_t d = 0; d < k.numDims(); ++d) out[i] = out[i] && !k.loads[i].map.dependsOn(d);
  return out;
}

bool rowsAcross(const Kernel& k, const KernelSpaces& s) {
  if (s.reduce.dims.empty() || s.outer.dims.empty()) return false;
  // A scatter-add whose rows are contiguous across the outer points adds
  // row after row, each row's elements inside (vectors of them).
  for (size_t i = 0; i < k.stores.size(); ++i)
    if (k.stores[i].accumulate && s.outer.dims.back().strides[k.loads.size() + i] == 1) return true;
  // Loads the same at every outer point (a layer norm's weight and bias
  // along its row) do not decide: column order reads them once per row
  // element, broadcast.
  bool contiguousRow = false, contiguousAcross = false;
  for (size_t i = 0; i < k.loads.size(); ++i) {
    bool rowDependent = false, outerDependent = false;
    for (const SpaceDim& d : s.reduce.dims) rowDependent |= d.strides[i] != 0;
    for (const SpaceDim& d : s.outer.dims) outerDependent |= d.strides[i] != 0;
    if (!rowDependent || !outerDependent) continue;
    contiguousRow |= s.reduce.dims.back().strides[i] == 1;
    contiguousAcross |= s.outer.dims.back().strides[i] == 1;
  }
  return contiguousAcross && !contiguousRow;
}

}  // namespace

EmissionSchedule scheduleEmission(const Kernel& k) {
  EmissionSchedule s;
  s.spaces = buildSpaces(k);
  s.groups = reductionGroups(k);
  for (const Reduction& r : k.reductions) s.accumulators.push_back(accumulatorType(r.combiner, r.value->type));
  for (const Global& g : k.prologue) s.globals.push_back(accumulatorType(g.combiner, g.value->type));
  for (const Global& g : k.globals) s.globals.push_back(accumulatorType(g.combiner, g.value->type));
  s.readOnlyLoads = readOnlyLoads(k);
  s.invariantLoads = invariantLoads(k, s.readOnlyLoads);
  s.rowsAcross = rowsAcross(k, s.spaces);
  s.keptSum = findKeptSum(k);
  for (const Store& st : k.stores) {
    s.elementStores |= st.scope == StoreScope::Element;
    s.rowStores |= st.scope == StoreScope::Row;
    s.finalStores |= st.scope == StoreScope::Final;
  }
  return s;
}

}  // namespace kfuse::kernel
