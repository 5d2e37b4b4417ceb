// CUDA programs as package JSON (runtime/cuda/program_io.h): the suite
// models' programs, under every GEMM policy, round-trip to the same text and
// the same description; malformed or hostile text gives an Error that says
// where, never a crash. No GPU needed: programs are emitted (and, for one
// model, compiled by NVRTC), not run.
#include "runtime/cuda/program_io.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "codegen/cuda/compiler.h"
#include "codegen/plan/plan_builder.h"
#include "tests/cuda/suite_models.h"

namespace kfuse::cuda {
namespace {

using json = nlohmann::json;

struct Built {
  test::SuiteModel model;
  Plan plan;
  CudaProgram program;
};

// A program as compileProgram makes it, without NVRTC: module names only.
Expected<Built> emitted(const std::string& name, GemmPolicy gemm = GemmPolicy::Auto) {
  KF_ASSIGN_OR_RETURN(test::SuiteModel s, test::buildSuiteModel(name, "cuda"));
  KF_ASSIGN_OR_RETURN(Plan plan, buildPlan(*s.function));
  CudaCompileOptions opts;
  opts.cacheDir = "";
  opts.gemm = gemm;
  KF_ASSIGN_OR_RETURN(EmittedProgram e, emitProgram(plan, opts));
  CudaProgram p;
  p.arch = opts.arch;
  for (const StepSource& u : e.units) p.modules.push_back({u.name, {}, {}});
  p.steps = std::move(e.steps);
  p.scratchBytes = e.scratchBytes;
  return Built{std::move(s), std::move(plan), std::move(p)};
}

// serialize -> parse -> serialize gives the same text and description.
void expectRoundTrip(const CudaProgram& p, const Plan& plan, std::string* textOut = nullptr) {
  std::string text = serializeProgram(p);
  if (textOut) *textOut = text;
  auto parsed = parseProgram(text, plan);
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(serializeProgram(*parsed), text);
  EXPECT_EQ(describeProgram(*parsed), describeProgram(p));
  EXPECT_EQ(parsed->deviceLaunches(), p.deviceLaunches());
  ASSERT_EQ(parsed->modules.size(), p.modules.size());
  for (size_t i = 0; i < p.modules.size(); ++i) {
    EXPECT_EQ(parsed->modules[i].name, p.modules[i].name);
    // Images travel as package sections of their own.
    EXPECT_TRUE(parsed->modules[i].cubin.empty());
    EXPECT_TRUE(parsed->modules[i].ptx.empty());
  }
  for (size_t s = 0; s < p.steps.size(); ++s) {
    const auto &a = p.steps[s].matmul, &b = parsed->steps[s].matmul;
    ASSERT_EQ(a.has_value(), b.has_value()) << "step " << s;
    if (a) {
      EXPECT_EQ(a->epilogue, b->epilogue) << "step " << s;
    }
  }
}

struct Case {
  std::string model;
  GemmPolicy gemm;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const std::string& m : test::suiteModelNames())
    for (GemmPolicy g : {GemmPolicy::Auto, GemmPolicy::Library, GemmPolicy::Generated}) out.push_back({m, g});
  return out;
}

std::string caseName(const testing::TestParamInfo<Case>& info) {
  const char* policy[] = {"auto", "library", "generated"};
  return info.param.model + "_" + policy[static_cast<int>(info.param.gemm)];
}

class ProgramRoundTrip : public testing::TestWithParam<Case> {};

TEST_P(ProgramRoundTrip, SameTextAndDescription) {
  auto built = emitted(GetParam().model, GetParam().gemm);
  ASSERT_TRUE(built) << built.error().message();
  std::string text;
  expectRoundTrip(built->program, built->plan, &text);
  std::cout << "[ size     ] " << caseName({GetParam(), 0}) << ": " << text.size() << " bytes of JSON, "
            << built->program.modules.size() << " modules, " << built->program.deviceLaunches() << " device launches, "
            << built->program.hostSteps() << " host steps\n";
}

INSTANTIATE_TEST_SUITE_P(Models, ProgramRoundTrip, testing::ValuesIn(cases()), caseName);

// compileProgram's own output (NVRTC, no GPU needed): the images stay out of the text.
TEST(ProgramIo, CompiledProgramKeepsModuleNamesOnly) {
  auto model = test::buildSuiteModel("spiral_mlp_train", "cuda");
  ASSERT_TRUE(model) << model.error().message();
  auto plan = buildPlan(*model->function);
  ASSERT_TRUE(plan) << plan.error().message();
  CudaCompileOptions opts;
  opts.cacheDir = (std::filesystem::temp_directory_path() / "kfuse_program_io_test_cache").string();
  auto program = compileProgram(*plan, opts);
  ASSERT_TRUE(program) << program.error().message();
  ASSERT_FALSE(program->modules.empty());
  EXPECT_FALSE(program->modules[0].cubin.empty());
  std::string text;
  expectRoundTrip(*program, *plan, &text);
  EXPECT_LT(text.size(), program->modules[0].cubin.size() + 100000);
}

// ---- malformed text

class MalformedProgramTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto b = emitted("transformer_infer", GemmPolicy::Library);
    ASSERT_TRUE(b) << b.error().message();
    built_ = new Built(std::move(*b));
    text_ = serializeProgram(built_->program);
  }
  static void TearDownTestSuite() { delete built_; }

  // The first step with a matmul, or with launches.
  static size_t matmulStep(const json& j) {
    for (size_t i = 0; i < j["steps"].size(); ++i)
      if (j["steps"][i].contains("matmul")) return i;
    ADD_FAILURE() << "no matmul";
    return 0;
  }
  static size_t launchStep(const json& j) {
    for (size_t i = 0; i < j["steps"].size(); ++i)
      if (!j["steps"][i]["launches"].empty() && !j["steps"][i]["launches"][0]["args"].empty()) return i;
    ADD_FAILURE() << "no launch";
    return 0;
  }

  void expectError(const std::string& text, const std::vector<std::string>& words) {
    auto r = parseProgram(text, built_->plan);
    ASSERT_FALSE(r) << text.substr(0, 200);
    for (const std::string& w : words) EXPECT_NE(r.error().message().find(w), std::string::npos) << r.error().message();
  }
  void expect(const std::function<void(json&)>& edit, const std::vector<std::string>& words) {
    json j = json::parse(text_);
    edit(j);
    expectError(j.dump(), words);
  }

  static inline Built* built_ = nullptr;
  static inline std::string text_;
};

