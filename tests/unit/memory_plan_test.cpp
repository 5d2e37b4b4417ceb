// Buffer planning, in-place rewriting and the memory report: the verifier
// rejects overlapping buffers, the packer's arenas on known lifetimes, and on
// real training steps the predicted peak equals what the CPU runner
// allocates, byte for byte; in-place and poisoned runs give the results of
// plain ones.
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>

#include "codegen/backend.h"
#include "codegen/plan/buffer_plan.h"
#include "codegen/plan/memory_report.h"
#include "codegen/plan/plan_builder.h"
#include "frontend/trace/trace.h"
#include "ir/parser.h"
#include "ir/specialize.h"
#include "runtime/cpu_runner.h"
#include "codegen/trainer.h"
#include "tests/unit/test_util.h"

namespace kfuse {
namespace {

// A plan of `lifetimes.size()` f32 Temps of the given element counts, each
// touched by one reference step per step of its lifetime; only what buffer
// planning reads is filled in.
Plan lifetimePlan(const std::vector<std::pair<int, int>>& lifetimes, const std::vector<int64_t>& elements) {
  Plan p;
  p.function = "test";
  int steps = 0;
  for (auto [first, last] : lifetimes) steps = std::max(steps, last + 1);
  p.steps.resize(static_cast<size_t>(steps));
  for (Step& s : p.steps) s.body = ReferenceOp{};
  for (size_t i = 0; i < lifetimes.size(); ++i) {
    PlanBuffer b;
    b.name = str("%t", i);
    b.type = TensorType(DType::F32, {elements[i]});
    p.buffers.push_back(b);
    for (int s = lifetimes[i].first; s <= lifetimes[i].second; ++s)
      p.steps[static_cast<size_t>(s)].reference().outputs.push_back(static_cast<int>(i));
  }
  return p;
}

TEST(BufferPlan, VerifierRejectsOverlappingLiveBuffers) {
  // t0 lives over steps 0..1, t1 over 1..2: both alive at step 1.
  Plan p = lifetimePlan({{0, 1}, {1, 2}}, {64, 64});
  computeLifetimes(p);
  p.buffers[0].offset = 0;
  p.buffers[1].offset = 0;  // deliberately on top of t0
  p.arenaBytes = 256;
  Status s = verifyBufferPlan(p);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("b0 (%t0) [0, 256) live 0..1 and b1 (%t1) [0, 256) live 1..2 overlap"),
            std::string::npos)
      << s.error().message();
  // Misaligned and out of the arena are reported too.
  p.buffers[1].offset = 128;
  s = verifyBufferPlan(p);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("not 256-byte aligned"), std::string::npos) << s.error().message();
  EXPECT_NE(s.error().message().find("ends past its region of 256 bytes"), std::string::npos);
  // Apart, they are fine.
  p.buffers[1].offset = 256;
  p.arenaBytes = 512;
  EXPECT_TRUE(verifyBufferPlan(p));
}

TEST(BufferPlan, BuffersWithDisjointLifetimesShareBytes) {
  // A chain: each buffer dies where the next is born, so at most two are
  // alive; the arena needs two slots of 1 KiB (256 floats each).
  Plan p = lifetimePlan({{0, 1}, {1, 2}, {2, 3}, {3, 4}}, {256, 256, 256, 256});
  auto r = planBuffers(p);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(p.arenaBytes, 2048u);
  ArenaBounds b = arenaBounds(p);
  EXPECT_EQ(b.lowerBound, 2048u);
  EXPECT_EQ(b.noReuse, 4096u);
  EXPECT_EQ(p.buffers[0].offset, p.buffers[2].offset);
  EXPECT_EQ(p.buffers[1].offset, p.buffers[3].offset);
}

TEST(BufferPlan, BestOrderWins) {
  // Sizes 4, 2, 2 (KiB) with lifetimes [0,1], [0,0], [1,1] and 2 KiB at [2,2]:
  // the lower bound is 6 KiB and the packer must reach it.
  Plan p = lifetimePlan({{0, 1}, {0, 0}, {1, 1}, {2, 2}}, {1024, 512, 512, 512});
  auto r = planBuffers(p);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(p.arenaBytes, 6144u);
  EXPECT_EQ(r->sizes.size(), 4u);
  for (uint64_t s : r->sizes) EXPECT_GE(s, p.arenaBytes);
}

