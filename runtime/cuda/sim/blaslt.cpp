// The simulated cuBLASLt (driver.h): a reference implementation of the
// matmuls kfuse describes, written from NVIDIA's cuBLASLt documentation
// (cublasLt.h's comments are the same text):
//
//   D = epilogue(alpha * op(A) @ op(B) + beta * C)   column-major, per batch
//
// with A, B, C, D given by matrix layouts (type, rows, cols, leading
// dimension, batch count, strided batch offset; the layout of A and B is
// the stored matrix, before op), and these epilogues:
//   DEFAULT; BIAS (bias[row] added, a vector of D's type with one element
//   per row of D, broadcast over columns and batches unless
//   BIAS_BATCH_STRIDE says otherwise); RELU, GELU (the tanh form: cuBLASLt's
//   GELU is 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))) with or without
//   BIAS; GELU_AUX[_BIAS] (the GELU input, after the bias, also stored to
//   the aux matrix: D's type, AUX_LD >= rows and a multiple of 8, batch
//   stride EPILOGUE_AUX_BATCH_STRIDE, default 0); and for the backward pass
//   DGELU[_BGRAD] (D = the product times GELU's derivative at the aux
//   matrix, the forward's GELU input; _BGRAD also writes the bias gradient,
//   D's sum over its columns, one element per row of D, to the bias
//   pointer), BGRADA / BGRADB (a plain product; the bias gradient is op(A)'s
//   sum over k, one per row of D, or op(B)'s, one per column of D).
// Other epilogues and attributes are refused (CUBLAS_STATUS_NOT_SUPPORTED,
// with lastBlasLtError() saying which), so a descriptor kfuse starts to
// build differently cannot be run by a guess.
//
// Products accumulate in double and round once to D's type: the reference
// is the exact-as-possible product; a GPU's order of accumulation and its
// tensor-core rounding differ in the last bits.
#include <cmath>
#include <cstring>
#include <vector>

#include "ir/dtype.h"
#include "ir/support/strings.h"
#include "runtime/cuda/sim/driver.h"

