// Direct convolutions (codegen/cpu/conv_emitter.h) against the reference
// interpreter: every f32 NCHW convolution of the op cases plus wide-row
// cases, each generated with several tilings (so that masks, partial
// vectors, channel remainders and runs of clean blocks all occur whatever
// the host's vector width), and which convolutions the cpu target sends
// there.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <span>

#include "codegen/cpu/code_identity.h"
#include "codegen/cpu/conv_blocks.h"
#include "codegen/cpu/conv_emitter.h"
#include "codegen/cpu/jit.h"
#include "codegen/backend.h"
#include "tests/codegen/jit_harness.h"
#include "tests/codegen/module_harness.h"
#include "codegen/plan/plan_builder.h"
#include "exec/conv_epilogue.h"
#include "exec/packed_filter.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "tests/unit/test_util.h"

namespace kfuse {
namespace {

// The module's one Conv step and its plan.
struct ConvCase {
  std::unique_ptr<Module> module;
  ConvSpec spec;
  DType dtype = DType::F32;
};

Expected<ConvCase> convCase(Expected<std::unique_ptr<Module>> parsed) {
  if (!parsed) return parsed.error();
  ConvCase c;
  c.module = std::move(*parsed);
  KF_ASSIGN_OR_RETURN(Plan plan, buildPlan(*c.module->functions().front()));
  for (const Step& s : plan.steps)
    if (s.kind() == StepKind::Conv) {
      c.spec = s.conv();
      c.dtype = plan.buffers[static_cast<size_t>(s.conv().y)].type.dtype;
      return c;
    }
  return Error("the plan has no convolution step");
}

Tensor wave(const TensorType& t, double phase) {
  Tensor x(t);
  for (int64_t i = 0; i < x.numElements(); ++i) x.set(i, std::sin(0.61 * static_cast<double>(i) + phase));
  return x;
}

// The case's operands (waves) and its convolution generated with `tiling`;
// with a packed filter (exec/packed_filter.h), the filter packed too.
struct Generated {
  std::vector<Tensor> args;
  std::vector<float> packed;
  cpu::KernelFn conv = nullptr;
};

Expected<Generated> generate(const ConvCase& c, const cpu::ConvTiling& tiling, bool packedFilter = false) {
  const Graph& fn = *c.module->functions().front();
  Generated g;
  for (size_t i = 0; i < fn.arguments().size(); ++i)
    g.args.push_back(wave(fn.arguments()[i]->type(), static_cast<double>(i)));
  // live_taps promises zeros for every output channel where it has 0s.
  const ConvSpec& s = c.spec;
  const int64_t cg = s.c / s.groups;
  for (int64_t o = 0; o < s.o; ++o)
    for (int64_t ci = 0; ci < cg; ++ci)
      for (int64_t ky = 0; ky < s.kh; ++ky)
        for (int64_t kx = 0; kx < s.kw; ++kx)
          if (!s.liveTap(ci, ky, kx)) g.args[1].set(((o * cg + ci) * s.kh + ky) * s.kw + kx, 0.0);
  cpu::DirectConv conv{"conv", c.spec, tiling};
  conv.packedFilter = packedFilter;
  KF_ASSIGN_OR_RETURN(cpu::CompiledKernels compiled, testing::sharedJit().compile(cpu::CodeBatch{{}, std::span(&conv, 1)}));
  g.conv = compiled.convs[0];
  if (packedFilter) {
    g.packed.assign(static_cast<size_t>(packedFilterElements(c.spec)), NAN);
    packFilter(c.spec, reinterpret_cast<const float*>(g.args[1].data()), g.packed.data());
  }
  return g;
}

// The units a range of them starts on a multiple of.
int64_t unitAlignment(const ConvCase& c, const Generated& g) {
  return directConvWork(c.spec, !g.packed.empty()).alignment;
}

// Runs the generated convolution over `units` in ranges of `step` units
// into a result full of garbage it must overwrite.
Tensor runGenerated(const ConvCase& c, Generated& g, int64_t step) {
  Tensor y = wave(c.module->functions().front()->results()[0]->type(), 5.0);
  void* w = g.packed.empty() ? g.args[1].data() : static_cast<void*>(g.packed.data());
  void* buffers[] = {g.args[0].data(), w, g.args.size() > 2 ? g.args[2].data() : nullptr, y.data()};
  const int64_t units = directConvWork(c.spec, !g.packed.empty()).units;
  for (int64_t u = 0; u < units; u += step) g.conv(buffers, u, std::min(units, u + step));
  return y;
}

// Runs the case's convolution generated with `tiling` (in three ranges of
// units) and the interpreter on the same operands; an empty string when
// they agree.
std::string compareWithInterpreter(const ConvCase& c, const cpu::ConvTiling& tiling, bool packedFilter = false) {
  auto g = generate(c, tiling, packedFilter);
  if (!g) return g.error().message();
  auto want = interpret(*c.module->functions().front(), g->args);
  if (!want) return want.error().message();
  const int64_t a = unitAlignment(c, *g), slots = (directConvWork(c.spec, packedFilter).units + a - 1) / a;
  const Tensor y = runGenerated(c, *g, (slots + 2) / 3 * a);
  return test::compareTensors(y, want->outputs[0], 1e-5, 1e-5);
}

// Runs the case's convolution with `tiling` over all its units at once and
// in ranges of several sizes from one unit (or one aligned group of them)
// up; an empty string when every run writes the same bits.
std::string splitsAgree(const ConvCase& c, const cpu::ConvTiling& tiling, bool packedFilter = false) {
  auto g = generate(c, tiling, packedFilter);
  if (!g) return g.error().message();
  const Tensor whole = runGenerated(c, *g, INT64_MAX / 2);
  for (int64_t step : {1, 2, 3, 5, 7}) {
    const Tensor part = runGenerated(c, *g, step * unitAlignment(c, *g));
    if (std::memcmp(part.data(), whole.data(), static_cast<size_t>(whole.numElements()) * sizeof(float)) != 0)
      return str("ranges of ", step, " units differ from one range");
  }
  return "";
}

// The last two halve a block's only vector where at most half its lanes
// are live (ConvTiling::halveLastVector), from 16 and from 8 lanes.
const cpu::ConvTiling kTilings[] = {{16, 2, 8}, {8, 2, 6}, {8, 2, 4}, {4, 2, 3}, {4, 1, 1}, {16, 1, 5},
                                    {16, 2, 8, true, 128 * 1024, 1, 16},
                                    {16, 2, 8, true, 128 * 1024, 1, 16, true},
                                    {8, 1, 3, true, 128 * 1024, 0, 0, true}};

std::string tilingName(const cpu::ConvTiling& t) {
  return str(t.channels, "x", t.vectors, "x", t.lanes, t.denseChannels ? str(" dense ", t.denseChannels, "x", t.denseVectors) : "",
             t.halveLastVector ? " halving" : "");
}

// The op cases' convolutions (f32, NCHW, horizontal stride 1 or 2): padding on
// every side, dilation, groups, depthwise, 1x1, OHWI filters, pads wider
// than the kernel, vertical strides.
void checkOpCaseConvolutions(std::span<const cpu::ConvTiling> tilings) {
  int checked = 0;
  for (const std::string& name : test::opCaseNames()) {
    if (name.rfind("linalg/conv2d_", 0) != 0 || name.find("grad") != std::string::npos) continue;
    auto c = convCase(parseModuleFile((test::opCasesDir() / (name + ".kir")).string()));
    ASSERT_TRUE(c) << name << ": " << c.error().message();
    if (c->dtype != DType::F32 || !cpu::directConvSupports(c->spec)) continue;
    for (const cpu::ConvTiling& t : tilings) {
      std::string diff = compareWithInterpreter(*c, t);
      EXPECT_EQ(diff, "") << name << " with tiling " << tilingName(t);
    }
    ++checked;
  }
  // Those that are not: NHWC, f64, f16 storage, horizontal strides above 2.
  EXPECT_GE(checked, 12);
}

TEST(DirectConv, EveryOpCaseConvolutionMatchesTheInterpreter) { checkOpCaseConvolutions(kTilings); }

// Rows wider than a block: clean blocks in a loop between masked ones, a
// last block of fewer vectors, a channel remainder, groups, dilation and a
// vertical stride together.
const char* const kWideRows[] = {
      R"(module @m {
  func @main(%x: f32[2,3,5,70], %w: f32[10,3,3,3], %b: f32[10]) -> (f32[2,10,5,70]) {
    %y = conv2d %x, %w, %b {pads = [1, 1, 1, 1]} : f32[2,10,5,70]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[1,4,7,41], %w: f32[6,2,3,3]) -> (f32[1,6,4,41]) {
    %y = conv2d %x, %w {pads = [1, 2, 1, 2], strides = [2, 1], dilations = [1, 2], groups = 2} : f32[1,6,4,41]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[1,3,4,40], %w: f32[5,3,3,3]#ohwi, %b: f32[5]) -> (f32[1,5,2,38]) {
    %y = conv2d %x, %w, %b : f32[1,5,2,38]
    return %y
  }
})",
      // Horizontal stride 2: each tap's inputs the even elements of two
      // vectors, masked at both padding edges and past the row's end.
      R"(module @m {
  func @main(%x: f32[1,3,6,75], %w: f32[7,3,3,3], %b: f32[7]) -> (f32[1,7,3,38]) {
    %y = conv2d %x, %w, %b {pads = [1, 1, 1, 1], strides = [2, 2]} : f32[1,7,3,38]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[2,8,9,33], %w: f32[8,1,5,5]) -> (f32[2,8,5,17]) {
    %y = conv2d %x, %w {pads = [2, 2, 2, 2], strides = [2, 2], groups = 8} : f32[2,8,5,17]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[1,2,5,45], %w: f32[4,2,3,3]) -> (f32[1,4,3,23]) {
    %y = conv2d %x, %w {pads = [0, 2, 0, 2], strides = [1, 2], dilations = [1, 2]} : f32[1,4,3,23]
    return %y
  }
})",
};

