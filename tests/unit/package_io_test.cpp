// Plans as package JSON (exec/io/plan_io.h): every op case and every
// suite model round-trips to the same text, prints the same and runs to
// bit-identical results; malformed or hostile text gives an Error that says
// what is wrong and where, never a crash.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "codegen/backend.h"
#include "codegen/plan/plan_builder.h"
#include "codegen/plan/plan_pass.h"
#include "ir/op_registry.h"
#include "ir/parser.h"
#include "ir/weights.h"
#include "runtime/cpu_runner.h"
#include "exec/io/plan_io.h"
#include "tests/cuda/suite_models.h"
#include "tests/unit/test_util.h"

namespace kfuse {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ConstantList = std::vector<std::pair<std::string, const Tensor*>>;

// Constants as a package holds them: tensors of a weights file, which keeps
// no layout tags.
TensorMap constantMap(const ConstantList& list) {
  TensorMap m;
  for (const auto& [key, t] : list) m.emplace(key, t->withType(TensorType(t->dtype(), t->shape())));
  return m;
}

// serialize -> parse -> serialize: the same text, the same print, the same
// constants. Returns the parsed plan (empty after a failure).
Plan roundTrip(const Plan& p, std::string* textOut = nullptr, PlanOffsets offsets = PlanOffsets::Required) {
  ConstantList first;
  std::string text = serializePlan(p, first);
  if (textOut) *textOut = text;
  auto parsed = parsePlan(text, constantMap(first), offsets);
  EXPECT_TRUE(parsed) << parsed.error().message();
  if (!parsed) return Plan{};
  ConstantList second;
  EXPECT_EQ(serializePlan(*parsed, second), text);
  EXPECT_EQ(printPlan(*parsed), printPlan(p));
  EXPECT_EQ(second.size(), first.size());
  for (size_t i = 0; i < first.size() && i < second.size(); ++i) {
    EXPECT_EQ(second[i].first, first[i].first);
    EXPECT_TRUE(second[i].second->identical(*first[i].second)) << first[i].first;
  }
  return std::move(*parsed);
}

// Both plans on the CPU runner (the kernel interpreter): bit-identical
// outputs and updates, or the same error.
void expectSameRun(const Plan& a, const Plan& b, const Module& m, const std::vector<Tensor>& args) {
  CpuRunner ra(std::make_shared<const Plan>(a)), rb(std::make_shared<const Plan>(b));
  auto x = ra.run(m, args);
  auto y = rb.run(m, args);
  ASSERT_EQ(x.hasValue(), y.hasValue()) << (x ? y.error().message() : x.error().message());
  if (!x) {
    EXPECT_EQ(x.error().message(), y.error().message());
    return;
  }
  ASSERT_EQ(x->outputs.size(), y->outputs.size());
  for (size_t i = 0; i < x->outputs.size(); ++i) EXPECT_TRUE(x->outputs[i].identical(y->outputs[i])) << "output " << i;
  ASSERT_EQ(x->updates.size(), y->updates.size());
  for (const auto& [param, t] : x->updates) {
    auto it = y->updates.find(param);
    ASSERT_NE(it, y->updates.end()) << param;
    EXPECT_TRUE(t->identical(*it->second)) << "update of " << param;
  }
}

// Depth and unfolded size of the deepest / largest expression of a plan,
// against the parser's bounds (plan_io.cpp: 256 and 2^20).
std::pair<int64_t, int64_t> expressionCost(const Plan& p) {
  std::map<const ScalarNode*, std::pair<int64_t, int64_t>> memo;
  std::function<std::pair<int64_t, int64_t>(const ScalarNode&)> cost = [&](const ScalarNode& n) {
    if (auto it = memo.find(&n); it != memo.end()) return it->second;
    std::pair<int64_t, int64_t> c{1, 1};
    for (const ScalarRef& a : n.args) {
      auto ac = cost(*a);
      c.first = std::max(c.first, ac.first + 1);
      c.second += ac.second;
    }
    return memo[&n] = c;
  };
  std::pair<int64_t, int64_t> worst{0, 0};
  auto visit = [&](const ScalarRef& e) {
    if (!e) return;
    auto c = cost(*e);
    worst = {std::max(worst.first, c.first), std::max(worst.second, c.second)};
  };
  for (const kernel::Kernel& k : p.kernels) {
    for (const auto& r : k.reductions) visit(r.value);
    for (const auto& g : k.prologue) visit(g.value);
    for (const auto& g : k.globals) visit(g.value);
    for (const auto& s : k.stores) visit(s.value);
  }
  return worst;
}

// ---- every op case (tests/ops/cases) through the cpu target's pipeline

// What the op cases' plans hold, printed at the end: each step kind (and
// each reference op) the round trip has seen.
std::map<std::string, int>& stepCounts() {
  static std::map<std::string, int> counts;
  return counts;
}
struct StepCountPrinter : testing::Environment {
  void TearDown() override {
    std::vector<std::string> parts;
    for (const auto& [what, n] : stepCounts()) parts.push_back(str(what, " ", n));
    if (!parts.empty()) std::cout << "[ steps    ] op cases round-tripped: " << join(parts) << "\n";
  }
};
[[maybe_unused]] testing::Environment* const kStepCountPrinter =
    testing::AddGlobalTestEnvironment(new StepCountPrinter);

class OpCasePlanTest : public testing::TestWithParam<std::string> {};

TEST_P(OpCasePlanTest, RoundTripsAndRunsIdentically) {
  fs::path base = test::opCasesDir() / GetParam();
  auto module = parseModuleFile(base.string() + ".kir");
  ASSERT_TRUE(module) << module.error().message();
  auto backend = backendFor("cpu");
  ASSERT_TRUE(backend) << backend.error().message();
  ASSERT_TRUE(prepareModule(**module, *backend));
  auto data = readWeightsFile(base.string() + ".data.safetensors");
  ASSERT_TRUE(data) << data.error().message();
  const Graph& g = *(*module)->functions().front();
  std::vector<Tensor> args;
  for (const auto& a : g.arguments()) args.push_back(data->at("in." + a->name()).withType(a->type()));
  auto plan = buildPlan(g, PlanOptions{});
  ASSERT_TRUE(plan) << plan.error().message();
  Plan parsed = roundTrip(*plan);
  if (HasFailure()) return;
  // Far inside the parser's bounds on expressions.
  auto [depth, tree] = expressionCost(*plan);
  EXPECT_LT(depth, 64);
  EXPECT_LT(tree, 1 << 14);
  const char* kinds[] = {"kernels", "gemm", "conv", "reference", "collective"};  // StepKind order
  for (const Step& s : plan->steps) {
    const bool reference = s.kind() == StepKind::Reference;
    ++stepCounts()[reference ? "reference " + s.reference().op->name : kinds[static_cast<int>(s.kind())]];
  }
  expectSameRun(*plan, parsed, **module, args);
}

INSTANTIATE_TEST_SUITE_P(Cases, OpCasePlanTest, testing::ValuesIn(test::opCaseNames()), test::PathParamName());

// ---- the suite models (tests/cuda/suite_models.h), planned for cpu

struct Built {
  test::SuiteModel model;
  Plan plan;
  std::vector<Tensor> args;
  Module& module() { return model.training ? model.trainer->module() : *model.module; }
};

Expected<Built> buildModel(const std::string& name) {
  KF_ASSIGN_OR_RETURN(test::SuiteModel s, test::buildSuiteModel(name, "cpu"));
  KF_ASSIGN_OR_RETURN(Plan plan, buildPlan(*s.function, PlanOptions{}));
  Built b{std::move(s), std::move(plan), {}};
  b.args = b.model.sampleInputs;
  if (b.model.training) {
    // What Trainer::step passes: the batch, labels, learning rate, step.
    b.args.push_back(b.model.sampleLabels);
    b.args.push_back(Tensor::scalar(DType::F32, 0.01));
    b.args.push_back(Tensor::scalar(DType::I64, 1));
  }
  return b;
}

class SuitePlanTest : public testing::TestWithParam<std::string> {};

TEST_P(SuitePlanTest, RoundTripsAndRunsIdentically) {
  auto built = buildModel(GetParam());
  ASSERT_TRUE(built) << built.error().message();
  std::string text;
  Plan parsed = roundTrip(built->plan, &text);
  if (HasFailure()) return;
  auto [depth, tree] = expressionCost(built->plan);
  std::cout << "[ size     ] " << GetParam() << ": " << text.size() << " bytes of JSON, " << built->plan.buffers.size()
            << " buffers, " << built->plan.kernels.size() << " kernels, " << built->plan.steps.size()
            << " steps; deepest expression " << depth << ", largest unfolded " << tree << " nodes\n";
  EXPECT_LT(depth, 64);
  EXPECT_LT(tree, 1 << 14);
  expectSameRun(built->plan, parsed, built->module(), built->args);
}

// kfuse opt --dump-ir-dir writes the plan after lowering and after each plan
// pass: each stage reads back identically with offsets optional, and a plan
// without offsets is refused where one is required (a package's).
TEST_P(SuitePlanTest, EveryPlanPassStageRoundTrips) {
  auto s = test::buildSuiteModel(GetParam(), "cpu");
  ASSERT_TRUE(s) << s.error().message();
  auto plan = lowerToPlan(*s->function);
  ASSERT_TRUE(plan) << plan.error().message();
  roundTrip(*plan, nullptr, PlanOffsets::Optional);
  ConstantList constants;
  std::string unplanned = serializePlan(*plan, constants);
  auto refused = parsePlan(unplanned, constantMap(constants));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("the plan was not planned"), std::string::npos) << refused.error().message();
  auto passes = parsePlanPipeline(standardPlanPipeline(true));
  ASSERT_TRUE(passes);
  for (const auto& pass : *passes) {
    ASSERT_TRUE(pass->run(*plan, PassContext{})) << pass->name();
    roundTrip(*plan, nullptr, PlanOffsets::Optional);
  }
  roundTrip(*plan);  // planned: offsets required and present
}