namespace kfuse::cuda::sim {
namespace {

thread_local std::string tBlasError;

cublasStatus_t refuse(cublasStatus_t s, std::string why) {
  tBlasError = std::move(why);
  return s;
}

struct Handle {
  int unused = 0;
};

struct Desc {
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale = CUDA_R_32F;
  cublasOperation_t transA = CUBLAS_OP_N, transB = CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  int64_t biasBatchStride = 0;
  void* aux = nullptr;
  int64_t auxLd = 0, auxBatchStride = 0;
};

struct Layout {
  cudaDataType_t type = CUDA_R_32F;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int32_t batch = 1;
  int64_t stride = 0;
};

struct Preference {
  uint64_t maxWorkspace = 0;
};

size_t typeBytes(cudaDataType_t t) {
  switch (t) {
    case CUDA_R_32F: return 4;
    case CUDA_R_64F: return 8;
    case CUDA_R_16F:
    case CUDA_R_16BF: return 2;
    default: return 0;
  }
}

const char* typeName(cudaDataType_t t) {
  switch (t) {
    case CUDA_R_32F: return "CUDA_R_32F";
    case CUDA_R_64F: return "CUDA_R_64F";
    case CUDA_R_16F: return "CUDA_R_16F";
    case CUDA_R_16BF: return "CUDA_R_16BF";
    default: return "an unsupported type";
  }
}

double load(const void* base, size_t i, cudaDataType_t t) {
  switch (t) {
    case CUDA_R_32F: return static_cast<const float*>(base)[i];
    case CUDA_R_64F: return static_cast<const double*>(base)[i];
    case CUDA_R_16F: return halfToFloat(static_cast<const uint16_t*>(base)[i]);
    default: return bfloat16ToFloat(static_cast<const uint16_t*>(base)[i]);
  }
}

void store(void* base, size_t i, cudaDataType_t t, double v) {
  switch (t) {
    case CUDA_R_32F: static_cast<float*>(base)[i] = static_cast<float>(v); break;
    case CUDA_R_64F: static_cast<double*>(base)[i] = v; break;
    case CUDA_R_16F: static_cast<uint16_t*>(base)[i] = floatToHalf(static_cast<float>(v)); break;
    default: static_cast<uint16_t*>(base)[i] = floatToBFloat16(static_cast<float>(v)); break;
  }
}

double geluTanh(double x) { return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

// GELU's (tanh form) derivative.
double geluTanhGrad(double x) {
  const double k = 0.7978845608028654, t = std::tanh(k * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * x * x);
}

// The bias vector is an input added to the product.
bool hasBias(cublasLtEpilogue_t e) {
  return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_RELU_BIAS || e == CUBLASLT_EPILOGUE_GELU_BIAS ||
         e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
}
// The bias pointer receives a gradient: per row of D (over D's columns,
// or op(A)'s k), or per column of D (op(B)'s k).
bool isDgelu(cublasLtEpilogue_t e) { return e == CUBLASLT_EPILOGUE_DGELU || e == CUBLASLT_EPILOGUE_DGELU_BGRAD; }
bool biasGradOfRows(cublasLtEpilogue_t e) { return e == CUBLASLT_EPILOGUE_DGELU_BGRAD || e == CUBLASLT_EPILOGUE_BGRADA; }
bool biasGradOfColumns(cublasLtEpilogue_t e) { return e == CUBLASLT_EPILOGUE_BGRADB; }
// The aux matrix: written (GELU_AUX) or read (DGELU).
bool hasAux(cublasLtEpilogue_t e) {
  return e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || isDgelu(e);
}
bool isRelu(cublasLtEpilogue_t e) { return e == CUBLASLT_EPILOGUE_RELU || e == CUBLASLT_EPILOGUE_RELU_BIAS; }
bool isGelu(cublasLtEpilogue_t e) {
  return e == CUBLASLT_EPILOGUE_GELU || e == CUBLASLT_EPILOGUE_GELU_BIAS || e == CUBLASLT_EPILOGUE_GELU_AUX ||
         e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
}
bool supportedEpilogue(cublasLtEpilogue_t e) {
  return e == CUBLASLT_EPILOGUE_DEFAULT || hasBias(e) || isRelu(e) || isGelu(e) || isDgelu(e) || biasGradOfRows(e) ||
         biasGradOfColumns(e);
}

// One matmul, everything copied out of the descriptors (a captured call
// runs later, after the caller destroyed them).
struct Call {
  Desc desc;
  Layout a, b, c, d;
  double alpha = 1, beta = 0;
  const void *pa = nullptr, *pb = nullptr, *pc = nullptr;
  void* pd = nullptr;
  int64_t m = 0, n = 0, k = 0;
};

// The descriptors make sense together (what cublasLtMatmulAlgoGetHeuristic
// checks before any pointer is known).
cublasStatus_t validate(const Desc& desc, const Layout& a, const Layout& b, const Layout& c, const Layout& d,
                        Call* call) {
  if (!supportedEpilogue(desc.epilogue))
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, str("the simulator does not implement epilogue ", desc.epilogue));
  const bool f64 = desc.compute == CUBLAS_COMPUTE_64F;
  if (desc.compute != CUBLAS_COMPUTE_32F && !f64)
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, str("compute type ", desc.compute, " (the simulator has 32F and 64F)"));
  if (desc.scale != (f64 ? CUDA_R_64F : CUDA_R_32F))
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, str("scale type ", typeName(desc.scale), " with compute type ", desc.compute));
  for (const Layout* l : {&a, &b, &c, &d}) {
    if (typeBytes(l->type) == 0 || (f64 != (l->type == CUDA_R_64F)))
      return refuse(CUBLAS_STATUS_NOT_SUPPORTED, str(typeName(l->type), " with compute type ", desc.compute));
    if (l->ld < static_cast<int64_t>(std::max<uint64_t>(l->rows, 1)))
      return refuse(CUBLAS_STATUS_INVALID_VALUE, str("a leading dimension of ", l->ld, " for ", l->rows, " rows"));
    if (l->batch < 1) return refuse(CUBLAS_STATUS_INVALID_VALUE, str("a batch count of ", l->batch));
  }
  if (a.type != b.type || c.type != d.type)
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, str("A ", typeName(a.type), ", B ", typeName(b.type), ", C ",
                                                   typeName(c.type), ", D ", typeName(d.type)));
  const bool ta = desc.transA != CUBLAS_OP_N, tb = desc.transB != CUBLAS_OP_N;
  const uint64_t m = d.rows, n = d.cols, k = ta ? a.rows : a.cols;
  if ((ta ? a.cols : a.rows) != m || (tb ? b.cols : b.rows) != k || (tb ? b.rows : b.cols) != n)
    return refuse(CUBLAS_STATUS_INVALID_VALUE,
                  str("op(A) is ", ta ? a.cols : a.rows, "x", k, ", op(B) ", tb ? b.cols : b.rows, "x",
                      tb ? b.rows : b.cols, ", D ", m, "x", n));
  if (c.rows != m || c.cols != n) return refuse(CUBLAS_STATUS_INVALID_VALUE, "C's shape is not D's");
  if (a.batch != d.batch || b.batch != d.batch || c.batch != d.batch)
    return refuse(CUBLAS_STATUS_INVALID_VALUE,
                  str("batch counts A ", a.batch, ", B ", b.batch, ", C ", c.batch, ", D ", d.batch));
  if (hasAux(desc.epilogue) && (desc.auxLd < static_cast<int64_t>(m) || desc.auxLd % 8 != 0 || desc.auxBatchStride % 8 != 0))
    return refuse(CUBLAS_STATUS_INVALID_VALUE, str("EPILOGUE_AUX_LD ", desc.auxLd, " and batch stride ",
                                                   desc.auxBatchStride, " for ", m, " rows (multiples of 8, LD >= rows)"));
  if (call) {
    call->desc = desc;
    call->a = a;
    call->b = b;
    call->c = c;
    call->d = d;
    call->m = static_cast<int64_t>(m);
    call->n = static_cast<int64_t>(n);
    call->k = static_cast<int64_t>(k);
  }
  return CUBLAS_STATUS_SUCCESS;
}

