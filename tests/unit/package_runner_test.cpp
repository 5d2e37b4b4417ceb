// PackageRunner (runtime/package/package_runner.h) on packages compiled by
// compilePackage: running and training, and refusing what this machine or
// the caller gets wrong without running anything.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "codegen/package_compiler.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/support/strings.h"
#include "runtime/package/cpu_code.h"
#include "runtime/package/package_runner.h"
#include "exec/packed_gemm.h"
#include "ir/support/file_io.h"
#include "tests/unit/test_util.h"

namespace kfuse {
namespace {

std::shared_ptr<const Package> compileExample(const std::string& file, bool train) {
  auto m = parseModuleFile(std::string(KFUSE_SOURCE_DIR) + "/" + file);
  EXPECT_TRUE(m) << m.error().message();
  PackageCompileOptions o;
  o.threads = 1;
  o.train = train;
  o.training.training.optimizer.kind = OptimizerKind::Adam;
  o.loss = "cross_entropy";
  o.optimizer = "adam";
  auto compiled = compilePackage(std::move(*m), o);
  EXPECT_TRUE(compiled) << compiled.error().message();
  // The file written is the package in memory, weights streamed from the
  // compiled model's tensors.
  const std::string bytes = compiled->bytes();
  EXPECT_EQ(compiled->size(), bytes.size());
  const std::string path = testing::TempDir() + "/compiled.kfpkg";
  Status written = compiled->write(path);
  EXPECT_TRUE(written) << written.error().message();
  auto onDisk = readFile(path);
  EXPECT_TRUE(onDisk && *onDisk == bytes) << "the file written differs from the package's bytes";
  std::remove(path.c_str());
  auto pkg = Package::parse(bytes, file);
  EXPECT_TRUE(pkg) << pkg.error().message();
  return *pkg;
}

// The same package with its meta's CPU replaced: written and read again.
std::shared_ptr<const Package> withCpu(const Package& pkg, const std::string& triple,
                                       std::vector<std::string> features) {
  PackageContents c;
  c.meta = pkg.meta();
  c.meta.cpuTriple = triple;
  c.meta.cpuFeatures = std::move(features);
  c.functions = pkg.functions();
  for (const PackageParam& p : pkg.meta().params) c.params.emplace_back(p.name, &pkg.weights().at(p.name));
  c.cpuSharedObject = std::string(pkg.cpuSharedObject());
  auto out = Package::parse(writePackage(c), "rewritten.kfpkg");
  EXPECT_TRUE(out) << out.error().message();
  return *out;
}

Tensor ones(const TensorType& t) {
  Tensor x(t);
  for (int64_t i = 0; i < x.numElements(); ++i) x.set(i, 1.0);
  return x;
}

TEST(PackageRunner, RunsAndNamesWhatIsMissing) {
  auto pkg = compileExample("examples/mlp/mlp.kir", false);
  auto runner = PackageRunner::create(pkg);
  ASSERT_TRUE(runner) << runner.error().message();
  const PackageFunction& f = pkg->functions().front();
  auto out = (*runner)->run(f.name, {ones(f.inputs[0].type)});
  ASSERT_TRUE(out) << out.error().message();
  EXPECT_EQ((*out)[0].type(), f.outputs[0].type);
  EXPECT_EQ((*runner)->launches(), f.plan->launches());
  // The plan's regions and the packed copies of its GEMMs' weights.
  EXPECT_EQ(f.packedGemms.size(), 3u);
  EXPECT_EQ((*runner)->deviceBytesAllocated(), f.plan->deviceBytes() + packedBytes(*f.plan, f.packedGemms));

  auto missing = (*runner)->run("nope", {});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("has no function @nope (it has @forward)"), std::string::npos)
      << missing.error().message();
  auto wrongType = (*runner)->run(f.name, {ones(TensorType(DType::F32, {3}))});
  ASSERT_FALSE(wrongType);
  EXPECT_NE(wrongType.error().message().find("input %x must be f32[256,2], got f32[3]"), std::string::npos)
      << wrongType.error().message();
  auto train = (*runner)->trainStep({}, Tensor(), 0.1);
  ASSERT_FALSE(train);
  EXPECT_NE(train.error().message().find("is an inference package"), std::string::npos);
}

TEST(PackageRunner, TrainStepUpdatesParametersAndSaves) {
  auto pkg = compileExample("tests/lit/Inputs/train/tiny.kir", true);
  auto runner = PackageRunner::create(pkg);
  ASSERT_TRUE(runner) << runner.error().message();
  const PackageFunction& fwd = *pkg->function(pkg->meta().training->forward);
  Tensor x = ones(fwd.inputs[0].type);
  Tensor labels(TensorType(DType::I64, {fwd.inputs[0].type.shape[0]}));
  Tensor before = *(*runner)->parameters().findParam("fc.weight")->data;
  auto first = (*runner)->trainStep({x}, labels, 0.1);
  ASSERT_TRUE(first) << first.error().message();
  auto second = (*runner)->trainStep({x}, labels, 0.1);
  ASSERT_TRUE(second) << second.error().message();
  EXPECT_LT(*second, *first);  // the same batch twice: Adam lowers its loss
  EXPECT_EQ((*runner)->stepCount(), 2);
  EXPECT_NE((*runner)->parameters().findParam("fc.weight")->data->at(0), before.at(0));
  // A NaN batch: the step stops before any parameter changes (the runner
  // keeps the state between steps and checks the loss first).
  Tensor synced = *(*runner)->parameters().findParam("fc.weight")->data;
  Tensor bad = x;
  bad.set(0, std::numeric_limits<double>::quiet_NaN());
  auto nan = (*runner)->trainStep({bad}, labels, 0.1);
  ASSERT_FALSE(nan);
  EXPECT_NE(nan.error().message().find("the weights were not updated"), std::string::npos);
  EXPECT_TRUE((*runner)->parameters().findParam("fc.weight")->data->identical(synced));
  std::string path = testing::TempDir() + "/package_runner_weights.safetensors";
  ASSERT_TRUE((*runner)->saveWeights(path));
  auto saved = readWeightsFile(path);
  ASSERT_TRUE(saved);
  EXPECT_EQ(saved->count("fc.weight.exp_avg"), 1u);
}

// A 3x3 convolution over h x w planes (by default 32-pixel rows, which
// fill the vectors of every x86 tiling, so it runs directly), then a kernel
// step.
std::unique_ptr<Module> convModule(int h = 5, int wd = 32) {
  std::string w;
  for (int i = 0; i < 4 * 2 * 3 * 3; ++i) w += str(i ? ", " : "", std::sin(0.7 * i));
  auto m = parseModule(str(R"(module @conv {
  param @w : f32[4,2,3,3] = dense<f32[4,2,3,3]>[)", w, R"(]
  func @forward(%x: f32[2,2,)", h, ",", wd, R"(]) -> (f32[2,4]) {
    %0 = conv2d %x, @w {pads = [1, 1, 1, 1]} : f32[2,4,)", h, ",", wd, R"(]
    %1 = tanh %0 : f32[2,4,)", h, ",", wd, R"(]
    %2 = reduce_mean %1 {axes = [2, 3]} : f32[2,4]
    return %2
  }
})"),
                       "conv.kir", {});
  EXPECT_TRUE(m) << m.error().message();
  return m ? std::move(*m) : nullptr;
}

