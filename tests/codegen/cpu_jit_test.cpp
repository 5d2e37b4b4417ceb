// The CPU JIT as a component: batches, errors, object files, what the
// optimiser makes of the loops (vectorized elementwise code), compile time.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <regex>
#include <thread>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include "codegen/cpu/compile.h"
#include "codegen/cpu/llvm_emitter.h"
#include "codegen/cpu/target.h"
#include "codegen/cpu/vector_code.h"
#include "exec/index_space.h"
#include "codegen/kernel/kept_sum.h"
#include "exec/kernel_eval.h"
#include "ir/support/strings.h"
#include "tests/codegen/jit_harness.h"
#include "tests/codegen/kernel_builder.h"

namespace kfuse::testing {
namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

Kernel fma(const std::string& name, const Shape& shape) {
  return elementwiseKernel(name, shape, {DType::F32, DType::F32, DType::F32}, DType::F32,
                           [](const std::vector<Scalar>& x) { return x[0] * x[1] + x[2]; });
}

TEST(CpuJit, MillionElementKernelIsVectorized) {
  const int64_t n = 1 << 20;
  Kernel k = elementwiseKernel("add_million", {n}, {DType::F32, DType::F32}, DType::F32,
                               [](const std::vector<Scalar>& x) { return x[0] + x[1]; });
  cpu::CompileOptions options;
  options.keepOptimizedIR = true;
  auto compiled = sharedJit().compile(std::span(&k, 1), options);
  ASSERT_TRUE(compiled) << compiled.error().message();
  EXPECT_NE(compiled->optimizedIR.find("x float>"), std::string::npos) << compiled->optimizedIR;
  EXPECT_NE(compiled->optimizedIR.find("vector.body"), std::string::npos);

  std::vector<Tensor> buffers = randomBuffers(k, 1);
  std::vector<Tensor> reference = buffers;
  runCompiled(k, compiled->functions[0], buffers);  // warm up (page faults)
  const int reps = 50;
  auto start = Clock::now();
  for (int i = 0; i < reps; ++i) runCompiled(k, compiled->functions[0], buffers);
  double seconds = msSince(start) / 1e3 / reps;
  double bytes = 3.0 * 4.0 * static_cast<double>(n);  // two loads and a store per element
  std::printf("[ perf ] add of 2^20 f32: %.1f us per call, %.1f GB/s\n", seconds * 1e6, bytes / seconds / 1e9);
  EXPECT_TRUE(matchesInterpreter(k, reference, Tolerance::exact()));
}

TEST(CpuJit, ContiguousDimsMergeIntoOneVectorLoop) {
  Kernel k = fma("fma3d", {7, 3, 129});
  kernel::KernelSpaces loops = kernel::buildSpaces(k);
  ASSERT_EQ(loops.outer.dims.size(), 1u);
  EXPECT_EQ(loops.outer.dims[0].extent, 7 * 3 * 129);
  EXPECT_TRUE(matchesInterpreter(k, Tolerance::f32()));
}

TEST(CpuJit, LoopSpaceKeepsBroadcastIndexedAndDropsUnitDims) {
  KernelBuilder b("loops", {4, 1, 5, 6}, {1, 3});
  int x = b.input(DType::F32, {4, 5, 6, 3});
  int y = b.input(DType::F32, {6});
  Scalar v = b.loadAxes(x, {0, 2, 3, 5}) + b.loadAxes(y, {3}) + cast(Scalar::index(0), DType::F32);
  b.storeAxes(b.output(DType::F32, {4, 5, 6}), {0, 2, 3}, b.reduce(Combiner::Sum, v), StoreScope::Row);
  Kernel k = b.build();
  kernel::KernelSpaces loops = kernel::buildSpaces(k);
  // Dim 0 is read by an Index leaf, dims 2 and 3 are not contiguous for y
  // (broadcast along 2 only), dim 1 and reduce dim 4 have extent 1.
  ASSERT_EQ(loops.outer.dims.size(), 3u);
  EXPECT_EQ(loops.outer.dims[0].kernelDim, 0);
  EXPECT_EQ(loops.outer.dims[1].kernelDim, 2);
  EXPECT_EQ(loops.outer.dims[2].kernelDim, 3);
  ASSERT_EQ(loops.reduce.dims.size(), 1u);
  EXPECT_EQ(loops.reduce.dims[0].extent, 3);
  EXPECT_TRUE(matchesInterpreter(k, Tolerance::f32()));
}

TEST(CpuJit, SharedSubexpressionsAreEmittedOnce) {
  // tanh(x) feeds a chain that uses each level twice: 2^20 nodes as a tree
  // (the interpreter walks that tree), 60 or so as a DAG.
  Kernel k = elementwiseKernel("shared", {4}, {DType::F32}, DType::F32, [](const std::vector<Scalar>& x) {
    Scalar v = tanh(x[0]);
    for (int i = 0; i < 20; ++i) v = v * 0.5 + v * 0.25;
    return v;
  });
  cpu::CompileOptions options;
  options.optLevel = cpu::OptLevel::O0;
  options.keepOptimizedIR = true;
  auto compiled = sharedJit().compile(std::span(&k, 1), options);
  ASSERT_TRUE(compiled) << compiled.error().message();
  EXPECT_EQ(count(compiled->optimizedIR, "call float @tanhf"), 1u);
  EXPECT_TRUE(matchesInterpreter(k, Tolerance::f32()));
}

// Adam's bias correction 1 - beta^step reads the step (a scalar buffer) at
// every element; the load goes before the loops, so the pow is computed
// once, not per element (it was 15% of a large MLP's training step).
TEST(CpuJit, ScalarOperandsAreReadOnceBeforeTheLoops) {
  KernelBuilder b("bias_correction", {1000}, {});
  int x = b.input(DType::F32, {1000});
  int step = b.input(DType::I64, {});
  Scalar correction = 1.0 - pow(Scalar::constant(0.9, DType::F64), cast(b.loadAxes(step, {}), DType::F64));
  b.storeAxes(b.output(DType::F32, {1000}), {0}, b.loadAxes(x, {0}) / cast(correction, DType::F32));
  Kernel k = b.build();
  cpu::CompileOptions options;
  options.keepOptimizedIR = true;
  auto compiled = sharedJit().compile(std::span(&k, 1), options);
  ASSERT_TRUE(compiled) << compiled.error().message();
  const std::string& ir = compiled->optimizedIR;
  size_t pow = ir.find("@llvm.pow.f64(");
  size_t firstLoop = ir.find(".body");
  ASSERT_NE(pow, std::string::npos) << ir;
  ASSERT_NE(firstLoop, std::string::npos) << ir;
  EXPECT_LT(pow, firstLoop) << "pow is computed inside the loop:\n" << ir;
  EXPECT_TRUE(matchesInterpreter(k, Tolerance::f32()));
}

// Reductions over a non-contiguous axis (bias gradients: a column sum over a
// batch) run in column order: the reduce loop outside, the contiguous outer
// points inside with an accumulator array, so the inner loop vectorises
// (the strided walk was most of the spiral MLP's training step). A softmax
// over axis 0 checks the later passes: a second reduction reading the
// first's accumulators, and element stores reading both.
std::string optimizedIR(const Kernel& k) {
  cpu::CompileOptions options;
  options.keepOptimizedIR = true;
  auto compiled = sharedJit().compile(std::span(&k, 1), options);
  EXPECT_TRUE(compiled) << compiled.error().message();
  return compiled ? compiled->optimizedIR : "";
}

// `k` optimised at O3 for the CPU LLVM names `cpu`, not run: what a test of
// generated code expects, whatever CPU runs the test.
std::string optimizedIRFor(const Kernel& k, const char* cpu) {
  const cpu::CpuSubtarget& subtarget = subtargetNamed(cpu);
  auto tm = cpu::createTargetMachine(subtarget.target, /*pic=*/true);
  EXPECT_TRUE(tm) << tm.error().message();
  if (!tm) return "";
  llvm::LLVMContext ctx;
  auto m = cpu::buildKernelModule({.kernels = std::span(&k, 1), .convs = {}}, ctx, **tm, subtarget, cpu::OptLevel::O3);
  EXPECT_TRUE(m) << m.error().message();
  return m ? cpu::printModule(**m) : "";
}

TEST(CpuJit, ColumnReductionsRunInColumnOrderAndVectorise) {
  Kernel sum = columnSumKernel(256, 64, DType::F32, DType::F32);
  std::string ir = optimizedIR(sum);
  EXPECT_NE(ir.find("%column"), std::string::npos) << ir;
  EXPECT_NE(ir.find("fadd <"), std::string::npos) << "the column loop is not vectorised:\n" << ir;
  EXPECT_TRUE(matchesInterpreter(sum, Tolerance{256e-6, 256e-6}));  // f32 sums of 256 (cpu_reduction_test)

  KernelBuilder b("column_softmax", {48}, {40});
  int x = b.input(DType::F32, {40, 48});
  int y = b.output(DType::F32, {40, 48});
  Scalar v = b.loadAxes(x, {1, 0});
  Scalar m = b.reduce(Combiner::Max, v);
  Scalar s = b.reduce(Combiner::Sum, exp(v - m));
  b.storeAxes(y, {1, 0}, exp(v - m) / s);
  Kernel softmax = b.build();
  EXPECT_NE(optimizedIR(softmax).find("%column"), std::string::npos);
  EXPECT_TRUE(matchesInterpreter(softmax, Tolerance{1e-5, 1e-7}, 5, {-10, 10}));

  // Row reductions (the reduce axis contiguous) keep row order.
  EXPECT_EQ(optimizedIR(softmaxKernel(48, 40, DType::F32)).find("%column"), std::string::npos);
}

// A row's float sum may be reassociated, so the loop vectorizer keeps one
// partial sum per lane and the whole row vectorises, the exponentials of a
// softmax included (libmvec's where the target calls it, else inline:
// codegen/cpu/inline_math.h) and its maximum, on integer keys. The order is the compiled code's, so two runs give the same bits;
// against the interpreter's left-to-right sum it differs by rounding.
TEST(CpuJit, RowSumsVectoriseWithTheirExponentials) {
  Kernel softmax = softmaxKernel(32, 256, DType::F32);
  std::string ir = optimizedIR(softmax);
  EXPECT_NE(ir.find("fadd reassoc <"), std::string::npos) << "the row sum is not vectorised:\n" << ir;
  EXPECT_NE(ir.find("@llvm.smax.v"), std::string::npos) << "the row maximum is not vectorised:\n" << ir;
  if (sharedJit().subtarget().inlineExp) {
    for (const char* callee : {"@expf", "@_ZGV", "@llvm.exp."})
      EXPECT_EQ(ir.find(callee), std::string::npos) << "the exponential calls " << callee << ":\n" << ir;
    EXPECT_NE(ir.find("x float> @llvm.fmuladd"), std::string::npos) << "no vector exponential:\n" << ir;
  } else if (!sharedJit().subtarget().vectorMath.empty()) {
    EXPECT_NE(ir.find("x float> @_ZGV"), std::string::npos) << "no vector exponential:\n" << ir;
  }
  EXPECT_TRUE(matchesInterpreter(softmax, Tolerance{1e-5, 1e-7}, 5, {-10, 10}));

  auto compiled = sharedJit().compile(std::span(&softmax, 1));
  ASSERT_TRUE(compiled) << compiled.error().message();
  std::vector<Tensor> first = randomBuffers(softmax, 7);
  std::vector<Tensor> second = first;
  runCompiled(softmax, compiled->functions[0], first);
  runCompiled(softmax, compiled->functions[0], second);
  EXPECT_TRUE(outputsMatch(softmax, first, second, Tolerance::exact()));
}

// A long row reduction's loop is vectorised with several accumulators, and
// its vector loop is then left rolled (the emitter's followup metadata):
// LLVM unrolled it up to 16 times over, a batch norm's statistics becoming
// 1900 lines of IR per kernel and 100-300 ms of compile time each, for no
// speed. With the loop itself marked unroll.disable instead, the
// vectorizer kept one accumulator, and the sums ran slower.
TEST(CpuJit, LongRowReductionsInterleaveButStayRolled) {
  Kernel norm = layerNormKernel(16, 1024);
  std::string ir = optimizedIR(norm);
  EXPECT_FALSE(std::regex_search(ir, std::regex(R"(%wide\.load[0-9]*\.[0-9]+ = )")))
      << "a vector loop was unrolled:\n" << ir;
  // Two reductions (the mean, the variance), each with at least two vector
  // accumulators: every x86 level interleaves by 2 or more.
  const std::regex phi(R"(= phi <[0-9]+ x float>)");
  const auto phis = std::distance(std::sregex_iterator(ir.begin(), ir.end(), phi), std::sregex_iterator());
  EXPECT_GE(phis, 4) << ir;
  EXPECT_TRUE(matchesInterpreter(norm, Tolerance{1e-5, 1e-6}, 3));
}

// A training batch norm with ReLU6 (MobileNetV2's), over x[N, C, HW] by
// channel: statistics, running averages stored per row, and an element pass
// storing the output and ReLU6's two masks for its gradient.
namespace {
Kernel batchNormRelu6(int64_t n, int64_t c, int64_t hw) {
  KernelBuilder b("batch_norm_relu6", {c}, {n, hw});
  int x = b.input(DType::F32, {n, c, hw});
  int gamma = b.input(DType::F32, {c});
  int beta = b.input(DType::F32, {c});
  int runningMean = b.input(DType::F32, {c});
  int runningVar = b.input(DType::F32, {c});
  int y = b.output(DType::F32, {n, c, hw});
  int above = b.output(DType::Bool, {n, c, hw});
  int below = b.output(DType::Bool, {n, c, hw});
  int meanOut = b.output(DType::F32, {c});
  int varOut = b.output(DType::F32, {c});
  Scalar v = b.loadAxes(x, {1, 0, 2});
  const double count = static_cast<double>(n * hw);
  Scalar mean = b.reduce(Combiner::Sum, v) / count;
  Scalar var = b.reduce(Combiner::Sum, (v - mean) * (v - mean)) / count;
  Scalar normed = (v - mean) / sqrt(var + 1e-5) * b.loadAxes(gamma, {0}) + b.loadAxes(beta, {0});
  b.storeAxes(y, {1, 0, 2}, min(max(normed, 0.0), 6.0));
  b.storeAxes(above, {1, 0, 2}, normed > 6.0);
  b.storeAxes(below, {1, 0, 2}, normed < 0.0);
  b.storeAxes(meanOut, {0}, b.loadAxes(runningMean, {0}) * 0.9 + mean * 0.1, StoreScope::Row);
  b.storeAxes(varOut, {0}, b.loadAxes(runningVar, {0}) * 0.9 + var * 0.1, StoreScope::Row);
  return b.build();
}
}  // namespace

// A batch norm's element pass: its iterations write disjoint elements, so it
// vectorises without alias checks; counting the row stores, it ran scalar
// (a 96-channel [16, 32x32] layer's pass took 4.2 of its step's 5.2 ms).
TEST(CpuJit, ElementPassBesideRowStoresIsVectorised) {
  Kernel bn = batchNormRelu6(4, 8, 64);
  std::string ir = optimizedIR(bn);
  EXPECT_TRUE(std::regex_search(ir, std::regex(R"(store <[0-9]+ x float>)"))) << "the element pass is scalar:\n" << ir;
  EXPECT_TRUE(std::regex_search(ir, std::regex(R"(store <[0-9]+ x i8>)"))) << "the masks are stored by element:\n"
                                                                           << ir;
  EXPECT_TRUE(matchesInterpreter(bn, Tolerance{1e-5, 1e-6}, 3));
}

// A batch norm's rows over small planes (MobileNetV2's last layers at 64x64:
// [16, 2x2] and [16, 4x4] per channel) stay loops, each plane read as whole
// vectors, and so does the loop over channels around them. LLVM unrolled
// their short loops whole and vectorised the loop around them across images,
// as gathers: a kernel took 57-59 ms to compile, and MobileNetV2's first
// training step spent a third of its time on 51 of them. Optimised,
// not run, for named CPUs of each vector width (and Zen 3, whose loop
// buffer lets LLVM unroll loops of up to 512 operations); run on this one.
TEST(CpuJit, RowsOfSmallPlanesStayLoops) {
  for (int64_t hw : {4, 16}) {
    Kernel bn = batchNormRelu6(16, 8, hw);
    for (const char* cpu : {"x86-64-v2", "haswell", "skylake-avx512", "znver3"}) {
      SCOPED_TRACE(str(cpu, ", planes of ", hw));
      const std::string ir = optimizedIRFor(bn, cpu);
      // x is read as vectors only: the scalar loads are the channel's gamma,
      // beta and running averages (and the buffer pointers).
      EXPECT_EQ(count(ir, "load float, float*"), 4u) << ir;
      // One vector load per pass over x (the loops around them not unrolled).
      EXPECT_EQ(count(ir, "x float>, <"), 3u) << ir;
    }
    EXPECT_TRUE(matchesInterpreter(bn, Tolerance{1e-5, 1e-6}, 3));
  }
}

// A squeeze-excitation gate, sigmoid(g[c]) * x[c, :], takes one exp per
// channel, read before the loop over the channel's pixels: LLVM cannot hoist
// the load of g itself (it cannot tell g from y, which the loop stores to),
// and took a vector exp per 8 pixels (EfficientNet-B0's 144x56x56 gate: 264
// us, now 51). Optimised, not run, for each vector width; run on this CPU.
TEST(CpuJit, PerChannelOperandsAreReadOncePerChannel) {
  KernelBuilder b("se_gate", {24, 1, 200}, {});
  int g = b.input(DType::F32, {24});
  int x = b.input(DType::F32, {24, 200});
  int y = b.output(DType::F32, {24, 200});
  Scalar gate = 1.0 / (exp(-b.loadAxes(g, {0})) + 1.0);
  b.storeAxes(y, {0, 2}, gate * b.loadAxes(x, {0, 2}));
  Kernel k = b.build();
  const std::regex vectorExp(R"(call <[0-9]+ x float> @[^(]*exp)");
  for (const char* cpu : {"x86-64-v2", "haswell", "skylake-avx512"}) {
    SCOPED_TRACE(cpu);
    const std::string ir = optimizedIRFor(k, cpu);
    EXPECT_FALSE(std::regex_search(ir, vectorExp)) << "the gate is computed per pixel:\n" << ir;
    EXPECT_TRUE(std::regex_search(ir, std::regex(R"(store <[0-9]+ x float>)"))) << ir;
  }
  EXPECT_TRUE(matchesInterpreter(k, Tolerance{1e-5, 1e-6}, 3));
}

// A short innermost loop whose stores run contiguous is vectorised: LLVM
// leaves loops under 16 iterations scalar unless told. The split of a
// conv-phases layer's 28x28 input (14-float rows read at stride 2) ran
// scalar, 600 KB in 74-121 us; 36 us vectorised.
TEST(CpuJit, ShortContiguousRowsAreVectorised) {
  KernelBuilder b("split", {8, 2, 2, 14, 14}, {});
  int x = b.input(DType::F32, {8, 28, 28});
  int y = b.output(DType::F32, {8, 2, 2, 14, 14});
  b.store(y, {784, 392, 196, 14, 1}, b.load(x, {784, 28, 1, 56, 2}));
  Kernel k = b.build();
  for (const char* cpu : {"haswell", "skylake-avx512"}) {
    SCOPED_TRACE(cpu);
    const std::string ir = optimizedIRFor(k, cpu);
    EXPECT_TRUE(std::regex_search(ir, std::regex(R"(store <[0-9]+ x float>)"))) << "the rows run scalar:\n" << ir;
  }
  EXPECT_TRUE(matchesInterpreter(k, Tolerance{0, 0}));
}

// Softmax's element store recomputes the exponentials its sum added up; the
// sum loop keeps them in the output and the store reads them back
// (kernel::findKeptSum), also when the output is written in place over the
// input: each element is replaced after its last read. Kernels where a
// store also reads a load, or with globals, keep recomputing.
TEST(CpuJit, SoftmaxKeepsTheExponentialsItSums) {
  Kernel softmax = softmaxKernel(8, 100, DType::F32);
  auto kept = kernel::findKeptSum(softmax);
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->reduction, 1u);
  EXPECT_EQ(kept->inStore->op, ScalarOp::Exp);
  EXPECT_FALSE(kernel::findKeptSum(layerNormKernel(8, 100)));   // it stores neither x nor (x - mean)^2
  EXPECT_FALSE(kernel::findKeptSum(meanLossKernel(8, 10)));     // globals
  EXPECT_FALSE(kernel::findKeptSum(softmaxKernel(8, 100, DType::F16)));  // keeping would round