void checkWideRows(std::span<const cpu::ConvTiling> tilings) {
  for (const char* text : kWideRows) {
    auto c = convCase(parseModule(text, "wide.kir", {}));
    ASSERT_TRUE(c) << c.error().message();
    ASSERT_TRUE(cpu::directConvSupports(c->spec));
    for (const cpu::ConvTiling& t : tilings) EXPECT_EQ(compareWithInterpreter(*c, t), "") << text << tilingName(t);
  }
}

TEST(DirectConv, WideRowsMatchTheInterpreter) { checkWideRows(kTilings); }

// Small "same" convolutions at stride 1 as whole planes, vectors across
// rows: channel blocks and remainders, groups, depthwise, dilation,
// asymmetric and one-sided padding, non-square filters, planes of 49 to
// 1296 pixels (36x36: whole only ungrouped, ops::kDenseWholePlanePixels) and
// planes shorter than their input; every unit split gives the same bits.
const char* const kWholePlanes[] = {
      R"(module @m {
  func @main(%x: f32[1,16,7,7], %w: f32[20,16,3,3], %b: f32[20]) -> (f32[1,20,7,7]) {
    %y = conv2d %x, %w, %b {pads = [1, 1, 1, 1]} : f32[1,20,7,7]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[2,6,14,14], %w: f32[6,3,3,3]) -> (f32[2,6,14,14]) {
    %y = conv2d %x, %w {pads = [1, 1, 1, 1], groups = 2} : f32[2,6,14,14]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[1,4,9,9], %w: f32[5,4,3,3], %b: f32[5]) -> (f32[1,5,9,9]) {
    %y = conv2d %x, %w, %b {pads = [2, 2, 2, 2], dilations = [2, 2]} : f32[1,5,9,9]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[1,3,6,10], %w: f32[4,3,5,3]) -> (f32[1,4,6,10]) {
    %y = conv2d %x, %w {pads = [2, 1, 2, 1]} : f32[1,4,6,10]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[1,3,5,8], %w: f32[7,3,3,3]#ohwi) -> (f32[1,7,5,8]) {
    %y = conv2d %x, %w {pads = [0, 1, 2, 1]} : f32[1,7,5,8]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[1,2,8,12], %w: f32[3,2,3,3]) -> (f32[1,3,6,12]) {
    %y = conv2d %x, %w {pads = [0, 1, 0, 1]} : f32[1,3,6,12]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[1,3,16,16], %w: f32[4,3,3,3], %b: f32[4]) -> (f32[1,4,16,16]) {
    %y = conv2d %x, %w, %b {pads = [1, 1, 1, 1]} : f32[1,4,16,16]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[1,8,36,36], %w: f32[10,8,3,3], %b: f32[10]) -> (f32[1,10,36,36]) {
    %y = conv2d %x, %w, %b {pads = [1, 1, 1, 1]} : f32[1,10,36,36]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[2,6,14,14], %w: f32[6,1,5,5], %b: f32[6]) -> (f32[2,6,14,14]) {
    %y = conv2d %x, %w, %b {pads = [2, 2, 2, 2], groups = 6} : f32[2,6,14,14]
    return %y
  }
})",
};

