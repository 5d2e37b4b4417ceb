// The simulated driver and cuBLASLt (runtime/cuda/sim/driver.h), called
// through the same tables CudaRunner calls: modules compiled at run time
// from CUDA C by the simulator's compiler, launches and their checks
// (launch bounds, shared memory, arguments), faults reported through
// cuGetErrorString, copies and memsets, CUDA Graph capture and replay,
// events; and the reference cuBLASLt, one test per epilogue kfuse uses.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "codegen/cuda/host_compiler.h"
#include "ir/dtype.h"
#include "ir/support/strings.h"
#include "runtime/cuda/sim/driver.h"

namespace kfuse::cuda {
namespace {

const char* kSource = R"(
extern "C" __global__ void __launch_bounds__(128) scale(const float* in, float* out, int n, float by) {
  const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = by * in[i];
}
extern "C" __global__ void __launch_bounds__(128) readPast(const float* in, float* out, int n) {
  out[threadIdx.x] = in[n + 64 * (int)threadIdx.x];
}
extern "C" __global__ void __launch_bounds__(64) divergent(float* out) {
  if (threadIdx.x < 32) __syncthreads();
  out[threadIdx.x] = 1;
}
extern "C" __global__ void __launch_bounds__(256) sharedSum(float* out) {
  float* s = (float*)kf_smem();
  s[threadIdx.x] = (float)threadIdx.x;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0;
    for (unsigned i = 0; i < blockDim.x; ++i) t += s[i];
    out[blockIdx.x] = t;
  }
}
)";

class SimDriver : public testing::Test {
 protected:
  void SetUp() override {
    cu = sim::simulatedDriver();
    auto unit = compileHostUnit(kSource, {"scale", "readPast", "divergent", "sharedSum"}, "the driver test's unit", {});
    ASSERT_TRUE(unit) << unit.error().message();
    ASSERT_EQ(cu->moduleLoadData(&module, unit->cubin.data()), CUDA_SUCCESS) << message(CUDA_ERROR_INVALID_IMAGE);
    ASSERT_EQ(cu->streamCreate(&stream, 0), CUDA_SUCCESS);
  }
  void TearDown() override {
    for (CUdeviceptr p : allocations) cu->memFree(p);
    if (stream) cu->streamDestroy(stream);
    if (module) cu->moduleUnload(module);
  }
  std::string message(CUresult r) {
    const char* text = nullptr;
    cu->getErrorString(r, &text);
    return text ? text : "";
  }
  CUfunction function(const char* name) {
    CUfunction f = nullptr;
    EXPECT_EQ(cu->moduleGetFunction(&f, module, name), CUDA_SUCCESS) << name;
    return f;
  }
  CUdeviceptr alloc(size_t bytes) {
    CUdeviceptr p = 0;
    EXPECT_EQ(cu->memAlloc(&p, bytes), CUDA_SUCCESS);
    allocations.push_back(p);
    return p;
  }
  std::vector<float> download(CUdeviceptr p, size_t n) {
    std::vector<float> v(n);
    EXPECT_EQ(cu->memcpyDtoH(v.data(), p, n * sizeof(float)), CUDA_SUCCESS);
    return v;
  }

  const DriverApi* cu = nullptr;
  CUmodule module = nullptr;
  CUstream stream = nullptr;
  std::vector<CUdeviceptr> allocations;
};

TEST_F(SimDriver, LaunchesRunTheModulesKernels) {
  constexpr int kN = 300;
  std::vector<float> host(kN);
  for (int i = 0; i < kN; ++i) host[static_cast<size_t>(i)] = static_cast<float>(i);
  CUdeviceptr in = alloc(kN * 4), out = alloc(kN * 4);
  ASSERT_EQ(cu->memcpyHtoD(in, host.data(), kN * 4), CUDA_SUCCESS);
  int n = kN;
  float by = 3;
  void* params[] = {&in, &out, &n, &by};
  ASSERT_EQ(cu->launchKernel(function("scale"), 3, 1, 1, 128, 1, 1, 0, stream, params, nullptr), CUDA_SUCCESS)
      << message(CUDA_ERROR_LAUNCH_FAILED);
  std::vector<float> got = download(out, kN);
  for (int i = 0; i < kN; ++i) EXPECT_EQ(got[static_cast<size_t>(i)], 3.0f * static_cast<float>(i));
}

