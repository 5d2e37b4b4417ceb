#include "codegen/kernel/lower.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>

#include "ir/kernel_form.h"
#include "ir/op_registry.h"
#include "ir/support/strings.h"
#include "ir/value_names.h"

namespace kfuse::kernel {
namespace {

// A value's dims as affine functions of the iteration dims: dim j of the
// value at iteration point i is offset + scale * i[dim] (dim -1: constant).
struct AffineDim {
  int dim = -1;
  int64_t scale = 0;
  int64_t offset = 0;
  bool operator==(const AffineDim&) const = default;
};
using DimMap = std::vector<AffineDim>;

std::string key(const Value* v, const DimMap& m) {
  std::string k = str(static_cast<const void*>(v));
  for (const AffineDim& a : m) k += str("|", a.dim, "*", a.scale, "+", a.offset);
  return k;
}

// Leaves are numbered in separate ranges while the kernel grows and
// renumbered into kernel_ir.h's order at the end.
constexpr int kAccBase = 1 << 20;
constexpr int kPrologueBase = 2 << 20;
constexpr int kGlobalBase = 3 << 20;

class Lowering;

class RowBuilderImpl : public RowBuilder {
 public:
  RowBuilderImpl(Lowering& l, std::vector<int> iterDims) : l_(l), iterDims_(std::move(iterDims)) {}
  Scalar reduce(RowCombiner c, const Scalar& value) override;
  Scalar prologue(RowCombiner c, const Scalar& value) override;
  Scalar global(RowCombiner c, const Scalar& value) override;
  Scalar position(int64_t axis) override { return Scalar::index(iterDims_[static_cast<size_t>(axis)]); }

 private:
  Lowering& l_;
  std::vector<int> iterDims_;  // primary axis -> iteration dim
};

Combiner toCombiner(RowCombiner c) {
  return c == RowCombiner::Sum ? Combiner::Sum : c == RowCombiner::Max ? Combiner::Max : Combiner::Min;
}

class Lowering {
 public:
  Lowering(const Graph& body, std::string name) : body_(body), names_(body) { k_.name = std::move(name); }

  Expected<Kernel> run() {
    for (const auto& a : body_.arguments()) {
      argBuffer_[a.get()] = static_cast<int>(k_.buffers.size());
      k_.buffers.push_back({str("in", k_.buffers.size()), a->type(), false});
    }
    KF_RETURN_IF_ERROR(setupSpace());
    for (size_t i = 0; i < body_.results().size(); ++i) KF_RETURN_IF_ERROR(addStore(body_.results()[i], i));
    renumber();
    KF_RETURN_IF_ERROR(verifyKernel(k_));
    return k_;
  }

  // Called by RowBuilderImpl: identical reductions (the max and sum of a
  // cross-entropy forward and its gradient) are computed once.
  Scalar addReduction(Combiner c, const Scalar& value) {
    std::string k = str(combinerName(c), ":", formatScalar(*value.node()));
    auto it = reductionIndex_.find(k);
    if (it == reductionIndex_.end()) {
      it = reductionIndex_.emplace(k, static_cast<int>(k_.reductions.size())).first;
      k_.reductions.push_back({c, value.node()});
    }
    return Scalar::input(kAccBase + it->second, value.type());
  }
  Scalar addGlobal(Combiner c, const Scalar& value, bool prologue) {
    std::vector<Global>& list = prologue ? k_.prologue : k_.globals;
    list.push_back({c, value.node()});
    return Scalar::input((prologue ? kPrologueBase : kGlobalBase) + static_cast<int>(list.size() - 1), value.type());
  }

 private:
  Error failAt(const Node& n, const std::string& msg) const {
    return Error(str("cannot lower ", describeNode(n, names_), " into kernel @", k_.name, ": ", msg));
  }

