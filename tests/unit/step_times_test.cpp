// Per-step times (runtime/step_times.h, `kfuse profile`): with profiling on,
// the cpu runner and the cpu executor record one time per plan step per
// complete run and change nothing else (outputs, launches); off, they record
// nothing; targets that cannot profile say so.
#include <chrono>
#include <cmath>
#include <limits>

#include "codegen/backend.h"
#include "codegen/plan/plan_builder.h"
#include "ir/parser.h"
#include "runtime/cpu_runner.h"
#include "codegen/trainer.h"
#include "tests/unit/test_util.h"

namespace kfuse {
namespace {

// The spiral MLP, fused for the cpu target: GEMM steps with epilogues and
// kernel bundles.
std::unique_ptr<Module> fusedMlp() {
  auto m = parseModuleFile(test::sourceDir() + "/examples/mlp/mlp.kir");
  EXPECT_TRUE(m) << m.error().message();
  if (!m) return nullptr;
  auto backend = backendFor("cpu");
  EXPECT_TRUE(backend && prepareModule(**m, *backend));
  return std::move(*m);
}

Tensor ramp(const TensorType& t) {
  Tensor x(t);
  for (int64_t i = 0; i < x.numElements(); ++i) x.set(i, std::sin(0.37 * static_cast<double>(i)));
  return x;
}

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

TEST(StepTimes, CpuRunnerTimesEveryStepOfEveryRun) {
  auto m = fusedMlp();
  ASSERT_TRUE(m);
  const Graph& fn = *m->functions().front();
  auto plan = buildPlan(fn);
  ASSERT_TRUE(plan) << plan.error().message();
  ASSERT_GE(plan->steps.size(), 3u);
  auto shared = std::make_shared<const Plan>(std::move(*plan));
  CpuRunner plain(shared, {}, {.poison = false}), timed(shared, {}, {.poison = false, .profile = true});
  std::vector<Tensor> args = {ramp(fn.argument(0)->type())};
  constexpr int kRuns = 4;
  auto start = std::chrono::steady_clock::now();
  for (int run = 0; run < kRuns; ++run) {
    auto want = plain.run(*m, args);
    auto got = timed.run(*m, args);
    ASSERT_TRUE(want && got);
    ASSERT_EQ(got->outputs.size(), want->outputs.size());
    for (size_t i = 0; i < want->outputs.size(); ++i)
      EXPECT_EQ(test::compareTensors(got->outputs[i], want->outputs[i], 0, 0), "") << "run " << run;
  }
  double wall = seconds(start);
  EXPECT_EQ(timed.launches(), plain.launches());
  EXPECT_EQ(timed.launches(), kRuns * shared->launches());
  const StepTimes& t = timed.stepTimes();
  EXPECT_EQ(t.runs, static_cast<uint64_t>(kRuns));
  ASSERT_EQ(t.seconds.size(), shared->steps.size());
  double sum = 0;
  for (double s : t.seconds) {
    EXPECT_GE(s, 0);
    sum += s;
  }
  // The steps took time, and no more than the runs around them did.
  EXPECT_GT(sum, 0);
  EXPECT_LT(sum, wall);
  // Off: nothing recorded.
  EXPECT_TRUE(plain.stepTimes().seconds.empty());
  EXPECT_EQ(plain.stepTimes().runs, 0u);
}

// A run the finite-loss guard stops before its last step is no run.
TEST(StepTimes, RunStoppedByTheGuardAddsNothing) {
  auto m = parseModule(R"(module @m {
  buffer @s : f32[4] = dense<f32[4]>[1.0, 2.0, 3.0, 4.0]
  func @step(%x: f32[4]) -> (f32[]) {
    %loss = reduce_sum %x {axes = [0]} : f32[]
    %s1 = add @s, %x : f32[4]
    update @s = %s1
    return %loss
  }
})",
                       "guard.kir", {});
  ASSERT_TRUE(m) << m.error().message();
  auto plan = buildPlan(*(*m)->functions().front());
  ASSERT_TRUE(plan) << plan.error().message();
  auto shared = std::make_shared<const Plan>(std::move(*plan));
  CpuRunner runner(shared, {}, {.poison = false, .profile = true});
  ASSERT_TRUE(runner.canKeepState() && runner.canGuard(0));
  Tensor x(TensorType(DType::F32, {4}));
  ASSERT_TRUE(runner.run(**m, {x}, {.keepState = true, .finiteOutput = 0}));
  EXPECT_EQ(runner.stepTimes().runs, 1u);
  x.set(0, std::numeric_limits<double>::quiet_NaN());
  uint64_t before = runner.launches();
  ASSERT_TRUE(runner.run(**m, {x}, {.keepState = true, .finiteOutput = 0}));
  ASSERT_LT(runner.launches() - before, shared->launches()) << "the guard did not stop the run";
  EXPECT_EQ(runner.stepTimes().runs, 1u);
}