TEST(BufferPlan, RandomLifetimesPackWithinBoundsAndVerify) {
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<std::pair<int, int>> lifetimes;
    std::vector<int64_t> elements;
    for (int i = 0; i < 60; ++i) {
      int first = static_cast<int>(rng() % 40), len = static_cast<int>(rng() % 8);
      lifetimes.emplace_back(first, first + len);
      elements.push_back(1 + static_cast<int64_t>(rng() % 5000));
    }
    Plan p = lifetimePlan(lifetimes, elements);
    auto r = planBuffers(p);  // runs the verifier
    ASSERT_TRUE(r) << r.error().message();
    ArenaBounds b = arenaBounds(p);
    EXPECT_GE(p.arenaBytes, b.lowerBound);
    EXPECT_LE(p.arenaBytes, b.noReuse);
    EXPECT_EQ(p.arenaBytes, *std::min_element(r->sizes.begin(), r->sizes.end()));
  }
}

// %c = log(exp(x)) + exp(x), whose plan claims %a = exp(x) dies at step 1
// although step 2 reads it.
constexpr const char* kExpLogAdd = R"(module @m {
  func @f(%x: f32[4]) -> (f32[4]) {
    %a = exp %x : f32[4]
    %b = log %a : f32[4]
    %c = add %b, %a : f32[4]
    return %c
  }
})";

std::shared_ptr<const Plan> planWithShortenedLifetime(const Module& m) {
  auto plan = buildPlan(*m.functions().front(), {.inplace = false});
  EXPECT_TRUE(plan) << plan.error().message();
  if (!plan) return nullptr;
  EXPECT_EQ(plan->buffers[1].name, "%a");
  EXPECT_EQ(plan->buffers[1].lastUse, 2);
  plan->buffers[1].lastUse = 1;
  return std::make_shared<const Plan>(*plan);
}

// Poisoning must turn a read past a buffer's recorded lifetime into NaN:
// shorten one lifetime by hand and the poisoned run's result goes wrong
// while the plain run's stays right.
TEST(Poisoning, ReadAfterRecordedLifetimeGivesNaN) {
  auto m = parseModule(kExpLogAdd, "poison.kir", {});
  ASSERT_TRUE(m) << m.error().message();
  auto shared = planWithShortenedLifetime(**m);
  ASSERT_TRUE(shared);
  Tensor x(TensorType(DType::F32, {4}));
  for (int64_t i = 0; i < 4; ++i) x.set(i, 0.5 * static_cast<double>(i));
  CpuRunner plain(shared, {}, {.poison = false}), poisoned(shared, {}, {.poison = true});
  auto good = plain.run(**m, {x});
  auto bad = poisoned.run(**m, {x});
  ASSERT_TRUE(good && bad);
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(good->outputs[0].at(i), 0.5 * static_cast<double>(i) + std::exp(0.5 * static_cast<double>(i)), 1e-5);
    EXPECT_TRUE(std::isnan(bad->outputs[0].at(i))) << i;
  }
}

// The build scripts/test.sh runs the whole suite with a second time
// (-DKFUSE_POISON_BY_DEFAULT=ON) must poison with default options, and
// the ordinary build must not.
TEST(Poisoning, DefaultFollowsTheBuild) {
  auto m = parseModule(kExpLogAdd, "poison.kir", {});
  ASSERT_TRUE(m) << m.error().message();
  auto shared = planWithShortenedLifetime(**m);
  ASSERT_TRUE(shared);
  CpuRunner runner(shared, {}, {});
  auto out = runner.run(**m, {Tensor(TensorType(DType::F32, {4}))});
  ASSERT_TRUE(out) << out.error().message();
  EXPECT_EQ(std::isnan(out->outputs[0].at(0)), KFUSE_POISONED_BUILD != 0);
  EXPECT_EQ(ExecutionOptions{}.poison, KFUSE_POISONED_BUILD != 0);
}