INSTANTIATE_TEST_SUITE_P(Models, SuitePlanTest, testing::ValuesIn(test::suiteModelNames()));

// ---- reference steps with tensor and special float attributes; a constant buffer

PlanBuffer buffer(std::string name, TensorType type, BufferKind kind, int64_t offset, int first, int last) {
  PlanBuffer b;
  b.name = std::move(name);
  b.type = std::move(type);
  b.kind = kind;
  b.offset = offset;
  b.firstUse = first;
  b.lastUse = last;
  return b;
}

Step reference(const std::string& op, AttrMap attrs, std::vector<int> inputs, std::vector<int> outputs) {
  Step s;
  s.body = ReferenceOp{};
  s.name = op;
  s.reference().op = OpRegistry::global().find(op);
  EXPECT_NE(s.reference().op, nullptr) << op;
  auto full = completeAttrs(*s.reference().op, std::move(attrs));
  EXPECT_TRUE(full) << full.error().message();
  s.reference().attrs = *full;
  s.reference().inputs = std::move(inputs);
  s.reference().outputs = std::move(outputs);
  return s;
}

double nanWithPayload() { return std::bit_cast<double>(uint64_t{0xfff8000000000123}); }

// x -> constant (a tensor attribute with -0, inf, NaN, a denormal), clip
// with NaN and -0 bounds, leaky_relu with a denormal slope, a constant of
// 2^53 + 1 in i64.
Plan referencePlan() {
  Plan p;
  p.function = "refs";
  TensorType f5(DType::F32, {5});
  p.buffers.push_back(buffer("%x", f5, BufferKind::Input, 0, 0, 2));
  p.buffers.push_back(buffer("%c", f5, BufferKind::Temp, 0, 0, 3));
  p.buffers.push_back(buffer("%clip", f5, BufferKind::Temp, 256, 1, 3));
  p.buffers.push_back(buffer("%leaky", f5, BufferKind::Temp, 512, 2, 3));
  p.buffers.push_back(buffer("%big", TensorType(DType::I64, {2}), BufferKind::Temp, 768, 3, 4));
  p.arenaBytes = 1024;
  p.residentBytes = 256;
  double inf = std::numeric_limits<double>::infinity();
  Tensor values = Tensor::fromDoubles(f5, {-0.0, inf, -inf, std::nan(""), 1e-40});
  p.steps.push_back(reference("constant", {{"value", values}}, {}, {1}));
  p.steps.push_back(reference("clip", {{"min", -0.0}, {"max", nanWithPayload()}}, {0}, {2}));
  p.steps.push_back(reference("leaky_relu", {{"alpha", 5e-324}}, {0}, {3}));
  Tensor big(TensorType(DType::I64, {2}));
  big.as<int64_t>()[0] = (int64_t{1} << 53) + 1;
  big.as<int64_t>()[1] = std::numeric_limits<int64_t>::min();
  p.steps.push_back(reference("constant", {{"value", big}}, {}, {4}));
  p.inputs = {0};
  p.outputs = {1, 2, 3, 4};
  return p;
}