  // The iteration space: from the row ops when there are any (all must
  // agree), else the shape of the largest result.
  Status setupSpace() {
    std::vector<TensorType> types;
    for (const auto& n : body_.nodeList()) {
      if (!n->op().rowSpec) continue;
      auto spec = n->op().rowSpec(callOf(*n, types));
      if (!spec) return failAt(*n, spec.error().message());
      const Shape& primary = n->operand(spec->primary)->type().shape;
      Shape outer, reduce;
      std::vector<int> dims(primary.size());
      for (size_t a = 0; a < primary.size(); ++a) {
        bool reduced = std::find(spec->reduceAxes.begin(), spec->reduceAxes.end(), a) != spec->reduceAxes.end();
        (reduced ? reduce : outer).push_back(primary[a]);
      }
      int o = 0, r = static_cast<int>(outer.size());
      for (size_t a = 0; a < primary.size(); ++a) {
        bool reduced = std::find(spec->reduceAxes.begin(), spec->reduceAxes.end(), a) != spec->reduceAxes.end();
        dims[a] = reduced ? r++ : o++;
      }
      if (!spaceSet_) {
        k_.outer = outer;
        k_.reduce = reduce;
        spaceSet_ = true;
      } else if (outer != k_.outer || reduce != k_.reduce) {
        return failAt(*n, str("its loops (outer ", formatDims(outer), ", row ", formatDims(reduce),
                              ") differ from the kernel's (outer ", formatDims(k_.outer), ", row ",
                              formatDims(k_.reduce), ")"));
      }
      rows_[n.get()] = {*spec, dims};
    }
    if (!spaceSet_) {
      for (const Value* v : body_.results())
        if (v->type().numElements() >= numElements(k_.outer) || k_.outer.empty()) k_.outer = v->type().shape;
    }
    return Status::ok();
  }

  size_t numDims() const { return k_.outer.size() + k_.reduce.size(); }

  // The map reading a row op's operand or result with the given axes.
  DimMap rowMap(const std::vector<int>& iterDims, const std::vector<int64_t>& axes) const {
    DimMap m;
    for (int64_t a : axes) m.push_back(a < 0 ? AffineDim{} : AffineDim{iterDims[static_cast<size_t>(a)], 1, 0});
    return m;
  }

  // Where, in a row-major value of `shape`, the element `m` maps to lies:
  // a base and a stride per iteration dim.
  IndexMap indexMap(const DimMap& m, const Shape& shape) const {
    IndexMap im;
    im.strides.assign(numDims(), 0);
    std::vector<int64_t> strides = stridesOf(shape);
    for (size_t j = 0; j < m.size(); ++j) {
      im.base += strides[j] * m[j].offset;
      if (m[j].dim >= 0) im.strides[static_cast<size_t>(m[j].dim)] += strides[j] * m[j].scale;
    }
    return im;
  }

  // A load of argument `arg` at `m` (one entry of m, at a gathered load,
  // stands for the gathered axis and is ignored).
  Scalar load(const Value* arg, const DimMap& m, std::optional<Gathered> gathered = std::nullopt) {
    IndexMap im = indexMap(m, arg->type().shape);
    int buffer = argBuffer_.at(arg);
    std::string k = str(buffer, ":", im.base);
    for (int64_t s : im.strides) k += str(",", s);
    if (gathered) k += str("+", gathered->stride, "*", formatScalar(*gathered->index));
    auto it = loadIndex_.find(k);
    if (it == loadIndex_.end()) {
      it = loadIndex_.emplace(k, static_cast<int>(k_.loads.size())).first;
      k_.loads.push_back({buffer, im, std::move(gathered)});
    }
    return Scalar::input(it->second, arg->type().dtype);
  }