// Each case's convolution, which `form` must say it is, against the
// interpreter and across unit splits, with every tiling.
void checkForm(std::span<const char* const> cases, bool (ConvSpec::*form)() const,
               std::span<const cpu::ConvTiling> tilings) {
  for (const char* text : cases) {
    auto c = convCase(parseModule(text, "case.kir", {}));
    ASSERT_TRUE(c) << c.error().message();
    ASSERT_TRUE((c->spec.*form)()) << text;
    for (const cpu::ConvTiling& t : tilings) {
      EXPECT_EQ(compareWithInterpreter(*c, t), "") << text << tilingName(t);
      EXPECT_EQ(splitsAgree(*c, t), "") << text << tilingName(t);
    }
  }
}

void checkWholePlanes(std::span<const cpu::ConvTiling> tilings) { checkForm(kWholePlanes, &ConvSpec::wholePlanes, tilings); }

TEST(DirectConv, WholePlanesMatchTheInterpreter) { checkWholePlanes(kTilings); }

// 1x1 convolutions over panels (ConvSpec::pointwisePanels: to no more
// channels than they read): planes whose
// last unit of 32 pixels is short (49, 784 and 100 pixels: 17, 16 and 4
// left), panels in two chunks of input channels (288 as 2 x 144, 300 as 2
// x 150), output channels in a block and a remainder, fewer channels than
// a block, two images, with and without a bias, an OHWI filter; every unit
// split gives the same bits.
const char* const kPanels[] = {
      R"(module @m {
  func @main(%x: f32[2,20,7,7], %w: f32[20,20,1,1], %b: f32[20]) -> (f32[2,20,7,7]) {
    %y = conv2d %x, %w, %b : f32[2,20,7,7]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[1,288,28,28], %w: f32[12,288,1,1], %b: f32[12]) -> (f32[1,12,28,28]) {
    %y = conv2d %x, %w, %b : f32[1,12,28,28]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[1,300,8,8], %w: f32[16,300,1,1]) -> (f32[1,16,8,8]) {
    %y = conv2d %x, %w : f32[1,16,8,8]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[2,8,10,10], %w: f32[5,8,1,1], %b: f32[5]) -> (f32[2,5,10,10]) {
    %y = conv2d %x, %w, %b : f32[2,5,10,10]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[1,32,12,12], %w: f32[16,1,1,32]#ohwi) -> (f32[1,16,12,12]) {
    %y = conv2d %x, %w : f32[1,16,12,12]
    return %y
  }
})",
};

void checkPanels(std::span<const cpu::ConvTiling> tilings) { checkForm(kPanels, &ConvSpec::pointwisePanels, tilings); }

TEST(DirectConv, PanelsMatchTheInterpreter) { checkPanels(kTilings); }

// Units of 32 pixels of each image's flattened plane, every output channel
// each; chunks of input channels whose panel fits 32 KB.
TEST(DirectConv, PanelsSplitByPixels) {
  ConvSpec c;
  c.n = 2, c.c = 512, c.h = c.oh = 7, c.wd = c.ow = 112, c.o = 128, c.kh = c.kw = 1;
  ASSERT_TRUE(c.pointwisePanels());
  EXPECT_EQ(directConvWork(c).units, 2 * 25);  // 784 = 24 x 32 + 16
  EXPECT_EQ(cpu::pointwisePanelChunk(c), 256);
  c.c = 300;
  EXPECT_EQ(cpu::pointwisePanelChunk(c), 150);
  c.c = 257;  // a prime: one chunk
  EXPECT_EQ(cpu::pointwisePanelChunk(c), 257);
  c.c = 64;
  EXPECT_EQ(cpu::pointwisePanelChunk(c), 64);
  c.c = 128;
  EXPECT_TRUE(c.pointwisePanels());
  c.c = 64;  // widening: whole planes, split by channels
  EXPECT_FALSE(c.pointwisePanels());
  EXPECT_TRUE(c.wholePlanes());
  c.c = 512;
  c.packedFilter = true;  // a packed filter's code instead
  EXPECT_FALSE(c.pointwisePanels());
  c.packedFilter = false, c.groups = 2;
  EXPECT_FALSE(c.pointwisePanels());
  c.groups = 1, c.h = c.oh = 28, c.wd = c.ow = 224;  // past a whole plane: rows
  EXPECT_FALSE(c.pointwisePanels());
}

// Whole planes folded in chunks of input channels (planeChunkChannels: a
// chunk's planes fill tiling.chunkBytes), here of one channel (1 byte) and
// of a few (1000 bytes: five 7x7 planes, three 9x9, one 14x14): they match
// the interpreter, and write the same bits as in one chunk, each chunk
// starting from the partial sums the one before stored.
TEST(DirectConv, WholePlanesInChunksOfInputChannelsGiveTheSameBits) {
  for (const char* text : kWholePlanes) {
    auto c = convCase(parseModule(text, "planes.kir", {}));
    ASSERT_TRUE(c) << c.error().message();
    const cpu::ConvTiling whole{8, 2, 4};
    auto one = generate(*c, whole);
    ASSERT_TRUE(one) << one.error().message();
    const Tensor want = runGenerated(*c, *one, 3);
    for (int64_t bytes : {1, 1000}) {
      cpu::ConvTiling chunked = whole;
      chunked.chunkBytes = bytes;
      // Compiled anew, not found under the unchunked code's identity.
      ASSERT_NE(cpu::codeOf(cpu::DirectConv{"conv", c->spec, chunked}),
                cpu::codeOf(cpu::DirectConv{"conv", c->spec, whole}));
      EXPECT_EQ(compareWithInterpreter(*c, chunked), "") << text << " in chunks of " << bytes << " bytes";
      auto g = generate(*c, chunked);
      ASSERT_TRUE(g) << g.error().message();
      const Tensor got = runGenerated(*c, *g, 3);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), static_cast<size_t>(want.numElements()) * sizeof(float)), 0)
          << text << " in chunks of " << bytes << " bytes";
    }
  }
}