TEST(PlanIo, ReferenceStepsKeepTheirAttributesExactly) {
  Plan p = referencePlan();
  std::string text;
  Plan parsed = roundTrip(p, &text);
  ASSERT_FALSE(HasFailure()) << text;
  ASSERT_EQ(parsed.steps.size(), 4u);
  EXPECT_TRUE(parsed.steps[0].reference().attrs.at("value").asTensor().identical(
      p.steps[0].reference().attrs.at("value").asTensor()));
  auto bits = [](double d) { return std::bit_cast<uint64_t>(d); };
  EXPECT_EQ(bits(parsed.steps[1].reference().attrs.at("min").asFloat()), bits(-0.0));
  EXPECT_EQ(bits(parsed.steps[1].reference().attrs.at("max").asFloat()), bits(nanWithPayload()));
  EXPECT_EQ(bits(parsed.steps[2].reference().attrs.at("alpha").asFloat()), bits(5e-324));
  EXPECT_NE(text.find("\"nan:0xfff8000000000123\""), std::string::npos) << text;
  EXPECT_TRUE(parsed.steps[3].reference().attrs.at("value").asTensor().identical(
      p.steps[3].reference().attrs.at("value").asTensor()));
  Module m("refs");
  Tensor x = Tensor::fromDoubles(TensorType(DType::F32, {5}), {-2, -0.5, 0, 3, 1e30});
  expectSameRun(p, parsed, m, {x});
}