// Output 0 of function `fn` of `pkg` run on x.
Tensor firstOutput(std::shared_ptr<const Package> pkg, const std::string& fn, const Tensor& x) {
  auto runner = PackageRunner::create(std::move(pkg));
  EXPECT_TRUE(runner) << runner.error().message();
  if (!runner) return Tensor();
  auto out = (*runner)->run(fn, {x});
  EXPECT_TRUE(out) << out.error().message();
  return out ? (*out)[0] : Tensor();
}

// The package's contents, changed by `edit`, written and read back as
// format `format` wrote them.
Expected<std::shared_ptr<const Package>> rewritten(const Package& pkg, const std::function<void(PackageContents&)>& edit,
                                                   uint32_t format = package::kFormatVersion) {
  PackageContents c;
  c.meta = pkg.meta();
  c.functions = pkg.functions();
  for (const PackageParam& p : pkg.meta().params) c.params.emplace_back(p.name, &pkg.weights().at(p.name));
  c.cpuSharedObject = std::string(pkg.cpuSharedObject());
  c.meta.formatVersion = format;
  edit(c);
  std::string bytes = writePackage(c);
  bytes[8] = static_cast<char>(format);  // the container header's format version (little-endian u32)
  return Package::parse(std::move(bytes), "rewritten.kfpkg");
}

