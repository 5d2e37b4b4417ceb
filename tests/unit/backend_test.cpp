// Every op reference case through the cpu target: the target's pipeline
// (fusion included), a plan with compiled kernels, GEMM and convolution
// steps, and reference ops; outputs must meet the same NumPy/PyTorch
// expectations the reference interpreter meets.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <numeric>

#include "codegen/backend.h"
#include "ir/support/strings.h"
#include "passes/pass_manager.h"
#include "passes/pass_registry.h"
#include "ir/parser.h"
#include "ir/weights.h"
#include "tests/unit/test_util.h"

namespace kfuse {
namespace {

namespace fs = std::filesystem;

class CpuTargetTest : public testing::TestWithParam<std::string> {};

TEST_P(CpuTargetTest, MatchesOracle) {
  fs::path base = test::opCasesDir() / GetParam();
  auto module = parseModuleFile(base.string() + ".kir");
  ASSERT_TRUE(module) << module.error().message();
  auto backend = backendFor("cpu");
  ASSERT_TRUE(backend) << backend.error().message();
  ASSERT_TRUE(prepareModule(**module, *backend));
  auto exec = createExecutor("cpu", {});
  ASSERT_TRUE(exec) << exec.error().message();
  auto data = readWeightsFile(base.string() + ".data.safetensors");
  ASSERT_TRUE(data) << data.error().message();
  const Graph& g = *(*module)->functions().front();
  std::vector<Tensor> args;
  for (const auto& a : g.arguments()) args.push_back(data->at("in." + a->name()).withType(a->type()));
  auto result = (*exec)->run(g, args);
  if (!result && GetParam().find("out_of_range") != std::string::npos) GTEST_SKIP() << result.error().message();
  ASSERT_TRUE(result) << result.error().message();
  test::Tolerance tol = test::readTolerance(base.string() + ".kir");
  // Compiled f32 code rounds every operation, where the reference rounds
  // once; allow a few more ulps than the reference's own tolerance.
  double rtol = std::max(tol.rtol, 2e-6), atol = std::max(tol.atol, 1e-6);
  for (size_t i = 0; i < result->outputs.size(); ++i) {
    const Tensor& want = data->at(str("out.", i));
    EXPECT_EQ(test::compareTensors(result->outputs[i].withType(want.type()), want, atol, rtol), "") << "output " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, CpuTargetTest, testing::ValuesIn(test::opCaseNames()),
                         test::PathParamName());

// The outputs of `text`'s first function on `target`, through the target's
// whole pipeline.
std::vector<Tensor> runOn(std::string_view text, std::string_view target, const std::vector<Tensor>& args) {
  auto module = parseModule(text, "test.kir");
  EXPECT_TRUE(module) << module.error().message();
  if (!module) return {};
  auto backend = backendFor(target);
  EXPECT_TRUE(backend) << backend.error().message();
  if (!backend || !prepareModule(**module, *backend)) return {};
  auto exec = createExecutor(target, {});
  EXPECT_TRUE(exec) << exec.error().message();
  if (!exec) return {};
  auto result = (*exec)->run(*(*module)->functions().front(), args);
  EXPECT_TRUE(result) << result.error().message();
  return result ? result->outputs : std::vector<Tensor>{};
}

// Dropout fused into kernels that read its result through a transpose and
// a strided slice, its mask returned and its gradient's mask redrawn: the
// generated code draws from each element's own flat index, so every value
// is the interpreter's, bit for bit (lit fusion/dropout.kir: no reference
// step is left).
TEST(CpuTarget, DropoutInKernelsDrawsTheInterpretersMask) {
  constexpr std::string_view kText = R"(module @drop {
  func @main(%x: f32[6,40], %b: f32[40,6], %step: i64[]) -> (f32[40,6], f32[6,20], bool[6,40], f32[6,40]) {
    %a = relu %x : f32[6,40]
    %d, %k = dropout %a, %step {ratio = 0.3, seed = -8070450532247928832, mask = true} : f32[6,40], bool[6,40]
    %t = transpose %d {perm = [1, 0]} : f32[40,6]
    %o = add %t, %b : f32[40,6]
    %s = slice %d {starts = [1], ends = [40], axes = [1], steps = [2]} : f32[6,20]
    %e = neg %s : f32[6,20]
    %g = dropout %x, %step {ratio = 0.3, seed = -8070450532247928832} : f32[6,40]
    return %o, %e, %k, %g
  }
})";
  std::vector<Tensor> args;
  std::vector<double> x(240), b(240);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = std::sin(0.37 * static_cast<double>(i));
    b[i] = 0.01 * static_cast<double>(i);
  }
  args.push_back(Tensor::fromDoubles(TensorType(DType::F32, {6, 40}), x));
  args.push_back(Tensor::fromDoubles(TensorType(DType::F32, {40, 6}), b));
  args.push_back(Tensor::fromDoubles(TensorType(DType::I64, {}), {(1ll << 33) + 9}));
  const std::vector<Tensor> want = runOn(kText, "interpreter", args), got = runOn(kText, "cpu", args);
  ASSERT_EQ(want.size(), 4u);
  ASSERT_EQ(got.size(), 4u);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(test::compareTensors(got[i], want[i], 0, 0), "") << "output " << i;
}