struct SpiralMlp : nn::Module {
  SpiralMlp() : Module("SpiralMlp") {
    fc1 = registerModule("fc1", std::make_shared<nn::Linear>(2, 64));
    fc2 = registerModule("fc2", std::make_shared<nn::Linear>(64, 64));
    fc3 = registerModule("fc3", std::make_shared<nn::Linear>(64, 3));
  }
  trace::Tensor forward(const trace::Tensor& x) override {
    return fc3->forward(trace::relu(fc2->forward(trace::relu(fc1->forward(x)))));
  }
  std::shared_ptr<nn::Linear> fc1, fc2, fc3;
};

struct SmallCnn : nn::Module {
  SmallCnn() : Module("SmallCnn") {
    conv1 = registerModule("conv1", std::make_shared<nn::Conv2d>(3, 8, 3, nn::Conv2dOptions{.padding = 1}));
    bn1 = registerModule("bn1", std::make_shared<nn::BatchNorm2d>(8));
    conv2 = registerModule("conv2", std::make_shared<nn::Conv2d>(8, 16, 3, nn::Conv2dOptions{.padding = 1}));
    pool = registerModule("pool", std::make_shared<nn::AdaptiveAvgPool2d>(1));
    flatten = registerModule("flatten", std::make_shared<nn::Flatten>());
    head = registerModule("head", std::make_shared<nn::Linear>(16, 4));
  }
  trace::Tensor forward(const trace::Tensor& x) override {
    trace::Tensor h = trace::relu(bn1->forward(conv1->forward(x)));
    return head->forward(flatten->forward(pool->forward(trace::relu(conv2->forward(h)))));
  }
  std::shared_ptr<nn::Conv2d> conv1, conv2;
  std::shared_ptr<nn::BatchNorm2d> bn1;
  std::shared_ptr<nn::AdaptiveAvgPool2d> pool;
  std::shared_ptr<nn::Flatten> flatten;
  std::shared_ptr<nn::Linear> head;
};

Tensor ramp(const TensorType& t, double scale) {
  Tensor x(t);
  for (int64_t i = 0; i < x.numElements(); ++i) x.set(i, scale * (static_cast<double>((i * 37) % 101) / 101.0 - 0.5));
  return x;
}

// The cpu runner's steps write a run's outputs straight into the tensors
// run() returns: each run's are its own (a second run leaves the first's
// alone), cache-line aligned, and right where an output is also the input,
// or returned twice (those two are copied out of the arena as before).
TEST(Outputs, EachRunReturnsTensorsOfItsOwn) {
  auto m = parseModule(R"(module @m {
  func @f(%x: f32[1000]) -> (f32[1000], f32[1000], f32[1000], f32[1000]) {
    %a = exp %x : f32[1000]
    %b = add %a, %x : f32[1000]
    %c = mul %b, %b : f32[1000]
    return %c, %b, %b, %x
  }
})",
                       "outputs.kir", {});
  ASSERT_TRUE(m) << m.error().message();
  auto plan = buildPlan(*(*m)->functions().front(), {});
  ASSERT_TRUE(plan) << plan.error().message();
  CpuRunner runner(std::make_shared<const Plan>(std::move(*plan)), {}, {});
  const TensorType t(DType::F32, {1000});
  const Tensor x1 = ramp(t, 1.0), x2 = ramp(t, -2.0);
  auto first = runner.run(**m, {x1});
  ASSERT_TRUE(first) << first.error().message();
  auto second = runner.run(**m, {x2});
  ASSERT_TRUE(second) << second.error().message();
  for (auto [r, x] : {std::pair{&*first, &x1}, std::pair{&*second, &x2}}) {
    ASSERT_EQ(r->outputs.size(), 4u);
    for (const Tensor& out : r->outputs) EXPECT_EQ(reinterpret_cast<uintptr_t>(out.data()) % 64, 0u);
    for (int64_t i = 0; i < 1000; ++i) {
      const double v = x->at(i), b = static_cast<double>(std::exp(static_cast<float>(v)) + static_cast<float>(v));
      ASSERT_NEAR(r->outputs[0].at(i), b * b, 1e-4 * b * b + 1e-6) << i;
      ASSERT_NEAR(r->outputs[1].at(i), b, 1e-5 * std::abs(b) + 1e-6) << i;
      ASSERT_EQ(r->outputs[2].at(i), r->outputs[1].at(i)) << i;
      ASSERT_EQ(r->outputs[3].at(i), v) << i;
    }
  }
}