constexpr const char* kConstantModule = R"(module @consts {
  func @forward(%x: f32[2,3]) -> (f32[2,3]) {
    %c = constant {value = dense<f32[2,3]>[1.0, -2.5, 0.125, 3.0, 1.0e-30, 7.0]} : f32[2,3]
    %y = mul %x, %c : f32[2,3]
    %z = add %y, %c : f32[2,3]
    return %z
  }
})";

Expected<Plan> constantPlan(std::unique_ptr<Module>& m) {
  KF_ASSIGN_OR_RETURN(m, parseModule(kConstantModule, "consts.kir"));
  KF_ASSIGN_OR_RETURN(Backend backend, backendFor("cpu"));
  KF_RETURN_IF_ERROR(prepareModule(*m, backend));
  return buildPlan(*m->functions().front(), PlanOptions{});
}

TEST(PlanIo, ConstantBuffersTravelAsTensors) {
  std::unique_ptr<Module> m;
  auto plan = constantPlan(m);
  ASSERT_TRUE(plan) << plan.error().message();
  ConstantList constants;
  std::string text = serializePlan(*plan, constants);
  ASSERT_EQ(constants.size(), 1u) << printPlan(*plan);
  int b = -1;
  for (size_t i = 0; i < plan->buffers.size(); ++i)
    if (plan->buffers[i].kind == BufferKind::Constant) b = static_cast<int>(i);
  EXPECT_EQ(constants[0].first, constantKey("forward", b));
  EXPECT_EQ(constants[0].first, str("const/forward/", b));
  // The tensor data stays out of the text.
  EXPECT_EQ(text.find("0.125"), std::string::npos);
  Plan parsed = roundTrip(*plan);
  ASSERT_FALSE(HasFailure());
  Tensor x = Tensor::fromDoubles(TensorType(DType::F32, {2, 3}), {1, 2, 3, 4, 5, 6});
  expectSameRun(*plan, parsed, *m, {x});
}

// A convolution's packed-filter mark (ConvSpec::packedFilter) travels with
// the plan; on a shape exec/packed_filter.h allows no packed filter for, a
// plan marking one is refused, naming the step's problem.
TEST(PlanIo, PackedFilterMarksTravelAndBadOnesAreRefused) {
  auto m = parseModule(R"(module @m {
  param @w : f32[32,8,3,3]
  param @v : f32[32,32,3,3]
  func @forward(%x: f32[1,8,7,7]) -> (f32[1,32,5,5]) {
    %0 = conv2d %x, @w {pads = [1, 1, 1, 1]} : f32[1,32,7,7]
    %1 = conv2d %0, @v : f32[1,32,5,5]
    return %1
  }
})", "packed.kir");
  ASSERT_TRUE(m) << m.error().message();
  PlanOptions o;
  o.packFilters = [](const ConvSpec&) { return true; };
  auto plan = buildPlan(*(*m)->functions().front(), o);
  ASSERT_TRUE(plan) << plan.error().message();
  std::vector<size_t> convs;
  for (size_t s = 0; s < plan->steps.size(); ++s)
    if (plan->steps[s].kind() == StepKind::Conv) convs.push_back(s);
  ASSERT_EQ(convs.size(), 2u);
  // The "same" layer is marked; the one whose rows narrow (5 of 7) is not.
  EXPECT_TRUE(plan->steps[convs[0]].conv().packedFilter);
  EXPECT_FALSE(plan->steps[convs[1]].conv().packedFilter);
  Plan parsed = roundTrip(*plan);
  ASSERT_FALSE(HasFailure());
  EXPECT_EQ(packedFilterSteps(parsed), std::vector<size_t>{convs[0]});
  plan->steps[convs[1]].conv().packedFilter = true;
  ConstantList constants;
  auto refused = parsePlan(serializePlan(*plan, constants), constantMap(constants));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("packedFilter on a convolution that has no form with a packed filter"),
            std::string::npos)
      << refused.error().message();
}