// [p, p + extent) of every batch lies in device memory.
bool inDevice(const void* p, int64_t batchStride, int32_t batch, uint64_t rows, uint64_t cols, int64_t ld,
              size_t bytes) {
  if (rows == 0 || cols == 0) return true;
  const size_t extent = ((cols - 1) * static_cast<uint64_t>(ld) + rows) * bytes;
  for (int32_t i : {0, batch - 1}) {
    const auto* base = static_cast<const unsigned char*>(p) + static_cast<int64_t>(i) * batchStride * static_cast<int64_t>(bytes);
    if (!isDeviceRange(base, extent)) return false;
  }
  return true;
}

cublasStatus_t checkPointers(const Call& c) {
  auto matrix = [&](const char* name, const void* p, const Layout& l) -> cublasStatus_t {
    if (!inDevice(p, l.stride, l.batch, l.rows, l.cols, l.ld, typeBytes(l.type)))
      return refuse(CUBLAS_STATUS_INVALID_VALUE, str(name, " (", l.rows, "x", l.cols, ", ld ", l.ld, ", batch ", l.batch,
                                                     " stride ", l.stride, ") reaches outside device memory"));
    return CUBLAS_STATUS_SUCCESS;
  };
  if (auto s = matrix("A", c.pa, c.a)) return s;
  if (auto s = matrix("B", c.pb, c.b)) return s;
  if (c.beta != 0)
    if (auto s = matrix("C", c.pc, c.c)) return s;
  if (auto s = matrix("D", c.pd, c.d)) return s;
  const size_t db = typeBytes(c.d.type);
  const int64_t biasLength = biasGradOfColumns(c.desc.epilogue) ? c.n : c.m;
  if ((hasBias(c.desc.epilogue) || biasGradOfRows(c.desc.epilogue) || biasGradOfColumns(c.desc.epilogue)) &&
      !inDevice(c.desc.bias, c.desc.biasBatchStride, c.d.batch, static_cast<uint64_t>(biasLength), 1, biasLength, db))
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "the bias vector reaches outside device memory (or is not set)");
  if (hasAux(c.desc.epilogue) && !inDevice(c.desc.aux, c.desc.auxBatchStride, c.d.batch, static_cast<uint64_t>(c.m),
                                           static_cast<uint64_t>(c.n), c.desc.auxLd, db))
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "the aux matrix reaches outside device memory (or is not set)");
  return CUBLAS_STATUS_SUCCESS;
}

