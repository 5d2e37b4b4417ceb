// The cuda target on the simulated device (docs/cuda.md, "The simulator"):
// the real CudaRunner, the emitted CUDA C compiled as host C++, every
// launch run by the simulator with CUDA's rules checked. No GPU needed.
//   - every suite model against the reference interpreter (outputs and
//     parameter updates); launches counted equal the program's; the
//     device allocation equals `kfuse memory`'s predicted peak;
//   - spiral training against the cpu target, step by step;
//   - a CUDA Graph replay gives the bits of the plain launches, one launch
//     per replay;
//   - the forward, reverse and random schedules give the same bits;
//   - the multi-tensor optimizer launch cut into chunks gives them too;
//   - programs for the simulator and for a GPU are not mixed up.
// The op cases on the simulated device are sim_op_cases_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "codegen/backend.h"
#include "codegen/cuda/executor.h"
#include "codegen/plan/memory_report.h"
#include "codegen/plan/plan_builder.h"
#include "runtime/cuda/cuda_runner.h"
#include "tests/cuda/suite_models.h"
#include "tests/unit/test_util.h"

namespace kfuse {
namespace {

// Units compiled by g++ are cached under the build folder: the suite
// compiles the same kernels in several tests.
std::string cacheDir() { return std::string(KFUSE_BINARY_DIR) + "/sim-cache"; }

// Buffers are poisoned when their lifetime ends (runtime/poison.h), as in
// the suite's first pass, which leaves the cuda tests out.
cuda::CudaExecutorOptions simOptions() {
  cuda::CudaExecutorOptions o;
  o.simulate = true;
  o.poison = true;
  o.compile.cacheDir = cacheDir();
  o.compile.compileThreads = 2;
  return o;
}

ExecutionOptions simExecution() {
  ExecutionOptions e;
  e.cudaSimulate = true;
  return e;
}

std::vector<Tensor> argsOf(const test::SuiteModel& s) {
  std::vector<Tensor> args = s.sampleInputs;
  if (s.training) {
    args.push_back(s.sampleLabels);
    args.push_back(Tensor::scalar(DType::F32, 0.01));
    Tensor step(TensorType(DType::I64, {}));
    step.as<int64_t>()[0] = 1;
    args.push_back(std::move(step));
  }
  return args;
}

size_t programLaunches(const Plan& plan) {
  auto program = cuda::emitProgram(plan, cuda::CudaCompileOptions{});
  EXPECT_TRUE(program) << program.error().message();
  if (!program) return 0;
  size_t n = 0;
  for (const auto& s : program->steps) n += s.launches.size() + (s.matmul ? 1 : 0);
  return n;
}

class SimSuite : public testing::TestWithParam<std::string> {};

TEST_P(SimSuite, MatchesTheInterpreter) {
  auto model = test::buildSuiteModel(GetParam(), "cuda", simExecution());
  ASSERT_TRUE(model) << model.error().message();
  const Graph& fn = *model->function;
  std::vector<Tensor> args = argsOf(*model);
  auto want = interpret(fn, args);
  ASSERT_TRUE(want) << want.error().message();
  auto exec = cuda::createCudaExecutor(simOptions());
  auto got = exec->run(fn, args);
  ASSERT_TRUE(got) << got.error().message();
  ASSERT_EQ(got->outputs.size(), want->outputs.size());
  for (size_t i = 0; i < got->outputs.size(); ++i)
    EXPECT_EQ(test::compareTensors(got->outputs[i], want->outputs[i], 1e-4, 1e-4), "") << "output " << i;
  EXPECT_EQ(test::compareTrainingUpdates(*got, *want, 1e-4, 1e-4), "");

  const Plan* plan = exec->planFor(fn);
  ASSERT_NE(plan, nullptr);
  // The launches the runner counted are the program's.
  EXPECT_EQ(exec->launches(), programLaunches(*plan));
  // kfuse memory --target=cuda's predicted peak is the allocation, to the byte.
  auto backend = backendFor("cuda");
  ASSERT_TRUE(backend && backend->deviceBytes);
  auto device = backend->deviceBytes(*plan);
  ASSERT_TRUE(device) << device.error().message();
  MemoryReport report = memoryReport(*plan, {});
  addDeviceBytes(report, *device);
  EXPECT_EQ(exec->deviceBytesAllocated(), report.predictedPeak);
}

INSTANTIATE_TEST_SUITE_P(Suite, SimSuite, testing::ValuesIn(test::suiteModelNames()));

TEST(SimTraining, SpiralLossesMatchTheCpuTarget) {
  auto sim = test::buildSuiteModel("spiral_mlp_train", "cuda", simExecution());
  auto cpu = test::buildSuiteModel("spiral_mlp_train", "cpu");
  ASSERT_TRUE(sim) << sim.error().message();
  ASSERT_TRUE(cpu) << cpu.error().message();
  for (int step = 0; step < 5; ++step) {
    auto g = sim->trainer->step(sim->sampleInputs, sim->sampleLabels, 0.01);
    auto c = cpu->trainer->step(cpu->sampleInputs, cpu->sampleLabels, 0.01);
    ASSERT_TRUE(g) << g.error().message();
    ASSERT_TRUE(c) << c.error().message();
    EXPECT_LE(std::fabs(*g - *c), 1e-4 * std::fabs(*c)) << "step " << step << ": simulated " << *g << ", cpu " << *c;
  }
}

TEST(SimGraph, ReplayGivesIdenticalResultsWithOneLaunch) {
  auto model = test::buildSuiteModel("spiral_mlp_train", "cuda");
  ASSERT_TRUE(model) << model.error().message();
  std::vector<Tensor> args = argsOf(*model);
  auto plain = cuda::createCudaExecutor(simOptions());
  cuda::CudaExecutorOptions go = simOptions();
  go.cudaGraph = true;
  auto graph = cuda::createCudaExecutor(go);
  auto want = plain->run(*model->function, args);
  ASSERT_TRUE(want) << want.error().message();
  for (int replay = 0; replay < 3; ++replay) {
    auto got = graph->run(*model->function, args);
    ASSERT_TRUE(got) << got.error().message();
    for (size_t i = 0; i < want->outputs.size(); ++i)
      EXPECT_EQ(test::compareTensors(got->outputs[i], want->outputs[i], 0, 0), "") << "replay " << replay;
    for (const auto& [name, t] : want->updates)
      EXPECT_EQ(test::compareTensors(*got->updates.at(name), *t, 0, 0), "") << "@" << name << ", replay " << replay;
  }
  EXPECT_EQ(graph->launches(), 3u);
}

// A correct kernel gives the same bits whatever order its threads and
// blocks run in (the orders a GPU might pick among).
TEST(SimSchedules, EveryScheduleGivesTheSameBits) {
  auto model = test::buildSuiteModel("cnn_train", "cuda");
  ASSERT_TRUE(model) << model.error().message();
  std::vector<Tensor> args = argsOf(*model);
  std::optional<InterpreterResult> first;
  for (const char* schedule : {"forward", "reverse", "random:1", "random:2"}) {
    cuda::CudaExecutorOptions o = simOptions();
    auto s = cuda::sim::parseSchedule(schedule);
    ASSERT_TRUE(s) << s.error().message();
    o.schedule = *s;
    auto got = cuda::createCudaExecutor(o)->run(*model->function, args);
    ASSERT_TRUE(got) << schedule << ": " << got.error().message();
    if (!first) {
      first = std::move(*got);
      continue;
    }
    for (size_t i = 0; i < first->outputs.size(); ++i)
      EXPECT_EQ(test::compareTensors(got->outputs[i], first->outputs[i], 0, 0), "") << schedule << ", output " << i;
    for (const auto& [name, t] : first->updates)
      EXPECT_EQ(test::compareTensors(*got->updates.at(name), *t, 0, 0), "") << schedule << ", @" << name;
  }
}

// The multi-tensor optimizer launch cut at a parameter limit small enough
// to split every bundle: more launches, the same bits.
TEST(SimMultiTensor, CutLaunchesGiveTheSameBits) {
  auto model = test::buildSuiteModel("mlp784_train", "cuda");
  ASSERT_TRUE(model) << model.error().message();
  std::vector<Tensor> args = argsOf(*model);
  auto whole = cuda::createCudaExecutor(simOptions());
  cuda::CudaExecutorOptions small = simOptions();
  small.compile.emit.maxParamBytes = 64;  // 8 pointers
  auto cut = cuda::createCudaExecutor(small);
  auto want = whole->run(*model->function, args);
  ASSERT_TRUE(want) << want.error().message();
  auto got = cut->run(*model->function, args);
  ASSERT_TRUE(got) << got.error().message();
  EXPECT_GT(cut->launches(), whole->launches());
  for (size_t i = 0; i < want->outputs.size(); ++i)
    EXPECT_EQ(test::compareTensors(got->outputs[i], want->outputs[i], 0, 0), "") << "output " << i;
  for (const auto& [name, t] : want->updates)
    EXPECT_EQ(test::compareTensors(*got->updates.at(name), *t, 0, 0), "") << "@" << name;
}

// The GELU MLP's training step uses cuBLASLt's GELU_AUX_BIAS forward and
// DGELU_BGRAD backward epilogues (the GELU input kept by the forward for
// the backward, the bias gradient from the backward GEMM): SimSuite checks
// the step against the interpreter, so these are checked on the simulator.
TEST(SimBlasLtEpilogues, GeluTrainingUsesTheForwardAndBackwardEpilogues) {
  auto model = test::buildSuiteModel("gelu_mlp_train", "cuda");
  ASSERT_TRUE(model) << model.error().message();
  auto plan = buildPlan(*model->function);
  ASSERT_TRUE(plan) << plan.error().message();
  auto program = cuda::emitProgram(*plan, cuda::CudaCompileOptions{});
  ASSERT_TRUE(program) << program.error().message();
  std::multiset<std::string> epilogues;
  for (const auto& s : program->steps)
    if (s.matmul) epilogues.insert(s.matmul->epilogueName);
  EXPECT_EQ(epilogues.count("GELU_AUX_BIAS"), 2u);
  EXPECT_EQ(epilogues.count("DGELU_BGRAD"), 2u);
}

TEST(SimPrograms, GpuAndSimulatorProgramsAreNotMixedUp) {
  auto model = test::buildSuiteModel("cnn_infer", "cuda");
  ASSERT_TRUE(model) << model.error().message();
  auto plan = buildPlan(*model->function);
  ASSERT_TRUE(plan) << plan.error().message();
  auto shared = std::make_shared<const Plan>(std::move(*plan));
  // An emitted program whose modules are not the simulator's: refused
  // before any module is loaded.
  auto emitted = cuda::emitProgram(*shared, cuda::CudaCompileOptions{});
  ASSERT_TRUE(emitted) << emitted.error().message();
  cuda::CudaProgram gpu;
  gpu.arch = "sm_90";
  gpu.steps = emitted->steps;
  cuda::CudaRunnerOptions ro;
  ro.simulate = true;
  auto r = cuda::CudaRunner::create(shared, gpu, ro);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("runs programs compiled for it (--simulate), not for sm_90"), std::string::npos)
      << r.error().message();
  cuda::CudaProgram simulated = gpu;
  simulated.arch = cuda::kSimulatorArch;
  auto real = cuda::CudaRunner::create(shared, simulated, {});
  ASSERT_FALSE(real);
  EXPECT_NE(real.error().message().find("compiled for the simulator; run it with --simulate"), std::string::npos)
      << real.error().message();
  // A GPU image handed to the simulated driver: its module loader says so.
  simulated.modules.assign(emitted->units.size(), cuda::ModuleImage{"unit", "\x7f" "ELF not a module", ""});
  auto bad = cuda::CudaRunner::create(shared, simulated, ro);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("not a simulator module"), std::string::npos) << bad.error().message();
}

}  // namespace
}  // namespace kfuse