// Every case above with the tiling this machine's plans use. The ISA matrix
// (tests/isa) runs this one rather than the three above: under qemu, each
// of their six tilings compiled every case again (three minutes with the
// JIT's cache cold), while what a level adds is its own instructions, which
// its own tiling exercises. The tilings' coverage of masks and remainders
// is checked natively.
TEST(DirectConv, EveryCaseMatchesTheInterpreterWithThisMachinesTiling) {
  const cpu::ConvTiling own[] = {testing::sharedJit().subtarget().conv};
  SCOPED_TRACE("tiling " + tilingName(own[0]));
  checkOpCaseConvolutions(own);
  checkWideRows(own);
  checkWholePlanes(own);
  checkPanels(own);
}

// Convolutions with a packed filter (exec/packed_filter.h): output
// channels across the lanes. Blocks of every width a range leaves (80
// channels: 48 + 32 at 16 lanes, 24 + 24 + 24 + 8 at 8), pixel blocks with
// remainders (49, 196, 16 and 64 pixels, and rows of 98 in a 1x1 layer's
// units; rows of 7, 14 and 8 with taps), two images, with and without a bias, input channels from 3 to 257, taps
// of 3x3, 2x2 padded on one side and 5x5 wider than the padding; output
// channels that are not whole vectors or panels (100: a last vector of 4
// at 16 and 8 lanes, three vectors of padding at 4; 15: no whole vector at
// 16 lanes; 72: half a panel of padding); every aligned unit split gives
// the same bits.
const char* const kPackedFilterCases[] = {
      R"(module @m {
  func @main(%x: f32[2,20,7,7], %w: f32[80,20,1,1], %b: f32[80]) -> (f32[2,80,7,7]) {
    %y = conv2d %x, %w, %b : f32[2,80,7,7]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[1,257,14,14], %w: f32[16,257,1,1]) -> (f32[1,16,14,14]) {
    %y = conv2d %x, %w : f32[1,16,14,14]
    return %y
  }
})",
      // Two joined rows of 98 pixels per image (exec/packed_filter.h's
      // row units), 48 channels: ranges that end inside a row.
      R"(module @m {
  func @main(%x: f32[2,256,14,14], %w: f32[48,256,1,1], %b: f32[48]) -> (f32[2,48,14,14]) {
    %y = conv2d %x, %w, %b : f32[2,48,14,14]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[1,3,4,4], %w: f32[32,3,1,1], %b: f32[32]) -> (f32[1,32,4,4]) {
    %y = conv2d %x, %w, %b : f32[1,32,4,4]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[2,8,8,8], %w: f32[48,8,1,1], %b: f32[48]) -> (f32[2,48,8,8]) {
    %y = conv2d %x, %w, %b : f32[2,48,8,8]
    return %y
  }
})",
      // Taps over whole planes: blocks of an output row, the rows and
      // columns whose taps reach the padding.
      R"(module @m {
  func @main(%x: f32[2,20,7,7], %w: f32[80,20,3,3], %b: f32[80]) -> (f32[2,80,7,7]) {
    %y = conv2d %x, %w, %b {pads = [1, 1, 1, 1]} : f32[2,80,7,7]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[1,32,14,14], %w: f32[16,32,3,3]) -> (f32[1,16,14,14]) {
    %y = conv2d %x, %w {pads = [1, 1, 1, 1]} : f32[1,16,14,14]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[1,12,7,7], %w: f32[32,12,2,2], %b: f32[32]) -> (f32[1,32,7,7]) {
    %y = conv2d %x, %w, %b {pads = [1, 1, 0, 0]} : f32[1,32,7,7]
    return %y
  }
})",
      // A strided layer over its input's phases (conv-phases): 2x2 taps, live
      // per phase of a period of 4 channels.
      R"(module @m {
  func @main(%x: f32[2,8,7,7], %w: f32[32,8,2,2], %b: f32[32]) -> (f32[2,32,7,7]) {
    %y = conv2d %x, %w, %b {pads = [1, 1, 0, 0], live_taps = [0, 0, 0, 1, 0, 0, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1]} : f32[2,32,7,7]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[1,3,8,8], %w: f32[16,3,5,5], %b: f32[16]) -> (f32[1,16,8,8]) {
    %y = conv2d %x, %w, %b {pads = [2, 2, 2, 2]} : f32[1,16,8,8]
    return %y
  }
})",
      // Strided by 2, the input read in place (ops::packedFilterStrided):
      // 3x3 over even and odd extents (the last row and column reading the
      // padding or not), 1x1 reading every second pixel, 3x3 without
      // padding.
      R"(module @m {
  func @main(%x: f32[2,20,14,14], %w: f32[80,20,3,3], %b: f32[80]) -> (f32[2,80,7,7]) {
    %y = conv2d %x, %w, %b {strides = [2, 2], pads = [1, 1, 1, 1]} : f32[2,80,7,7]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[1,32,27,27], %w: f32[16,32,3,3]) -> (f32[1,16,14,14]) {
    %y = conv2d %x, %w {strides = [2, 2], pads = [1, 1, 1, 1]} : f32[1,16,14,14]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[1,40,8,8], %w: f32[48,40,1,1], %b: f32[48]) -> (f32[1,48,4,4]) {
    %y = conv2d %x, %w, %b {strides = [2, 2]} : f32[1,48,4,4]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[1,8,17,17], %w: f32[32,8,3,3], %b: f32[32]) -> (f32[1,32,8,8]) {
    %y = conv2d %x, %w, %b {strides = [2, 2]} : f32[1,32,8,8]
    return %y
  }
})",
      // Output channels padded to whole panels (ops::packedFilterOutputs).
      R"(module @m {
  func @main(%x: f32[2,20,7,7], %w: f32[100,20,1,1], %b: f32[100]) -> (f32[2,100,7,7]) {
    %y = conv2d %x, %w, %b : f32[2,100,7,7]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[1,256,14,14], %w: f32[72,256,1,1], %b: f32[72]) -> (f32[1,72,14,14]) {
    %y = conv2d %x, %w, %b : f32[1,72,14,14]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[2,12,7,7], %w: f32[15,12,3,3], %b: f32[15]) -> (f32[2,15,7,7]) {
    %y = conv2d %x, %w, %b {pads = [1, 1, 1, 1]} : f32[2,15,7,7]
    return %y
  }
})",
      R"(module @m {
  func @main(%x: f32[2,20,14,14], %w: f32[100,20,3,3]) -> (f32[2,100,7,7]) {
    %y = conv2d %x, %w {strides = [2, 2], pads = [1, 1, 1, 1]} : f32[2,100,7,7]
    return %y
  }
})",
};