  // A gather at result map `m` = [pre, index dims, post]: its table (operand
  // 0, which must be in memory) read at [pre, row, post], the row being the
  // indices operand at the index dims, computed in the kernel or loaded.
  Expected<Scalar> gathered(const Node& n, const OpCall& call, const DimMap& m) {
    KF_ASSIGN_OR_RETURN(int64_t axis, n.op().gatherAxis(call));
    const Value *table = n.operand(0), *indices = n.operand(1);
    const auto at = static_cast<std::ptrdiff_t>(axis), rank = static_cast<std::ptrdiff_t>(indices->type().rank());
    KF_ASSIGN_OR_RETURN(Scalar row, valueAt(indices, DimMap(m.begin() + at, m.begin() + at + rank)));
    if (row.type() != DType::I64) row = cast(row, DType::I64);
    DimMap tm(m.begin(), m.begin() + at);
    tm.push_back(AffineDim{});
    tm.insert(tm.end(), m.begin() + at + rank, m.end());
    if (table->producer() && isSplatConstant(*table->producer())) return valueAt(table, tm);  // every row alike
    if (table->kind() != Value::Kind::Argument)
      return failAt(n, "a gather reads its table from memory, not from a value computed in the same kernel");
    const Shape& shape = table->type().shape;
    return load(table, tm, Gathered{row.node(), stridesOf(shape)[static_cast<size_t>(axis)], shape[static_cast<size_t>(axis)]});
  }

  // The row-major index, in a value of `shape`, of the element `m` reads,
  // as an expression of the iteration dims.
  Scalar flatIndex(const DimMap& m, const Shape& shape) const {
    IndexMap im = indexMap(m, shape);
    std::optional<Scalar> index;
    auto add = [&](const Scalar& term) { index = index ? *index + term : term; };
    for (size_t d = 0; d < im.strides.size(); ++d) {
      int64_t stride = im.strides[d];
      Scalar i = Scalar::index(static_cast<int>(d));
      if (stride != 0) add(stride == 1 ? i : i * static_cast<double>(stride));
    }
    if (im.base != 0 || !index) add(Scalar::constant(static_cast<double>(im.base), DType::I64));
    return *index;
  }

  // Operand maps of a NumPy-broadcasting op from its result's map.
  static DimMap broadcastOperand(const DimMap& m, const Shape& result, const Shape& operand) {
    DimMap out(operand.size());
    size_t lead = result.size() - operand.size();
    for (size_t j = 0; j < operand.size(); ++j)
      out[j] = operand[j] == 1 && result[lead + j] != 1 ? AffineDim{} : m[lead + j];
    return out;
  }

  Expected<Scalar> valueAt(const Value* v, const DimMap& m) {
    std::string k = key(v, m);
    if (auto it = memo_.find(k); it != memo_.end()) return it->second;
    KF_ASSIGN_OR_RETURN(Scalar s, compute(v, m));
    memo_.emplace(k, s);
    return s;
  }

  Expected<Scalar> compute(const Value* v, const DimMap& m) {
    if (v->kind() == Value::Kind::Argument) return load(v, m);
    const Node& n = *v->producer();
    std::vector<TensorType> types;
    OpCall call = callOf(n, types);
    if (n.is(Op::Constant)) {
      if (!isSplatConstant(n)) return failAt(n, "only constants with one value can be part of a kernel");
      return Scalar::constant(n.attr("value").asTensor().at(0), computeType(v->type().dtype));
    }
    if (n.op().scalar) {
      std::vector<Scalar> operands;
      for (const Value* u : n.operands()) {
        KF_ASSIGN_OR_RETURN(Scalar s, valueAt(u, broadcastOperand(m, v->type().shape, u->type().shape)));
        operands.push_back(s);
      }
      if (n.op().scalarReadsIndex) operands.push_back(flatIndex(m, v->type().shape));
      return n.op().scalar(call, operands)[static_cast<size_t>(v->resultIndex())];
    }
    if (n.op().gatherAxis) return gathered(n, call, m);
    if (n.op().affine) {
      auto axes = n.op().affine(call, v->type().shape);
      if (!axes) return failAt(n, axes.error().message());
      DimMap um;
      for (const AxisMap& a : *axes) {
        if (a.resultAxis < 0) {
          um.push_back({-1, 0, a.offset});
          continue;
        }
        const AffineDim& r = m[static_cast<size_t>(a.resultAxis)];
        um.push_back({r.dim, r.scale * a.scale, r.offset * a.scale + a.offset});
      }
      return valueAt(n.operand(0), um);
    }
    if (rows_.count(&n)) return rowResult(n, v, m);
    return failAt(n, "op '" + std::string(n.opName()) + "' has no kernel form");
  }

