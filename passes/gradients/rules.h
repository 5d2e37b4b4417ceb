// The gradient rules autodiff applies: one per differentiable op, kept
// beside the op registry rather than in it. The runtime reads ops (their
// inference and reference implementations) and never differentiates, so a
// program that only runs plans (kfuse-run) links none of this; adding a
// differentiable op adds its rule to its family's file here.
//
// A rule receives the forward node and the gradients of its results and
// returns one gradient per operand (nullptr where none flows), built with
// GradBuilder (grad_builder.h).
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>

#include "ir/op_registry.h"
#include "passes/gradients/grad_builder.h"

namespace kfuse {

class GradientRules {
 public:
  // Every built-in rule; each names an op of OpRegistry::global().
  static const GradientRules& global();

  // The rule of `op`, or null when it is not differentiable (comparisons,
  // argmax, shape_of, integer-only ops, the gradient ops themselves).
  const GradFn* find(const OpDef& op) const;

  // Registration (the family files below).
  void add(std::string_view op, GradFn rule);

 private:
  std::unordered_map<std::string, GradFn> rules_;
};

namespace gradients {
// The families' rules, one function per file of passes/gradients/.
void addElementwiseRules(GradientRules& r);
void addReductionRules(GradientRules& r);
void addShapeRules(GradientRules& r);
void addShapeIndexRules(GradientRules& r);
void addScatterRules(GradientRules& r);
void addLinalgRules(GradientRules& r);
void addPoolRules(GradientRules& r);
void addNormRules(GradientRules& r);
void addLossRules(GradientRules& r);
}  // namespace gradients

}  // namespace kfuse
