#include "tests/codegen/kernel_builder.h"

#include <cassert>
#include <functional>
#include <unordered_map>

namespace kfuse::testing {
namespace {

// Provisional leaf numbers until build().
constexpr int kAccBase = 1 << 20;
constexpr int kPrologueBase = 2 << 20;
constexpr int kGlobalBase = 3 << 20;

Scalar leaf(int index, DType computeType) { return Scalar::input(index, computeType); }

}  // namespace

KernelBuilder::KernelBuilder(std::string name, Shape outer, Shape reduce) {
  k_.name = std::move(name);
  k_.outer = std::move(outer);
  k_.reduce = std::move(reduce);
}

int KernelBuilder::input(DType dtype, Shape shape) {
  k_.buffers.push_back({"in" + std::to_string(k_.buffers.size()), TensorType(dtype, std::move(shape)), false});
  return static_cast<int>(k_.buffers.size()) - 1;
}

int KernelBuilder::output(DType dtype, Shape shape) {
  k_.buffers.push_back({"out" + std::to_string(k_.buffers.size()), TensorType(dtype, std::move(shape)), true});
  return static_cast<int>(k_.buffers.size()) - 1;
}

Scalar KernelBuilder::load(int buffer, std::vector<int64_t> strides, int64_t base) {
  assert(strides.size() == k_.numDims());
  k_.loads.push_back({buffer, {base, std::move(strides)}});
  return leaf(static_cast<int>(k_.loads.size()) - 1, k_.buffers[static_cast<size_t>(buffer)].type.dtype);
}

Scalar KernelBuilder::gather(int buffer, std::vector<int64_t> strides, const Scalar& index, int64_t stride,
                             int64_t size, int64_t base) {
  assert(strides.size() == k_.numDims());
  k_.loads.push_back({buffer, {base, std::move(strides)}, kernel::Gathered{index.node(), stride, size}});
  return leaf(static_cast<int>(k_.loads.size()) - 1, k_.buffers[static_cast<size_t>(buffer)].type.dtype);
}

void KernelBuilder::scatterAdd(int buffer, std::vector<int64_t> strides, const Scalar& value, const Scalar& index,
                               int64_t stride, int64_t size) {
  assert(strides.size() == k_.numDims());
  k_.stores.push_back({buffer, {0, std::move(strides)}, StoreScope::Element, value.node(),
                       kernel::Gathered{index.node(), stride, size}, true});
}

std::vector<int64_t> KernelBuilder::stridesFor(int buffer, const std::vector<int>& axes) const {
  const Shape& shape = k_.buffers[static_cast<size_t>(buffer)].type.shape;
  assert(axes.size() == shape.size());
  std::vector<int64_t> rowMajor = stridesOf(shape);
  std::vector<int64_t> strides(k_.numDims(), 0);
  for (size_t a = 0; a < axes.size(); ++a)
    if (axes[a] >= 0 && shape[a] != 1) strides[static_cast<size_t>(axes[a])] += rowMajor[a];
  return strides;
}

Scalar KernelBuilder::loadAxes(int buffer, const std::vector<int>& axes) { return load(buffer, stridesFor(buffer, axes)); }

Scalar KernelBuilder::loadOuter(int buffer) {
  std::vector<int> axes(k_.outer.size());
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int>(i);
  return loadAxes(buffer, axes);
}

Scalar KernelBuilder::reduce(Combiner c, const Scalar& value, std::optional<DType> leafType) {
  k_.reductions.push_back({c, value.node()});
  return leaf(kAccBase + static_cast<int>(k_.reductions.size()) - 1, leafType.value_or(value.type()));
}

Scalar KernelBuilder::prologue(Combiner c, const Scalar& value) {
  k_.prologue.push_back({c, value.node()});
  return leaf(kPrologueBase + static_cast<int>(k_.prologue.size()) - 1, value.type());
}

Scalar KernelBuilder::global(Combiner c, const Scalar& value) {
  k_.globals.push_back({c, value.node()});
  return leaf(kGlobalBase + static_cast<int>(k_.globals.size()) - 1, value.type());
}

void KernelBuilder::store(int buffer, std::vector<int64_t> strides, const Scalar& value, StoreScope scope,
                          int64_t base) {
  assert(strides.size() == k_.numDims());
  k_.stores.push_back({buffer, {base, std::move(strides)}, scope, value.node()});
}

void KernelBuilder::storeAxes(int buffer, const std::vector<int>& axes, const Scalar& value, StoreScope scope) {
  store(buffer, stridesFor(buffer, axes), value, scope);
}

void KernelBuilder::storeOuter(int buffer, const Scalar& value) {
  std::vector<int> axes(k_.outer.size());
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int>(i);
  storeAxes(buffer, axes, value, StoreScope::Element);
}

Kernel KernelBuilder::build() const {
  Kernel k = k_;
  auto renumber = [&](int i) {
    if (i < kAccBase) return i;
    if (i < kPrologueBase) return static_cast<int>(k.firstAccumulator()) + i - kAccBase;
    if (i < kGlobalBase) return static_cast<int>(k.firstGlobal()) + i - kPrologueBase;
    return static_cast<int>(k.firstGlobal() + k.prologue.size()) + i - kGlobalBase;
  };
  std::unordered_map<const ScalarNode*, ScalarRef> done;
  std::function<ScalarRef(const ScalarRef&)> rewrite = [&](const ScalarRef& n) -> ScalarRef {
    if (auto it = done.find(n.get()); it != done.end()) return it->second;
    ScalarNode copy = *n;
    if (copy.op == ScalarOp::Input) copy.input = renumber(copy.input);
    for (ScalarRef& a : copy.args) a = rewrite(a);
    return done[n.get()] = std::make_shared<const ScalarNode>(std::move(copy));
  };
  for (auto& r : k.reductions) r.value = rewrite(r.value);
  for (auto& g : k.prologue) g.value = rewrite(g.value);
  for (auto& g : k.globals) g.value = rewrite(g.value);
  for (auto& s : k.stores) s.value = rewrite(s.value);
  for (auto& l : k.loads)
    if (l.gathered) l.gathered->index = rewrite(l.gathered->index);
  for (auto& s : k.stores)
    if (s.gathered) s.gathered->index = rewrite(s.gathered->index);
  return k;
}

Kernel elementwiseKernel(const std::string& name, const Shape& shape, const std::vector<DType>& inputs, DType output,
                         const std::function<Scalar(const std::vector<Scalar>&)>& f) {
  KernelBuilder b(name, shape);
  std::vector<Scalar> xs;
  for (DType t : inputs) xs.push_back(b.loadOuter(b.input(t, shape)));
  b.storeOuter(b.output(output, shape), f(xs));
  return b.build();
}

Kernel softmaxKernel(int64_t rows, int64_t cols, DType dtype) {
  KernelBuilder b("softmax", {rows}, {cols});
  int x = b.input(dtype, {rows, cols});
  int y = b.output(dtype, {rows, cols});
  Scalar v = b.loadAxes(x, {0, 1});
  Scalar m = b.reduce(Combiner::Max, v);
  Scalar s = b.reduce(Combiner::Sum, exp(v - m));
  b.storeAxes(y, {0, 1}, exp(v - m) / s);
  return b.build();
}

Kernel columnSumKernel(int64_t n, int64_t c, DType in, DType out) {
  KernelBuilder b("column_sum", {c}, {n});
  int x = b.input(in, {n, c});
  int y = b.output(out, {c});
  Scalar acc = b.reduce(Combiner::Sum, b.loadAxes(x, {1, 0}));
  b.storeAxes(y, {0}, acc, StoreScope::Row);
  return b.build();
}

Kernel labelLookupKernel(int64_t n, int64_t c) {
  KernelBuilder b("label_lookup", {n}, {c});
  int x = b.input(DType::F32, {n, c});
  int labels = b.input(DType::I64, {n});
  int y = b.output(DType::F32, {n});
  Scalar picked = select(equal(Scalar::index(1), b.loadAxes(labels, {0})), b.loadAxes(x, {0, 1}),
                         Scalar::constant(0, DType::F32));
  b.storeAxes(y, {0}, b.reduce(Combiner::Sum, picked), StoreScope::Row);
  return b.build();
}

Kernel meanLossKernel(int64_t n, int64_t c) {
  KernelBuilder b("mean_loss", {n}, {c});
  int x = b.input(DType::F32, {n, c});
  int labels = b.input(DType::I64, {n});
  int loss = b.output(DType::F32, {});
  Scalar logit = b.loadAxes(x, {0, 1});
  Scalar label = b.loadAxes(labels, {0});
  Scalar valid = notEqual(label, Scalar::constant(-1, DType::I64));
  Scalar zero = Scalar::constant(0, DType::F32);
  Scalar count = b.prologue(Combiner::Sum, select(valid, Scalar::constant(1, DType::F32), zero));
  Scalar m = b.reduce(Combiner::Max, logit);
  Scalar s = b.reduce(Combiner::Sum, exp(logit - m));
  Scalar picked = b.reduce(Combiner::Sum, select(equal(Scalar::index(1), label), logit, zero));
  Scalar total = b.global(Combiner::Sum, select(valid, log(s) + m - picked, zero));
  b.store(loss, {0, 0}, total / count, StoreScope::Final);
  return b.build();
}

Kernel meanLossGradKernel(int64_t n, int64_t c) {
  KernelBuilder b("mean_loss_grad", {n}, {c});
  int x = b.input(DType::F32, {n, c});
  int labels = b.input(DType::I64, {n});
  int dx = b.output(DType::F32, {n, c});
  Scalar logit = b.loadAxes(x, {0, 1});
  Scalar label = b.loadAxes(labels, {0});
  Scalar valid = notEqual(label, Scalar::constant(-1, DType::I64));
  Scalar zero = Scalar::constant(0, DType::F32), one = Scalar::constant(1, DType::F32);
  Scalar count = b.prologue(Combiner::Sum, select(valid, one, zero));
  Scalar m = b.reduce(Combiner::Max, logit);
  Scalar s = b.reduce(Combiner::Sum, exp(logit - m));
  Scalar onehot = select(equal(Scalar::index(1), label), one, zero);
  b.storeAxes(dx, {0, 1}, select(valid, (exp(logit - m) / s - onehot) / count, zero));
  return b.build();
}

Kernel layerNormKernel(int64_t rows, int64_t cols) {
  KernelBuilder b("layer_norm", {rows}, {cols});
  int x = b.input(DType::F32, {rows, cols});
  int y = b.output(DType::F32, {rows, cols});
  int meanOut = b.output(DType::F32, {rows});
  int rstdOut = b.output(DType::F32, {rows});
  Scalar v = b.loadAxes(x, {0, 1});
  double n = static_cast<double>(cols);
  Scalar mean = b.reduce(Combiner::Sum, v) / n;
  Scalar var = b.reduce(Combiner::Sum, (v - mean) * (v - mean)) / n;
  Scalar rstd = rsqrt(var + 1e-5);
  b.storeAxes(y, {0, 1}, (v - mean) * rstd);
  b.storeAxes(meanOut, {0}, mean, StoreScope::Row);
  b.storeAxes(rstdOut, {0}, rstd, StoreScope::Row);
  return b.build();
}

}  // namespace kfuse::testing