  Expected<Scalar> rowResult(const Node& n, const Value* v, const DimMap& m) {
    const auto& [spec, dims] = rows_.at(&n);
    auto k = static_cast<size_t>(v->resultIndex());
    if (rowMap(dims, spec.resultAxes[k]) != m)
      return failAt(n, str("result ", k, " is read along other axes than the row op computes it"));
    auto it = rowResults_.find(&n);
    if (it == rowResults_.end()) {
      std::vector<Scalar> operands;
      for (size_t i = 0; i < n.numOperands(); ++i) {
        KF_ASSIGN_OR_RETURN(Scalar s, valueAt(n.operand(i), rowMap(dims, spec.operandAxes[i])));
        operands.push_back(s);
      }
      RowBuilderImpl b(*this, dims);
      std::vector<TensorType> types;
      it = rowResults_.emplace(&n, n.op().row(b, callOf(n, types), operands)).first;
    }
    return it->second[k];
  }

  // Where result `v` is stored from: a row op's own map, else the first row
  // op's element or row map whose shape it has, else the outer space.
  Expected<DimMap> naturalMap(const Value* v) {
    if (const Node* p = v->producer(); p && rows_.count(p))
      return rowMap(rows_.at(p).second, rows_.at(p).first.resultAxes[static_cast<size_t>(v->resultIndex())]);
    for (const auto& [node, row] : rows_) {
      const auto& [spec, dims] = row;
      if (node->operand(spec.primary)->type().shape == v->type().shape)
        return rowMap(dims, spec.operandAxes[spec.primary]);
      for (size_t k = 0; k < spec.resultAxes.size(); ++k)
        if (node->result(k)->type().shape == v->type().shape && spec.resultScopes[k] != RowScope::Global)
          return rowMap(dims, spec.resultAxes[k]);
    }
    if (rows_.empty() && v->type().shape == k_.outer) {
      DimMap m;
      for (size_t d = 0; d < k_.outer.size(); ++d) m.push_back({static_cast<int>(d), 1, 0});
      return m;
    }
    if (v->type().rank() == 0) return DimMap{};
    // An axis permutation of a value the loops compute (a transpose of a
    // row op's result: ConvNeXt's channels-last layer norm, back to NCHW)
    // is stored through the same loops, its axes permuted, rather than by a
    // transpose kernel of its own.
    if (const Node* p = v->producer(); p && p->op().affine && !rows_.empty())
      if (std::optional<std::vector<size_t>> perm = permutation(*p, v)) {
        KF_ASSIGN_OR_RETURN(DimMap operand, naturalMap(p->operand(0)));
        DimMap m(operand.size());
        for (size_t i = 0; i < operand.size(); ++i) m[(*perm)[i]] = operand[i];
        return m;
      }
    return Error(str("kernel @", k_.name, ": result ", names_(v), " ", formatType(v->type()),
                     " does not match the kernel's loops (outer ", formatDims(k_.outer), ", row ",
                     formatDims(k_.reduce), ")"));
  }

