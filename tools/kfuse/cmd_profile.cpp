// kfuse profile: how long each step (launch) of a model's plan takes on
// the cpu or cuda target. The plan runs --warmup times, then --repeat times
// with every step timed by its runner (Executor::stepTimes); one row per
// step, in plan order as `kfuse stats` and `kfuse opt --print-kernels`
// count them, and the sum of the steps against the wall time of whole runs,
// so that what happens between steps shows.
#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "codegen/backend.h"
#include "ir/npy.h"
#include "ir/support/strings.h"
#include "codegen/trainer.h"
#include "tools/common/tensor_args.h"
#include "tools/kfuse/commands.h"
#include "tools/kfuse/plan_args.h"

namespace kfuse::cli {
namespace {

struct ProfileArgs : PlanModelArgs {
  int64_t batch = 0, repeat = 20, warmup = 3;
  std::string sort = "plan";
  std::vector<std::string> inputs;  // NAME=FILE (.npy)
  CudaFlags cuda;
  bool wallOnly = false;
  int threads = 0;
};

Status validate(const ProfileArgs& a) {
  if (a.repeat < 1) return Error(str("--repeat must be at least 1, got ", a.repeat));
  if (a.warmup < 0) return Error(str("--warmup must not be negative, got ", a.warmup));
  if (a.sort != "plan" && a.sort != "time") return Error(str("--sort must be plan or time, got '", a.sort, "'"));
  if (a.batch < 0) return Error(str("--batch must be positive, got ", a.batch));
  return Status::ok();
}

// Stand-ins for real data, the same on every run of kfuse: floats uniform
// in [-1, 1), integers in [0, bound) (bound 1: zeros, an index valid for
// any table), booleans false.
Tensor randomTensor(const TensorType& t, std::mt19937_64& rng, int64_t bound = 1) {
  Tensor out(t);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int64_t> index(0, std::max<int64_t>(bound, 1) - 1);
  for (int64_t i = 0; i < t.numElements(); ++i) {
    if (isFloat(t.dtype)) out.set(i, real(rng));
    else if (isInteger(t.dtype)) out.set(i, static_cast<double>(index(rng)));
  }
  return out;
}

// The forward's inputs: from --input files (every input then), else random.
Expected<std::vector<Tensor>> forwardInputs(const ProfileArgs& a, const Graph& fn, std::mt19937_64& rng) {
  std::vector<NamedType> signature;
  for (const auto& arg : fn.arguments()) signature.push_back({arg->name(), arg->type()});
  if (!a.inputs.empty()) return gatherInputs(signature, fn.name(), a.inputs, readNpy);
  std::vector<Tensor> out;
  for (const NamedType& in : signature) out.push_back(randomTensor(in.type, rng));
  return out;
}

// A plan compiled for the target and run again and again: the inference
// forward, or the Trainer's training step.
class Profiled {
 public:
  virtual ~Profiled() = default;
  virtual Status runOnce() = 0;
  virtual Expected<StepTimes> times() const = 0;
  virtual const Plan* plan() = 0;
  virtual uint64_t launches() const = 0;
};

class InferenceRun : public Profiled {
 public:
  InferenceRun(std::unique_ptr<Module> m, std::unique_ptr<Executor> e, std::vector<Tensor> args)
      : module_(std::move(m)), exec_(std::move(e)), args_(std::move(args)) {}
  Status runOnce() override { return exec_->run(fn(), args_).status(); }
  Expected<StepTimes> times() const override { return exec_->stepTimes(fn()); }
  const Plan* plan() override { return exec_->planFor(fn()); }
  uint64_t launches() const override { return exec_->launches(); }

 private:
  const Graph& fn() const { return *module_->functions().front(); }
  std::unique_ptr<Module> module_;
  std::unique_ptr<Executor> exec_;
  std::vector<Tensor> args_;
};

// The learning rate is a runtime input: its value changes no launch.
class TrainingRun : public Profiled {
 public:
  TrainingRun(std::unique_ptr<Trainer> t, std::vector<Tensor> inputs, Tensor labels)
      : trainer_(std::move(t)), inputs_(std::move(inputs)), labels_(std::move(labels)) {}
  Status runOnce() override { return trainer_->step(inputs_, labels_, 1e-3).status(); }
  Expected<StepTimes> times() const override { return trainer_->trainStepTimes(); }
  const Plan* plan() override { return trainer_->trainPlan(); }
  uint64_t launches() const override { return trainer_->launches(); }