// A GEMM's packed-B mark (GemmSpec::packedB) travels with the plan; on a
// GEMM with no packed form (a batch), a plan marking one is refused.
TEST(PlanIo, PackedGemmMarksTravelAndBadOnesAreRefused) {
  auto m = parseModule(R"(module @m {
  param @w : f32[8,16]
  func @forward(%x: f32[4,8], %y: f32[2,4,16], %z: f32[2,16,3]) -> (f32[4,16], f32[2,4,3]) {
    %0 = matmul %x, @w : f32[4,16]
    %1 = matmul %y, %z : f32[2,4,3]
    return %0, %1
  }
})", "packed.kir");
  ASSERT_TRUE(m) << m.error().message();
  auto plan = buildPlan(*(*m)->functions().front(), {.packGemms = [](const GemmSpec&) { return true; }});
  ASSERT_TRUE(plan) << plan.error().message();
  std::vector<size_t> gemms;
  for (size_t s = 0; s < plan->steps.size(); ++s)
    if (plan->steps[s].kind() == StepKind::Gemm) gemms.push_back(s);
  ASSERT_EQ(gemms.size(), 2u);
  EXPECT_TRUE(plan->steps[gemms[0]].gemm().packedB);
  EXPECT_FALSE(plan->steps[gemms[1]].gemm().packedB);  // a batch of two, B an argument
  Plan parsed = roundTrip(*plan);
  ASSERT_FALSE(HasFailure());
  EXPECT_EQ(packedGemmSteps(parsed), std::vector<size_t>{gemms[0]});
  plan->steps[gemms[1]].gemm().packedB = true;
  ConstantList constants;
  auto refused = parsePlan(serializePlan(*plan, constants), constantMap(constants));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("packedB on a GEMM that has no packed form"), std::string::npos)
      << refused.error().message();
}

// ---- malformed text

void expectError(const std::string& text, const TensorMap& constants, const std::vector<std::string>& words) {
  auto r = parsePlan(text, constants);
  ASSERT_FALSE(r) << "parsed: " << text.substr(0, 200);
  for (const std::string& w : words) EXPECT_NE(r.error().message().find(w), std::string::npos) << r.error().message();
}

std::string edited(const std::string& text, const std::function<void(json&)>& edit) {
  json j = json::parse(text);
  edit(j);
  return j.dump();
}

// Indices into a plan's JSON: the first step of a kind, the first buffer of a kind.
size_t stepOfKind(const json& j, const std::string& kind) {
  for (size_t i = 0; i < j["steps"].size(); ++i)
    if (j["steps"][i]["kind"] == kind && (kind != "kernels" || !j["steps"][i]["kernels"].empty())) return i;
  ADD_FAILURE() << "no " << kind << " step";
  return 0;
}
size_t bufferOfKind(const json& j, const std::string& kind) {
  for (size_t i = 0; i < j["buffers"].size(); ++i)
    if (j["buffers"][i]["kind"] == kind) return i;
  ADD_FAILURE() << "no " << kind << " buffer";
  return 0;
}

class MalformedPlanTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const char* name : {"spiral_mlp_train", "cnn_infer"}) {
      auto b = buildModel(name);
      ASSERT_TRUE(b) << b.error().message();
      ConstantList constants;
      texts_[name] = serializePlan(b->plan, constants);
      constants_[name] = constantMap(constants);
    }
    ConstantList none;
    texts_["refs"] = serializePlan(referencePlan(), none);
    std::unique_ptr<Module> m;
    auto plan = constantPlan(m);
    ASSERT_TRUE(plan) << plan.error().message();
    ConstantList constants;
    texts_["consts"] = serializePlan(*plan, constants);
    constants_["consts"] = constantMap(constants);
  }
  static const std::string& text(const std::string& name) { return texts_[name]; }
  void expect(const std::string& name, const std::function<void(json&)>& edit, const std::vector<std::string>& words) {
    SCOPED_TRACE(name);
    expectError(edited(texts_[name], edit), constants_[name], words);
  }
  static inline std::map<std::string, std::string> texts_;
  static inline std::map<std::string, TensorMap> constants_;
};

TEST_F(MalformedPlanTest, BadKernelBufferInStep) {
  expect("spiral_mlp_train", [](json& j) { j["steps"][stepOfKind(j, "kernels")]["kernels"][0]["buffers"][0] = 999; },
         {"plan @train_step: step ", "kernel buffer 999 out of range (the plan has ", " buffers)"});
}