TEST_F(SimDriver, LaunchChecksAreTheDriversWithTheSimulatorsReasons) {
  CUfunction f = nullptr;
  EXPECT_EQ(cu->moduleGetFunction(&f, module, "nope"), CUDA_ERROR_NOT_FOUND);
  EXPECT_NE(message(CUDA_ERROR_NOT_FOUND).find("the driver test's unit has no entry nope"), std::string::npos);

  CUdeviceptr in = alloc(1024), out = alloc(1024);
  int n = 4;
  float by = 1;
  void* params[] = {&in, &out, &n, &by};
  EXPECT_EQ(cu->launchKernel(function("scale"), 1, 1, 1, 256, 1, 1, 0, stream, params, nullptr),
            CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  EXPECT_NE(message(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES).find("exceeds scale of the driver test's unit's __launch_bounds__(128)"),
            std::string::npos)
      << message(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);

  // 64 KiB of dynamic shared memory needs the function's attribute first.
  void* one[] = {&out};
  CUfunction sum = function("sharedSum");
  EXPECT_EQ(cu->launchKernel(sum, 1, 1, 1, 256, 1, 1, 64 * 1024, stream, one, nullptr), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cu->funcSetAttribute(sum, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 64 * 1024), CUDA_SUCCESS);
  EXPECT_EQ(cu->launchKernel(sum, 2, 1, 1, 256, 1, 1, 64 * 1024, stream, one, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(download(out, 2), (std::vector<float>{32640.0f, 32640.0f}));

  // A pointer argument must point into device memory.
  float onHost[4] = {};
  float* hostPtr = onHost;
  void* wrong[] = {&in, &hostPtr, &n, &by};
  EXPECT_EQ(cu->launchKernel(function("scale"), 1, 1, 1, 128, 1, 1, 0, stream, wrong, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_NE(message(CUDA_ERROR_INVALID_VALUE).find("argument 1 of scale"), std::string::npos)
      << message(CUDA_ERROR_INVALID_VALUE);

  // A cooperative launch can have only the blocks the device holds at once.
  int perSm = 0;
  ASSERT_EQ(cu->occupancy(&perSm, sum, 256, 0), CUDA_SUCCESS);
  int sms = 0;
  ASSERT_EQ(cu->deviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0), CUDA_SUCCESS);
  const unsigned most = static_cast<unsigned>(perSm * sms);
  EXPECT_EQ(cu->launchCooperativeKernel(sum, most, 1, 1, 256, 1, 1, 1024, stream, one), CUDA_SUCCESS)
      << message(CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_EQ(cu->launchCooperativeKernel(sum, most + 1, 1, 1, 256, 1, 1, 1024, stream, one),
            CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);

  // Copies stay inside allocations.
  std::vector<char> big(2048);
  EXPECT_EQ(cu->memcpyHtoD(in, big.data(), 2048), CUDA_ERROR_INVALID_VALUE);
  EXPECT_NE(message(CUDA_ERROR_INVALID_VALUE).find("cuMemcpyHtoD of 2048 bytes"), std::string::npos);
}

TEST_F(SimDriver, FaultsAndDivergenceFailTheLaunchWithTheReason) {
  CUdeviceptr in = alloc(256 * 4), out = alloc(128 * 4);
  int n = 256;
  void* params[] = {&in, &out, &n};
  EXPECT_EQ(cu->launchKernel(function("readPast"), 1, 1, 1, 32, 1, 1, 0, stream, params, nullptr),
            CUDA_ERROR_LAUNCH_FAILED);
  std::string m = message(CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_NE(m.find("kernel readPast of the driver test's unit: an access to 0x"), std::string::npos) << m;
  EXPECT_NE(m.find("bytes past the end of a 1024-byte device allocation"), std::string::npos) << m;

  void* one[] = {&out};
  EXPECT_EQ(cu->launchKernel(function("divergent"), 1, 1, 1, 64, 1, 1, 0, stream, one, nullptr), CUDA_ERROR_LAUNCH_FAILED);
  m = message(CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_NE(m.find("kernel divergent of the driver test's unit: divergent __syncthreads"), std::string::npos) << m;
  // Line 10 of the unit (its first line is empty).
  EXPECT_NE(m.find("on line 10"), std::string::npos) << m;
}

TEST_F(SimDriver, GraphsRecordWhatTheStreamWouldRunAndReplayIt) {
  constexpr int kN = 128;
  CUdeviceptr in = alloc(kN * 4), out = alloc(kN * 4);
  std::vector<float> ones(kN, 1.0f);
  ASSERT_EQ(cu->memcpyHtoD(in, ones.data(), kN * 4), CUDA_SUCCESS);
  ASSERT_EQ(cu->memsetD32Async(out, 0, kN, stream), CUDA_SUCCESS);
  int n = kN;
  float by = 5;
  void* params[] = {&in, &out, &n, &by};
  ASSERT_EQ(cu->streamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
  ASSERT_EQ(cu->memsetD32Async(in, 0x40000000u, kN, stream), CUDA_SUCCESS);  // 2.0f
  ASSERT_EQ(cu->launchKernel(function("scale"), 1, 1, 1, 128, 1, 1, 0, stream, params, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cu->streamSynchronize(stream), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUgraph graph = nullptr;
  ASSERT_EQ(cu->streamEndCapture(stream, &graph), CUDA_SUCCESS);
  // Captured, not run.
  EXPECT_EQ(download(out, kN), std::vector<float>(kN, 0.0f));
  by = 7;  // the launch took its arguments' values when it was captured
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cu->graphInstantiate(&exec, graph, 0), CUDA_SUCCESS);
  ASSERT_EQ(cu->graphLaunch(exec, stream), CUDA_SUCCESS);
  EXPECT_EQ(download(out, kN), std::vector<float>(kN, 10.0f));
  EXPECT_EQ(cu->graphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(cu->graphDestroy(graph), CUDA_SUCCESS);

  CUevent a = nullptr, b = nullptr;
  ASSERT_EQ(cu->eventCreate(&a, 0), CUDA_SUCCESS);
  ASSERT_EQ(cu->eventCreate(&b, 0), CUDA_SUCCESS);
  ASSERT_EQ(cu->eventRecord(a, stream), CUDA_SUCCESS);
  ASSERT_EQ(cu->launchKernel(function("scale"), 1, 1, 1, 128, 1, 1, 0, stream, params, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cu->eventRecord(b, stream), CUDA_SUCCESS);
  float ms = -1;
  ASSERT_EQ(cu->eventElapsedTime(&ms, a, b), CUDA_SUCCESS);
  EXPECT_GE(ms, 0.0f);
  cu->eventDestroy(a);
  cu->eventDestroy(b);
}

TEST(SimDriverChoice, TheSimulatorIsNeverTheDriverLoadDriverFinds) {
  auto real = loadDriver();
  if (real) GTEST_SKIP() << "this machine has a driver";
  EXPECT_NE(real.error().message().find("libcuda.so.1"), std::string::npos) << real.error().message();
  EXPECT_NE(sim::simulatedDriver(), nullptr);
}

// ---- cuBLASLt: a row-major C = op(a) @ op(b) (+ bias) as kfuse describes
// it to cuBLASLt (runtime/cuda/cuda_runner.cpp), against a reference
// written here in row-major terms. ----

struct Gemm {
  int64_t m = 5, n = 7, k = 3, batch = 1;
  bool transA = false, transB = false;
  cudaDataType_t type = CUDA_R_32F;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
};

size_t bytesOf(cudaDataType_t t) { return t == CUDA_R_64F ? 8 : t == CUDA_R_32F ? 4 : 2; }

void put(std::vector<unsigned char>& buf, size_t i, cudaDataType_t t, double v) {
  switch (t) {
    case CUDA_R_32F: reinterpret_cast<float*>(buf.data())[i] = static_cast<float>(v); break;
    case CUDA_R_64F: reinterpret_cast<double*>(buf.data())[i] = v; break;
    case CUDA_R_16F: reinterpret_cast<uint16_t*>(buf.data())[i] = floatToHalf(static_cast<float>(v)); break;
    default: reinterpret_cast<uint16_t*>(buf.data())[i] = floatToBFloat16(static_cast<float>(v)); break;
  }
}

double get(const std::vector<unsigned char>& buf, size_t i, cudaDataType_t t) {
  switch (t) {
    case CUDA_R_32F: return reinterpret_cast<const float*>(buf.data())[i];
    case CUDA_R_64F: return reinterpret_cast<const double*>(buf.data())[i];
    case CUDA_R_16F: return halfToFloat(reinterpret_cast<const uint16_t*>(buf.data())[i]);
    default: return bfloat16ToFloat(reinterpret_cast<const uint16_t*>(buf.data())[i]);
  }
}

// Runs `g` on the simulated cuBLASLt; returns D and the aux matrix (row-major [batch, m, n]).
struct Result {
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  std::vector<double> d, aux, a, b, bias;
  std::vector<double> auxIn;     // what the aux matrix held before (DGELU's input)
  std::vector<double> biasOut;   // the bias buffer after (gradients)
};

Result runGemm(const Gemm& g) {
  const DriverApi* cu = sim::simulatedDriver();
  const BlasLtApi* lt = sim::simulatedBlasLt();
  const size_t es = bytesOf(g.type);
  const size_t na = static_cast<size_t>(g.batch * g.m * g.k), nb = static_cast<size_t>(g.batch * g.k * g.n),
               nd = static_cast<size_t>(g.batch * g.m * g.n);
  Result r;
  std::vector<unsigned char> ha(na * es), hb(nb * es), hbias(static_cast<size_t>(g.n) * es);
  for (size_t i = 0; i < na; ++i) put(ha, i, g.type, std::sin(0.7 * static_cast<double>(i)) * 1.5);
  for (size_t i = 0; i < nb; ++i) put(hb, i, g.type, std::cos(0.3 * static_cast<double>(i)));
  for (int64_t i = 0; i < g.n; ++i) put(hbias, static_cast<size_t>(i), g.type, 0.25 * static_cast<double>(i) - 0.8);
  for (size_t i = 0; i < na; ++i) r.a.push_back(get(ha, i, g.type));
  for (size_t i = 0; i < nb; ++i) r.b.push_back(get(hb, i, g.type));
  for (int64_t i = 0; i < g.n; ++i) r.bias.push_back(get(hbias, static_cast<size_t>(i), g.type));
  CUdeviceptr a = 0, b = 0, d = 0, bias = 0, aux = 0;
  cu->memAlloc(&a, na * es);
  cu->memAlloc(&b, nb * es);
  cu->memAlloc(&d, nd * es);
  cu->memAlloc(&bias, static_cast<size_t>(std::max(g.n, g.m)) * es);
  cu->memAlloc(&aux, nd * es);
  cu->memcpyHtoD(a, ha.data(), na * es);
  cu->memcpyHtoD(b, hb.data(), nb * es);
  cu->memcpyHtoD(bias, hbias.data(), static_cast<size_t>(g.n) * es);
  std::vector<unsigned char> hauxIn(nd * es);
  for (size_t i = 0; i < nd; ++i) put(hauxIn, i, g.type, std::sin(1.3 * static_cast<double>(i)) * 2.0);
  for (size_t i = 0; i < nd; ++i) r.auxIn.push_back(get(hauxIn, i, g.type));
  cu->memcpyHtoD(aux, hauxIn.data(), nd * es);

  // As CudaRunner: column-major D^T = op(b)^T @ op(a)^T, cuBLASLt's A is b.
  const bool f64 = g.type == CUDA_R_64F;
  cublasLtHandle_t h = nullptr;
  lt->create(&h);
  cublasLtMatmulDesc_t desc = nullptr;
  lt->descCreate(&desc, f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F, f64 ? CUDA_R_64F : CUDA_R_32F);
  cublasOperation_t ta = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N, tb = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  lt->descSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta));
  lt->descSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb));
  lt->descSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &g.epilogue, sizeof(g.epilogue));
  lt->descSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
  int64_t auxLd = g.n, auxStride = g.m * g.n;
  lt->descSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux));
  lt->descSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &auxLd, sizeof(auxLd));
  lt->descSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, &auxStride, sizeof(auxStride));
  auto layout = [&](int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
    cublasLtMatrixLayout_t l = nullptr;
    lt->layoutCreate(&l, g.type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld);
    int count = static_cast<int>(g.batch);
    lt->layoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count));
    lt->layoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride));
    return l;
  };
  // b is [k, n] (or [n, k] transposed), a is [m, k] (or [k, m]), row-major.
  cublasLtMatrixLayout_t la = layout(g.transB ? g.k : g.n, g.transB ? g.n : g.k, g.transB ? g.k : g.n, g.k * g.n);
  cublasLtMatrixLayout_t lb = layout(g.transA ? g.m : g.k, g.transA ? g.k : g.m, g.transA ? g.m : g.k, g.m * g.k);
  cublasLtMatrixLayout_t ld = layout(g.n, g.m, g.n, g.m * g.n);
  cublasLtMatmulPreference_t pref = nullptr;
  lt->preferenceCreate(&pref);
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  r.status = lt->algoGetHeuristic(h, desc, la, lb, ld, ld, pref, 1, &heuristic, &found);
  if (r.status == CUBLAS_STATUS_SUCCESS) {
    double a64 = 1, b64 = 0;
    float a32 = 1, b32 = 0;
    r.status = lt->matmul(h, desc, f64 ? static_cast<const void*>(&a64) : &a32, reinterpret_cast<void*>(b), la,
                          reinterpret_cast<void*>(a), lb, f64 ? static_cast<const void*>(&b64) : &b32,
                          reinterpret_cast<void*>(d), ld, reinterpret_cast<void*>(d), ld, &heuristic.algo, nullptr, 0,
                          nullptr);
  }
  std::vector<unsigned char> hd(nd * es), haux(nd * es), hbiasOut(static_cast<size_t>(std::max(g.n, g.m)) * es);
  cu->memcpyDtoH(hd.data(), d, nd * es);
  cu->memcpyDtoH(haux.data(), aux, nd * es);
  cu->memcpyDtoH(hbiasOut.data(), bias, hbiasOut.size());
  for (size_t i = 0; i < hbiasOut.size() / es; ++i) r.biasOut.push_back(get(hbiasOut, i, g.type));
  for (size_t i = 0; i < nd; ++i) {
    r.d.push_back(get(hd, i, g.type));
    r.aux.push_back(get(haux, i, g.type));
  }
  lt->preferenceDestroy(pref);
  for (auto l : {la, lb, ld}) lt->layoutDestroy(l);
  lt->descDestroy(desc);
  lt->destroy(h);
  for (CUdeviceptr p : {a, b, d, bias, aux}) cu->memFree(p);
  return r;
}