  KernelBuilder b("softmax_plus_x", {8}, {100});
  int x = b.input(DType::F32, {8, 100});
  int y = b.output(DType::F32, {8, 100});
  Scalar v = b.loadAxes(x, {0, 1});
  Scalar m = b.reduce(Combiner::Max, v);
  Scalar s = b.reduce(Combiner::Sum, exp(v - m));
  b.storeAxes(y, {0, 1}, exp(v - m) / s + v);  // reads x again: in place, it would read a kept value
  EXPECT_FALSE(kernel::findKeptSum(b.build()));

  EXPECT_TRUE(matchesInterpreter(softmax, Tolerance{1e-6, 1e-7}, 3, {-10, 10}));

  // A cross-entropy's gradient keeps them too: its store also reads the
  // row's label, a load that does not move along the row, and a prologue
  // count, folded before any row.
  Kernel lossGrad = meanLossGradKernel(37, 300);
  auto keptGrad = kernel::findKeptSum(lossGrad);
  ASSERT_TRUE(keptGrad);
  EXPECT_EQ(keptGrad->inStore->op, ScalarOp::Exp);
  std::vector<Tensor> gradBuffers = randomBuffers(lossGrad, 5, {-10, 10});
  for (int64_t row = 0; row < 37; ++row) gradBuffers[1].as<int64_t>()[row] = row % 3 == 0 ? -1 : row * 7 % 300;
  EXPECT_TRUE(matchesInterpreter(lossGrad, gradBuffers, Tolerance{1e-6, 1e-8}));