Tensor labels(int64_t n, int64_t classes) {
  Tensor y(TensorType(DType::I64, {n}));
  for (int64_t i = 0; i < n; ++i) y.as<int64_t>()[i] = i % classes;
  return y;
}

std::unique_ptr<Trainer> makeTrainer(nn::Module& model, const TensorType& input, ExecutionOptions exec) {
  nn::manualSeed(0);
  model.train();
  auto traced = nn::trace(model, input);
  EXPECT_TRUE(traced) << traced.error().message();
  TrainerOptions o;
  o.target = "cpu";
  o.training.optimizer.kind = OptimizerKind::Adam;
  o.execution = exec;
  auto t = Trainer::create(std::move(*traced), o);
  EXPECT_TRUE(t) << t.error().message();
  return std::move(*t);
}

std::set<std::string> trainableOf(const Module& m) {
  std::set<std::string> out;
  for (const auto& p : m.params())
    if (p->trainable) out.insert(p->name);
  return out;
}

// The report `kfuse memory` prints for the cpu target: the plan's regions
// and what the cpu device adds (packed weights, other threads' im2col
// patch matrices).
MemoryReport cpuReport(const Plan& plan, const std::set<std::string>& trainable, int threads = 0) {
  MemoryReport r = memoryReport(plan, trainable);
  auto d = cpuDeviceBytes(plan, threads);
  EXPECT_TRUE(d) << d.error().message();
  if (d) addDeviceBytes(r, *d);
  return r;
}

// Runs two steps and checks that the runner's allocations are the report's
// predicted peak, exactly; returns the losses.
std::vector<double> stepTwiceCheckingMemory(Trainer& t, const Tensor& x, const Tensor& y, int threads = 0) {
  std::vector<double> losses;
  for (int i = 0; i < 2; ++i) {
    auto loss = t.step({x}, y, 0.01);
    EXPECT_TRUE(loss) << loss.error().message();
    losses.push_back(loss ? *loss : 0);
  }
  const Plan* plan = t.trainPlan();
  EXPECT_NE(plan, nullptr);
  MemoryReport r = cpuReport(*plan, trainableOf(t.module()), threads);
  EXPECT_EQ(t.deviceBytesAllocated(), r.predictedPeak);
  EXPECT_GT(r.predictedPeak, 0u);
  EXPECT_GE(r.arena, r.lowerBound);
  return losses;
}

TEST(MemoryReport, SpiralTrainingPeakIsWhatTheRunnerAllocates) {
  SpiralMlp model;
  TensorType in(DType::F32, {300, 2});
  auto t = makeTrainer(model, in, {});
  auto losses = stepTwiceCheckingMemory(*t, ramp(in, 2.0), labels(300, 3));
  const Plan& plan = *t->trainPlan();
  MemoryReport r = memoryReport(plan, trainableOf(t->module()));
  // 2x64 + 64 + 64x64 + 64 + 64x3 + 3 floats of weights; Adam keeps two
  // moments of each.
  uint64_t weights = (2 * 64 + 64 + 64 * 64 + 64 + 64 * 3 + 3) * 4;
  EXPECT_EQ(r.parameters, weights);
  EXPECT_EQ(r.optimizerState, 2 * weights);
  EXPECT_EQ(r.inputs, 300u * 2 * 4 + 300 * 8 + 4 + 8);  // x, labels, lr, step
  // Every parameter and moment is written in place by its update.
  size_t overParams = 0;
  for (const PlanBuffer& b : plan.buffers)
    if (b.inPlace && plan.buffers[static_cast<size_t>(b.aliasOf)].kind == BufferKind::Param) ++overParams;
  EXPECT_EQ(overParams, 18u);
  // Each weight's gradient is one buffer the update reads (a GEMM's result
  // for the weights, a column sum for the biases), known from the update
  // ops' gradient operands rather than guessed from sizes.
  EXPECT_EQ(r.gradients, weights);
  size_t gradientBuffers = 0;
  for (const PlanBuffer& b : plan.buffers) gradientBuffers += b.gradient;
  EXPECT_EQ(gradientBuffers, 6u);

  // Same losses without in-place rewriting, and with poisoning on.
  SpiralMlp plainModel;
  auto plain = makeTrainer(plainModel, in, {.inplace = false, .poison = false});
  auto plainLosses = stepTwiceCheckingMemory(*plain, ramp(in, 2.0), labels(300, 3));
  SpiralMlp poisonedModel;
  auto poisoned = makeTrainer(poisonedModel, in, {.inplace = true, .poison = true});
  auto poisonedLosses = stepTwiceCheckingMemory(*poisoned, ramp(in, 2.0), labels(300, 3));
  EXPECT_EQ(losses, plainLosses);
  EXPECT_EQ(losses, poisonedLosses);
  for (const PlanBuffer& b : plain->trainPlan()->buffers) EXPECT_FALSE(b.inPlace) << b.name;
}