double roundTo(cudaDataType_t t, double v) {
  std::vector<unsigned char> buf(8);
  put(buf, 0, t, v);
  return get(buf, 0, t);
}

// The expected D (and GELU input) of g, row-major, from cuBLASLt's
// documented epilogues.
void expectMatches(const Gemm& g, const Result& r, double tol) {
  ASSERT_EQ(r.status, CUBLAS_STATUS_SUCCESS) << sim::lastBlasLtError();
  const bool bias = g.epilogue == CUBLASLT_EPILOGUE_BIAS || g.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS ||
                    g.epilogue == CUBLASLT_EPILOGUE_GELU_BIAS || g.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  const bool relu = g.epilogue == CUBLASLT_EPILOGUE_RELU || g.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
  const bool aux = g.epilogue == CUBLASLT_EPILOGUE_GELU_AUX || g.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  const bool gelu = aux || g.epilogue == CUBLASLT_EPILOGUE_GELU || g.epilogue == CUBLASLT_EPILOGUE_GELU_BIAS;
  for (int64_t z = 0; z < g.batch; ++z)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double x = 0;
        for (int64_t p = 0; p < g.k; ++p) {
          const double av = r.a[static_cast<size_t>(z * g.m * g.k + (g.transA ? p * g.m + i : i * g.k + p))];
          const double bv = r.b[static_cast<size_t>(z * g.k * g.n + (g.transB ? j * g.k + p : p * g.n + j))];
          x += av * bv;
        }
        if (bias) x += r.bias[static_cast<size_t>(j)];
        const size_t at = static_cast<size_t>(z * g.m * g.n + i * g.n + j);
        if (aux) {
          EXPECT_NEAR(r.aux[at], roundTo(g.type, x), tol) << "aux (" << z << "," << i << "," << j << ")";
        }
        if (relu) x = std::max(x, 0.0);
        if (gelu) x = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
        EXPECT_NEAR(r.d[at], roundTo(g.type, x), tol) << "D (" << z << "," << i << "," << j << ")";
      }
}