TEST_F(MalformedPlanTest, CyclicScalarDag) {
  expect("spiral_mlp_train",
         [](json& j) {
           for (json& k : j["kernels"])
             for (size_t i = 0; i < k["nodes"].size(); ++i)
               if (k["nodes"][i][2].is_array()) {
                 k["nodes"][i][2][0] = i;  // itself
                 return;
               }
         },
         {"kernel ", "scalar node ", "argument (an earlier node)", "out of range"});
}

TEST_F(MalformedPlanTest, UnknownOp) {
  expect("refs", [](json& j) { j["steps"][1]["op"] = "no_such_op"; },
         {"plan @refs: step 1 (clip): unknown op 'no_such_op'"});
  expect("refs", [](json& j) { j["steps"][1]["attrs"]["bogus"] = {{"int", 1}}; }, {"no attribute 'bogus'"});
  // A float list where clip takes a float: the list was read, then rejected.
  expect("refs", [](json& j) { j["steps"][1]["attrs"]["min"] = {{"floats", {0.5, "nan"}}}; }, {"'min'", "float list"});
  expect("refs", [](json& j) { j["steps"][1]["attrs"]["min"] = {{"float", "nan:0xzz"}}; }, {"is not a number"});
  expect("refs", [](json& j) { j["steps"][0]["attrs"]["value"]["tensor"]["data"] = "00"; }, {"hex digits for f32[5]"});
  // The step's output must be what the op produces.
  expect("refs", [](json& j) { j["buffers"][3]["type"] = "f32[4]"; }, {"result 0 of op 'leaky_relu' is f32[5]"});
}

TEST_F(MalformedPlanTest, NegativeShape) {
  expect("spiral_mlp_train", [](json& j) { j["buffers"][0]["type"] = "f32[-1,2]"; },
         {"buffer 0", "contains the negative size -1"});
  expect("spiral_mlp_train", [](json& j) { j["buffers"][0]["type"] = "f32[1099511627776,2]"; }, {"more than 2^40"});
  expect("spiral_mlp_train", [](json& j) { j["buffers"][0]["type"] = "f32[1,1,1,1,1,1,1]"; }, {"rank above 6"});
  expect("spiral_mlp_train", [](json& j) { j["buffers"][0]["type"] = "f33[2]"; }, {"unknown dtype"});
  expect("spiral_mlp_train", [](json& j) { j["buffers"][0]["type"] = "f32[2,]"; }, {"malformed shape"});
  expect("spiral_mlp_train", [](json& j) { j["buffers"][0]["type"] = "f32[300,2]#nhwc"; }, {"layout does not fit"});
}

TEST_F(MalformedPlanTest, MissingOrWrongConstant) {
  expectError(text("consts"), {}, {"constant 'const/forward/", "is missing"});
  TensorMap wrong;
  for (const auto& [k, t] : constants_["consts"]) wrong.emplace(k, Tensor(TensorType(t.dtype(), {7})));
  expectError(text("consts"), wrong, {"is f32[7], the buffer is f32[2,3]"});
}

TEST_F(MalformedPlanTest, TruncatedOrNotJson) {
  const std::string& t = text("spiral_mlp_train");
  expectError(t.substr(0, t.size() / 2), {}, {"malformed JSON"});
  expectError("", {}, {"malformed JSON"});
  expectError("[1, 2]", {}, {"expected an object"});
  expectError("{\"function\": 3}", {}, {"'function' must be a string"});
}

TEST_F(MalformedPlanTest, WrongJsonTypes) {
  expect("spiral_mlp_train", [](json& j) { j["steps"][stepOfKind(j, "gemm")]["gemm"]["m"] = "64"; },
         {"gemm: m must be an integer"});
  expect("spiral_mlp_train", [](json& j) { j["buffers"][0]["offset"] = 0.5; }, {"offset must be an integer"});
  expect("spiral_mlp_train", [](json& j) { j["arenaBytes"] = json(std::numeric_limits<uint64_t>::max()); },
         {"arenaBytes 18446744073709551615 is out of range"});
  expect("spiral_mlp_train", [](json& j) { j["steps"][0]["kind"] = "magic"; }, {"unknown step kind 'magic'"});
  expect("spiral_mlp_train", [](json& j) { j["kernels"][0]["nodes"] = json::object(); }, {"'nodes' must be an array"});
  expect("spiral_mlp_train", [](json& j) { j["buffers"][0].erase("kind"); }, {"missing field 'kind'"});
  expect("spiral_mlp_train", [](json& j) { j["steps"][2] = 7; }, {"plan @train_step: step 2: expected an object"});
}