void run(const Call& c) {
  const bool ta = c.desc.transA != CUBLAS_OP_N, tb = c.desc.transB != CUBLAS_OP_N;
  const cublasLtEpilogue_t e = c.desc.epilogue;
  for (int32_t batch = 0; batch < c.d.batch; ++batch) {
    auto at = [&](const void* p, const Layout& l) {
      return static_cast<const unsigned char*>(p) + static_cast<int64_t>(batch) * l.stride * static_cast<int64_t>(typeBytes(l.type));
    };
    const void* A = at(c.pa, c.a);
    const void* B = at(c.pb, c.b);
    void* D = const_cast<unsigned char*>(at(c.pd, c.d));
    const void* C = c.beta != 0 ? at(c.pc, c.c) : nullptr;
    const size_t db = typeBytes(c.d.type);
    const void* bias = hasBias(e) ? static_cast<const unsigned char*>(c.desc.bias) + batch * c.desc.biasBatchStride * static_cast<int64_t>(db) : nullptr;
    void* aux = hasAux(e) ? static_cast<unsigned char*>(c.desc.aux) + batch * c.desc.auxBatchStride * static_cast<int64_t>(db) : nullptr;
    auto opA = [&](int64_t i, int64_t p) {
      return load(A, static_cast<size_t>(ta ? p + i * c.a.ld : i + p * c.a.ld), c.a.type);
    };
    auto opB = [&](int64_t p, int64_t j) {
      return load(B, static_cast<size_t>(tb ? j + p * c.b.ld : p + j * c.b.ld), c.b.type);
    };
    // The bias gradient, summed in double, rounded once to D's type.
    std::vector<double> grad(static_cast<size_t>(biasGradOfColumns(e) ? c.n : c.m), 0.0);
    for (int64_t j = 0; j < c.n; ++j)
      for (int64_t i = 0; i < c.m; ++i) {
        double acc = 0;
        for (int64_t p = 0; p < c.k; ++p) acc += opA(i, p) * opB(p, j);
        double x = c.alpha * acc;
        if (C) x += c.beta * load(C, static_cast<size_t>(i + j * c.c.ld), c.c.type);
        if (bias) x += load(bias, static_cast<size_t>(i), c.d.type);
        const size_t at = static_cast<size_t>(i + j * c.desc.auxLd);
        if (aux && isDgelu(e)) x *= geluTanhGrad(load(aux, at, c.d.type));
        if (aux && !isDgelu(e)) store(aux, at, c.d.type, x);
        if (isRelu(e)) x = x > 0 ? x : 0;  // max(x, 0), as fmaxf: NaN becomes 0
        if (isGelu(e)) x = geluTanh(x);
        store(D, static_cast<size_t>(i + j * c.d.ld), c.d.type, x);
        if (e == CUBLASLT_EPILOGUE_DGELU_BGRAD) grad[static_cast<size_t>(i)] += x;
      }
    if (e == CUBLASLT_EPILOGUE_BGRADA)
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t p = 0; p < c.k; ++p) grad[static_cast<size_t>(i)] += opA(i, p);
    if (e == CUBLASLT_EPILOGUE_BGRADB)
      for (int64_t j = 0; j < c.n; ++j)
        for (int64_t p = 0; p < c.k; ++p) grad[static_cast<size_t>(j)] += opB(p, j);
    if (biasGradOfRows(e) || biasGradOfColumns(e)) {
      void* out = static_cast<unsigned char*>(const_cast<void*>(c.desc.bias)) + batch * c.desc.biasBatchStride * static_cast<int64_t>(db);
      for (size_t i = 0; i < grad.size(); ++i) store(out, i, c.d.type, grad[i]);
    }
  }
}

// ---- the API ----

