// Every differentiable op's gradient rule against central finite differences
// in f64, and a check that no op is left out: each op either has a case or
// is listed by its family as not differentiable, with the reason.
#include <gtest/gtest.h>

#include <set>

#include "ir/op_registry.h"
#include "passes/gradients/rules.h"
#include "tests/unit/gradcheck.h"

namespace kfuse::test {

void PrintTo(const GradCase& c, std::ostream* os) { *os << c.name; }

namespace {

std::vector<GradFamily> families() {
  return {elementwiseGrads(), reductionGrads(), shapeGrads(), nnGrads(), optimizerGrads()};
}

std::vector<GradCase> allCases() {
  std::vector<GradCase> cases;
  for (GradFamily& f : families())
    for (GradCase& c : f.cases) cases.push_back(std::move(c));
  return cases;
}

class GradCheck : public testing::TestWithParam<GradCase> {};

TEST_P(GradCheck, MatchesFiniteDifferences) { EXPECT_EQ(checkGradient(GetParam()), ""); }

INSTANTIATE_TEST_SUITE_P(Ops, GradCheck, testing::ValuesIn(allCases()),
                         [](const auto& info) { return info.param.name; });

TEST(GradCoverage, EveryOpIsCheckedOrListed) {
  std::set<std::string> checked, listed;
  for (const GradFamily& f : families()) {
    for (const GradCase& c : f.cases) checked.insert(c.op);
    for (const auto& [op, reason] : f.notDifferentiable) listed.insert(op);
  }
  std::vector<std::string> missing, stale;
  for (const OpDef* op : OpRegistry::global().all()) {
    const bool rule = GradientRules::global().find(*op) != nullptr;
    if (rule && !checked.count(op->name)) missing.push_back(op->name + " (has a rule, no check)");
    if (!rule && !listed.count(op->name)) missing.push_back(op->name + " (no rule, not listed)");
    if (rule && listed.count(op->name)) stale.push_back(op->name);
  }
  EXPECT_TRUE(missing.empty()) << testing::PrintToString(missing);
  EXPECT_TRUE(stale.empty()) << "listed as not differentiable but has a rule: " << testing::PrintToString(stale);
}

}  // namespace
}  // namespace kfuse::test