  auto compiled = sharedJit().compile(std::span(&softmax, 1));
  ASSERT_TRUE(compiled) << compiled.error().message();
  std::vector<Tensor> buffers = randomBuffers(softmax, 4, {-10, 10});
  std::vector<Tensor> want = buffers;
  std::vector<Tensor*> wantPtrs = {&want[0], &want[1]};
  ASSERT_TRUE(kernel::evaluateKernel(softmax, wantPtrs));
  Tensor inPlace = buffers[0];
  void* args[] = {inPlace.data(), inPlace.data()};
  runInRanges(compiled->functions[0], args, kernelWork(softmax));
  for (int64_t i = 0; i < inPlace.numElements(); ++i)
    EXPECT_NEAR(inPlace.at(i), want[1].at(i), 1e-6 * std::fabs(want[1].at(i)) + 1e-7) << i;
}

// A squeeze-excitation block's SiLU, stored and averaged over each plane
// (EfficientNet-B0's depthwise steps): the sum keeps the whole element
// store, beside the mean's row store, so the kernel passes over the plane
// once, one exponential per element where it took two passes and two (a
// 32x112x112 step: 690 -> 474 us). In place over its input too.
TEST(CpuJit, ASumThatIsTheWholeStoreTakesOnePass) {
  KernelBuilder b("silu_mean", {6}, {300});
  int x = b.input(DType::F32, {6, 300});
  int y = b.output(DType::F32, {6, 300});
  int mean = b.output(DType::F32, {6});
  Scalar v = b.loadAxes(x, {0, 1});
  Scalar silu = v / (exp(-v) + 1.0);
  Scalar sum = b.reduce(Combiner::Sum, silu);
  b.storeAxes(y, {0, 1}, v / (exp(-v) + 1.0));
  b.storeAxes(mean, {0}, sum / 300.0, StoreScope::Row);
  Kernel k = b.build();
  auto kept = kernel::findKeptSum(k);
  ASSERT_TRUE(kept);
  EXPECT_TRUE(kept->whole);
  EXPECT_EQ(kept->store, 0u);

  // One pass as emitted (before LLVM vectorises it, whatever this CPU): one
  // exponential, where the element pass computed it again, and no element
  // pass storing the kept values over themselves.
  {
    llvm::LLVMContext ctx;
    llvm::Module module("m", ctx);
    auto fn = cpu::emitKernel(k, ctx, module);
    ASSERT_TRUE(fn) << fn.error().message();
    const std::string ir = cpu::printModule(module);
    EXPECT_EQ(count(ir, "call float @llvm.exp.f32(float"), 1u) << ir;
    const std::regex bufferStore(R"(store float [^\n]*!llvm.access.group)");  // not the accumulator's
    EXPECT_EQ(std::distance(std::sregex_iterator(ir.begin(), ir.end(), bufferStore), std::sregex_iterator()), 2)
        << "the element and the mean, each stored once:\n" << ir;
  }
  auto compiled = sharedJit().compile(std::span(&k, 1));
  ASSERT_TRUE(compiled) << compiled.error().message();
  EXPECT_TRUE(matchesInterpreter(k, Tolerance{1e-6, 1e-7}, 3, {-10, 10}));

  std::vector<Tensor> buffers = randomBuffers(k, 4, {-10, 10});
  std::vector<Tensor> want = buffers;
  std::vector<Tensor*> wantPtrs = {&want[0], &want[1], &want[2]};
  ASSERT_TRUE(kernel::evaluateKernel(k, wantPtrs));
  Tensor inPlace = buffers[0], means = buffers[2];
  void* args[] = {inPlace.data(), inPlace.data(), means.data()};
  runInRanges(compiled->functions[0], args, kernelWork(k));
  for (int64_t i = 0; i < inPlace.numElements(); ++i)
    EXPECT_NEAR(inPlace.at(i), want[1].at(i), 1e-6 * std::fabs(want[1].at(i)) + 1e-7) << i;
  for (int64_t i = 0; i < means.numElements(); ++i)
    EXPECT_NEAR(means.at(i), want[2].at(i), 1e-6 * std::fabs(want[2].at(i)) + 1e-7) << i;
}