TEST_F(MalformedPlanTest, AliasCycle) {
  expect("spiral_mlp_train",
         [](json& j) {
           size_t a = bufferOfKind(j, "alias");
           size_t t = j["buffers"][a]["aliasOf"];
           j["buffers"][t]["kind"] = "alias";
           j["buffers"][t]["aliasOf"] = a;
           j["buffers"][t]["offset"] = -1;
         },
         {"alias chain has a cycle"});
  expect("spiral_mlp_train",
         [](json& j) {
           size_t a = bufferOfKind(j, "alias");
           j["buffers"][a]["aliasOf"] = a;
         },
         {"aliases itself"});
}

TEST_F(MalformedPlanTest, GemmReadsPastItsOperands) {
  expect("spiral_mlp_train",
         [](json& j) {
           json& g = j["steps"][stepOfKind(j, "gemm")]["gemm"];
           g["k"] = g["k"].get<int64_t>() + 1;
         },
         {"gemm: operand a reaches element"});
  expect("spiral_mlp_train",
         [](json& j) {
           json& g = j["steps"][stepOfKind(j, "gemm")]["gemm"];
           g["batch"] = {3};
           g["aBatchStrides"] = {0};
           g["bBatchStrides"] = {0};
           g["cBatchStrides"] = {1};
         },
         {"result c reaches element"});
  expect("spiral_mlp_train", [](json& j) { j["steps"][stepOfKind(j, "gemm")]["gemm"]["batch"] = {2}; },
         {"batch strides [] for batch [2]"});
}

TEST_F(MalformedPlanTest, ConvGeometry) {
  expect("cnn_infer", [](json& j) { j["steps"][stepOfKind(j, "conv")]["conv"]["groups"] = 0; },
         {"conv: groups 0 is out of range"});
  expect("cnn_infer",
         [](json& j) {
           json& c = j["steps"][stepOfKind(j, "conv")]["conv"];
           c["kh"] = c["kh"].get<int64_t>() + 1;
         },
         {"the filter", "holds fewer than"});
  expect("cnn_infer",
         [](json& j) {
           json& c = j["steps"][stepOfKind(j, "conv")]["conv"];
           c["groups"] = 2;
           c["c"] = 3;
         },
         {"do not split into 2 groups"});
  // -1 is no workspace (a direct convolution's); others must exist and fit.
  expect("cnn_infer", [](json& j) { j["steps"][stepOfKind(j, "conv")]["conv"]["workspace"] = 999; },
         {"buffer 'workspace' 999 out of range"});
  expect("cnn_infer",
         [](json& j) {
           json& c = j["steps"][stepOfKind(j, "conv")]["conv"];
           c["workspace"] = c["x"];  // 3x16x16 inputs hold fewer than 27x256 patches
         },
         {"the workspace b", "holds fewer than"});
}

TEST_F(MalformedPlanTest, IndexMapsOutOfBounds) {
  expect("spiral_mlp_train",
         [](json& j) {
           json& l = j["kernels"][0]["loads"][0];
           l["base"] = l["base"].get<int64_t>() + 1000000;
         },
         {"kernel 0", "load 0: offsets", "fall outside"});
  expect("spiral_mlp_train", [](json& j) { j["kernels"][0]["loads"][0]["strides"].push_back(1); }, {"strides for"});
  expect("spiral_mlp_train", [](json& j) { j["kernels"][0]["stores"][0]["strides"][0] = int64_t{1} << 20; },
         {"store 0: offsets"});
  expect("spiral_mlp_train", [](json& j) { j["kernels"][0]["stores"][0]["strides"][0] = int64_t{1} << 47; },
         {"store 0: index map offsets reach"});
}

TEST_F(MalformedPlanTest, LeavesAndExpressionSizes) {
  expect("spiral_mlp_train",
         [](json& j) {
           j["kernels"][0]["nodes"].push_back({"input", "f32", 999});
         },
         {"input leaf 999 is out of range"});
  expect("spiral_mlp_train",
         [](json& j) {
           j["kernels"][0]["nodes"].push_back({"index", "i64", 7});
         },
         {"iteration dim 7 is out of range"});
  expect("spiral_mlp_train",
         [](json& j) {
           j["kernels"][0]["nodes"].push_back({"add", "f32", {0}});
         },
         {"add takes 2 arguments, not 1"});
  expect("spiral_mlp_train",
         [](json& j) {
           json& nodes = j["kernels"][0]["nodes"];
           nodes.push_back({"const", "f32", 1.0});
           for (int i = 0; i < 300; ++i) nodes.push_back({"neg", "f32", {nodes.size() - 1}});
         },
         {"deeper than 256"});
  expect("spiral_mlp_train",
         [](json& j) {
           json& nodes = j["kernels"][0]["nodes"];
           nodes.push_back({"const", "f32", 1.0});
           for (int i = 0; i < 40; ++i) nodes.push_back({"add", "f32", {nodes.size() - 1, nodes.size() - 1}});
         },
         {"unfolds to more than"});
  // A store whose value node does not exist.
  expect("spiral_mlp_train", [](json& j) { j["kernels"][0]["stores"][0]["value"] = 100000; }, {"value node 100000"});
}