// The same package with function 0's list of direct convolutions or packed
// GEMMs (`list`) replaced.
Expected<std::shared_ptr<const Package>> withSteps(const Package& pkg, std::vector<size_t> PackageFunction::*list,
                                                   std::vector<size_t> steps) {
  return rewritten(pkg, [&](PackageContents& c) { c.functions[0].*list = std::move(steps); });
}

// convModule compiled for one thread and read back.
Expected<std::shared_ptr<const Package>> convPackage(int h = 5, int wd = 32) {
  PackageCompileOptions o;
  o.threads = 1;
  KF_ASSIGN_OR_RETURN(CompiledPackage compiled, compilePackage(convModule(h, wd), o));
  return Package::parse(compiled.bytes(), "conv.kfpkg");
}

// The package lists its direct convolutions, plans no im2col workspace for
// them, and runs them to the interpreter's result. A listing that names a
// step which is no convolution, or that leaves out a convolution without a
// workspace, is refused.
TEST(PackageRunner, ConvolutionsRunDirectlyWhereThePackageSaysSo) {
  auto pkg = convPackage();
  ASSERT_TRUE(pkg) << pkg.error().message();
  const PackageFunction& f = (*pkg)->functions().front();
  ASSERT_EQ(f.directConvs, std::vector<size_t>{0});
  EXPECT_EQ(f.plan->steps[0].conv().workspace, -1);

  auto module = convModule();
  Tensor x(f.inputs[0].type);
  for (int64_t i = 0; i < x.numElements(); ++i) x.set(i, std::cos(0.3 * static_cast<double>(i)));
  auto want = interpret(*module->functions().front(), {x});
  ASSERT_TRUE(want) << want.error().message();
  Tensor direct = firstOutput(*pkg, f.name, x);
  for (int64_t i = 0; i < want->outputs[0].numElements(); ++i)
    EXPECT_NEAR(direct.at(i), want->outputs[0].at(i), 1e-5) << i;

  auto none = withSteps(**pkg, &PackageFunction::directConvs, {});
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message().find("function @forward: convolution step 0 has neither an im2col workspace nor a "
                                        "direct convolution"),
            std::string::npos)
      << none.error().message();

  auto wrong = withSteps(**pkg, &PackageFunction::directConvs, {1});
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message().find("function @forward: direct convolution at step 1, which is not a convolution"),
            std::string::npos)
      << wrong.error().message();

  // Its tanh and mean run inside it (exec/conv_epilogue.h); a package that
  // lists no such epilogue (as format 9 wrote them) has code that takes
  // other arguments and is refused.
  EXPECT_EQ(f.convEpilogues, std::vector<size_t>{0});
  auto outside = withSteps(**pkg, &PackageFunction::convEpilogues, {});
  ASSERT_FALSE(outside);
  EXPECT_NE(outside.error().message().find("function @forward: the direct convolution at step 0 was compiled without "
                                           "its epilogue, and this kfuse would run it inside; compile the model again"),
            std::string::npos)
      << outside.error().message();
}