TEST(MemoryReport, CnnTrainingAndInferencePeakIsWhatTheRunnerAllocates) {
  SmallCnn model;
  TensorType in(DType::F32, {4, 3, 12, 12});
  // Which convolutions run directly depends on the CPU's vectors: named,
  // so that the expectation is the same on every machine.
  const std::string cpu = "x86-64-v2";
  // Backward, im2col convolutions split by images (dx) and groups (dw):
  // with 3 threads the runner holds two more patch matrices, counted too.
  auto split = makeTrainer(model, in, {.inplace = true, .poison = true, .cpu = cpu, .threads = 3});
  auto splitLosses = stepTwiceCheckingMemory(*split, ramp(in, 1.0), labels(4, 4), 3);
  EXPECT_GT(cpuReport(*split->trainPlan(), trainableOf(split->module()), 3).threadScratch, 0u);
  auto t = makeTrainer(model, in, {.inplace = true, .poison = true, .cpu = cpu, .threads = 1});
  auto losses = stepTwiceCheckingMemory(*t, ramp(in, 1.0), labels(4, 4), 1);
  EXPECT_TRUE(std::isfinite(losses[1]));
  EXPECT_EQ(losses, splitLosses);  // results do not depend on the thread count
  EXPECT_EQ(cpuReport(*t->trainPlan(), trainableOf(t->module()), 1).threadScratch, 0u);
  MemoryReport r = memoryReport(*t->trainPlan(), trainableOf(t->module()));
  // conv1: 3*3*3 taps x 144 pixels, conv2: 8*3*3 x 144, f32, for each
  // convolution the CPU runs as im2col + GEMM; those it runs as direct
  // convolutions (12-pixel rows fill 4 lanes) get none.
  auto planning = cpuPlanOptions(cpu);
  ASSERT_TRUE(planning) << planning.error().message();
  ConvWorkspacePolicy im2col = planning->convWorkspace;
  uint64_t patches = 0;
  for (const Step& s : t->trainPlan()->steps) {
    if (s.kind() != StepKind::Conv) continue;
    bool wanted = !im2col || im2col(s.conv(), DType::F32);
    EXPECT_EQ(s.conv().workspace >= 0, wanted) << s.name;
    const ConvSpec& c = s.conv();
    if (wanted) patches += static_cast<uint64_t>(c.c / c.groups * c.kh * c.kw * c.oh * c.ow) * 4u;
  }
  EXPECT_GE(r.workspace, patches);
  EXPECT_EQ(r.workspace == 0, patches == 0);
  EXPECT_GT(r.savedActivations, 0u);
  EXPECT_GT(r.otherBuffers, 0u);  // running statistics

  // Inference (evaluation mode): the forward's own runner.
  auto out = t->eval({ramp(in, 1.0)});
  ASSERT_TRUE(out) << out.error().message();
  auto exec = createExecutor("cpu", {.inplace = true, .poison = true, .cpu = cpu, .threads = 3});
  ASSERT_TRUE(exec);
  auto again = (*exec)->run(t->forward(), {ramp(in, 1.0)});
  ASSERT_TRUE(again) << again.error().message();
  const Plan* fwd = (*exec)->planFor(t->forward());
  ASSERT_NE(fwd, nullptr);
  EXPECT_EQ((*exec)->deviceBytesAllocated(), cpuReport(*fwd, trainableOf(t->module()), 3).predictedPeak);
  EXPECT_EQ(test::compareTensors(again->outputs[0], (*out)[0], 0, 0), "");
}


