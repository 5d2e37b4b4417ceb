#include "passes/gradients/rules.h"

#include <cassert>

namespace kfuse {

const GradientRules& GradientRules::global() {
  static const GradientRules rules = [] {
    GradientRules r;
    gradients::addElementwiseRules(r);
    gradients::addReductionRules(r);
    gradients::addShapeRules(r);
    gradients::addShapeIndexRules(r);
    gradients::addScatterRules(r);
    gradients::addLinalgRules(r);
    gradients::addPoolRules(r);
    gradients::addNormRules(r);
    gradients::addLossRules(r);
    return r;
  }();
  return rules;
}

const GradFn* GradientRules::find(const OpDef& op) const {
  auto it = rules_.find(op.name);
  return it == rules_.end() ? nullptr : &it->second;
}

void GradientRules::add(std::string_view op, GradFn rule) {
  // A rule for an op the registry lacks, or two for one op, is a bug in
  // this folder, not bad input.
  assert(OpRegistry::global().find(op) && "a gradient rule for an unknown op");
  [[maybe_unused]] bool added = rules_.emplace(std::string(op), std::move(rule)).second;
  assert(added && "two gradient rules for one op");
}

}  // namespace kfuse