// A transpose that keeps rows of 32 contiguous floats ([64,16,32] ->
// [16,64,32], an attention head split) copies each row with vector loads
// and stores. LLVM fully unrolls a loop that short before vectorising, and
// then vectorised the next loop out with gathers and scatters (16 us for
// 32K floats); innermost loops along which every store is contiguous stay
// rolled (llvm.loop.unroll.disable) for the vectorizer.
TEST(CpuJit, ShortContiguousRowsCopyAsVectors) {
  KernelBuilder b("heads", {16, 64, 32}, {});
  int in = b.input(DType::F32, {64, 16, 32});
  int out = b.output(DType::F32, {16, 64, 32});
  b.storeAxes(out, {0, 1, 2}, b.load(in, {32, 512, 1}));
  Kernel k = b.build();
  std::string ir = optimizedIR(k);
  EXPECT_EQ(ir.find("masked.gather"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("masked.scatter"), std::string::npos) << ir;
  EXPECT_NE(ir.find("load <"), std::string::npos) << "rows are not copied as vectors:\n" << ir;
  EXPECT_TRUE(matchesInterpreter(k, Tolerance::exact(), 3));
}

// Outer loops are marked parallel (llvm.loop.parallel_accesses) when every
// store moves with them, so a loop of many loads and stores vectorises
// without runtime alias checks: an Adam-like update (4 loads, 3 stores,
// each output written over an input in training plans) used to run scalar.
// A store that does not move with a loop (the same element at every
// iteration) keeps that loop unmarked.
TEST(CpuJit, OuterLoopsAreParallelWhenEveryStoreMovesWithThem) {
  KernelBuilder b("adam_like", {4096}, {});
  std::vector<Scalar> in;
  for (int i = 0; i < 4; ++i) in.push_back(b.loadAxes(b.input(DType::F32, {4096}), {0}));
  Scalar m = in[2] * 0.9 + in[1] * 0.1;
  Scalar v = in[3] * 0.999 + in[1] * in[1] * 0.001;
  b.storeAxes(b.output(DType::F32, {4096}), {0}, in[0] - m / (sqrt(v) + 1e-8));
  b.storeAxes(b.output(DType::F32, {4096}), {0}, m);
  b.storeAxes(b.output(DType::F32, {4096}), {0}, v);
  Kernel adam = b.build();
  std::string ir = optimizedIR(adam);
  EXPECT_NE(ir.find("llvm.loop.parallel_accesses"), std::string::npos) << ir;
  EXPECT_NE(ir.find("fsub <"), std::string::npos) << "not vectorised:\n" << ir;
  EXPECT_TRUE(matchesInterpreter(adam, Tolerance::f32(), 3, {0.5, 2.0}));

  // Two loops as emitted (before optimisation); only the inner one, along
  // which the store moves, is parallel; the outer one, around a long inner
  // loop, is kept rolled.
  KernelBuilder last("last_row_wins", {8, 64}, {});
  int x = last.input(DType::F32, {8, 64});
  last.storeAxes(last.output(DType::F32, {64}), {1}, last.loadAxes(x, {0, 1}));
  llvm::LLVMContext ctx;
  llvm::Module module("m", ctx);
  auto fn = cpu::emitKernel(last.build(), ctx, module);
  ASSERT_TRUE(fn) << fn.error().message();
  std::vector<std::string> loops;  // each loop's properties, innermost first
  for (llvm::BasicBlock& block : **fn)
    if (llvm::MDNode* id = block.getTerminator()->getMetadata(llvm::LLVMContext::MD_loop)) {
      std::string properties;
      for (unsigned i = 1; i < id->getNumOperands(); ++i)
        if (auto* p = llvm::dyn_cast<llvm::MDNode>(id->getOperand(i)))
          properties += llvm::cast<llvm::MDString>(p->getOperand(0))->getString().str() + " ";
      loops.push_back(properties);
    }
  std::sort(loops.begin(), loops.end());
  EXPECT_EQ(loops, (std::vector<std::string>{"llvm.loop.parallel_accesses llvm.loop.unroll.disable ",
                                             "llvm.loop.unroll.disable "}));
}

TEST(CpuJit, CompileTimeOfThirtySmallKernels) {
  std::vector<Kernel> kernels;
  for (int i = 0; i < 10; ++i) {
    kernels.push_back(fma("fma_" + std::to_string(i), {64, 33 + i}));
    Kernel s = softmaxKernel(16, 100 + i, DType::F32);
    s.name = "softmax_" + std::to_string(i);
    kernels.push_back(s);
    Kernel c = columnSumKernel(50, 10 + i, DType::F16, DType::F32);
    c.name = "colsum_" + std::to_string(i);
    kernels.push_back(c);
  }
  auto start = Clock::now();
  auto compiled = sharedJit().compile(kernels);
  double ms = msSince(start);
  ASSERT_TRUE(compiled) << compiled.error().message();
  EXPECT_EQ(compiled->functions.size(), kernels.size());
  std::printf("[ perf ] %zu kernels in one module: %.1f ms\n", kernels.size(), ms);
  for (size_t i = 0; i < kernels.size(); i += 7)
    EXPECT_TRUE(compiledMatchesInterpreter(kernels[i], compiled->functions[i], Tolerance{1e-4, 1e-5}, i));
}

// A generator's minor parts (under an eighth of the work: remainders,
// edges) keep their loops rolled through the whole pipeline; its main
// part's loops stay LLVM's to unroll (a loop of eight additions, fully).
// Optimised, not run, for named CPUs of each vector width.
TEST(CpuJit, LoopsOfMinorPartsStayRolled) {
  for (const char* cpu : {"x86-64-v2", "haswell", "skylake-avx512"}) {
    SCOPED_TRACE(cpu);
    const cpu::CpuSubtarget& subtarget = subtargetNamed(cpu);
    auto tm = cpu::createTargetMachine(subtarget.target, /*pic=*/true);
    ASSERT_TRUE(tm) << tm.error().message();
    auto optimisedWith = [&](double share) {
      llvm::LLVMContext ctx;
      llvm::Module m("parts", ctx);
      m.setDataLayout((*tm)->createDataLayout());
      cpu::VectorCode code(m, "sum8", 1);
      llvm::IRBuilder<>& b = code.b();
      llvm::Value* x = code.floatBuffer(0, "x");
      llvm::AllocaInst* acc = code.accumulator();
      b.CreateStore(llvm::Constant::getNullValue(code.vec()), acc);
      code.part(share, [&] {
        code.loop(8, "i", [&](llvm::Value* i) {
          b.CreateStore(b.CreateFAdd(b.CreateLoad(code.vec(), acc), code.splat(code.loadFloat(x, i))), acc);
        });
      });
      code.store(b.CreateLoad(code.vec(), acc), code.vectorAt(x, code.i64(0)), code.mask([](int64_t) { return true; }));
      EXPECT_TRUE(code.finish());
      cpu::optimizeModule(m, **tm, subtarget, cpu::OptLevel::O2);
      return cpu::printModule(m);
    };
    const std::string minor = optimisedWith(0.1), major = optimisedWith(0.125);
    EXPECT_EQ(count(minor, "fadd"), 1u) << minor;
    EXPECT_EQ(count(minor, "llvm.loop.unroll.disable"), 1u) << minor;
    EXPECT_EQ(count(major, "fadd"), 8u) << major;
    EXPECT_EQ(count(major, "!llvm.loop"), 0u) << major;
  }
}

TEST(CpuJit, BatchesMayReuseNames) {
  Kernel k = fma("same_name", {10});
  ASSERT_TRUE(sharedJit().compile(std::span(&k, 1)));
  ASSERT_TRUE(sharedJit().compile(std::span(&k, 1)));
}

TEST(CpuJit, ConcurrentCompiles) {
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      Kernel k = fma("threaded", {100 + t});
      ok[static_cast<size_t>(t)] = matchesInterpreter(k, Tolerance::f32(), static_cast<uint64_t>(t)) ? 1 : 0;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok, std::vector<int>(4, 1));
}