// A traced transformer encoder layer re-typed to other batch sizes
// (`kfuse memory --batch`): its head reshapes infer the batch, so the plan
// follows it, runs like the interpreter, and allocates the predicted peak.
TEST(MemoryReport, TracedTransformerReBatches) {
  nn::manualSeed(0);
  nn::TransformerEncoderLayer layer(16, 2, {.dimFeedforward = 32, .dropout = 0.0, .batchFirst = true});
  layer.eval();
  uint64_t previousPeak = 0;
  for (int64_t batch : {1, 5}) {
    auto m = nn::trace(layer, TensorType(DType::F32, {2, 6, 16}));
    ASSERT_TRUE(m) << m.error().message();
    Graph& forward = *(*m)->functions().front();
    ASSERT_TRUE(specializeBatch(forward, batch).ok());
    TensorType in(DType::F32, {batch, 6, 16});
    ASSERT_EQ(forward.results()[0]->type(), in);
    auto want = interpret(forward, {ramp(in, 1.0)});
    ASSERT_TRUE(want) << want.error().message();
    auto exec = createExecutor("cpu", {.inplace = true, .poison = true});
    ASSERT_TRUE(exec);
    auto got = (*exec)->run(forward, {ramp(in, 1.0)});
    ASSERT_TRUE(got) << got.error().message();
    EXPECT_EQ(test::compareTensors(got->outputs[0], want->outputs[0], 1e-5, 1e-5), "") << "batch " << batch;
    const Plan* plan = (*exec)->planFor(forward);
    ASSERT_NE(plan, nullptr);
    uint64_t peak = cpuReport(*plan, trainableOf(**m)).predictedPeak;
    EXPECT_EQ((*exec)->deviceBytesAllocated(), peak);
    EXPECT_GT(peak, previousPeak);
    previousPeak = peak;
  }
}


// Training on the cpu target keeps the weights and optimizer state in the
// runner between steps (nothing copied out per step) and syncs the module
// when it is read; the losses and the synced weights are the interpreter's.
// A plan that updates parameters before its loss (batch norm's running
// statistics) is not kept, so a non-finite loss can still change nothing.
std::map<std::string, Tensor> snapshot(Trainer& t) {
  std::map<std::string, Tensor> out;
  for (const auto& p : t.module().params()) out.emplace(p->name, *p->data);
  return out;
}

// Constructors draw the initial weights: a model built right after seeding.
std::unique_ptr<SpiralMlp> seededSpiral() {
  nn::manualSeed(0);
  return std::make_unique<SpiralMlp>();
}

