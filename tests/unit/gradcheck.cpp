#include "tests/unit/gradcheck.h"

#include <cmath>

#include "ir/builder.h"
#include "ir/interpreter.h"
#include "ir/support/strings.h"
#include "passes/autodiff.h"

namespace kfuse::test {
namespace {

Tensor fill(const Operand& o, std::mt19937_64& rng) {
  Tensor t(o.type);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uni(0.5, 2.0);
  for (int64_t i = 0; i < t.numElements(); ++i) {
    double v = 0;
    switch (o.fill) {
      case Fill::Normal: v = normal(rng); break;
      case Fill::Positive: v = uni(rng); break;
      case Fill::AwayFromZero: v = (rng() % 2 ? 1 : -1) * uni(rng) * 0.5; break;
      case Fill::Labels:
      case Fill::Indices: v = static_cast<double>(rng() % static_cast<uint64_t>(o.range)); break;
      case Fill::Bool: v = static_cast<double>(rng() % 2); break;
      case Fill::Step: v = 3; break;
      case Fill::SomeZeros: v = i % 3 == 0 ? 0.0 : normal(rng); break;
    }
    t.set(i, v);
  }
  return t;
}

struct Harness {
  Module m;
  Graph* g = nullptr;
  std::vector<Tensor> args;
  std::vector<Value*> wrt;
  std::vector<size_t> wrtIndex;
};

// loss = sum_i sum(result_i * w_i) with random weights w_i, so every element
// of every floating-point result contributes with a distinct sensitivity.
Expected<Value*> buildLoss(Harness& h, const GradCase& c, std::mt19937_64& rng) {
  std::vector<Value*> operands;
  for (size_t i = 0; i < c.operands.size(); ++i) {
    operands.push_back(h.g->addArgument(str("in", i), c.operands[i].type));
    h.args.push_back(fill(c.operands[i], rng));
    if (c.operands[i].differentiate && isFloat(c.operands[i].type.dtype)) {
      h.wrt.push_back(operands.back());
      h.wrtIndex.push_back(i);
    }
  }
  KF_ASSIGN_OR_RETURN(Node * n, buildNode(*h.g, c.op, operands, c.attrs));
  Value* loss = nullptr;
  for (size_t r = 0; r < n->numResults(); ++r) {
    Value* y = n->result(r);
    if (!isFloat(y->type().dtype)) continue;
    Operand wspec{TensorType(y->type().dtype, y->type().shape), Fill::Normal};
    Value* w = h.g->addArgument(str("w", r), wspec.type);
    h.args.push_back(fill(wspec, rng));
    KF_ASSIGN_OR_RETURN(Node * prod, buildNode(*h.g, "mul", {y, w}));
    KF_ASSIGN_OR_RETURN(Node * sum, buildNode(*h.g, "reduce_sum", {prod->result()}));
    if (!loss) {
      loss = sum->result();
    } else {
      KF_ASSIGN_OR_RETURN(Node * acc, buildNode(*h.g, "add", {loss, sum->result()}));
      loss = acc->result();
    }
  }
  if (!loss) return Error("the op has no floating-point result");
  return loss;
}

}  // namespace

std::string checkGradient(const GradCase& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Harness h;
  h.g = h.m.addFunction("f");
  auto loss = buildLoss(h, c, rng);
  if (!loss) return loss.error().message();
  auto grads = buildBackward(*h.g, *loss, h.wrt);
  if (!grads) return grads.error().message();
  // An operand no gradient reaches (sign, floor) has derivative zero.
  std::vector<Value*> results{*loss};
  std::vector<int> slot;
  for (Value* v : h.wrt) {
    auto it = grads->find(v);
    slot.push_back(it == grads->end() ? -1 : static_cast<int>(results.size()));
    if (it != grads->end()) results.push_back(it->second);
  }
  h.g->setResults(results);
  auto analytic = interpret(*h.g, h.args);
  if (!analytic) return analytic.error().message();

  for (size_t k = 0; k < h.wrt.size(); ++k) {
    size_t arg = h.wrtIndex[k];
    Tensor zeros(h.wrt[k]->type());
    const Tensor& grad = slot[k] < 0 ? zeros : analytic->outputs[static_cast<size_t>(slot[k])];
    for (int64_t e = 0; e < grad.numElements(); ++e) {
      std::vector<Tensor> plus = h.args, minus = h.args;
      double x = h.args[arg].at(e);
      double eps = c.eps * std::max(1.0, std::fabs(x));
      plus[arg].set(e, x + eps);
      minus[arg].set(e, x - eps);
      auto lp = interpret(*h.g, plus);
      auto lm = interpret(*h.g, minus);
      if (!lp || !lm) return "finite-difference evaluation failed";
      double numeric = (lp->outputs[0].at(0) - lm->outputs[0].at(0)) / (2 * eps);
      double got = grad.at(e);
      if (std::fabs(got - numeric) > 1e-6 + c.rtol * std::fabs(numeric))
        return str("d loss / d operand ", arg, " element ", e, ": autodiff ", got, ", finite differences ", numeric);
    }
  }
  return "";
}

}  // namespace kfuse::test
