// Every kernel of every suite model, and of every op reference case, emitted
// as CUDA C and compiled by NVRTC for sm_90 (no GPU needed). A unit fails on
// an NVRTC error and on any warning: a non-empty NVRTC log counts as one.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "codegen/backend.h"
#include "codegen/cuda/compiler.h"
#include "codegen/plan/plan_builder.h"
#include "ir/parser.h"
#include "tests/cuda/suite_models.h"
#include "tests/unit/test_util.h"

namespace kfuse {
namespace {

// Two workers: the CI machine has two cores.
constexpr int kCompileThreads = 2;

cuda::CudaCompileOptions compileOptions() {
  cuda::CudaCompileOptions o;
  o.arch = "sm_90";
  o.cacheDir = "";  // compile every unit: this test is about NVRTC accepting them
  o.compileThreads = kCompileThreads;
  return o;
}

// Compiles units (deduplicated by source) and returns one message per
// failing or warning unit, naming its owner.
std::vector<std::string> compileUnits(const std::vector<std::pair<std::string, const cuda::StepSource*>>& units,
                                      cuda::CompileStats* stats) {
  std::map<std::string, size_t> bySource;
  std::vector<cuda::CompileJob> jobs;
  std::vector<size_t> jobOf;
  for (const auto& [owner, u] : units) {
    auto [it, added] = bySource.emplace(u->source, jobs.size());
    if (added) jobs.push_back({u->source, str(owner, ": step ", u->name)});
    jobOf.push_back(it->second);
  }
  cuda::NvrtcOptions nv;
  nv.arch = "sm_90";
  auto results = cuda::compileEach(jobs, nv, cuda::CompileCache(""), kCompileThreads, stats);
  std::vector<std::string> problems;
  for (size_t j = 0; j < jobs.size(); ++j) {
    std::string problem;
    if (!results[j]) {
      problem = results[j].error().message();
    } else if (!results[j]->log.empty()) {
      problem = str(jobs[j].what, ": NVRTC warnings:\n", results[j]->log);
    } else if (results[j]->cubin.empty() || results[j]->ptx.empty()) {
      problem = str(jobs[j].what, ": no CUBIN or no PTX");
    }
    if (problem.empty()) continue;
    // The unit's source beside the test, for reading the log's line numbers.
    std::filesystem::path dir = std::filesystem::path(KFUSE_BINARY_DIR) / "nvrtc-failures";
    std::filesystem::create_directories(dir);
    std::filesystem::path file = dir / str("unit", problems.size(), ".cu");
    std::ofstream(file) << jobs[j].source;
    problems.push_back(str(problem, "\n(source: ", file.string(), ")"));
  }
  return problems;
}

class SuiteModelCompile : public testing::TestWithParam<std::string> {};

TEST_P(SuiteModelCompile, EveryKernelCompilesForSm90) {
  auto model = test::buildSuiteModel(GetParam(), "cuda");
  ASSERT_TRUE(model) << model.error().message();
  auto plan = buildPlan(*model->function);
  ASSERT_TRUE(plan) << plan.error().message();
  cuda::CudaCompileReport report;
  auto emitted = cuda::emitProgram(*plan, compileOptions(), &report);
  ASSERT_TRUE(emitted) << emitted.error().message();
  ASSERT_FALSE(emitted->units.empty());
  std::vector<std::pair<std::string, const cuda::StepSource*>> units;
  for (const auto& u : emitted->units) units.emplace_back(GetParam(), &u);
  cuda::CompileStats stats;
  std::vector<std::string> problems = compileUnits(units, &stats);
  for (const std::string& p : problems) ADD_FAILURE() << p;
  size_t launches = 0;
  for (const auto& s : emitted->steps) launches += s.launches.size() + (s.matmul ? 1 : 0);
  std::cout << GetParam() << ": " << plan->steps.size() << " steps, " << plan->kernels.size() << " kernels, "
            << emitted->units.size() << " NVRTC units, " << launches << " device launches (" << report.libraryGemms
            << " cuBLASLt, " << report.generatedGemms << " generated GEMMs), compiled in " << stats.seconds << " s\n";
}

INSTANTIATE_TEST_SUITE_P(Suite, SuiteModelCompile, testing::ValuesIn(test::suiteModelNames()));

// Every op reference case through the cuda target's pipeline (fusion
// included) and plan: all their units in one parallel batch.
TEST(OpCasesCompile, EveryCaseCompilesForSm90) {
  auto backend = backendFor("cuda");
  ASSERT_TRUE(backend) << backend.error().message();
  std::vector<cuda::EmittedProgram> programs;
  std::vector<std::string> owners;
  for (const std::string& name : test::opCaseNames()) {
    auto module = parseModuleFile((test::opCasesDir() / name).string() + ".kir");
    ASSERT_TRUE(module) << name << ": " << module.error().message();
    ASSERT_TRUE(prepareModule(**module, *backend)) << name;
    auto plan = buildPlan(*(*module)->functions().front());
    ASSERT_TRUE(plan) << name << ": " << plan.error().message();
    auto emitted = cuda::emitProgram(*plan, compileOptions());
    if (!emitted) {
      ADD_FAILURE() << name << ": " << emitted.error().message();
      continue;
    }
    programs.push_back(std::move(*emitted));
    owners.push_back(name);
  }
  std::vector<std::pair<std::string, const cuda::StepSource*>> units;
  for (size_t i = 0; i < programs.size(); ++i)
    for (const auto& u : programs[i].units) units.emplace_back(owners[i], &u);
  cuda::CompileStats stats;
  std::vector<std::string> problems = compileUnits(units, &stats);
  for (const std::string& p : problems) ADD_FAILURE() << p;
  EXPECT_EQ(programs.size(), test::opCaseNames().size());
  std::cout << programs.size() << " op cases, " << units.size() << " units (" << stats.units
            << " distinct) compiled in " << stats.seconds << " s\n";
}

}  // namespace
}  // namespace kfuse