std::string compileError(std::vector<Kernel> kernels) {
  auto compiled = sharedJit().compile(kernels);
  return compiled ? std::string("no error") : compiled.error().message();
}

TEST(CpuJit, ErrorsNameTheKernel) {
  Kernel a = fma("twin", {4});
  EXPECT_NE(compileError({a, a}).find("kernel @twin: the module already defines"), std::string::npos);

  Kernel bad = fma("out_of_bounds", {4});
  bad.loads[0].map.base = 10;
  EXPECT_NE(compileError({bad}).find("kernel @out_of_bounds: load 0: offsets 10..13"), std::string::npos);

  Kernel intExp = elementwiseKernel("int_exp", {4}, {DType::I64}, DType::I64,
                                    [](const std::vector<Scalar>& x) { return exp(x[0]); });
  EXPECT_EQ(compileError({intExp}),
            "kernel @int_exp: store 0: the CPU backend does not implement exp of type i64");

  Kernel boolAdd = elementwiseKernel("bool_add", {4}, {DType::Bool, DType::Bool}, DType::Bool,
                                     [](const std::vector<Scalar>& x) { return x[0] + x[1]; });
  EXPECT_NE(compileError({boolAdd}).find("add of type bool"), std::string::npos);
}

// Kernels are named after user functions and ops; one named like the libm
// function it calls must still call libm, not itself.
TEST(CpuJit, KernelNamedLikeLibmCallsLibm) {
  for (const char* name : {"expf", "exp", "memset"}) {
    Kernel k = elementwiseKernel(name, {37}, {DType::F32}, DType::F32,
                                 [](const std::vector<Scalar>& x) { return exp(x[0]); });
    auto compiled = sharedJit().compile(std::span(&k, 1));
    ASSERT_TRUE(compiled) << compiled.error().message();
    EXPECT_TRUE(compiledMatchesInterpreter(k, compiled->functions[0], Tolerance{1e-6, 1e-6}, 0)) << name;
  }
}