// A fixed tensor's text: dense<f32[shape]>[...], values k/64 (exact in f32).
std::string denseText(const Shape& shape, int salt) {
  std::string dims, values;
  int64_t n = 1;
  for (int64_t d : shape) {
    dims += str(dims.empty() ? "" : ",", d);
    n *= d;
  }
  for (int64_t i = 0; i < n; ++i) {
    char v[32];
    std::snprintf(v, sizeof v, "%.6f", std::round(64 * std::sin(0.71 * static_cast<double>(i + salt))) / 64);
    values += str(i ? ", " : "", v);
  }
  return str("dense<f32[", dims, "]>[", values, "]");
}

// The module `text` after conv-phases; null (and a test failure) where it
// does not parse or the pass fails.
std::unique_ptr<Module> afterConvPhases(const std::string& text) {
  auto parsed = parseModule(text, "m.kir");
  if (!parsed) {
    ADD_FAILURE() << parsed.error().message() << "\n" << text;
    return nullptr;
  }
  auto pass = parsePipeline("conv-phases");
  if (!pass) {
    ADD_FAILURE() << pass.error().message();
    return nullptr;
  }
  PassManager pm;
  pm.add(std::move(*pass));
  if (!pm.run(**parsed, PassContext{})) {
    ADD_FAILURE() << "conv-phases failed on\n" << text;
    return nullptr;
  }
  return std::move(*parsed);
}

// An f32 image whose elements are cos(0.29 i).
Tensor cosineImage(const Shape& shape) {
  std::vector<double> x(static_cast<size_t>(std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>())));
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.29 * static_cast<double>(i));
  return Tensor::fromDoubles(TensorType(DType::F32, shape), x);
}

// The cpu backend asks conv-phases for first layers where the named CPU's
// subtarget says they pay (CpuSubtarget::firstLayerPhases): not on AVX-512;
// and keeps strided layers its packed filters run strided where the CPU
// packs filters with taps (ConvTiling::packedTaps): AVX-512.
TEST(CpuTarget, FirstLayerPhasesFollowTheNamedCpu) {
  for (const auto& [cpu, phases] :
       {std::pair<const char*, const char*>{"haswell", ",conv-phases,"},
        {"x86-64-v2", ",conv-phases,"},
        {"skylake-avx512", ",conv-phases{first-layers=false strided-packed=true},"}}) {
    BackendOptions o;
    o.cpu = cpu;
    auto backend = backendFor("cpu", o);
    ASSERT_TRUE(backend) << backend.error().message();
    EXPECT_NE(backend->pipeline.find(phases), std::string::npos) << cpu << ": " << backend->pipeline;
  }
}