TEST(TrainerState, KeptOnTheDeviceAndSyncedWhenRead) {
  TensorType in(DType::F32, {300, 2});
  auto cpuModel = seededSpiral();
  auto cpu = makeTrainer(*cpuModel, in, {});
  auto refModel = seededSpiral();
  SpiralMlp& ref0 = *refModel;
  nn::manualSeed(0);
  ref0.train();
  auto traced = nn::trace(ref0, in);
  ASSERT_TRUE(traced);
  TrainerOptions o;
  o.target = "interpreter";
  o.training.optimizer.kind = OptimizerKind::Adam;
  auto ref = Trainer::create(std::move(*traced), o);
  ASSERT_TRUE(ref) << ref.error().message();
  for (int i = 0; i < 3; ++i) {
    auto a = cpu->step({ramp(in, 2.0)}, labels(300, 3), 0.01);
    auto b = (*ref)->step({ramp(in, 2.0)}, labels(300, 3), 0.01);
    ASSERT_TRUE(a && b);
    EXPECT_NEAR(*a, *b, 1e-5 * std::abs(*b));
  }
  auto got = snapshot(*cpu), want = snapshot(**ref);
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, t] : want) EXPECT_EQ(test::compareTensors(got.at(name), t, 1e-5, 1e-5), "") << name;

  // The executor keeps the spiral step's state, and the CNN's (its running
  // statistics are written to their parameters after the loss, like the
  // weights). A step that overwrites a parameter before its loss is not
  // kept: a non-finite loss could no longer leave everything unchanged.
  auto exec = createExecutor("cpu", {});
  ASSERT_TRUE(exec);
  std::vector<Tensor> args = {ramp(in, 2.0), labels(300, 3), Tensor::scalar(DType::F32, 0.01),
                              Tensor::scalar(DType::I64, 4)};
  bool kept = false;
  ASSERT_TRUE((*exec)->runTrainingStep(cpu->trainStep(), args, 0, kept));
  EXPECT_TRUE(kept);
  SmallCnn cnnModel;
  TensorType image(DType::F32, {4, 3, 12, 12});
  auto cnn = makeTrainer(cnnModel, image, {});
  std::vector<Tensor> cnnArgs = {ramp(image, 1.0), labels(4, 4), Tensor::scalar(DType::F32, 0.01),
                                 Tensor::scalar(DType::I64, 1)};
  ASSERT_TRUE((*exec)->runTrainingStep(cnn->trainStep(), cnnArgs, 0, kept));
  EXPECT_TRUE(kept);
  auto early = parseModule(R"(module @m {
  buffer @s : f32[4] = dense<f32[4]>[1.0, 2.0, 3.0, 4.0]
  func @step(%x: f32[4]) -> (f32[]) {
    %s1 = add @s, %x : f32[4]
    update @s = %s1
    %loss = reduce_sum %s1 {axes = [0]} : f32[]
    return %loss
  }
})",
                           "early.kir", {});
  ASSERT_TRUE(early) << early.error().message();
  const Graph& step = *(*early)->functions().front();
  Tensor x(TensorType(DType::F32, {4}));
  ASSERT_TRUE((*exec)->runTrainingStep(step, {x}, 0, kept));
  EXPECT_FALSE(kept);
  ASSERT_TRUE((*exec)->runTrainingStep(step, {x}, -1, kept));  // unguarded: kept
  EXPECT_TRUE(kept);
}

TEST(TrainerState, NonFiniteLossChangesNoParameter) {
  TensorType in(DType::F32, {300, 2});
  auto model = seededSpiral();
  auto t = makeTrainer(*model, in, {});
  auto twinModel = seededSpiral();
  auto twin = makeTrainer(*twinModel, in, {});
  ASSERT_TRUE(t->step({ramp(in, 2.0)}, labels(300, 3), 0.01));
  ASSERT_TRUE(twin->step({ramp(in, 2.0)}, labels(300, 3), 0.01));
  auto before = snapshot(*t);
  Tensor bad = ramp(in, 2.0);
  bad.set(0, std::numeric_limits<double>::quiet_NaN());
  auto nan = t->step({bad}, labels(300, 3), 0.01);
  ASSERT_FALSE(nan);
  EXPECT_NE(nan.error().message().find("the weights were not updated"), std::string::npos);
  auto after = snapshot(*t);
  for (const auto& [name, v] : before) EXPECT_TRUE(after.at(name).identical(v)) << name;
  // The next good step continues from the state before the NaN batch.
  auto a = t->step({ramp(in, 1.0)}, labels(300, 3), 0.01);
  auto b = twin->step({ramp(in, 1.0)}, labels(300, 3), 0.01);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, *b);

  // Without in-place rewriting no launch writes a parameter: the kept
  // updates are copied into them after the last step, after the check.
  auto plainModel = seededSpiral();
  auto plain = makeTrainer(*plainModel, in, {.inplace = false});
  ASSERT_TRUE(plain->step({ramp(in, 2.0)}, labels(300, 3), 0.01));
  auto plainBefore = snapshot(*plain);
  ASSERT_FALSE(plain->step({bad}, labels(300, 3), 0.01));
  auto plainAfter = snapshot(*plain);
  for (const auto& [name, v] : plainBefore) EXPECT_TRUE(plainAfter.at(name).identical(v)) << name;
}

}  // namespace
}  // namespace kfuse