TEST(CpuJit, EmitsObjectFiles) {
  std::vector<Kernel> kernels = {fma("aot_fma", {1000}), softmaxKernel(4, 32, DType::F32)};
  auto object = cpu::emitObject({kernels, {}}, subtargetNamed("x86-64-v3"));
  ASSERT_TRUE(object) << object.error().message();
  ASSERT_GT(object->bytes.size(), 4u);
  EXPECT_EQ(object->bytes.substr(0, 4), "\x7f" "ELF");
  EXPECT_NE(object->bytes.find("aot_fma"), std::string::npos);
  EXPECT_NE(object->bytes.find("softmax"), std::string::npos);
}

}  // namespace
}  // namespace kfuse::testing

namespace kfuse::testing {
namespace {

// A kernel run on the ranges three threads would take gives the bits of one
// run over all its units (exec/parallel.h): one-dim spaces split on
// multiples of kUnitAlignment, so vector math and scalar remainders meet the
// same elements; row kernels split between rows.
TEST(CpuJit, RangesGiveTheWholeRunsBits) {
  std::vector<Kernel> kernels = {
      elementwiseKernel("exp_odd", {4099}, {DType::F32}, DType::F32, [](const std::vector<Scalar>& x) { return exp(x[0]); }),
      elementwiseKernel("tanh_2d", {37, 129}, {DType::F32}, DType::F32,
                        [](const std::vector<Scalar>& x) { return tanh(x[0]) * 0.5; }),
      softmaxKernel(67, 300, DType::F32), layerNormKernel(45, 97), columnSumKernel(301, 48, DType::F32, DType::F32),
      meanLossGradKernel(53, 70)};
  auto compiled = sharedJit().compile(kernels);
  ASSERT_TRUE(compiled) << compiled.error().message();
  for (size_t i = 0; i < kernels.size(); ++i) {
    const Kernel& k = kernels[i];
    Work w = kernelWork(k);
    std::vector<Tensor> whole = randomBuffers(k, 11 + i, {-4, 4});
    std::vector<Tensor> ranged = whole;
    std::vector<void*> args;
    for (Tensor& t : whole) args.push_back(t.data());
    compiled->functions[i](args.data(), 0, w.units);
    runCompiled(k, compiled->functions[i], ranged);
    EXPECT_TRUE(outputsMatch(k, ranged, whole, Tolerance::exact())) << k.name << ": " << w.units << " units";
  }
  EXPECT_GT(kernelWork(kernels[0]).units, 1);
  EXPECT_EQ(kernelWork(kernels[0]).alignment, kUnitAlignment);
}

TEST(CpuJit, KernelsWithGlobalsRunAsOneUnit) {
  EXPECT_EQ(kernelWork(meanLossKernel(64, 10)).units, 1);
  EXPECT_EQ(chunksOf(kernelWork(meanLossKernel(64, 10)), 4).size(), 1u);
}

// A prologue (the count a mean divides by) does not: each range folds it
// over every row itself. RangesGiveTheWholeRunsBits checks the bits; here,
// that a range of rows next to ignored ones still divides by the count of
// all rows, which one range alone could not know.
TEST(CpuJit, KernelsWithAPrologueSplitAndCountEveryRow) {
  const int64_t rows = 1024, classes = 16;
  const Kernel k = meanLossGradKernel(rows, classes);
  EXPECT_EQ(kernelWork(k).units, rows);
  EXPECT_EQ(chunksOf(kernelWork(k), 4).size(), 4u);
  auto compiled = sharedJit().compile(std::span(&k, 1));
  ASSERT_TRUE(compiled) << compiled.error().message();
  std::vector<Tensor> buffers = randomBuffers(k, 7);
  int64_t* labels = buffers[1].as<int64_t>();
  for (int64_t row = 0; row < rows; ++row) labels[row] = row < 1000 ? -1 : row % classes;  // 24 counted
  std::vector<void*> args;
  for (Tensor& t : buffers) args.push_back(t.data());
  compiled->functions[0](args.data(), 1000, 1001);  // row 1000 alone
  const float* x = buffers[0].as<float>() + 1000 * classes;
  double max = *std::max_element(x, x + classes), sum = 0;
  for (int64_t j = 0; j < classes; ++j) sum += std::exp(x[j] - max);
  for (int64_t j = 0; j < classes; ++j) {
    double want = (std::exp(x[j] - max) / sum - (j == labels[1000] ? 1.0 : 0.0)) / 24;
    EXPECT_NEAR(buffers[2].at(1000 * classes + j), want, 1e-6) << j;
  }
}

}  // namespace
}  // namespace kfuse::testing