// A 1x1 convolution of c input channels to 32 over side x side planes, with
// a constant filter, then a ReLU.
std::unique_ptr<Module> pointwiseModule(int c, int side) {
  std::string w;
  for (int i = 0; i < 32 * c; ++i) w += str(i ? ", " : "", std::sin(0.7 * i));
  const std::string x = str("f32[1,", c, ",", side, ",", side, "]"), y = str("f32[1,32,", side, ",", side, "]");
  auto m = parseModule(str(R"(module @conv {
  param @w : f32[32,)", c, R"(,1,1] = dense<f32[32,)", c, R"(,1,1]>[)", w, R"(]
  func @forward(%x: )", x, R"() -> ()", y, R"() {
    %0 = conv2d %x, @w : )", y, R"(
    %1 = relu %0 : )", y, R"(
    return %1
  }
})"),
                       "pointwise.kir", {});
  EXPECT_TRUE(m) << m.error().message();
  return m ? std::move(*m) : nullptr;
}

// pointwiseModule(c, side) compiled for one thread and read back.
Expected<std::shared_ptr<const Package>> pointwisePackage(int c, int side) {
  PackageCompileOptions o;
  o.threads = 1;
  KF_ASSIGN_OR_RETURN(CompiledPackage compiled, compilePackage(pointwiseModule(c, side), o));
  return Package::parse(compiled.bytes(), "pointwise.kfpkg");
}

// A 1x1 convolution over 7x7 with a constant filter runs over a packed copy
// of it (exec/packed_filter.h): the package lists it and gives the
// interpreter's result; a package that does not list it (as format 10 wrote
// them) has code that reads the filter as it is, and is refused.
TEST(PackageRunner, SmallPointwiseConvolutionsReadTheirFilterPacked) {
  auto module = pointwiseModule(8, 7);
  ASSERT_TRUE(module);
  Tensor x(TensorType(DType::F32, {1, 8, 7, 7}));
  for (int64_t i = 0; i < x.numElements(); ++i) x.set(i, std::cos(0.3 * static_cast<double>(i)));
  auto want = interpret(*module->functions().front(), {x});
  ASSERT_TRUE(want) << want.error().message();
  auto pkg = pointwisePackage(8, 7);
  ASSERT_TRUE(pkg) << pkg.error().message();
  const PackageFunction& f = (*pkg)->functions().front();
  ASSERT_EQ(f.directConvs, std::vector<size_t>{0});
  EXPECT_EQ(f.packedFilters, std::vector<size_t>{0});
  EXPECT_EQ(test::compareTensors(firstOutput(*pkg, f.name, x), want->outputs[0], 1e-5, 1e-5), "");
  EXPECT_TRUE(f.plan->steps[0].conv().packedFilter);  // the plan says so too
  auto unpacked = withSteps(**pkg, &PackageFunction::packedFilters, {});
  ASSERT_FALSE(unpacked);
  EXPECT_NE(unpacked.error().message().find("function @forward: the plan marks the convolution at step 0 to read its "
                                            "filter packed, and the package does not list it"),
            std::string::npos)
      << unpacked.error().message();
  // Format 11 marked nothing in its plans: its list says which steps read
  // their filter packed.
  auto unmarked = [](PackageContents& c) {
    Plan plan = *c.functions[0].plan;
    plan.steps[0].conv().packedFilter = false;
    c.functions[0].plan = std::make_shared<const Plan>(std::move(plan));
  };
  auto older = rewritten(**pkg, unmarked, 11);
  ASSERT_TRUE(older) << older.error().message();
  EXPECT_TRUE((*older)->functions().front().plan->steps[0].conv().packedFilter);
  EXPECT_EQ(test::compareTensors(firstOutput(*older, f.name, x), want->outputs[0], 1e-5, 1e-5), "");
  auto listedOnly = rewritten(**pkg, unmarked);
  ASSERT_FALSE(listedOnly);
  EXPECT_NE(listedOnly.error().message().find("function @forward: the convolution at step 0 was compiled to read its "
                                              "filter packed, and its plan does not say so"),
            std::string::npos)
      << listedOnly.error().message();
}