cpu::ConvTiling pointwiseTiling(int lanes, int pixels, int vectors) {
  cpu::ConvTiling t{lanes, 2, 4};
  t.pointwisePixels = pixels, t.pointwiseVectors = vectors;
  return t;
}

TEST(DirectConv, PackedFiltersMatchTheInterpreter) {
  const cpu::ConvTiling tilings[] = {pointwiseTiling(16, 7, 3), pointwiseTiling(8, 4, 3), pointwiseTiling(4, 4, 3),
                                     pointwiseTiling(16, 5, 2), pointwiseTiling(8, 1, 1),
                                     testing::sharedJit().subtarget().conv};
  for (const char* text : kPackedFilterCases) {
    auto c = convCase(parseModule(text, "packed.kir", {}));
    ASSERT_TRUE(c) << c.error().message();
    ASSERT_TRUE(packedFilterShape(c->spec)) << text;
    for (const cpu::ConvTiling& t : tilings) {
      const std::string name = str(t.pointwisePixels, " pixels x ", t.pointwiseVectors, "x", t.lanes);
      EXPECT_EQ(compareWithInterpreter(*c, t, true), "") << text << name;
      EXPECT_EQ(splitsAgree(*c, t, true), "") << text << name;
    }
  }
}

// Which shapes pack their filter: 1x1 at stride 1 without padding, taps
// over whole planes (stride 1, rows as wide as the input's, no dilation,
// every tap live), or any filter strided by 2 in both axes without
// dilation; one group, output channels whose padding to whole 16-lane
// panels costs at most an eighth of them, planes of
// at most 14x14 (past 8x8 only from 256 filter rows) that fill three
// quarters of 16 lanes (so that they run directly at every width; a
// strided one where the CPU packs taps).
TEST(DirectConv, PacksTheFiltersOfConvolutionsOverSmallPlanes) {
  auto c = convCase(parseModule(kPackedFilterCases[0], "packed.kir", {}));
  ASSERT_TRUE(c) << c.error().message();
  const ConvSpec base = c->spec;
  EXPECT_TRUE(packedFilterShape(base));
  auto changed = [&](auto change) {
    ConvSpec s = base;
    change(s);
    return packedFilterShape(s);
  };
  EXPECT_TRUE(changed([](ConvSpec& s) { s.o = 72; }));    // 8 of 80 padding
  EXPECT_TRUE(changed([](ConvSpec& s) { s.o = 1000; }));  // SqueezeNet's classifier
  EXPECT_FALSE(changed([](ConvSpec& s) { s.o = 40; }));   // 8 of 48: more than an eighth
  EXPECT_FALSE(changed([](ConvSpec& s) { s.o = 4; }));
  EXPECT_FALSE(changed([](ConvSpec& s) { s.groups = 2; }));
  EXPECT_FALSE(changed([](ConvSpec& s) { s.filterLast = true; }));
  EXPECT_FALSE(changed([](ConvSpec& s) { s.direction = ConvDirection::GradInput; }));
  EXPECT_TRUE(changed([](ConvSpec& s) { s.kh = s.kw = 3, s.padTop = s.padLeft = 1; }));
  EXPECT_FALSE(changed([](ConvSpec& s) { s.kh = s.kw = 3, s.oh = s.ow = 5; }));  // rows narrower than the input's
  EXPECT_FALSE(changed([](ConvSpec& s) { s.kh = s.kw = 3, s.padTop = s.padLeft = 2, s.dilH = s.dilW = 2; }));
  EXPECT_TRUE(changed([](ConvSpec& s) { s.kh = s.kw = 3, s.padTop = s.padLeft = 1, s.liveTaps.assign(9, 1); }));
  EXPECT_FALSE(changed([](ConvSpec& s) { s.liveTaps = {1, 0}; }));  // 1x1 over phases: not with live taps
  // Past 8x8, from 256 filter rows: input channels times taps.
  EXPECT_FALSE(changed([](ConvSpec& s) { s.kh = s.kw = 3, s.padTop = s.padLeft = 1, s.h = s.oh = s.wd = s.ow = 14; }));
  EXPECT_TRUE(changed(
      [](ConvSpec& s) { s.kh = s.kw = 3, s.padTop = s.padLeft = 1, s.h = s.oh = s.wd = s.ow = 14, s.c = 32; }));
  EXPECT_TRUE(changed([](ConvSpec& s) { s.strideH = s.strideW = 2, s.oh = s.ow = 4; }));
  EXPECT_TRUE(changed([](ConvSpec& s) {
    s.kh = s.kw = 3, s.padTop = s.padLeft = 1, s.strideH = s.strideW = 2, s.oh = s.ow = 4;
  }));
  EXPECT_FALSE(changed([](ConvSpec& s) { s.h = s.wd = 12, s.strideH = s.strideW = 3, s.oh = s.ow = 4; }));
  EXPECT_FALSE(changed([](ConvSpec& s) { s.strideW = 2, s.ow = 4; }));  // strided along rows only
  EXPECT_FALSE(changed([](ConvSpec& s) {
    s.kh = s.kw = 3, s.padTop = s.padLeft = 2, s.dilH = s.dilW = 2, s.strideH = s.strideW = 2, s.oh = s.ow = 4;
  }));
  EXPECT_TRUE(changed([](ConvSpec& s) { s.h = s.oh = s.wd = s.ow = 8; }));
  EXPECT_FALSE(changed([](ConvSpec& s) { s.h = s.oh = s.wd = s.ow = 14; }));  // 20 input channels
  EXPECT_TRUE(changed([](ConvSpec& s) { s.h = s.oh = s.wd = s.ow = 14, s.c = 256; }));
  EXPECT_FALSE(changed([](ConvSpec& s) { s.h = s.oh = s.wd = s.ow = 15, s.c = 256; }));  // 225 pixels
  EXPECT_FALSE(changed([](ConvSpec& s) { s.h = s.oh = s.wd = s.ow = 3; }));   // 9 of 16 lanes
  EXPECT_FALSE(changed([](ConvSpec& s) { s.h = s.oh = 1, s.wd = s.ow = 20; }));  // 20 of 32
  for (const char* name : {"x86-64-v2", "haswell", "skylake-avx512"})
    EXPECT_TRUE(cpu::directConvFits(base, DType::F32, testing::subtargetNamed(name).conv)) << name;
  // A strided one runs directly where the CPU packs taps, whatever its rows
  // (14 pixels: one vector a row at 16 lanes, 14 of 16 at 8 without
  // partial vectors); elsewhere by the rows' rule.
  ConvSpec strided = base;
  strided.kh = strided.kw = 3, strided.padTop = strided.padLeft = 1, strided.strideH = strided.strideW = 2;
  strided.h = strided.wd = 28, strided.oh = strided.ow = 14, strided.c = 32;
  ASSERT_TRUE(packedFilterShape(strided));
  EXPECT_TRUE(cpu::directConvFits(strided, DType::F32, testing::subtargetNamed("skylake-avx512").conv));
  EXPECT_FALSE(cpu::directConvFits(strided, DType::F32, testing::subtargetNamed("haswell").conv));
}