template <typename T>
cublasStatus_t setValue(T& field, const void* buf, size_t size) {
  if (size != sizeof(T)) return refuse(CUBLAS_STATUS_INVALID_VALUE, str("an attribute of ", size, " bytes, not ", sizeof(T)));
  std::memcpy(&field, buf, sizeof(T));
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t ltCreate(cublasLtHandle_t* h) {
  *h = reinterpret_cast<cublasLtHandle_t>(new Handle());
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t ltDestroy(cublasLtHandle_t h) {
  delete reinterpret_cast<Handle*>(h);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t descCreate(cublasLtMatmulDesc_t* d, cublasComputeType_t compute, cudaDataType_t scale) {
  auto* desc = new Desc();
  desc->compute = compute;
  desc->scale = scale;
  *d = reinterpret_cast<cublasLtMatmulDesc_t>(desc);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t descDestroy(cublasLtMatmulDesc_t d) {
  delete reinterpret_cast<Desc*>(d);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t descSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const void* buf, size_t size) {
  Desc& desc = *reinterpret_cast<Desc*>(d);
  switch (a) {
    case CUBLASLT_MATMUL_DESC_TRANSA: return setValue(desc.transA, buf, size);
    case CUBLASLT_MATMUL_DESC_TRANSB: return setValue(desc.transB, buf, size);
    case CUBLASLT_MATMUL_DESC_EPILOGUE: return setValue(desc.epilogue, buf, size);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: return setValue(desc.bias, buf, size);
    case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE: return setValue(desc.biasBatchStride, buf, size);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER: return setValue(desc.aux, buf, size);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD: return setValue(desc.auxLd, buf, size);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE: return setValue(desc.auxBatchStride, buf, size);
    default: return refuse(CUBLAS_STATUS_NOT_SUPPORTED, str("the simulator does not model matmul attribute ", a));
  }
}

cublasStatus_t layoutCreate(cublasLtMatrixLayout_t* l, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld) {
  auto* layout = new Layout();
  layout->type = type;
  layout->rows = rows;
  layout->cols = cols;
  layout->ld = ld;
  *l = reinterpret_cast<cublasLtMatrixLayout_t>(layout);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t layoutDestroy(cublasLtMatrixLayout_t l) {
  delete reinterpret_cast<Layout*>(l);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t layoutSetAttribute(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t a, const void* buf,
                                  size_t size) {
  Layout& layout = *reinterpret_cast<Layout*>(l);
  switch (a) {
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: return setValue(layout.batch, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: return setValue(layout.stride, buf, size);
    default: return refuse(CUBLAS_STATUS_NOT_SUPPORTED, str("the simulator does not model layout attribute ", a));
  }
}

cublasStatus_t prefCreate(cublasLtMatmulPreference_t* p) {
  *p = reinterpret_cast<cublasLtMatmulPreference_t>(new Preference());
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t prefDestroy(cublasLtMatmulPreference_t p) {
  delete reinterpret_cast<Preference*>(p);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t prefSetAttribute(cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t a, const void* buf,
                                size_t size) {
  if (a != CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES)
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, str("the simulator does not model preference attribute ", a));
  return setValue(reinterpret_cast<Preference*>(p)->maxWorkspace, buf, size);
}

cublasStatus_t algoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                                cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                cublasLtMatmulPreference_t, int requested, cublasLtMatmulHeuristicResult_t* results,
                                int* found) {
  *found = 0;
  if (requested < 1) return refuse(CUBLAS_STATUS_INVALID_VALUE, "no result requested");
  auto L = [](cublasLtMatrixLayout_t l) -> const Layout& { return *reinterpret_cast<const Layout*>(l); };
  if (cublasStatus_t s = validate(*reinterpret_cast<const Desc*>(desc), L(a), L(b), L(c), L(d), nullptr)) return s;
  results[0] = cublasLtMatmulHeuristicResult_t{};
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.0f;
  *found = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t matmul(cublasLtHandle_t, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
                      cublasLtMatrixLayout_t a, const void* B, cublasLtMatrixLayout_t b, const void* beta, const void* C,
                      cublasLtMatrixLayout_t c, void* D, cublasLtMatrixLayout_t d, const cublasLtMatmulAlgo_t*, void*,
                      size_t, cudaStream_t stream) {
  auto L = [](cublasLtMatrixLayout_t l) -> const Layout& { return *reinterpret_cast<const Layout*>(l); };
  Call call;
  if (cublasStatus_t s = validate(*reinterpret_cast<const Desc*>(desc), L(a), L(b), L(c), L(d), &call)) return s;
  const bool f64 = call.desc.compute == CUBLAS_COMPUTE_64F;
  call.alpha = f64 ? *static_cast<const double*>(alpha) : *static_cast<const float*>(alpha);
  call.beta = f64 ? *static_cast<const double*>(beta) : *static_cast<const float*>(beta);
  call.pa = A;
  call.pb = B;
  call.pc = C;
  call.pd = D;
  if (cublasStatus_t s = checkPointers(call)) return s;
  CUresult r = enqueue(stream, [call] {
    run(call);
    return CUDA_SUCCESS;
  });
  return r == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS : refuse(CUBLAS_STATUS_EXECUTION_FAILED, "the stream failed");
}

BlasLtApi makeBlasLt() {
  BlasLtApi api{};
  api.create = ltCreate;
  api.destroy = ltDestroy;
  api.descCreate = descCreate;
  api.descDestroy = descDestroy;
  api.descSetAttribute = descSetAttribute;
  api.layoutCreate = layoutCreate;
  api.layoutDestroy = layoutDestroy;
  api.layoutSetAttribute = layoutSetAttribute;
  api.preferenceCreate = prefCreate;
  api.preferenceDestroy = prefDestroy;
  api.preferenceSetAttribute = prefSetAttribute;
  api.algoGetHeuristic = algoGetHeuristic;
  api.matmul = matmul;
  return api;
}

}  // namespace

const BlasLtApi* simulatedBlasLt() {
  static const BlasLtApi api = makeBlasLt();
  return &api;
}

std::string lastBlasLtError() { return tBlasError; }

}  // namespace kfuse::cuda::sim