// Strided first layers over few channels run as stride-1 convolutions over
// their input's phases (conv-phases; passes/direct_conv.h says where): the
// pass rewrites those, keeps the others, and the cpu target's results are
// the interpreter's on odd extents (a pad step), even ones (the pads kept
// in the convolution, whose rows leave the dead taps out), pads and
// kernels the stride does not divide, with and without bias.
TEST(CpuTarget, StridedFirstLayersRunOverTheirPhases) {
  struct Case {
    int64_t c, h, w, o, k, stride, pad;
    bool bias, rewritten;
  };
  const Case cases[] = {{3, 23, 21, 8, 7, 2, 3, true, true},  {2, 16, 16, 5, 5, 2, 2, false, true},
                        {3, 12, 13, 4, 4, 2, 1, true, true},  {1, 19, 17, 3, 6, 3, 2, false, true},
                        {2, 11, 11, 3, 4, 2, 0, true, true},  // one phase row and column more: sliced
                        {3, 15, 15, 6, 3, 2, 1, true, true},  {8, 15, 15, 4, 7, 2, 3, false, false},
                        // even extents: the pads stay in the convolution, no pad step
                        {3, 32, 32, 8, 3, 2, 1, true, true},  {3, 24, 24, 5, 7, 2, 3, false, true},
                        {3, 32, 30, 4, 3, 2, 0, true, true},
                        // outputs of 40x40: rows, not whole planes
                        {3, 80, 80, 8, 3, 2, 1, true, true},  {3, 80, 80, 4, 7, 2, 3, false, true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(str(c.c, "x", c.h, "x", c.w, " -> ", c.o, ", ", c.k, "x", c.k, " stride ", c.stride, " pad ", c.pad));
    const int64_t oh = (c.h + 2 * c.pad - c.k) / c.stride + 1, ow = (c.w + 2 * c.pad - c.k) / c.stride + 1;
    const std::string text = str(
        "module @m {\n  func @main(%x: f32[2,", c.c, ",", c.h, ",", c.w, "]) -> (f32[2,", c.o, ",", oh, ",", ow,
        "]) {\n    %w = constant {value = ", denseText({c.o, c.c, c.k, c.k}, 1), "} : f32[", c.o, ",", c.c, ",", c.k,
        ",", c.k, "]\n", c.bias ? str("    %b = constant {value = ", denseText({c.o}, 7), "} : f32[", c.o, "]\n") : "",
        "    %y = conv2d %x, %w", c.bias ? ", %b" : "", " {strides = [", c.stride, ", ", c.stride, "], pads = [", c.pad,
        ", ", c.pad, ", ", c.pad, ", ", c.pad, "]} : f32[2,", c.o, ",", oh, ",", ow, "]\n    return %y\n  }\n}\n");
    std::unique_ptr<Module> phased = afterConvPhases(text);
    ASSERT_TRUE(phased);
    int strided = 0;
    for (const Node* n : phased->functions().front()->nodes())
      if (n->is(Op::Conv2d) && n->attr("strides").asInts()[0] != 1) ++strided;
    EXPECT_EQ(strided, c.rewritten ? 0 : 1);

    const std::vector<Tensor> args = {cosineImage({2, c.c, c.h, c.w})};
    const std::vector<Tensor> want = runOn(text, "interpreter", args), got = runOn(text, "cpu", args);
    ASSERT_EQ(want.size(), 1u);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(test::compareTensors(got[0], want[0], 1e-5, 1e-5), "");
  }
}

// Strided layers over more channels run over their input's phases where
// the stride-1 convolution takes whole planes (convPhasesTakePlanes), with
// live_taps so that the phases' zero taps are left out: the cpu target's
// results are the interpreter's for 3x3, 5x5 and 4x4 filters, stride 3 (a
// period of nine phases), depthwise and grouped layers (each group's
// channels' phases stay in the group), planes folded in chunks of input channels (64
// channels of 14x14 phases), and a 1x1 filter beside a 3x3 one over the
// same input (one split; the 1x1's joined rows are taken whole, leaving
// out three phases in four). A 1x1 filter alone runs at stride 1 over a
// strided slice of its input (pointwiseSubsamplePays). Kept: odd extents.
TEST(CpuTarget, StridedLayersOverManyChannelsRunOverTheirPhases) {
  struct Case {
    int64_t c, h, o, k, stride, pad;
    bool bias, rewritten, partner;  // partner: a 3x3 pad-1 layer over x too
    int64_t groups = 1;
    bool sliced = false;
  };
  const Case cases[] = {{16, 28, 8, 3, 2, 1, true, true, false},  {64, 28, 8, 3, 2, 1, false, true, false},
                        {16, 28, 8, 1, 2, 0, false, true, true},   {8, 14, 16, 3, 2, 1, true, true, false},
                        {6, 16, 5, 5, 2, 2, true, true, false},    {5, 12, 3, 4, 2, 1, false, true, false},
                        {4, 18, 3, 3, 3, 1, true, true, false},    {16, 28, 8, 1, 2, 0, false, false, false, 1, true},
                        {8, 15, 4, 3, 2, 1, true, false, false},   {16, 28, 16, 3, 2, 1, true, true, false, 16},
                        {16, 14, 8, 3, 2, 1, false, true, false, 4}, {8, 28, 8, 5, 2, 2, true, true, false, 8}};
  for (const Case& c : cases) {
    SCOPED_TRACE(str(c.c, "x", c.h, "x", c.h, " -> ", c.o, ", ", c.k, "x", c.k, " stride ", c.stride, " pad ", c.pad,
                     " groups ", c.groups, c.partner ? " beside a 3x3" : ""));
    const int64_t oh = (c.h + 2 * c.pad - c.k) / c.stride + 1;
    const std::string y = str("f32[2,", c.o, ",", oh, ",", oh, "]");
    const std::string partner =
        c.partner ? str("    %v = constant {value = ", denseText({c.o, c.c, 3, 3}, 5), "} : f32[", c.o, ",", c.c,
                        ",3,3]\n    %z = conv2d %x, %v {strides = [", c.stride, ", ", c.stride, "], pads = [1, 1, 1, 1]} : ",
                        y, "\n")
                  : "";
    const std::string text = str(
        "module @m {\n  func @main(%x: f32[2,", c.c, ",", c.h, ",", c.h, "]) -> (", y, c.partner ? str(", ", y) : "",
        ") {\n    %w = constant {value = ", denseText({c.o, c.c / c.groups, c.k, c.k}, 3), "} : f32[", c.o, ",",
        c.c / c.groups, ",", c.k, ",", c.k, "]\n",
        c.bias ? str("    %b = constant {value = ", denseText({c.o}, 7), "} : f32[", c.o, "]\n") : "",
        "    %y = conv2d %x, %w", c.bias ? ", %b" : "", " {strides = [", c.stride, ", ", c.stride, "], pads = [", c.pad,
        ", ", c.pad, ", ", c.pad, ", ", c.pad, "], groups = ", c.groups, "} : ", y, "\n", partner, "    return %y",
        c.partner ? ", %z" : "",
        "\n  }\n}\n");
    std::unique_ptr<Module> phased = afterConvPhases(text);
    ASSERT_TRUE(phased);
    int strided = 0, live = 0, splits = 0, slices = 0;
    for (const Node* n : phased->functions().front()->nodes()) {
      if (n->is(Op::Conv2d)) {
        strided += n->attr("strides").asInts()[0] != 1;
        live += !n->attr("live_taps").asInts().empty();
      }
      splits += n->is(Op::Transpose);
      slices += n->is(Op::Slice);
    }
    const int layers = c.partner ? 2 : 1;
    EXPECT_EQ(strided, c.rewritten || c.sliced ? 0 : layers);
    EXPECT_EQ(live, c.rewritten ? layers : 0);
    EXPECT_EQ(splits, c.rewritten ? 1 : 0);
    EXPECT_EQ(slices, c.sliced ? 1 : 0);

    const std::vector<Tensor> args = {cosineImage({2, c.c, c.h, c.h})};
    const std::vector<Tensor> want = runOn(text, "interpreter", args), got = runOn(text, "cpu", args);
    ASSERT_EQ(want.size(), static_cast<size_t>(layers));
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_EQ(test::compareTensors(got[i], want[i], 1e-5, 1e-5), "") << "result " << i;
  }
}

// A strided layer's split moves above the 1x1 stride-1 layers and the
// elementwise math that make its input, to where it splits the fewest
// elements (conv-phases: splitRegion): an expanding 1x1 layer's input,
// through a clip, a SiLU (its input read twice, both inside) and a
// per-channel bias add; not through a residual add (it would split both of
// its operands), not through a value something else reads too, not
// through a narrowing 1x1 layer. The cpu target's results are the
// interpreter's.
TEST(CpuTarget, PhaseSplitsMoveAboveTheLayersThatMakeTheirInput) {
  struct Case {
    const char* name;
    int64_t in;            // channels of the 1x1 layer's input
    const char* math;      // between the 1x1 layer (%e) and %r, which the strided layer reads
    bool alsoReturned;     // %e is a result too
    int64_t splitChannels; // channels of the one transpose's operand
  };
  const Case cases[] = {
      {"clip", 4, "    %r = clip %e {min = 0.0, max = 6.0} : E\n", false, 4},
      {"silu", 4, "    %g = sigmoid %e : E\n    %r = mul %e, %g : E\n", false, 4},
      {"bias", 4, "    %r = add %e, %c : E\n", false, 4},
      {"returned", 4, "    %r = clip %e {min = 0.0, max = 6.0} : E\n", true, 16},
      {"narrowing", 32, "    %r = clip %e {min = 0.0, max = 6.0} : E\n", false, 16},
      {"residual", 4, "    %r = add %e, %s : E\n", false, 16},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string math = c.math;
    for (size_t at; (at = math.find(": E")) != std::string::npos;) math.replace(at, 3, ": f32[2,16,28,28]");
    const std::string text = str(
        "module @m {\n  func @main(%a: f32[2,", c.in, ",28,28], %s: f32[2,16,28,28]) -> (f32[2,16,14,14]",
        c.alsoReturned ? ", f32[2,16,28,28]" : "", ") {\n    %we = constant {value = ", denseText({16, c.in, 1, 1}, 1),
        "} : f32[16,", c.in, ",1,1]\n    %be = constant {value = ", denseText({16}, 2),
        "} : f32[16]\n    %c = constant {value = ", denseText({1, 16, 1, 1}, 3),
        "} : f32[1,16,1,1]\n    %wd = constant {value = ", denseText({16, 1, 3, 3}, 4),
        "} : f32[16,1,3,3]\n    %e = conv2d %a, %we, %be : f32[2,16,28,28]\n", math,
        "    %y = conv2d %r, %wd {strides = [2, 2], pads = [1, 1, 1, 1], groups = 16} : f32[2,16,14,14]\n    return %y",
        c.alsoReturned ? ", %e" : "", "\n  }\n}\n");
    std::unique_ptr<Module> phased = afterConvPhases(text);
    ASSERT_TRUE(phased);
    std::vector<int64_t> split;
    for (const Node* n : phased->functions().front()->nodes())
      if (n->is(Op::Transpose)) split.push_back(n->operand(0)->type().shape[1]);
    EXPECT_EQ(split, std::vector<int64_t>{c.splitChannels});

    const std::vector<Tensor> args = {cosineImage({2, c.in, 28, 28}), cosineImage({2, 16, 28, 28})};
    const std::vector<Tensor> want = runOn(text, "interpreter", args), got = runOn(text, "cpu", args);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_EQ(test::compareTensors(got[i], want[i], 1e-5, 1e-5), "") << "result " << i;
  }
}

}  // namespace
}  // namespace kfuse
