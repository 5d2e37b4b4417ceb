#include "ir/op_registry.h"

#include <algorithm>
#include <cassert>

#include "ir/graph.h"
#include "ir/support/strings.h"

namespace kfuse {

OpCall callOf(const Node& n, std::vector<TensorType>& types) {
  types.clear();
  for (const Value* v : n.operands()) types.push_back(v->type());
  return OpCall{n.op(), n.attrs(), types, &n, n.body()};
}

std::string_view fusionClassName(FusionClass c) {
  switch (c) {
    case FusionClass::Elementwise: return "elementwise";
    case FusionClass::Broadcast: return "broadcast";
    case FusionClass::Injective: return "injective";
    case FusionClass::Reduction: return "reduction";
    case FusionClass::GemmLike: return "gemm-like";
    case FusionClass::Opaque: return "opaque";
  }
  return "?";
}

const Attribute& OpCall::attr(std::string_view name) const {
  auto it = attrs.find(name);
  if (it != attrs.end()) return it->second;
  const AttrSpec* spec = op.findAttr(name);
  assert(spec && spec->defaultValue && "attribute neither set nor defaulted");
  return *spec->defaultValue;
}

const AttrSpec* OpDef::findAttr(std::string_view n) const {
  for (const AttrSpec& s : attrs)
    if (s.name == n) return &s;
  return nullptr;
}

const OpRegistry& OpRegistry::global() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    registerElementwiseOps(r);
    registerReductionOps(r);
    registerShapeOps(r);
    registerLinalgOps(r);
    registerPoolOps(r);
    registerNormOps(r);
    registerLossOps(r);
    registerLogicOps(r);
    registerOptimizerOps(r);
    registerFusedOps(r);
    registerCollectiveOps(r);
    for ([[maybe_unused]] const OpDef* op : r.byId_) assert(op && "an op of ir/ops/ops.def is not registered");
    return r;
  }();
  return registry;
}

const OpDef* OpRegistry::find(std::string_view name) const {
  // Every registered op is in ops.def (add() checks).
  std::optional<Op> id = findOp(name);
  return id ? byId_[static_cast<size_t>(*id)] : nullptr;
}

std::vector<const OpDef*> OpRegistry::all() const {
  std::vector<const OpDef*> out;
  for (const auto& op : ops_) out.push_back(op.get());
  std::sort(out.begin(), out.end(), [](const OpDef* a, const OpDef* b) { return a->name < b->name; });
  return out;
}

OpDef& OpRegistry::add(OpDef def) {
  assert(!find(def.name) && "op registered twice");
  assert(def.infer && def.reference && "an op needs inference and a reference implementation");
  std::optional<Op> id = findOp(def.name);
  assert(id && "an op missing from ir/ops/ops.def");
  def.id = *id;
  ops_.push_back(std::make_unique<OpDef>(std::move(def)));
  byId_[static_cast<size_t>(*id)] = ops_.back().get();
  return *ops_.back();
}

Expected<AttrMap> completeAttrs(const OpDef& op, AttrMap given) {
  for (auto& [name, value] : given) {
    const AttrSpec* spec = op.findAttr(name);
    if (!spec) {
      std::vector<std::string> known;
      for (const AttrSpec& s : op.attrs) known.push_back(s.name);
      return Error(str("op '", op.name, "' has no attribute '", name, "'",
                       known.empty() ? std::string(" (it takes none)") : str(" (it takes: ", join(known), ")")));
    }
    if (value.kind() == spec->kind) continue;
    if (spec->kind == AttrKind::Float && value.kind() == AttrKind::Int) {
      value = Attribute(static_cast<double>(value.asInt()));
    } else if (spec->kind == AttrKind::Floats && value.kind() == AttrKind::Ints) {
      value = Attribute(std::vector<double>(value.asInts().begin(), value.asInts().end()));
    } else if (spec->kind == AttrKind::Ints && value.kind() == AttrKind::Floats && value.asFloats().empty()) {
      value = Attribute(std::vector<int64_t>{});
    } else {
      return Error(str("attribute '", name, "' of op '", op.name, "' must be ", attrKindName(spec->kind), ", got ",
                       attrKindName(value.kind())));
    }
  }
  for (const AttrSpec& s : op.attrs) {
    if (given.count(s.name)) continue;
    if (!s.defaultValue) return Error(str("op '", op.name, "' requires attribute '", s.name, "'"));
    given.emplace(s.name, *s.defaultValue);
  }
  return given;
}

}  // namespace kfuse
