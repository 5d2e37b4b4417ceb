// autodiff{loss=... optimizer=... func=...}: turns forward functions into
// training steps (see training.h). Options:
//   loss=cross_entropy|mse|none   optimizer=sgd|adam|adamw|none
//   momentum= dampening= nesterov= weight-decay= beta1= beta2= eps=
//   bn-momentum= keep-outputs=true|false
//   ignore-index=N (cross_entropy, default -100) dropout-seed=N (default 0)
//   func=NAME  only this function (default: every function)
#include <charconv>

#include "ir/support/strings.h"
#include "passes/pass_registry.h"
#include "passes/training.h"

namespace kfuse {
namespace {

class AutodiffPass : public Pass {
 public:
  AutodiffPass(TrainingOptions opts, std::string func) : opts_(std::move(opts)), func_(std::move(func)) {}
  std::string_view name() const override { return "autodiff"; }
  PassResult run(Graph& g, const PassContext& ctx) override {
    if (!func_.empty() && g.name() != func_) return false;
    if (Status s = makeTrainingStep(g, opts_); !s) return Error(str("@", g.name(), ": ", s.message()));
    return true;
  }

 private:
  TrainingOptions opts_;
  std::string func_;
};

Expected<double> number(const std::string& key, const std::string& v) {
  double out = 0;
  auto res = std::from_chars(v.data(), v.data() + v.size(), out);
  if (res.ec != std::errc() || res.ptr != v.data() + v.size())
    return Error(str("autodiff option ", key, "=", v, " is not a number"));
  return out;
}

Expected<int64_t> integer(const std::string& key, const std::string& v) {
  int64_t out = 0;
  auto res = std::from_chars(v.data(), v.data() + v.size(), out);
  if (res.ec != std::errc() || res.ptr != v.data() + v.size())
    return Error(str("autodiff option ", key, "=", v, " is not a 64-bit integer"));
  return out;
}

Expected<bool> boolean(const std::string& key, const std::string& v) {
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0") return false;
  return Error(str("autodiff option ", key, "=", v, " must be true or false"));
}

}  // namespace

Expected<std::unique_ptr<Pass>> createAutodiffPass(const PassOptions& options) {
  TrainingOptions opts;
  std::string func;
  for (const auto& [key, v] : options) {
    OptimizerOptions& o = opts.optimizer;
    if (key == "loss") {
      KF_ASSIGN_OR_RETURN(opts.loss, parseLossKind(v));
    } else if (key == "optimizer") {
      KF_ASSIGN_OR_RETURN(o.kind, parseOptimizerKind(v));
    } else if (key == "momentum") {
      KF_ASSIGN_OR_RETURN(o.momentum, number(key, v));
    } else if (key == "dampening") {
      KF_ASSIGN_OR_RETURN(o.dampening, number(key, v));
    } else if (key == "nesterov") {
      KF_ASSIGN_OR_RETURN(o.nesterov, boolean(key, v));
    } else if (key == "weight-decay") {
      KF_ASSIGN_OR_RETURN(o.weightDecay, number(key, v));
    } else if (key == "beta1") {
      KF_ASSIGN_OR_RETURN(o.beta1, number(key, v));
    } else if (key == "beta2") {
      KF_ASSIGN_OR_RETURN(o.beta2, number(key, v));
    } else if (key == "eps") {
      KF_ASSIGN_OR_RETURN(o.eps, number(key, v));
    } else if (key == "bn-momentum") {
      KF_ASSIGN_OR_RETURN(opts.bnMomentum, number(key, v));
    } else if (key == "keep-outputs") {
      KF_ASSIGN_OR_RETURN(opts.keepOutputs, boolean(key, v));
    } else if (key == "ignore-index") {
      KF_ASSIGN_OR_RETURN(opts.ignoreIndex, integer(key, v));
    } else if (key == "dropout-seed") {
      KF_ASSIGN_OR_RETURN(int64_t seed, integer(key, v));
      opts.dropoutSeed = static_cast<uint64_t>(seed);
    } else if (key == "func") {
      func = v;
    } else {
      return Error(str("pass 'autodiff' has no option '", key,
                       "' (options: loss, optimizer, momentum, dampening, nesterov, weight-decay, beta1, beta2, eps, "
                       "bn-momentum, keep-outputs, ignore-index, dropout-seed, func)"));
    }
  }
  return createAutodiffPass(opts, func);
}

std::unique_ptr<Pass> createAutodiffPass(const TrainingOptions& opts, std::string func) {
  return std::unique_ptr<Pass>(new AutodiffPass(opts, std::move(func)));
}

}  // namespace kfuse