// A model's 1x1 layer over 7x7 with its residual add and ReLU: the cpu
// target packs the constant filter, runs the epilogue inside, gives the
// interpreter's results with the same bits on one thread and on three
// (ranges of whole vectors of channels), packs new weights again, and
// allocates the packed copy kfuse memory counts.
TEST(DirectConv, PackedFiltersRunInModelsAndRepackNewWeights) {
  auto m = testing::preparedModule(R"(module @m {
  param @w : f32[96,40,1,1]
  param @b : f32[96]
  func @main(%x: f32[1,40,7,7], %r: f32[1,96,7,7]) -> (f32[1,96,7,7]) {
    %0 = conv2d %x, @w, @b : f32[1,96,7,7]
    %1 = add %0, %r : f32[1,96,7,7]
    %2 = relu %1 : f32[1,96,7,7]
    return %2
  }
})");
  ASSERT_TRUE(m);
  const Graph& fn = *m->functions().front();
  auto plan = buildPlan(fn, {.packFilters = cpu::packedFilterPolicy(testing::sharedJit().subtarget().conv)});
  ASSERT_TRUE(plan) << plan.error().message();
  ASSERT_EQ(packedFilterSteps(*plan).size(), 1u);
  const size_t step = packedFilterSteps(*plan)[0];
  EXPECT_TRUE(cpu::directConvOf(*plan, step, "conv", testing::sharedJit().subtarget().conv).packedFilter);
  EXPECT_TRUE(convEpilogue(*plan, step)) << convEpilogue(*plan, step).error().message();
  std::vector<Tensor> args;
  for (size_t i = 0; i < fn.arguments().size(); ++i)
    args.push_back(testing::waveTensor(fn.arguments()[i]->type(), 0.3 * static_cast<double>(i)));
  m->setParamData("b", testing::waveTensor(m->findParam("b")->type, 3.0));
  auto one = createExecutor("cpu", {.inplace = true, .poison = true, .threads = 1});
  auto three = createExecutor("cpu", {.inplace = true, .poison = true, .threads = 3});
  ASSERT_TRUE(one && three);
  for (double phase : {1.0, 2.0}) {
    m->setParamData("w", testing::waveTensor(m->findParam("w")->type, phase));
    auto want = interpret(fn, args);
    ASSERT_TRUE(want) << want.error().message();
    auto got = (*one)->run(fn, args);
    ASSERT_TRUE(got) << got.error().message();
    EXPECT_EQ(test::compareTensors(got->outputs[0], want->outputs[0], 1e-5, 1e-5), "") << "weights " << phase;
    auto split = (*three)->run(fn, args);
    ASSERT_TRUE(split) << split.error().message();
    EXPECT_EQ(std::memcmp(split->outputs[0].data(), got->outputs[0].data(),
                          static_cast<size_t>(got->outputs[0].numElements()) * sizeof(float)),
              0)
        << "weights " << phase;
  }
  // The runner allocates what kfuse memory predicts: the packed copy too.
  const Plan* ran = (*one)->planFor(fn);
  ASSERT_NE(ran, nullptr);
  auto bytes = cpuDeviceBytes(*ran, 1);
  ASSERT_TRUE(bytes) << bytes.error().message();
  EXPECT_EQ(bytes->packedWeights, 96u * 40u * sizeof(float));
  EXPECT_EQ((*one)->deviceBytesAllocated(), bytes->total);
  // A training plan rewrites the filter every step: it keeps it as it is.
  plan->updates.emplace_back("w", plan->steps[step].conv().y);
  EXPECT_TRUE(packedFilterSteps(*plan).empty());
}

// A strided layer the CPU packs reads its input in place and, its planes
// complete in each block of channels, runs a global average pool inside
// (exec/conv_epilogue.h). The numbers are this machine's: packed where it
// packs taps, with pixels across the lanes or im2col + GEMM elsewhere.
TEST(DirectConv, StridedPackedLayersRunTheirPoolInside) {
  auto m = testing::preparedModule(R"(module @m {
  param @w : f32[32,24,3,3]
  param @b : f32[32]
  func @main(%x: f32[1,24,15,15]) -> (f32[1,32]) {
    %0 = conv2d %x, @w, @b {strides = [2, 2], pads = [1, 1, 1, 1]} : f32[1,32,8,8]
    %1 = relu %0 : f32[1,32,8,8]
    %2 = reduce_mean %1 {axes = [2, 3], keepdims = false} : f32[1,32]
    return %2
  }
})");
  ASSERT_TRUE(m);
  const Graph& fn = *m->functions().front();
  auto plan = buildPlan(fn, {.packFilters = cpu::packedFilterPolicy(testing::subtargetNamed("skylake-avx512").conv)});
  ASSERT_TRUE(plan) << plan.error().message();
  ASSERT_EQ(packedFilterSteps(*plan).size(), 1u);
  EXPECT_TRUE(convEpilogue(*plan, packedFilterSteps(*plan)[0]))
      << convEpilogue(*plan, packedFilterSteps(*plan)[0]).error().message();
  m->setParamData("w", testing::waveTensor(m->findParam("w")->type, 1.0));
  m->setParamData("b", testing::waveTensor(m->findParam("b")->type, 2.0));
  const std::vector<Tensor> args = {testing::waveTensor(fn.arguments()[0]->type(), 0.5)};
  auto want = interpret(fn, args);
  ASSERT_TRUE(want) << want.error().message();
  for (int threads : {1, 3}) {
    auto cpu = createExecutor("cpu", {.inplace = true, .poison = true, .threads = threads});
    ASSERT_TRUE(cpu);
    auto got = (*cpu)->run(fn, args);
    ASSERT_TRUE(got) << got.error().message();
    EXPECT_EQ(test::compareTensors(got->outputs[0], want->outputs[0], 1e-5, 1e-5), "") << threads << " threads";
  }
}