 private:
  std::unique_ptr<Trainer> trainer_;
  std::vector<Tensor> inputs_;
  Tensor labels_;
};

Expected<std::unique_ptr<Profiled>> prepareInference(const ProfileArgs& a, const ExecutionOptions& exec) {
  KF_ASSIGN_OR_RETURN(Backend backend, backendFor(a.target, {.layout = a.layout, .cpu = exec.cpu}));
  KF_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, createExecutor(a.target, exec));
  KF_ASSIGN_OR_RETURN(std::unique_ptr<Module> model, loadPlanModel(a.model, a.batch));
  std::mt19937_64 rng(0);
  KF_ASSIGN_OR_RETURN(std::vector<Tensor> args, forwardInputs(a, *model->functions().front(), rng));
  KF_RETURN_IF_ERROR(prepareModule(*model, backend));
  return std::unique_ptr<Profiled>(new InferenceRun(std::move(model), std::move(executor), std::move(args)));
}

// Labels for the training step: class indices below the forward's last
// dimension (cross entropy), or values of the output's type (mse).
Expected<std::unique_ptr<Profiled>> prepareTraining(const ProfileArgs& a, const ExecutionOptions& exec) {
  KF_ASSIGN_OR_RETURN(TrainerOptions o, trainerOptionsOf(a));
  o.execution = exec;
  o.stopOnNonFinite = false;  // random data: a diverging loss is no reason to stop timing
  KF_ASSIGN_OR_RETURN(std::unique_ptr<Module> model, loadPlanModel(a.model, a.batch));
  std::mt19937_64 rng(0);
  KF_ASSIGN_OR_RETURN(std::vector<Tensor> inputs, forwardInputs(a, *model->functions().front(), rng));
  KF_ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer, Trainer::create(std::move(model), o));
  Tensor labels;
  if (o.training.loss != LossKind::None) {
    const Graph& step = trainer->trainStep();
    const TensorType& lt = step.argument(trainer->forward().arguments().size())->type();
    const std::vector<TensorType> results = trainer->forward().resultTypes();
    int64_t classes = results.empty() || results[0].rank() == 0 ? 1 : results[0].shape.back();
    labels = randomTensor(lt, rng, classes);
  }
  return std::unique_ptr<Profiled>(new TrainingRun(std::move(trainer), std::move(inputs), std::move(labels)));
}

struct Measured {
  StepTimes steps;     // the measured runs only (none with --wall-only)
  double wallSeconds;  // of the measured runs, as their caller sees them
  uint64_t launches;   // counted by the runtime during the measured runs
};

Expected<Measured> measure(Profiled& p, int64_t warmup, int64_t repeat, bool wallOnly) {
  for (int64_t i = 0; i < warmup; ++i) KF_RETURN_IF_ERROR(p.runOnce());
  StepTimes before;
  if (warmup > 0 && !wallOnly) {
    KF_ASSIGN_OR_RETURN(before, p.times());
  }
  uint64_t launchesBefore = p.launches();
  auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < repeat; ++i) KF_RETURN_IF_ERROR(p.runOnce());
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Measured m{{}, wall, p.launches() - launchesBefore};
  if (wallOnly) return m;
  KF_ASSIGN_OR_RETURN(StepTimes after, p.times());
  m.steps = after.since(before);
  return m;
}

std::string_view kindName(StepKind k) {
  switch (k) {
    case StepKind::Kernels: return "kernels";
    case StepKind::Gemm: return "gemm";
    case StepKind::Conv: return "conv";
    case StepKind::Reference: return "reference";
    case StepKind::Collective: return "collective";
  }
  return "?";
}

// One row per step: mean microseconds per run and share of the steps' sum.
struct Row {
  size_t index;
  const Step* step;
  double us, share;
};

struct Report {
  std::vector<Row> rows;
  double stepsUs = 0, wallUs = 0;
  size_t launches = 0;         // per run, in the plan
  double measuredLaunches = 0;  // per run, as the runtime counted them
};

Report reportOf(const Plan& plan, const Measured& m, int64_t repeat, const std::string& sort, bool wallOnly) {
  Report r;
  auto runs = static_cast<double>(m.steps.runs);
  for (size_t i = 0; i < (wallOnly ? 0 : plan.steps.size()); ++i) {
    double us = i < m.steps.seconds.size() && runs > 0 ? m.steps.seconds[i] / runs * 1e6 : 0;
    r.rows.push_back({i, &plan.steps[i], us, 0});
    r.stepsUs += us;
  }
  for (Row& row : r.rows) row.share = r.stepsUs > 0 ? 100 * row.us / r.stepsUs : 0;
  if (sort == "time")
    std::stable_sort(r.rows.begin(), r.rows.end(), [](const Row& x, const Row& y) { return x.us > y.us; });
  r.wallUs = m.wallSeconds / static_cast<double>(repeat) * 1e6;
  r.launches = plan.launches();
  r.measuredLaunches = static_cast<double>(m.launches) / static_cast<double>(repeat);
  return r;
}

nlohmann::json toJson(const ProfileArgs& a, const Report& r) {
  nlohmann::json steps = nlohmann::json::array();
  for (const Row& row : r.rows)
    steps.push_back({{"index", row.index},
                     {"name", row.step->name},
                     {"kind", std::string(kindName(row.step->kind()))},
                     {"phase", std::string(phaseName(row.step->phase))},
                     {"mean_us", row.us},
                     {"share_percent", row.share}});
  return {{"model", a.model},     {"target", a.target},         {"train", a.train},
          {"warmup", a.warmup},   {"repeat", a.repeat},         {"launches_per_run", r.launches},
          {"measured_launches_per_run", r.measuredLaunches},    {"cuda_graph", a.cuda.cudaGraph},
          {"steps", steps},       {"steps_total_us", r.stepsUs}, {"run_wall_us", r.wallUs}};
}