  // Where each axis of affine op p's operand goes in its result v, when p
  // only permutes axes (each operand axis one result axis of the same size,
  // unscaled, unshifted).
  std::optional<std::vector<size_t>> permutation(const Node& p, const Value* v) {
    std::vector<TensorType> types;
    auto axes = p.op().affine(callOf(p, types), v->type().shape);
    const Shape& from = p.operand(0)->type().shape;
    if (!axes || axes->size() != from.size() || from.size() != v->type().shape.size()) return std::nullopt;
    std::vector<size_t> perm;
    std::vector<bool> taken(from.size(), false);
    for (size_t i = 0; i < axes->size(); ++i) {
      const AxisMap& a = (*axes)[i];
      if (a.resultAxis < 0 || a.scale != 1 || a.offset != 0) return std::nullopt;
      const auto r = static_cast<size_t>(a.resultAxis);
      if (taken[r] || v->type().shape[r] != from[i]) return std::nullopt;
      taken[r] = true;
      perm.push_back(r);
    }
    return perm;
  }

  Status addStore(const Value* v, size_t index) {
    int buffer = static_cast<int>(k_.buffers.size());
    k_.buffers.push_back({str("out", index), v->type(), true});
    KF_ASSIGN_OR_RETURN(DimMap m, naturalMap(v));
    KF_ASSIGN_OR_RETURN(Scalar value, valueAt(v, m));
    Store s;
    s.buffer = buffer;
    s.map = indexMap(m, v->type().shape);
    std::vector<bool> written(numDims(), false);
    for (const AffineDim& a : m)
      if (a.dim >= 0) written[static_cast<size_t>(a.dim)] = true;
    bool readsGlobals = dependsOn(*value.node(), kGlobalBase, kGlobalBase + (1 << 20));
    bool spansRow = false;
    for (size_t d = k_.outer.size(); d < numDims(); ++d) spansRow |= written[d];
    s.scope = readsGlobals ? StoreScope::Final : (spansRow || k_.reduce.empty() ? StoreScope::Element : StoreScope::Row);
    if (s.scope != StoreScope::Final)
      for (size_t d = 0; d < k_.outer.size(); ++d)
        if (!written[d] && k_.outer[d] != 1)
          return Error(str("kernel @", k_.name, ": result ", names_(v), " would be written once per point of outer dim ",
                           d, " (it does not span it)"));
    s.value = value.node();
    k_.stores.push_back(s);
    return Status::ok();
  }

  static bool dependsOn(const ScalarNode& n, int lo, int hi) {
    if (n.op == ScalarOp::Input) return n.input >= lo && n.input < hi;
    for (const auto& a : n.args)
      if (dependsOn(*a, lo, hi)) return true;
    return false;
  }

  // Final leaf numbering: loads, accumulators, prologue globals, globals.
  void renumber() {
    std::unordered_map<const ScalarNode*, ScalarRef> done;
    auto remap = [&](int i) {
      int loads = static_cast<int>(k_.loads.size()), accs = static_cast<int>(k_.reductions.size());
      int pro = static_cast<int>(k_.prologue.size());
      if (i >= kGlobalBase) return loads + accs + pro + (i - kGlobalBase);
      if (i >= kPrologueBase) return loads + accs + (i - kPrologueBase);
      if (i >= kAccBase) return loads + (i - kAccBase);
      return i;
    };
    std::function<ScalarRef(const ScalarRef&)> rebuild = [&](const ScalarRef& n) -> ScalarRef {
      if (auto it = done.find(n.get()); it != done.end()) return it->second;
      auto copy = std::make_shared<ScalarNode>(*n);
      if (copy->op == ScalarOp::Input) copy->input = remap(copy->input);
      for (ScalarRef& a : copy->args) a = rebuild(a);
      ScalarRef out = copy;
      done.emplace(n.get(), out);
      return out;
    };
    for (Load& l : k_.loads)
      if (l.gathered) l.gathered->index = rebuild(l.gathered->index);
    for (Reduction& r : k_.reductions) r.value = rebuild(r.value);
    for (Global& g : k_.prologue) g.value = rebuild(g.value);
    for (Global& g : k_.globals) g.value = rebuild(g.value);
    for (Store& s : k_.stores) s.value = rebuild(s.value);
  }

