#include "codegen/cuda/matmul_match.h"

#include <cublasLt.h>

#include "codegen/cuda/gemm_emitter.h"
#include "ir/op_registry.h"
#include "ir/support/strings.h"

namespace kfuse::cuda {
namespace {

using kernel::Combiner;
using kernel::Kernel;
using kernel::StoreScope;

// One stride per operand over all batch dims (dims of extent 1 ignored), or
// nullopt when the strides do not nest.
std::optional<int64_t> flatStride(const Shape& batch, const std::vector<int64_t>& strides) {
  std::optional<int64_t> inner;  // stride of the innermost dim with extent > 1
  int64_t expect = -1;
  for (size_t d = batch.size(); d-- > 0;) {
    if (batch[d] == 1) continue;
    if (!inner) {
      inner = strides[d];
      expect = strides[d] * batch[d];
      continue;
    }
    if (strides[d] != expect) return std::nullopt;
    expect = strides[d] * batch[d];
  }
  return inner.value_or(0);
}

// The registry's scalar expression of op `name` on `inputs`.
Scalar applyOp(std::string_view name, const AttrMap& given, std::vector<Scalar> inputs, DType dtype) {
  const OpDef* op = OpRegistry::global().find(name);
  AttrMap attrs = *completeAttrs(*op, given);
  std::vector<TensorType> types(inputs.size(), TensorType(dtype, {}));
  OpCall call{*op, attrs, types};
  return op->scalar(call, inputs)[0];
}

bool sameExpr(const ScalarNode& a, const ScalarNode& b) {
  if (&a == &b) return true;
  if (a.op != b.op || a.type != b.type || a.args.size() != b.args.size()) return false;
  if (a.op == ScalarOp::Const && !(a.constant == b.constant)) return false;
  if ((a.op == ScalarOp::Input || a.op == ScalarOp::Index) && a.input != b.input) return false;
  for (size_t i = 0; i < a.args.size(); ++i)
    if (!sameExpr(*a.args[i], *b.args[i])) return false;
  return true;
}

enum class Activation : uint8_t { None, Relu, Gelu, Unknown };

// What a store's value is in terms of the pre-activation `pre` (one of the
// candidates: product + bias in either order, or the product).
Activation classify(const ScalarNode& v, const std::vector<Scalar>& pre, DType dtype) {
  for (const Scalar& p : pre) {
    if (sameExpr(v, *p.node())) return Activation::None;
    if (sameExpr(v, *applyOp("relu", {}, {p}, dtype).node())) return Activation::Relu;
    if (sameExpr(v, *applyOp("gelu", {{"approximate", Attribute("tanh")}}, {p}, dtype).node())) return Activation::Gelu;
  }
  return Activation::Unknown;
}

bool identityMap(const kernel::IndexMap& m, const Shape& shape) { return m.base == 0 && m.strides == stridesOf(shape); }

bool isLtDType(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

bool sameMap(const kernel::IndexMap& a, const kernel::IndexMap& b) { return a.base == b.base && a.strides == b.strides; }

// Whether an Element store of the epilogue writes the whole product over
// its own storage (in-place rewriting): then steps reading that storage
// read the store's value, which cuBLASLt writes too (as D or aux), not
// the product itself.
bool productOverwritten(const Plan& plan, const Kernel& k, const std::vector<int>& buffers, int product) {
  const int storage = plan.storageOf(product);
  const int64_t n = plan.buffers[static_cast<size_t>(product)].type.numElements();
  if (k.outerPoints() * std::max<int64_t>(k.reducePoints(), 1) != n) return false;
  for (const kernel::Load& l : k.loads) {
    if (plan.storageOf(buffers[static_cast<size_t>(l.buffer)]) != storage) continue;
    for (const kernel::Store& st : k.stores)
      if (st.scope == StoreScope::Element && plan.storageOf(buffers[static_cast<size_t>(st.buffer)]) == storage &&
          sameMap(st.map, l.map) && k.buffers[static_cast<size_t>(st.buffer)].type.numElements() == n)
        return true;
  }
  return false;
}

// The backward of a GELU (tanh) layer as one cuBLASLt call, DGELU_BGRAD:
// the group is matmul -> gelu_grad(product, pre-activation) -> the sum of
// that over the batch, lowered as a kernel over outer [n] (features) and
// reduce [m] (the batch) that stores gelu_grad per element and its sum per
// feature. In cuBLASLt's terms D (m = the plan's n rows) is the gradient,
// aux the forward's GELU input, and the bias pointer receives D's sums
// over its columns.
MatmulMatch matchBiasGradient(const Plan& plan, const GemmSpec& g, const Kernel& k, const std::vector<int>& buffers,
                              MatmulCall call) {
  auto no = [](std::string why) { return MatmulMatch{std::nullopt, std::move(why)}; };
  if (call.batch != 1 || !k.globals.empty() || !k.prologue.empty() || k.outer != Shape{g.n} || k.reduce != Shape{g.m})
    return no("the epilogue reduces, but not the product's rows per column");
  kernel::IndexMap grid{0, {1, g.n}};  // the product's element at (column, row)
  int productLoad = -1, auxLoad = -1;
  for (size_t i = 0; i < k.loads.size(); ++i) {
    const kernel::Load& l = k.loads[i];
    const int b = buffers[static_cast<size_t>(l.buffer)];
    const TensorType& t = k.buffers[static_cast<size_t>(l.buffer)].type;
    if (!sameMap(l.map, grid) || t.dtype != call.dtype || t.numElements() != g.m * g.n)
      return no(str("load ", i, " is not a matrix of the product's shape"));
    if (plan.storageOf(b) == plan.storageOf(g.c) && productLoad < 0) {
      productLoad = static_cast<int>(i);
    } else if (auxLoad < 0) {
      auxLoad = static_cast<int>(i);
      call.aux = b;
    } else {
      return no("more loads than the product and the GELU input");
    }
  }
  if (productLoad < 0 || auxLoad < 0) return no("the epilogue does not read the product and one other matrix");
  if (k.reductions.size() != 1 || k.reductions[0].combiner != Combiner::Sum || k.stores.size() != 2)
    return no("not one sum and two stores");
  const Scalar grad = applyOp("gelu_grad", {{"approximate", Attribute("tanh")}},
                              {Scalar::input(productLoad, call.dtype), Scalar::input(auxLoad, call.dtype)}, call.dtype);
  if (!sameExpr(*k.reductions[0].value, *grad.node())) return no("the sum is not of gelu_grad (tanh) of the product");
  int gradStore = -1, sumStore = -1;
  for (size_t s = 0; s < k.stores.size(); ++s) {
    const kernel::Store& st = k.stores[s];
    const TensorType& t = k.buffers[static_cast<size_t>(st.buffer)].type;
    if (t.dtype != call.dtype) return no(str("store ", s, " is not in the product's dtype"));
    if (st.scope == StoreScope::Element && sameMap(st.map, grid) && t.numElements() == g.m * g.n &&
        sameExpr(*st.value, *grad.node())) {
      gradStore = static_cast<int>(s);
    } else if (st.scope == StoreScope::Row && sameMap(st.map, kernel::IndexMap{0, {1, 0}}) && t.numElements() == g.n &&
               st.value->op == ScalarOp::Input && st.value->input == static_cast<int>(k.loads.size())) {
      sumStore = static_cast<int>(s);
    }
  }
  if (gradStore < 0 || sumStore < 0) return no("the stores are not gelu_grad per element and its sum per column");
  if (call.m % 8 != 0) return no("DGELU_BGRAD needs the product's rows to be a multiple of 8 elements");
  call.d = buffers[static_cast<size_t>(k.stores[static_cast<size_t>(gradStore)].buffer)];
  call.bias = buffers[static_cast<size_t>(k.stores[static_cast<size_t>(sumStore)].buffer)];
  call.epilogue = CUBLASLT_EPILOGUE_DGELU_BGRAD;
  call.epilogueName = "DGELU_BGRAD";
  return {call, ""};
}

}  // namespace

Expected<MatmulCall> plainMatmul(const Plan& plan, const GemmSpec& g) {
  auto dtype = [&](int b) { return plan.buffers[static_cast<size_t>(b)].type.dtype; };
  DType dt = dtype(g.c);
  if (dtype(g.a) != dt || dtype(g.b) != dt || !(isLtDType(dt) || dt == DType::F64))
    return Error(str("cuBLASLt takes one dtype of f32, f16, bf16, f64 for A, B and C, not ", dtypeName(dtype(g.a)), ", ",
                     dtypeName(dtype(g.b)), ", ", dtypeName(dt)));
  // An empty product (k = 0: all zeros) or result has leading dimensions
  // of 0, which cuBLASLt's layouts refuse (ld >= max(1, rows)); the
  // generated GEMM writes its zeros. Found by the simulator.
  if (g.m == 0 || g.n == 0 || g.k == 0 || numElements(g.batch) == 0)
    return Error(str("cuBLASLt takes no empty matrix (", g.m, "x", g.k, " @ ", g.k, "x", g.n, ")"));
  auto sa = flatStride(g.batch, g.aBatchStrides), sb = flatStride(g.batch, g.bBatchStrides),
       sc = flatStride(g.batch, g.cBatchStrides);
  if (!sa || !sb || !sc) return Error("the batch dims do not flatten to one stride per operand");
  MatmulCall c;
  c.dtype = dt;
  // Row-major C = op(a) @ op(b) is column-major C^T = op(b)^T @ op(a)^T.
  c.a = g.b;
  c.b = g.a;
  c.d = g.c;
  c.m = g.n;
  c.n = g.m;
  c.k = g.k;
  c.transA = g.transB;
  c.lda = g.transB ? g.k : g.n;
  c.transB = g.transA;
  c.ldb = g.transA ? g.m : g.k;
  c.ldd = g.n;
  c.batch = numElements(g.batch);
  c.strideA = *sb;
  c.strideB = *sa;
  c.strideD = *sc;
  return c;
}

MatmulMatch matchMatmul(const Plan& plan, size_t self) {
  const Step& step = plan.steps[self];
  const GemmSpec& g = step.gemm();
  auto base = plainMatmul(plan, g);
  if (!base) return {std::nullopt, base.error().message()};
  if (step.kernels.empty()) return {*base, ""};
  MatmulCall call = *base;
  if (!isLtDType(call.dtype)) return {std::nullopt, str("cuBLASLt has no epilogues for ", dtypeName(call.dtype))};
  const Kernel& k = plan.kernels[static_cast<size_t>(step.kernels[0])];
  const std::vector<int>& buffers = step.kernelBuffers[0];
  if (readOutsideStep(plan, g.c, self) && !productOverwritten(plan, k, buffers, g.c))
    return {std::nullopt, "another step reads the product itself"};
  if (!k.reduce.empty()) return matchBiasGradient(plan, g, k, buffers, call);
  Shape shape = g.batch;
  shape.push_back(g.m);
  shape.push_back(g.n);
  if (!k.globals.empty() || !k.prologue.empty() || k.outer != shape)
    return {std::nullopt, "the epilogue is not elementwise over the product"};

  // Loads: the product at the point, and at most one bias along the last dim.
  std::vector<int64_t> biasStrides(shape.size(), 0);
  biasStrides.back() = 1;
  int productLoad = -1, biasLoad = -1;
  for (size_t i = 0; i < k.loads.size(); ++i) {
    const kernel::Load& l = k.loads[i];
    int planBuffer = buffers[static_cast<size_t>(l.buffer)];
    const TensorType& t = k.buffers[static_cast<size_t>(l.buffer)].type;
    if (plan.storageOf(planBuffer) == plan.storageOf(g.c) && identityMap(l.map, shape) && productLoad < 0) {
      productLoad = static_cast<int>(i);
    } else if (biasLoad < 0 && l.map.base == 0 && l.map.strides == biasStrides && t.numElements() == g.n &&
               t.dtype == call.dtype) {
      biasLoad = static_cast<int>(i);
      call.bias = planBuffer;
    } else {
      return {std::nullopt, str("load ", i, " is neither the product nor a bias vector")};
    }
  }
  if (productLoad < 0) return {std::nullopt, "the epilogue does not read the product"};

  Scalar p = Scalar::input(productLoad, call.dtype);
  std::vector<Scalar> pre = {p};
  if (biasLoad >= 0) {
    Scalar b = Scalar::input(biasLoad, call.dtype);
    pre = {applyOp("add", {}, {p, b}, call.dtype), applyOp("add", {}, {b, p}, call.dtype)};
  }
  Activation act = Activation::None;
  int actStore = -1, auxStore = -1;
  for (size_t s = 0; s < k.stores.size(); ++s) {
    const kernel::Store& st = k.stores[s];
    const TensorType& t = k.buffers[static_cast<size_t>(st.buffer)].type;
    if (st.scope != StoreScope::Element || !identityMap(st.map, shape) || t.dtype != call.dtype)
      return {std::nullopt, str("store ", s, " is not the whole product in its dtype")};
    Activation a = classify(*st.value, pre, call.dtype);
    if (a == Activation::Unknown) return {std::nullopt, str("store ", s, " is not a bias/ReLU/GELU(tanh) epilogue")};
    if (a == Activation::None && auxStore < 0 && k.stores.size() > 1) {
      auxStore = static_cast<int>(s);
    } else if (actStore < 0) {
      actStore = static_cast<int>(s);
      act = a;
    } else {
      return {std::nullopt, "more stores than cuBLASLt epilogues write"};
    }
  }
  if (actStore < 0) return {std::nullopt, "no store"};
  call.d = buffers[static_cast<size_t>(k.stores[static_cast<size_t>(actStore)].buffer)];
  bool bias = call.bias >= 0;
  if (auxStore >= 0) {
    if (act != Activation::Gelu)
      return {std::nullopt, "the pre-activation is saved, and only GELU_AUX saves it as a matrix (ReLU's aux is a bit mask)"};
    if (call.m % 8 != 0) return {std::nullopt, "GELU_AUX needs the product's rows to be a multiple of 8 elements"};
    call.aux = buffers[static_cast<size_t>(k.stores[static_cast<size_t>(auxStore)].buffer)];
    call.epilogue = bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
    call.epilogueName = bias ? "GELU_AUX_BIAS" : "GELU_AUX";
    return {call, ""};
  }
  switch (act) {
    case Activation::None:
      call.epilogue = bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
      call.epilogueName = bias ? "BIAS" : "DEFAULT";
      break;
    case Activation::Relu:
      call.epilogue = bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
      call.epilogueName = bias ? "RELU_BIAS" : "RELU";
      break;
    default:
      call.epilogue = bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
      call.epilogueName = bias ? "GELU_BIAS" : "GELU";
      break;
  }
  return {call, ""};
}

}  // namespace kfuse::cuda