// A 1x1 layer with a packed filter over 14x14 planes (256 input channels)
// runs as two joined rows of 98 pixels, split by rows since format 15
// (packedFilterRowUnits); format 14's code took planes as its units, and
// such a package is refused. Over 7x7 (one joined row, a row being a
// plane) it is read.
TEST(PackageRunner, OlderPointwiseConvolutionsOverSeveralRowsAreRefused) {
  auto rows = pointwisePackage(256, 14);
  ASSERT_TRUE(rows) << rows.error().message();
  const ConvSpec& c = (*rows)->functions().front().plan->steps[0].conv();
  ASSERT_TRUE(c.packedFilter);
  ASSERT_EQ(c.oh, 2);
  auto old = rewritten(**rows, [](PackageContents&) {}, 14);
  ASSERT_FALSE(old);
  EXPECT_NE(old.error().message().find("function @forward: the direct convolution at step 0 was compiled by a kfuse "
                                       "that split 1x1 layers with a packed filter by planes"),
            std::string::npos)
      << old.error().message();
  auto one = pointwisePackage(8, 7);
  ASSERT_TRUE(one) << one.error().message();
  ASSERT_EQ((*one)->functions().front().plan->steps[0].conv().oh, 1);
  EXPECT_TRUE(rewritten(**one, [](PackageContents&) {}, 14));
}

// A 1x1 layer over 14x14 planes from 64 channels to 32 (too few inputs to
// pack its filter) runs over panels, split by blocks of 32 pixels since format 17
// (ConvSpec::pointwisePanels); format 16's code took planes as its units,
// and such a package is refused. One with a packed filter is read.
TEST(PackageRunner, OlderPointwiseConvolutionsOverWholePlanesAreRefused) {
  auto panels = pointwisePackage(64, 14);
  ASSERT_TRUE(panels) << panels.error().message();
  ASSERT_TRUE((*panels)->functions().front().plan->steps[0].conv().pointwisePanels());
  Tensor x(TensorType(DType::F32, {1, 64, 14, 14}));
  for (int64_t i = 0; i < x.numElements(); ++i) x.set(i, std::cos(0.3 * static_cast<double>(i)));
  auto module = pointwiseModule(64, 14);
  ASSERT_TRUE(module);
  auto want = interpret(*module->functions().front(), {x});
  ASSERT_TRUE(want) << want.error().message();
  EXPECT_EQ(test::compareTensors(firstOutput(*panels, "forward", x), want->outputs[0], 1e-5, 1e-5), "");
  auto old = rewritten(**panels, [](PackageContents&) {}, 16);
  ASSERT_FALSE(old);
  EXPECT_NE(old.error().message().find("function @forward: the direct convolution at step 0 was compiled by a kfuse "
                                       "that split 1x1 layers over whole planes by channels"),
            std::string::npos)
      << old.error().message();
  auto packed = pointwisePackage(256, 14);
  ASSERT_TRUE(packed) << packed.error().message();
  EXPECT_TRUE(rewritten(**packed, [](PackageContents&) {}, 16));
}

// convPackage(h, wd), whose convolution runs as whole planes, read back as
// format `format` wrote it: the reader's error, "" where it reads it.
std::string wholePlanesReadAs(int h, int wd, uint32_t format) {
  auto pkg = convPackage(h, wd);
  if (!pkg) return "compiling failed: " + pkg.error().message();
  if (!(*pkg)->functions().front().plan->steps[0].conv().wholePlanes()) return "the convolution is not whole planes";
  auto old = rewritten(**pkg, [](PackageContents&) {}, format);
  return old ? "" : old.error().message();
}