TEST(SimBlasLt, DefaultWithEveryTransposeAndBatches) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Gemm g;
      g.transA = ta;
      g.transB = tb;
      g.batch = 3;
      expectMatches(g, runGemm(g), 1e-5);
    }
}

TEST(SimBlasLt, EachEpilogue) {
  for (cublasLtEpilogue_t e : {CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_RELU, CUBLASLT_EPILOGUE_RELU_BIAS,
                               CUBLASLT_EPILOGUE_GELU, CUBLASLT_EPILOGUE_GELU_BIAS, CUBLASLT_EPILOGUE_GELU_AUX,
                               CUBLASLT_EPILOGUE_GELU_AUX_BIAS}) {
    SCOPED_TRACE(str("epilogue ", e));
    Gemm g;
    g.m = 6;
    g.n = 8;
    g.k = 5;
    g.batch = 2;
    g.transB = true;
    g.epilogue = e;
    expectMatches(g, runGemm(g), 1e-5);
  }
}

TEST(SimBlasLt, HalfBFloatAndDouble) {
  for (cudaDataType_t t : {CUDA_R_16F, CUDA_R_16BF, CUDA_R_64F}) {
    Gemm g;
    g.type = t;
    g.epilogue = CUBLASLT_EPILOGUE_RELU_BIAS;
    // Products are rounded once, to the storage type.
    expectMatches(g, runGemm(g), t == CUDA_R_64F ? 1e-12 : 0);
  }
}