// Which convolutions a plan built for a CPU marks to read their filter
// packed (ConvSpec::packedFilter): 1x1 ones on every CPU, 3x3 ones (a
// "same" one, a strided one) where the tiling has 32 registers for 7
// pixels x 3 vectors of 16 channels;
// none without a policy (the interpreter's and cuda's plans).
TEST(DirectConv, PlansMarkThePackedFiltersTheirCpuRunsFaster) {
  auto m = testing::preparedModule(R"(module @m {
  param @w1 : f32[32,16,1,1]
  param @w3 : f32[32,32,3,3]
  param @ws : f32[32,32,3,3]
  func @main(%x: f32[1,16,7,7]) -> (f32[1,32,4,4]) {
    %0 = conv2d %x, @w1 : f32[1,32,7,7]
    %1 = conv2d %0, @w3 {pads = [1, 1, 1, 1]} : f32[1,32,7,7]
    %2 = conv2d %1, @ws {strides = [2, 2], pads = [1, 1, 1, 1]} : f32[1,32,4,4]
    return %2
  }
})");
  ASSERT_TRUE(m);
  auto marked = [&](const char* cpu) {
    PlanOptions o;
    if (cpu) o.packFilters = cpu::packedFilterPolicy(testing::subtargetNamed(cpu).conv);
    auto plan = buildPlan(*m->functions().front(), o);
    EXPECT_TRUE(plan) << plan.error().message();
    std::string out;
    for (size_t s : plan ? packedFilterSteps(*plan) : std::vector<size_t>{})
      out += str(plan->steps[s].conv().kh, "x", plan->steps[s].conv().kw, " ");
    return out;
  };
  EXPECT_EQ(marked("skylake-avx512"), "1x1 3x3 3x3 ");
  EXPECT_EQ(marked("haswell"), "1x1 ");
  EXPECT_EQ(marked("x86-64-v2"), "1x1 ");
  EXPECT_EQ(marked(nullptr), "");
}

// Plans join a 1x1 convolution's rows into rows of whole 32-pixel blocks
// where a divisor of the height gives some (56x56 as 14 rows of 224, 112x112
// as 56 of 224, 8x8 as one of 64), else into the fewest rows of at least 64
// pixels (28x28 as 7 of 112, 14x14 as 2 of 98), and leave rows of 64 and
// more that no join makes whole (150 wide).
TEST(DirectConv, PlansJoinPointwiseRowsIntoWholeBlocks) {
  auto joined = [](int64_t side) {
    const std::string text = str("module @m {\n  func @main(%x: f32[1,4,", side, ",", side, "], %w: f32[16,4,1,1]) -> (f32[1,16,",
                                  side, ",", side, "]) {\n    %y = conv2d %x, %w : f32[1,16,", side, ",", side,
                                  "]\n    return %y\n  }\n}");
    auto m = parseModule(text, "joined.kir", {});
    EXPECT_TRUE(m) << m.error().message();
    auto plan = buildPlan(*(*m)->functions().front());
    EXPECT_TRUE(plan) << plan.error().message();
    const ConvSpec& c = plan->steps.at(0).conv();
    EXPECT_EQ(c.h * c.wd, side * side);
    return str(c.oh, "x", c.ow);
  };
  EXPECT_EQ(joined(56), "14x224");
  EXPECT_EQ(joined(112), "56x224");
  EXPECT_EQ(joined(8), "1x64");
  EXPECT_EQ(joined(28), "7x112");
  EXPECT_EQ(joined(14), "2x98");
  EXPECT_EQ(joined(150), "150x150");
}

// Rows of `width` pixels; by default too many for whole planes.
ConvSpec nchw3x3(int64_t width, int64_t height = 300) {
  ConvSpec c;
  c.n = 1, c.c = 4, c.h = height, c.wd = width, c.o = 8, c.kh = 3, c.kw = 3, c.oh = height, c.ow = width;
  c.padTop = c.padLeft = 1;
  return c;
}