// The convolution above (5x32 planes, stride 1, padding 1) runs as whole
// planes, split by channels: a package of format 3, whose code split it by
// rows, is refused rather than run with the wrong units.
TEST(PackageRunner, OlderWholePlaneConvolutionsAreRefused) {
  const std::string refused = wholePlanesReadAs(5, 32, 3);
  EXPECT_NE(refused.find("function @forward: the direct convolution at step 0 was compiled by a kfuse that "
                         "split small planes by rows"),
            std::string::npos)
      << refused;
}

// A 3x3 convolution over 40x40 planes runs whole since format 9
// (ops::kDenseWholePlanePixels), split by channels; format 8's code ran it
// as rows, split by rows, and such a package is refused. The 5x32 one above
// was whole in format 8 too and is still read.
TEST(PackageRunner, OlderLargeWholePlaneConvolutionsAreRefused) {
  const std::string refused = wholePlanesReadAs(40, 40, 8);
  EXPECT_NE(refused.find("function @forward: the direct convolution at step 0 was compiled by a kfuse that "
                         "ran planes past 32x32 as rows"),
            std::string::npos)
      << refused;
  EXPECT_EQ(wholePlanesReadAs(5, 32, 8), "");
}

// A mean cross-entropy's gradient divides by a count its kernel folds in a
// prologue; format 8's code folds it over every row in each thread's range,
// format 7's over the range only. A format-7 training package with such a
// kernel is refused; one without (inference) loads.
TEST(PackageRunner, OlderKernelsWithAPrologueAreRefused) {
  auto train = compileExample("tests/lit/Inputs/train/tiny.kir", true);
  const Package& pkg = *train;
  bool prologue = false;
  for (const PackageFunction& f : pkg.functions())
    for (const kernel::Kernel& k : f.plan->kernels) prologue |= !k.prologue.empty();
  ASSERT_TRUE(prologue);
  auto old = rewritten(pkg, [](PackageContents&) {}, 7);
  ASSERT_FALSE(old);
  EXPECT_NE(old.error().message().find("was compiled by a kfuse that ran kernels with a prologue on one thread"),
            std::string::npos)
      << old.error().message();
  EXPECT_TRUE(rewritten(pkg, [](PackageContents&) {}, 8));
  auto inference = compileExample("examples/mlp/mlp.kir", false);
  auto older = rewritten(*inference, [](PackageContents&) {}, 7);
  EXPECT_TRUE(older) << older.error().message();
}

// The package's plan with no GEMM marked to read B packed (as format 12
// and older wrote them).
void unmarkGemms(PackageContents& c) {
  Plan plan = *c.functions[0].plan;
  for (Step& s : plan.steps)
    if (s.kind() == StepKind::Gemm) s.gemm().packedB = false;
  c.functions[0].plan = std::make_shared<const Plan>(std::move(plan));
}