// The backward epilogues, in the plan's row-major terms: cuBLASLt's rows
// of D are the plan's columns (features), so a gradient "per row of D" is
// a sum over the plan's rows (the batch).
TEST(SimBlasLt, BackwardEpilogues) {
  Gemm g;
  g.m = 9;
  g.n = 8;
  g.k = 4;
  g.transB = true;
  auto product = [&](const Result& r, int64_t i, int64_t j) {
    double x = 0;
    for (int64_t p = 0; p < g.k; ++p) x += r.a[static_cast<size_t>(i * g.k + p)] * r.b[static_cast<size_t>(j * g.k + p)];
    return x;
  };
  auto dgelu = [](double x) {
    const double k = std::sqrt(2 / M_PI), t = std::tanh(k * (x + 0.044715 * x * x * x));
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x);
  };
  for (cublasLtEpilogue_t e : {CUBLASLT_EPILOGUE_DGELU, CUBLASLT_EPILOGUE_DGELU_BGRAD}) {
    g.epilogue = e;
    Result r = runGemm(g);
    ASSERT_EQ(r.status, CUBLAS_STATUS_SUCCESS) << sim::lastBlasLtError();
    for (int64_t j = 0; j < g.n; ++j) {
      double column = 0;
      for (int64_t i = 0; i < g.m; ++i) {
        const size_t at = static_cast<size_t>(i * g.n + j);
        const double want = product(r, i, j) * dgelu(r.auxIn[at]);
        EXPECT_NEAR(r.d[at], want, 1e-5) << "D (" << i << "," << j << ")";
        column += want;
      }
      if (e == CUBLASLT_EPILOGUE_DGELU_BGRAD) {
        EXPECT_NEAR(r.biasOut[static_cast<size_t>(j)], column, 1e-5) << "db " << j;
      }
    }
  }
  // BGRADA: op(A) is the plan's op(b)^T: sums over k per feature j;
  // BGRADB: op(B) is op(a)^T: sums over k per row i.
  for (cublasLtEpilogue_t e : {CUBLASLT_EPILOGUE_BGRADA, CUBLASLT_EPILOGUE_BGRADB}) {
    g.epilogue = e;
    Result r = runGemm(g);
    ASSERT_EQ(r.status, CUBLAS_STATUS_SUCCESS) << sim::lastBlasLtError();
    const int64_t length = e == CUBLASLT_EPILOGUE_BGRADA ? g.n : g.m;
    for (int64_t x = 0; x < length; ++x) {
      double want = 0;
      for (int64_t p = 0; p < g.k; ++p)
        want += e == CUBLASLT_EPILOGUE_BGRADA ? r.b[static_cast<size_t>(x * g.k + p)] : r.a[static_cast<size_t>(x * g.k + p)];
      EXPECT_NEAR(r.biasOut[static_cast<size_t>(x)], want, 1e-5) << "bias gradient " << x;
    }
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) EXPECT_NEAR(r.d[static_cast<size_t>(i * g.n + j)], product(r, i, j), 1e-5);
  }
}

TEST(SimBlasLt, WhatIsNotModelledIsRefused) {
  Gemm g;
  g.epilogue = CUBLASLT_EPILOGUE_DRELU;
  EXPECT_EQ(runGemm(g).status, CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_NE(sim::lastBlasLtError().find("does not implement epilogue"), std::string::npos) << sim::lastBlasLtError();
}

}  // namespace
}  // namespace kfuse::cuda