void printTable(const ProfileArgs& a, const Report& r) {
  if (a.wallOnly) {
    std::cout << a.model << " (" << (a.train ? "training step" : "inference") << ", target " << a.target
              << "): whole runs only, mean of " << a.repeat << " after " << a.warmup << " warm-up\n"
              << std::fixed << std::setprecision(2) << "run " << r.wallUs << " us; " << r.measuredLaunches
              << " launches per run counted (" << r.launches << " in the plan)\n"
              << std::defaultfloat;
    return;
  }
  std::cout << a.model << " (" << (a.train ? "training step" : "inference") << ", target " << a.target << "): mean of "
            << a.repeat << (a.repeat == 1 ? " run" : " runs") << " after " << a.warmup << " warm-up\n";
  size_t width = 4;
  for (const Row& row : r.rows) width = std::max(width, row.step->name.size());
  std::cout << std::right << std::setw(5) << "step" << "  " << std::left;
  if (a.train) std::cout << std::setw(11) << "phase";
  std::cout << std::setw(11) << "kind" << std::setw(static_cast<int>(width) + 2) << "name" << std::right
            << std::setw(12) << "time (us)" << std::setw(8) << "share" << "\n";
  std::cout << std::fixed << std::setprecision(2);
  for (const Row& row : r.rows) {
    std::cout << std::right << std::setw(5) << row.index << "  " << std::left;
    if (a.train) std::cout << std::setw(11) << phaseName(row.step->phase);
    std::cout << std::setw(11) << kindName(row.step->kind()) << std::setw(static_cast<int>(width) + 2) << row.step->name
              << std::right << std::setw(12) << row.us << std::setw(7) << std::setprecision(1) << row.share << "%"
              << std::setprecision(2) << "\n";
  }
  double inSteps = r.wallUs > 0 ? 100 * r.stepsUs / r.wallUs : 0;
  std::cout << "total: " << r.launches << (r.launches == 1 ? " launch" : " launches") << " per run; steps "
            << r.stepsUs << " us, whole run " << r.wallUs << " us (" << std::setprecision(1) << inSteps
            << "% in steps)\n"
            << std::defaultfloat;
}

int runProfile(const ProfileArgs& a) {
  auto fail = [](const Error& e) { return reportError("profile", e); };
  if (Status s = validate(a); !s) return fail(s.error());
  ExecutionOptions exec;
  exec.inplace = !a.noInplace;
  exec.cpu = a.cpu;
  exec.profile = !a.wallOnly;
  exec.threads = a.threads;
  if (Status s = applyCudaFlags(a.cuda, a.target, exec); !s) return fail(s.error());
  if (a.cuda.cudaGraph && !a.wallOnly)
    return fail(Error("per-step times cannot be measured with --cuda-graph: a CUDA Graph replays the whole plan "
                      "as one launch (--wall-only times whole runs)"));
  auto profiled = a.train ? prepareTraining(a, exec) : prepareInference(a, exec);
  if (!profiled) return fail(profiled.error());
  auto measured = measure(**profiled, a.warmup, a.repeat, a.wallOnly);
  if (!measured) return fail(measured.error());
  const Plan* plan = (*profiled)->plan();
  if (!plan) return fail(Error(str("target ", a.target, " ran no plan")));
  Report r = reportOf(*plan, *measured, a.repeat, a.sort, a.wallOnly);
  if (a.json)
    std::cout << toJson(a, r).dump(2) << "\n";
  else
    printTable(a, r);
  return 0;
}

}  // namespace

Action addProfileCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("profile", "Time every step (launch) of a model's plan on the cpu or cuda target");
  auto a = std::make_shared<ProfileArgs>();
  addPlanModelOptions(cmd, *a, "is timed");
  // Unlike stats and memory, profile runs the plan: cuda needs a GPU.
  cmd->get_option("--target")->description("Target whose plan is timed: cpu or cuda (a GPU)");
  cmd->add_option("--batch", a->batch, "Re-type the model for this batch size first");
  cmd->add_option("--repeat", a->repeat, "Runs measured (default 20)");
  cmd->add_option("--warmup", a->warmup, "Runs before measuring, not counted (default 3)");
  cmd->add_option("--sort", a->sort, "Row order: plan (default, as kfuse stats counts) or time (slowest first)");
  cmd->add_option("--input", a->inputs,
                  "NAME=FILE (.npy) for every input of the forward (default: seeded random data)");
  addThreadsFlag(cmd, a->threads);
  cmd->add_flag("--wall-only", a->wallOnly,
                "Time whole runs only, with no clock or CUDA event per step (a benchmark's step time; "
                "allows --cuda-graph, which replays a run as one launch)");
  addCudaFlags(cmd, a->cuda);
  return [a] { return runProfile(*a); };
}

}  // namespace kfuse::cli