// An inference package's GEMMs read packed weights, marked so in the plan
// and listed, and give what BLAS gives (a package that marks and lists
// none, as older ones, calls BLAS); a listing that names a step which is no
// such GEMM, or that disagrees with the plan's marks, is refused; format
// 12's list marks its plans when read.
TEST(PackageRunner, PackedGemmsRunWhereThePackageSaysSo) {
  auto pkg = compileExample("examples/mlp/mlp.kir", false);
  const PackageFunction& f = pkg->functions().front();
  ASSERT_EQ(f.packedGemms, (std::vector<size_t>{0, 1, 2}));
  for (size_t s : f.packedGemms) EXPECT_TRUE(f.plan->steps[s].gemm().packedB);
  Tensor x(f.inputs[0].type);
  for (int64_t i = 0; i < x.numElements(); ++i) x.set(i, std::cos(0.3 * static_cast<double>(i)));
  auto blas = rewritten(*pkg, [](PackageContents& c) {
    unmarkGemms(c);
    c.functions[0].packedGemms.clear();
    c.functions[0].packedEpilogues.clear();
  });
  ASSERT_TRUE(blas) << blas.error().message();
  Tensor packed = firstOutput(pkg, f.name, x), library = firstOutput(*blas, f.name, x);
  ASSERT_EQ(packed.numElements(), library.numElements());
  for (int64_t i = 0; i < packed.numElements(); ++i) EXPECT_NEAR(packed.at(i), library.at(i), 1e-6) << i;

  auto outside = withSteps(*pkg, &PackageFunction::packedEpilogues, {0, 1});
  ASSERT_FALSE(outside);
  EXPECT_NE(outside.error().message().find("function @forward: the packed GEMM at step 2 was compiled without its "
                                           "epilogue, and this kfuse would run it inside"),
            std::string::npos)
      << outside.error().message();

  auto wrong = withSteps(*pkg, &PackageFunction::packedGemms, {7});
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message().find("function @forward: packed GEMM at step 7, which is not a GEMM whose B stays "
                                         "constant"),
            std::string::npos)
      << wrong.error().message();

  auto unlisted = withSteps(*pkg, &PackageFunction::packedGemms, {0, 1});
  ASSERT_FALSE(unlisted);
  EXPECT_NE(unlisted.error().message().find("function @forward: the plan marks the GEMM at step 2 to read B packed, "
                                            "and the package does not list it among its packed GEMMs"),
            std::string::npos)
      << unlisted.error().message();
  auto listedOnly = rewritten(*pkg, unmarkGemms);
  ASSERT_FALSE(listedOnly);
  EXPECT_NE(listedOnly.error().message().find("function @forward: the GEMM at step 0 was compiled to read B packed, "
                                              "and its plan does not say so"),
            std::string::npos)
      << listedOnly.error().message();
  auto older = rewritten(*pkg, unmarkGemms, 12);
  ASSERT_TRUE(older) << older.error().message();
  for (size_t s : f.packedGemms) EXPECT_TRUE((*older)->functions().front().plan->steps[s].gemm().packedB);
  Tensor fromOlder = firstOutput(*older, f.name, x);
  ASSERT_EQ(fromOlder.numElements(), packed.numElements());
  for (int64_t i = 0; i < packed.numElements(); ++i) EXPECT_EQ(fromOlder.at(i), packed.at(i)) << i;
}

TEST(PackageRunner, RefusesCodeForAnotherMachine) {
  auto pkg = compileExample("examples/mlp/mlp.kir", false);
  auto arm = PackageRunner::create(withCpu(*pkg, "aarch64-unknown-linux-gnu", {}));
  ASSERT_FALSE(arm);
  EXPECT_NE(arm.error().message().find("rewritten.kfpkg: the package's kernels cannot run here: compiled for "
                                       "aarch64-unknown-linux-gnu, and this machine is x86_64"),
            std::string::npos)
      << arm.error().message();
}

TEST(PackageRunner, FeatureCheckNamesWhatTheCpuLacks) {
  // An AVX2 machine asked to run AVX-512 code; features it cannot tell
  // (tuning flags) are not held against the package.
  auto avx2Only = [](std::string_view f) -> std::optional<bool> {
    if (f == "avx2" || f == "fma") return true;
    if (f.starts_with("avx512")) return false;
    return std::nullopt;
  };
  auto s = checkFeatures({"avx2", "avx512f", "fma", "avx512bw", "fast-gather"}, avx2Only);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message(),
            "compiled for a CPU with avx512f, avx512bw, which this CPU lacks (compile with --cpu for an older CPU, "
            "e.g. --cpu=x86-64-v3)");
  EXPECT_TRUE(checkFeatures({"avx2", "fma", "fast-gather"}, avx2Only));
}

TEST(PackageRunner, HostRunsWhatItWasCompiledFor) {
  auto pkg = compileExample("examples/mlp/mlp.kir", false);
  EXPECT_TRUE(checkHostRuns(pkg->meta().cpuTriple, pkg->meta().cpuFeatures));
  EXPECT_FALSE(pkg->meta().cpuFeatures.empty());
}

}  // namespace
}  // namespace kfuse