TEST(DirectConv, RunsWhereItsVectorsAreFull) {
  const cpu::ConvTiling avx512{16, 2, 8};
  EXPECT_TRUE(cpu::directConvFits(nchw3x3(32), DType::F32, avx512));
  EXPECT_TRUE(cpu::directConvFits(nchw3x3(28), DType::F32, avx512));      // 28 of 32 lanes
  EXPECT_FALSE(cpu::directConvFits(nchw3x3(20), DType::F32, avx512));     // 20 of 32
  EXPECT_FALSE(cpu::directConvFits(nchw3x3(14), DType::F32, avx512));     // one vector a row
  EXPECT_TRUE(cpu::directConvFits(nchw3x3(14), DType::F32, {8, 2, 4}));  // 14 of 16
  // Where masked loads are slow, rows end in whole vectors, or in one a
  // lane short of 8 or more.
  EXPECT_FALSE(cpu::directConvFits(nchw3x3(14), DType::F32, {8, 2, 6, false}));
  EXPECT_TRUE(cpu::directConvFits(nchw3x3(16), DType::F32, {8, 2, 6, false}));
  EXPECT_TRUE(cpu::directConvFits(nchw3x3(56), DType::F32, {8, 2, 6, false}));
  EXPECT_TRUE(cpu::directConvFits(nchw3x3(55), DType::F32, {8, 2, 6, false}));
  EXPECT_FALSE(cpu::directConvFits(nchw3x3(54), DType::F32, {8, 2, 6, false}));
  EXPECT_FALSE(cpu::directConvFits(nchw3x3(23), DType::F32, {4, 2, 4, false}));
  EXPECT_TRUE(cpu::directConvFits(nchw3x3(24), DType::F32, {4, 2, 4, false}));
  EXPECT_TRUE(cpu::directConvFits(nchw3x3(32), DType::F16, avx512));    // widened to f32 first
  EXPECT_FALSE(cpu::directConvFits(nchw3x3(32), DType::F64, avx512));
  // Small planes run whole where they fill three quarters of the lanes
  // they take, masked loads fast or not.
  ASSERT_TRUE(nchw3x3(7, 7).wholePlanes());
  ASSERT_FALSE(nchw3x3(14).wholePlanes());  // 4200 pixels
  // Past 32x32, ungrouped filters of more than one tap only.
  ASSERT_TRUE(nchw3x3(14, 200).wholePlanes());  // 2800 pixels
  ConvSpec grouped = nchw3x3(14, 200), pointwise = nchw3x3(14, 200);
  grouped.groups = 4, grouped.o = 4;
  pointwise.kh = pointwise.kw = 1, pointwise.padTop = pointwise.padLeft = 0;
  ASSERT_FALSE(grouped.wholePlanes());
  ASSERT_FALSE(pointwise.wholePlanes());
  ConvSpec smallGrouped = nchw3x3(14, 73);
  smallGrouped.groups = 4, smallGrouped.o = 4;
  ASSERT_TRUE(smallGrouped.wholePlanes());  // 1022 pixels
  EXPECT_TRUE(cpu::directConvFits(nchw3x3(7, 7), DType::F32, avx512));   // 49 of 64 lanes
  EXPECT_TRUE(cpu::directConvFits(nchw3x3(7, 7), DType::F32, {8, 2, 6, false}));
  EXPECT_TRUE(cpu::directConvFits(nchw3x3(14, 14), DType::F32, {8, 2, 6, false}));
  EXPECT_TRUE(cpu::directConvFits(nchw3x3(4, 4), DType::F32, avx512));   // one whole vector
  EXPECT_FALSE(cpu::directConvFits(nchw3x3(3, 3), DType::F32, {8, 2, 6, false}));  // 9 of 16
  EXPECT_FALSE(cpu::directConvFits(nchw3x3(2, 2), DType::F32, {8, 2, 6, false}));  // 4 of 8
  ConvSpec strided = nchw3x3(32);
  strided.strideW = 2;
  EXPECT_TRUE(cpu::directConvSupports(strided));
  strided.strideW = 3;
  EXPECT_FALSE(cpu::directConvSupports(strided));
  ConvSpec nhwc = nchw3x3(32);
  nhwc.channelsLast = true;
  EXPECT_FALSE(cpu::directConvSupports(nhwc));
}

// Each level's tiling gives vector code of its width: fused multiply-adds
// on whole vectors and masked loads only for the taps that reach into the
// padding. Compiled for the named CPU, not run.
TEST(DirectConv, GeneratesVectorCodeForEachLevel) {
  for (const char* name : {"x86-64-v2", "haswell", "skylake-avx512"}) {
    const cpu::CpuSubtarget& sub = testing::subtargetNamed(name);
    const int lanes = sub.conv.lanes;
    cpu::DirectConv conv{"conv", nchw3x3(4 * lanes), sub.conv};
    cpu::CompileOptions options;
    options.keepOptimizedIR = true;
    auto compiled = cpu::emitObject(cpu::CodeBatch{{}, std::span(&conv, 1)}, sub, options);
    ASSERT_TRUE(compiled) << name << ": " << compiled.error().message();
    const std::string& ir = compiled->optimizedIR;
    const std::string vec = str("<", lanes, " x float>");
    EXPECT_NE(ir.find(str("@llvm.fmuladd.v", lanes, "f32")), std::string::npos) << name << ":\n" << ir;
    EXPECT_NE(ir.find(str("@llvm.masked.load.v", lanes, "f32")), std::string::npos) << name;
    EXPECT_NE(ir.find("load " + vec), std::string::npos) << name << ": no unmasked vector load";
  }
}

// The JIT compiles a convolution's code once per batch, however many steps
// run it (a ResNet stage's blocks): the plan's buffer numbers and the
// step's name are not part of the code, whether there is a bias is.
TEST(DirectConv, ConvolutionsAlikeCompileOnce) {
  auto withBuffers = [](ConvSpec c, int x, int w, int bias, int y) {
    c.x = x, c.w = w, c.bias = bias, c.y = y;
    return c;
  };
  const cpu::ConvTiling tiling{8, 2, 4};
  const std::vector<cpu::DirectConv> convs = {{"block1_conv", withBuffers(nchw3x3(32), 3, 4, 5, 6), tiling},
                                              {"block2_conv", withBuffers(nchw3x3(32), 9, 10, 11, 12), tiling},
                                              {"no_bias", withBuffers(nchw3x3(32), 9, 10, -1, 12), tiling},
                                              {"wider", withBuffers(nchw3x3(40), 3, 4, 5, 6), tiling}};
  auto jit = cpu::CpuJit::create(cpu::CpuTarget::host(), "");
  ASSERT_TRUE(jit) << jit.error().message();
  auto compiled = (*jit)->compile(cpu::CodeBatch{{}, convs});
  ASSERT_TRUE(compiled) << compiled.error().message();
  EXPECT_EQ(compiled->compiled, 3u);
  ASSERT_EQ(compiled->convs.size(), 4u);
  EXPECT_EQ(compiled->convs[0], compiled->convs[1]);
  EXPECT_NE(compiled->convs[0], compiled->convs[2]);
  EXPECT_NE(compiled->convs[0], compiled->convs[3]);
}

TEST(DirectConv, RefusesWhatItCannotCompute) {
  ConvSpec strided = nchw3x3(32);
  strided.strideW = 3;
  cpu::DirectConv conv{"strided", strided, {8, 2, 4}};
  auto compiled = testing::sharedJit().compile(cpu::CodeBatch{{}, std::span(&conv, 1)});
  ASSERT_FALSE(compiled);
  EXPECT_NE(compiled.error().message().find("convolution @strided"), std::string::npos) << compiled.error().message();
}

}  // namespace
}  // namespace kfuse