TEST_F(MalformedPlanTest, PlanLevelIndices) {
  expect("spiral_mlp_train", [](json& j) { j["steps"][stepOfKind(j, "kernels")]["kernels"][0]["kernel"] = 999; },
         {"kernel 999 is out of range"});
  expect("spiral_mlp_train", [](json& j) { std::swap(j["inputs"][0], j["inputs"][1]); }, {"input 0 is b"});
  expect("spiral_mlp_train", [](json& j) { j["outputs"][0] = -1; }, {"plan output buffer -1 out of range"});
  expect("spiral_mlp_train", [](json& j) { j["updates"][0][1] = 100000; }, {"update buffer 100000 out of range"});
  expect("spiral_mlp_train", [](json& j) { j["buffers"][bufferOfKind(j, "temp")]["offset"] = j["arenaBytes"]; },
         {"ends past its region of"});
  expect("spiral_mlp_train", [](json& j) { j["buffers"][bufferOfKind(j, "temp")]["offset"] = 8; }, {"is not aligned"});
  expect("spiral_mlp_train", [](json& j) { j["arenaBytes"] = 100; }, {"not a multiple of 256"});
  expect("spiral_mlp_train", [](json& j) { j["buffers"][0]["lastUse"] = 100000; }, {"lastUse 100000 is out of range"});
  expect("spiral_mlp_train", [](json& j) { j["buffers"][bufferOfKind(j, "input")]["input"] = 99; }, {"input 99"});
  expect("spiral_mlp_train",
         [](json& j) {
           json& s = j["steps"][stepOfKind(j, "gemm")];
           s["kernels"].push_back(s["kernels"].empty() ? j["steps"][stepOfKind(j, "kernels")]["kernels"][0]
                                                       : s["kernels"][0]);
           s["kernels"].push_back(s["kernels"][0]);
         },
         {"a gemm step runs"});
  // Kernel buffers of another size than the plan buffers they name.
  expect("spiral_mlp_train",
         [](json& j) {
           json& k = j["steps"][stepOfKind(j, "kernels")]["kernels"][0]["buffers"];
           for (size_t b = 0; b < j["buffers"].size(); ++b)
             if (j["buffers"][b]["type"] == "f32[]") k[0] = b;
         },
         {"plan buffer"});
}

// Cut and flipped bytes of real plans: every parse returns (a plan or an
// Error), and every plan that parses runs (to results or an Error).
TEST_F(MalformedPlanTest, MutatedTextNeverCrashes) {
  auto built = buildModel("spiral_mlp_train");
  ASSERT_TRUE(built) << built.error().message();
  Module m("refs");
  Tensor x = Tensor::fromDoubles(TensorType(DType::F32, {5}), {-2, -0.5, 0, 3, 1e30});
  std::mt19937 rng(1234);
  int parsed = 0, ran = 0;
  for (const std::string name : {"refs", "consts", "spiral_mlp_train"}) {
    const std::string& t = text(name);
    for (size_t cut = 0; cut < t.size(); cut += std::max<size_t>(1, t.size() / 300))
      EXPECT_FALSE(parsePlan(t.substr(0, cut), constants_[name]));
    const std::string alphabet = "0123456789-[]{}\",:.eE \x01\xff";
    for (int i = 0; i < 1500; ++i) {
      std::string u = t;
      for (int e = 0; e < 1 + static_cast<int>(rng() % 3); ++e) {
        size_t at = rng() % u.size();
        if (std::isdigit(static_cast<unsigned char>(u[at])) || rng() % 4 == 0)
          u[at] = alphabet[rng() % alphabet.size()];
      }
      auto p = parsePlan(u, constants_[name]);
      if (!p) continue;
      ++parsed;
      if (name == "consts" || ran >= 300) continue;  // (its module is not kept)
      ++ran;
      CpuRunner r(std::make_shared<const Plan>(std::move(*p)));
      auto result = name == "refs" ? r.run(m, {x}) : r.run(built->module(), built->args);
      (void)result;
    }
  }
  std::cout << "[ mutated  ] " << parsed << " mutated plans parsed, " << ran << " ran\n";
}

}  // namespace
}  // namespace kfuse