TEST(StepTimes, CpuExecutorProfilesWithoutChangingResults) {
  auto m = fusedMlp();
  ASSERT_TRUE(m);
  const Graph& fn = *m->functions().front();
  ExecutionOptions on;
  on.profile = true;
  auto timed = createExecutor("cpu", on);
  auto plain = createExecutor("cpu", {});
  ASSERT_TRUE(timed && plain);
  std::vector<Tensor> args = {ramp(fn.argument(0)->type())};
  auto got = (*timed)->run(fn, args);
  auto want = (*plain)->run(fn, args);
  ASSERT_TRUE(got && want);
  EXPECT_EQ(test::compareTensors(got->outputs[0], want->outputs[0], 0, 0), "");
  auto first = (*timed)->stepTimes(fn);
  ASSERT_TRUE(first) << first.error().message();
  ASSERT_TRUE((*timed)->run(fn, args));
  ASSERT_TRUE((*timed)->run(fn, args));
  auto t = (*timed)->stepTimes(fn);
  ASSERT_TRUE(t) << t.error().message();
  const Plan* plan = (*timed)->planFor(fn);
  ASSERT_NE(plan, nullptr);
  EXPECT_EQ(t->runs, 3u);
  ASSERT_EQ(t->seconds.size(), plan->steps.size());
  EXPECT_EQ((*timed)->launches(), 3 * plan->launches());
  // The two runs after the first reading, without it.
  StepTimes later = t->since(*first);
  EXPECT_EQ(later.runs, 2u);
  ASSERT_EQ(later.seconds.size(), plan->steps.size());
  for (size_t i = 0; i < later.seconds.size(); ++i) {
    EXPECT_GE(later.seconds[i], 0) << "step " << i;
    EXPECT_LE(later.seconds[i], t->seconds[i]) << "step " << i;
  }
  auto off = (*plain)->stepTimes(fn);
  ASSERT_FALSE(off);
  EXPECT_NE(off.error().message().find("profiling is off"), std::string::npos) << off.error().message();
}

TEST(StepTimes, TrainingStepIsProfiledThroughTheTrainer) {
  auto create = [](bool profile) {
    auto m = parseModuleFile(test::sourceDir() + "/examples/mlp/mlp.kir");
    EXPECT_TRUE(m) << m.error().message();
    TrainerOptions o;
    o.target = "cpu";
    o.training.optimizer.kind = OptimizerKind::Adam;
    o.execution.profile = profile;
    auto t = Trainer::create(std::move(*m), o);
    EXPECT_TRUE(t) << t.error().message();
    return std::move(*t);
  };
  auto timed = create(true), plain = create(false);
  Tensor x = ramp(TensorType(DType::F32, {256, 2}));
  Tensor y(TensorType(DType::I64, {256}));
  for (int64_t i = 0; i < 256; ++i) y.as<int64_t>()[i] = i % 3;
  for (int step = 0; step < 3; ++step) {
    auto a = timed->step({x}, y, 0.01), b = plain->step({x}, y, 0.01);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(*a, *b) << "step " << step;
  }
  auto t = timed->trainStepTimes();
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(t->runs, 3u);
  ASSERT_NE(timed->trainPlan(), nullptr);
  EXPECT_EQ(t->seconds.size(), timed->trainPlan()->steps.size());
  EXPECT_EQ(timed->launches(), plain->launches());
  EXPECT_FALSE(plain->trainStepTimes());
}

TEST(StepTimes, TargetsThatCannotProfileSaySo) {
  ExecutionOptions on;
  on.profile = true;
  auto interp = createExecutor("interpreter", on);
  ASSERT_FALSE(interp);
  EXPECT_EQ(interp.error().message(), "the interpreter target runs no plan; profile needs cpu or cuda");
  on.cudaGraph = true;
  auto graph = createExecutor("cuda", on);
  ASSERT_FALSE(graph);
  EXPECT_NE(graph.error().message().find("--cuda-graph"), std::string::npos) << graph.error().message();
  // Without profiling, the interpreter has no times to give either.
  auto plain = createExecutor("interpreter", {});
  ASSERT_TRUE(plain);
  auto m = fusedMlp();
  ASSERT_TRUE(m);
  EXPECT_FALSE((*plain)->stepTimes(*m->functions().front()));
}

}  // namespace
}  // namespace kfuse