  const Graph& body_;
  ValueNames names_;
  Kernel k_;
  bool spaceSet_ = false;
  std::map<const Value*, int> argBuffer_;
  std::map<const Node*, std::pair<RowSpec, std::vector<int>>> rows_;
  std::unordered_map<std::string, Scalar> memo_;
  std::map<const Node*, std::vector<Scalar>> rowResults_;
  std::map<std::string, int> loadIndex_, reductionIndex_;
};

Scalar RowBuilderImpl::reduce(RowCombiner c, const Scalar& value) { return l_.addReduction(toCombiner(c), value); }
Scalar RowBuilderImpl::prologue(RowCombiner c, const Scalar& value) {
  return l_.addGlobal(toCombiner(c), value, true);
}
Scalar RowBuilderImpl::global(RowCombiner c, const Scalar& value) { return l_.addGlobal(toCombiner(c), value, false); }

}  // namespace

std::string notKernelizable(const Node& n) { return kernelFormIssue(n); }

namespace {

// The map of a block starting at `start` in a buffer of `shape`, iterated
// over the block's own index space with `step` per dim (empty: 1).
IndexMap blockMap(const Shape& shape, const std::vector<int64_t>& start, const std::vector<int64_t>& step = {}) {
  IndexMap m;
  m.strides = stridesOf(shape);
  for (size_t d = 0; d < shape.size(); ++d) m.base += start[d] * m.strides[d];
  if (!step.empty())
    for (size_t d = 0; d < shape.size(); ++d) m.strides[d] *= step[d];
  return m;
}

}  // namespace

Expected<LoweredGroup> lowerPieces(const Node& n, const std::string& name) {
  if (!n.op().pieces) return Error(str("'", n.opName(), "' is not made of blocks"));
  std::vector<TensorType> types;
  for (const Value* v : n.operands()) types.push_back(v->type());
  const TensorType& out = n.result()->type();
  KF_ASSIGN_OR_RETURN(std::vector<Piece> pieces, n.op().pieces(OpCall{n.op(), n.attrs(), types, &n, nullptr}, out));
  // Empty blocks are dropped; an empty result keeps one (empty) kernel, so
  // that its step is an ordinary launch of nothing, like any empty kernel.
  const bool anyWork = std::any_of(pieces.begin(), pieces.end(), [](const Piece& p) { return numElements(p.extent) > 0; });
  LoweredGroup g;
  for (const Piece& p : pieces) {
    if (numElements(p.extent) == 0 && (anyWork || !g.kernels.empty())) continue;
    Kernel k;
    k.name = str(name, "_", g.kernels.size());
    k.outer = p.extent;
    std::vector<BufferRef> refs;
    Scalar value = Scalar::constant(p.fill, computeType(out.dtype));
    if (p.operand >= 0) {
      const TensorType& in = types[static_cast<size_t>(p.operand)];
      k.buffers.push_back({"in0", in, false});
      k.loads.push_back({0, blockMap(in.shape, p.operandStart)});
      refs.push_back({BufferRef::Kind::Argument, static_cast<size_t>(p.operand)});
      value = Scalar::input(0, in.dtype);
    }
    k.buffers.push_back({"out0", out, true});
    refs.push_back({BufferRef::Kind::Result, 0});
    k.stores.push_back({static_cast<int>(k.buffers.size()) - 1, blockMap(out.shape, p.resultStart, p.resultStep), StoreScope::Element,
                        value.node()});
    KF_RETURN_IF_ERROR(verifyKernel(k));
    g.kernels.push_back(std::move(k));
    g.buffers.push_back(std::move(refs));
  }
  return g;
}

Expected<LoweredGroup> lowerScatterAdd(const Node& n, const std::string& name) {
  if (!n.op().scatterAxis) return Error(str("'", n.opName(), "' is not a scatter-add"));
  std::vector<TensorType> types;
  for (const Value* v : n.operands()) types.push_back(v->type());
  KF_ASSIGN_OR_RETURN(int64_t axis, n.op().scatterAxis(OpCall{n.op(), n.attrs(), types, &n, nullptr}));
  const TensorType &dy = types[0], &indices = types[1], &out = n.result()->type();
  const auto at = static_cast<size_t>(axis), rows = indices.rank();
  LoweredGroup g;

  Kernel zeros;
  zeros.name = str(name, "_zeros");
  zeros.outer = out.shape;
  zeros.buffers.push_back({"out0", out, true});
  zeros.stores.push_back({0, blockMap(out.shape, std::vector<int64_t>(out.rank(), 0)), StoreScope::Element,
                          Scalar::constant(0, computeType(out.dtype)).node()});

  // Outer dims: dy's before the indexed ones, then after; reduce dims: the
  // indexed ones (one row of dy per index).
  Kernel k;
  k.name = name;
  for (size_t d = 0; d < dy.rank(); ++d) (d >= at && d < at + rows ? k.reduce : k.outer).push_back(dy.shape[d]);
  k.buffers = {{"in0", dy, false}, {"in1", indices, false}, {"out0", out, true}};
  const size_t outerDims = k.outer.size();
  auto dimOf = [&](size_t d) { return d < at ? d : d < at + rows ? outerDims + d - at : d - rows; };
  IndexMap dyMap{0, std::vector<int64_t>(k.numDims(), 0)}, idMap = dyMap, outMap = dyMap;
  const std::vector<int64_t> dyStrides = stridesOf(dy.shape), idStrides = stridesOf(indices.shape),
                             outStrides = stridesOf(out.shape);
  for (size_t d = 0; d < dy.rank(); ++d) {
    dyMap.strides[dimOf(d)] = dyStrides[d];
    if (d >= at && d < at + rows) idMap.strides[dimOf(d)] = idStrides[d - at];
    else outMap.strides[dimOf(d)] = outStrides[d < at ? d : d - rows + 1];
  }
  k.loads = {{0, dyMap, std::nullopt}, {1, idMap, std::nullopt}};
  Store add{2, outMap, StoreScope::Element, Scalar::input(0, dy.dtype).node(),
            Gathered{Scalar::input(1, indices.dtype).node(), outStrides[at], out.shape[at]}, true};
  k.stores.push_back(std::move(add));

  for (Kernel* x : {&zeros, &k}) KF_RETURN_IF_ERROR(verifyKernel(*x));
  g.kernels = {std::move(zeros), std::move(k)};
  g.buffers = {{{BufferRef::Kind::Result, 0}},
               {{BufferRef::Kind::Argument, 0}, {BufferRef::Kind::Argument, 1}, {BufferRef::Kind::Result, 0}}};
  return g;
}

Expected<Kernel> lowerToKernel(const Graph& body, const std::string& name) { return Lowering(body, name).run(); }

namespace {

bool isGemm(const Node& n) { return n.op().fusion == FusionClass::GemmLike; }

// Groups the body's nodes (the GEMM aside) into parts connected by values.
std::vector<std::vector<const Node*>> independentParts(const Graph& body, const Node* gemm) {
  std::vector<const Node*> nodes;
  std::map<const Node*, size_t> index;
  for (const auto& n : body.nodeList())
    if (n.get() != gemm) {
      index[n.get()] = nodes.size();
      nodes.push_back(n.get());
    }
  std::vector<size_t> parent(nodes.size());
  for (size_t i = 0; i < parent.size(); ++i) parent[i] = i;
  std::function<size_t(size_t)> find = [&](size_t i) { return parent[i] == i ? i : parent[i] = find(parent[i]); };
  for (const Node* n : nodes)
    for (const Value* v : n->operands())
      if (v->producer() && index.count(v->producer())) parent[find(index[n])] = find(index[v->producer()]);
  std::map<size_t, std::vector<const Node*>> parts;
  for (const Node* n : nodes) parts[find(index[n])].push_back(n);
  std::vector<std::vector<const Node*>> out;
  for (auto& [root, part] : parts) out.push_back(std::move(part));
  return out;
}

// A graph holding copies of `nodes` (in order): values from outside become
// arguments, values the body returns become results. Records where each
// argument and result comes from.
std::unique_ptr<Graph> extractPart(const Graph& body, const std::vector<const Node*>& nodes, const Node* gemm,
                                   std::vector<BufferRef>& refs) {
  auto part = std::make_unique<Graph>(body.name(), body.module());
  std::map<const Value*, Value*> map;
  std::map<const Value*, size_t> argIndex;
  for (size_t i = 0; i < body.arguments().size(); ++i) argIndex[body.argument(i)] = i;
  auto lookup = [&](Value* v) -> Value* {
    if (auto it = map.find(v); it != map.end()) return it->second;
    Value* a = part->addArgument(v->name(), v->type());
    refs.push_back(v->producer() == gemm && gemm ? BufferRef{BufferRef::Kind::Gemm, 0}
                                                 : BufferRef{BufferRef::Kind::Argument, argIndex.at(v)});
    map[v] = a;
    return a;
  };
  for (const Node* n : nodes) {
    std::vector<Value*> operands;
    for (Value* v : n->operands()) operands.push_back(lookup(v));
    std::vector<TensorType> types;
    for (size_t i = 0; i < n->numResults(); ++i) types.push_back(n->result(i)->type());
    Node* c = part->createNode(n->op(), operands, types, n->attrs());
    for (size_t i = 0; i < n->numResults(); ++i) map[n->result(i)] = c->result(i);
  }
  std::vector<Value*> results;
  for (size_t i = 0; i < body.results().size(); ++i) {
    Value* r = body.results()[i];
    if (!r->producer() || std::find(nodes.begin(), nodes.end(), r->producer()) == nodes.end()) continue;
    results.push_back(map.at(r));
    refs.push_back({BufferRef::Kind::Result, i});
  }
  part->setResults(results);
  return part;
}

}  // namespace

Expected<LoweredGroup> lowerGroup(const Graph& body, const std::string& name) {
  LoweredGroup g;
  for (const auto& n : body.nodeList()) {
    if (!isGemm(*n)) continue;
    if (g.gemm) return Error(str("group @", name, " holds more than one GEMM-like op"));
    for (const Value* v : n->operands())
      if (v->producer())
        return Error("GEMM-like consumer takes no prologue");
    g.gemm = n.get();
  }
  for (size_t i = 0; i < body.results().size(); ++i)
    if (g.gemm && body.results()[i]->producer() == g.gemm) g.gemmResult = static_cast<int>(i);
  std::vector<std::vector<const Node*>> parts = independentParts(body, g.gemm);
  // A GEMM's launch is the library call plus its own epilogue; unrelated
  // kernels would be separate launches however they are grouped.
  if (g.gemm && parts.size() > 1)
    return Error(str("group @", name, ": a GEMM's launch holds only its epilogue, not ", parts.size() - 1,
                     " more independent kernel(s)"));
  for (size_t p = 0; p < parts.size(); ++p) {
    std::vector<BufferRef> refs;
    std::unique_ptr<Graph> part = extractPart(body, parts[p], g.gemm, refs);
    if (part->results().empty()) continue;  // computes nothing the group returns
    KF_ASSIGN_OR_RETURN(Kernel k, lowerToKernel(*part, parts.size() > 1 ? str(name, "_part", p) : name));
    g.kernels.push_back(std::move(k));
    g.buffers.push_back(std::move(refs));
  }
  return g;
}

std::string checkGroup(const Graph& body) {
  auto g = lowerGroup(body, body.name());
  return g ? "" : g.error().message();
}

}  // namespace kfuse::kernel