TEST_F(MalformedProgramTest, Indices) {
  expect([](json& j) { j["steps"][launchStep(j)]["launches"][0]["args"][0] = 9999; },
         {"cuda program: step ", ": launch 0: argument 0: buffer 9999 out of range (the plan has "});
  expect([](json& j) { j["steps"][launchStep(j)]["launches"][0]["module"] = 99; },
         {"launch 0: module 99 is out of range"});
  expect([](json& j) { j["steps"].erase(j["steps"].size() - 1); }, {"steps for a plan of"});
  expect([](json& j) { j["steps"][matmulStep(j)]["matmul"]["d"] = -1; }, {"matmul: d: buffer -1 out of range"});
  expect([](json& j) { j["steps"][launchStep(j)]["launches"][0]["scratch"] = j["scratchBytes"].get<int64_t>() + 1; },
         {"scratch"});
}

TEST_F(MalformedProgramTest, Enums) {
  expect([](json& j) { j["steps"][0]["mode"] = "gpu"; }, {"unknown step mode 'gpu'"});
  expect([](json& j) { j["steps"][launchStep(j)]["mode"] = "host"; }, {"a host step for plan step"});
  expect([](json& j) { j["steps"][matmulStep(j)]["matmul"]["epilogue"] = "BGRADA"; }, {"unknown epilogue 'BGRADA'"});
  expect([](json& j) { j["steps"][matmulStep(j)]["matmul"]["dtype"] = "i32"; }, {"runs no matmul of dtype 'i32'"});
  expect(
      [](json& j) {
        json& m = j["steps"][matmulStep(j)]["matmul"];
        m["epilogue"] = m["bias"] == -1 ? "BIAS" : "DEFAULT";
      },
      {"bias"});
}

TEST_F(MalformedProgramTest, Geometry) {
  expect(
      [](json& j) {
        json& m = j["steps"][matmulStep(j)]["matmul"];
        m["k"] = m["k"].get<int64_t>() * 2;
        m["lda"] = m["lda"].get<int64_t>() * 2;
        m["ldb"] = m["ldb"].get<int64_t>() * 2;
      },
      {"matmul: ", "reaches element"});
  expect(
      [](json& j) {
        json& m = j["steps"][matmulStep(j)]["matmul"];
        m["batch"] = 3;
        m["strideA"] = 0;
        m["strideB"] = 0;
        m["strideD"] = 1 << 20;
      },
      {"d reaches element"});
  expect([](json& j) { j["steps"][matmulStep(j)]["matmul"]["ldd"] = 1; }, {"leading dimension 1 below"});
  expect([](json& j) { j["steps"][launchStep(j)]["launches"][0]["grid"] = 0; }, {"grid 0 is out of range"});
  expect([](json& j) { j["steps"][launchStep(j)]["launches"][0]["block"] = 2048; }, {"block 2048 is out of range"});
}

TEST_F(MalformedProgramTest, NotJsonOrWrongTypes) {
  expectError(text_.substr(0, text_.size() / 3), {"cuda program: malformed JSON"});
  expectError("", {"malformed JSON"});
  expectError("{}", {"missing field 'arch'"});
  expect([](json& j) { j["scratchBytes"] = "12"; }, {"scratchBytes must be an integer"});
  expect([](json& j) { j["modules"][0] = 7; }, {"a module name must be a string"});
  expect([](json& j) { j["steps"][launchStep(j)]["launches"][0]["cooperative"] = 1; },
         {"'cooperative' must be a boolean"});
}

// Cut and flipped bytes: every parse returns.
TEST_F(MalformedProgramTest, MutatedTextNeverCrashes) {
  for (size_t cut = 0; cut < text_.size(); cut += std::max<size_t>(1, text_.size() / 500))
    EXPECT_FALSE(parseProgram(text_.substr(0, cut), built_->plan));
  std::mt19937 rng(99);
  const std::string alphabet = "0123456789-[]{}\",:.eE \x01\xff";
  int parsed = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string u = text_;
    for (int e = 0; e < 1 + static_cast<int>(rng() % 3); ++e) {
      size_t at = rng() % u.size();
      if (std::isdigit(static_cast<unsigned char>(u[at])) || rng() % 4 == 0) u[at] = alphabet[rng() % alphabet.size()];
    }
    if (auto p = parseProgram(u, built_->plan)) {
      ++parsed;
      (void)describeProgram(*p);
    }
  }
  std::cout << "[ mutated  ] " << parsed << " of 3000 mutated programs parsed\n";
}

}  // namespace
}  // namespace kfuse::cuda
