// kfuse train: compile a model's training step once and train it on a
// dataset, epoch by epoch.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "frontend/io/npz.h"
#include "ir/specialize.h"
#include "ir/support/strings.h"
#include "ir/weights.h"
#include "codegen/backend.h"
#include "runtime/package/package_runner.h"
#include "codegen/trainer.h"
#include "runtime/comm/communicator.h"
#include "tools/kfuse/commands.h"
#include "tools/kfuse/instrumentation_flags.h"
#include "tools/kfuse/model_loader.h"
#include "tools/kfuse/rank_launcher.h"
#include "tools/kfuse/train_data.h"
#include "tools/kfuse/train_flags.h"

namespace kfuse::cli {
namespace {

struct TrainArgs {
  std::string model, data, xKey = "x", yKey = "y";
  OptimizerFlags opt;
  double lr = 0.01;
  int64_t epochs = 1, batch = 0;
  bool noShuffle = false, allowNaN = false, poison = false;
  int threads = 0;
  PlanningFlags planning;
  uint64_t seed = 0;
  std::string initWeights, saveWeights, logJson, target = defaultTarget();
  std::vector<std::string> shapes;
  CudaFlags cuda;
  InstrumentationFlags instr;
  // Data parallel (docs/training.md): --ranks launches local ranks; a rank
  // is told its place by --rank/--world-size (or torchrun's RANK and
  // WORLD_SIZE) and meets the others through --store.
  int ranks = 0, rank = -1, worldSize = 0, commTimeout = 60;
  std::string store, hostname = "127.0.0.1";
  double bucketMb = 25;
  bool zero = false;
};

Error unevenBatch(int64_t batch, int ranks) {
  return Error(str("--batch=", batch, " does not divide into ", ranks, " equal slices (one per rank): use a multiple of ",
                   ranks));
}

// This process's place in a data-parallel run: the flags, else torchrun's
// RANK and WORLD_SIZE; a world of one when neither says otherwise.
Expected<CommConfig> commConfig(const TrainArgs& a) {
  CommConfig c;
  auto env = [](const char* name) -> int {
    const char* v = std::getenv(name);
    return v ? std::atoi(v) : -1;
  };
  c.rank = a.rank >= 0 ? a.rank : std::max(env("RANK"), 0);
  c.size = a.worldSize > 0 ? a.worldSize : std::max(env("WORLD_SIZE"), 1);
  if (c.rank >= c.size) return Error(str("--rank ", c.rank, " is not below --world-size ", c.size));
  c.store = a.store;
  c.hostname = a.hostname;
  c.timeoutSeconds = a.commTimeout;
  if (c.size > 1 && c.store.empty())
    return Error(str("rank ", c.rank, " of ", c.size, ": --store file:DIR or redis:HOST:PORT says where the ranks meet"));
  return c;
}

Expected<TrainerOptions> trainerOptions(const TrainArgs& a) {
  TrainerOptions o;
  KF_ASSIGN_OR_RETURN(o.training, trainingOptions(a.opt));
  o.training.dropoutSeed = a.seed;
  if (!(a.lr > 0)) return Error(str("--lr must be positive, got ", a.lr));
  o.target = a.target;
  o.execution.inplace = !a.planning.noInplace;
  o.execution.poison = a.poison;
  o.execution.threads = a.threads;
  o.execution.cpu = a.planning.cpu;
  KF_RETURN_IF_ERROR(applyCudaFlags(a.cuda, a.target, o.execution));
  o.fuse = !a.planning.noFuse;
  o.layout = a.planning.layout;
  o.instrumentation = a.instr.toInstrumentation();
  o.stopOnNonFinite = !a.allowNaN;
  return o;
}

// Starting weights from a file: every array must name a parameter of the
// model, with its exact shape; parameters the file lacks keep their values.
Status loadInitWeights(Module& m, const std::string& path) {
  auto arrays = std::filesystem::path(path).extension() == ".npz" ? io::readNpz(path) : readWeightsFile(path);
  if (!arrays) return arrays.error();
  for (const auto& [name, t] : *arrays) {
    Param* p = m.findParam(name);
    if (!p) return Error(str("--init-weights '", path, "': the model has no parameter '", name, "'"));
    if (t.dtype() != p->type.dtype || t.shape() != p->type.shape)
      return Error(str("--init-weights '", path, "': '", name, "' is ", formatType(t.type()), " but the model's @",
                       name, " is ", formatType(p->type)));
    m.setParamData(name, t);
  }
  return Status::ok();
}

// What the epoch loop trains: a model compiled now (Trainer), or a package
// compiled before (PackageRunner).
class Session {
 public:
  virtual ~Session() = default;
  virtual Expected<double> step(const std::vector<Tensor>& inputs, const Tensor& labels, double lr) = 0;
  virtual Expected<std::vector<Tensor>> eval(const std::vector<Tensor>& inputs) = 0;
  virtual int64_t stepCount() const = 0;
  virtual Status save(const std::string& path) const = 0;
};

class TrainerSession : public Session {
 public:
  explicit TrainerSession(std::unique_ptr<Trainer> t) : t_(std::move(t)) {}
  Expected<double> step(const std::vector<Tensor>& in, const Tensor& y, double lr) override { return t_->step(in, y, lr); }
  Expected<std::vector<Tensor>> eval(const std::vector<Tensor>& in) override { return t_->eval(in); }
  int64_t stepCount() const override { return t_->stepCount(); }
  Status save(const std::string& path) const override { return t_->save(path); }

 private:
  std::unique_ptr<Trainer> t_;
};

class PackageSession : public Session {
 public:
  explicit PackageSession(std::unique_ptr<PackageRunner> r) : r_(std::move(r)) {}
  Expected<double> step(const std::vector<Tensor>& in, const Tensor& y, double lr) override {
    return r_->trainStep(in, y, lr);
  }
  Expected<std::vector<Tensor>> eval(const std::vector<Tensor>& in) override {
    return r_->run(r_->package().meta().training->forward, in);
  }
  int64_t stepCount() const override { return r_->stepCount(); }
  Status save(const std::string& path) const override { return r_->saveWeights(path); }

 private:
  std::unique_ptr<PackageRunner> r_;
};

// The fraction of labels (one per sample, or per position of token logits
// [B, S, V]; ignored ones left out) that are the arg-max logit of their row,
// over the full batches of the dataset (the forward is compiled for one
// batch size).
Expected<double> accuracy(Session& t, const Dataset& d, int64_t batch, int64_t ignoreIndex) {
  std::vector<int64_t> order = epochOrder(d.size(), false, 0, 0);
  int64_t correct = 0, seen = 0;
  int64_t perSample = d.size() ? d.y.numElements() / d.size() : 0;
  for (int64_t b = 0; b + batch <= d.size(); b += batch) {
    KF_ASSIGN_OR_RETURN(auto out, t.eval(d.inputRows(order, b, batch)));
    const Tensor& logits = out[0];
    int64_t classes = logits.shape().back();
    const int64_t* labels = d.y.as<int64_t>() + b * perSample;
    for (int64_t row = 0; row < batch * perSample; ++row) {
      if (labels[row] == ignoreIndex) continue;
      int64_t best = 0;
      for (int64_t c = 1; c < classes; ++c)
        if (logits.at(row * classes + c) > logits.at(row * classes + best)) best = c;
      correct += best == labels[row];
      ++seen;
    }
  }
  return seen ? static_cast<double>(correct) / static_cast<double>(seen) : 0.0;
}

// The --ignore-index a package was compiled with, from the options its meta
// records (kfuse compile writes " --ignore-index=N" when it is not -100).
int64_t packageIgnoreIndex(const PackageMeta& meta) {
  const std::string key = "--ignore-index=";
  size_t at = meta.options.find(key);
  if (at == std::string::npos) return -100;
  return std::strtoll(meta.options.c_str() + at + key.size(), nullptr, 10);
}

// What a training run needs before its first step.
struct Prepared {
  std::unique_ptr<Session> session;
  Dataset data;
  int64_t batch = 0;  // the global batch: every rank's slices together
  int rank = 0, ranks = 1;
  LossKind loss = LossKind::CrossEntropy;
  int64_t ignoreIndex = -100;
};

// A model: specialised to the batch, checked against the data, compiled.
Expected<Prepared> prepareModel(const TrainArgs& a) {
  KF_ASSIGN_OR_RETURN(TrainerOptions opts, trainerOptions(a));
  KF_RETURN_IF_ERROR(a.instr.validate());
  ModelOptions mopts;
  KF_RETURN_IF_ERROR(parseShapeSpecs(a.shapes, mopts));
  KF_ASSIGN_OR_RETURN(std::unique_ptr<Module> model, loadModel(a.model, mopts));
  if (model->functions().empty()) return Error(str("'", a.model, "' defines no function"));
  Graph& forward = *model->functions().front();
  const TensorType& in = forward.arguments().empty() ? TensorType() : forward.argument(0)->type();
  Prepared p;
  p.loss = opts.training.loss;
  p.ignoreIndex = opts.training.ignoreIndex;
  p.batch = a.batch > 0 ? a.batch : (in.rank() ? in.shape[0] : 1);
  KF_ASSIGN_OR_RETURN(CommConfig comm, commConfig(a));
  p.rank = comm.rank;
  p.ranks = comm.size;
  if (a.zero && p.ranks == 1) return Error("--zero shards the optimizer state over the ranks: add --ranks N (N > 1)");
  // Each rank trains on an equal slice of the global batch, so that the
  // mean of their mean gradients is the global batch's.
  if (p.batch % p.ranks != 0) return unevenBatch(p.batch, p.ranks);
  const int64_t slice = p.batch / p.ranks;
  if (in.rank() && in.shape[0] != slice) {
    if (auto s = specializeBatch(forward, slice); !s)
      return s.error().context(str("--batch=", p.batch, p.ranks > 1 ? str(" (", slice, " per rank)") : std::string(),
                                   " (the model is compiled for batch ", in.shape[0], ")"));
  }
  KF_ASSIGN_OR_RETURN(p.data, loadDataset(a.data, a.xKey, a.yKey, p.loss));
  std::vector<NamedType> inputs;
  for (const auto& arg : forward.arguments()) inputs.push_back({arg->name(), arg->type()});
  KF_RETURN_IF_ERROR(
      checkDataset(p.data, forward.name(), inputs, forward.resultTypes(), p.batch, p.loss, p.ignoreIndex));
  if (!a.initWeights.empty()) KF_RETURN_IF_ERROR(loadInitWeights(*model, a.initWeights));
  if (p.ranks > 1) {
    // A GPU's buckets go through NCCL; the simulated device's memory is the
    // host's, which Gloo reaches.
#if KFUSE_HAS_CUDA
    if (a.target == "cuda" && !a.cuda.simulate) {
      KF_ASSIGN_OR_RETURN(opts.execution.communicator, connectNccl(comm));
    } else {
      KF_ASSIGN_OR_RETURN(opts.execution.communicator, connectGloo(comm));
    }
#else
    KF_ASSIGN_OR_RETURN(opts.execution.communicator, connectGloo(comm));
#endif
    opts.bucketMiB = a.bucketMb;
    if (a.zero) opts.zeroRanks = p.ranks;
  }
  KF_ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer, Trainer::create(std::move(model), opts));
  p.session = std::make_unique<TrainerSession>(std::move(trainer));
  return p;
}

// A training package: compiled with its loss, optimizer and batch size.
Expected<Prepared> preparePackage(const TrainArgs& a) {
  if (!(a.lr > 0)) return Error(str("--lr must be positive, got ", a.lr));
  if (!a.initWeights.empty()) return Error("--init-weights: a package carries its weights (compile it with them)");
  if (a.worldSize > 1 || a.rank > 0)
    return Error("data-parallel training compiles the model on every rank: give the model, not a package");
  KF_ASSIGN_OR_RETURN(std::shared_ptr<const Package> pkg, Package::load(a.model));
  const std::optional<PackageTraining>& t = pkg->meta().training;
  if (!t) return Error(str("'", a.model, "' is an inference package (compile it with --train to train from it)"));
  const PackageFunction& forward = *pkg->function(t->forward);
  Prepared p;
  KF_ASSIGN_OR_RETURN(p.loss, parseLossKind(t->loss));
  // Loss options are compiled into the package, as its loss and optimizer are.
  p.ignoreIndex = packageIgnoreIndex(pkg->meta());
  if (a.opt.ignoreIndex != -100 && a.opt.ignoreIndex != p.ignoreIndex)
    return Error(str("--ignore-index=", a.opt.ignoreIndex, ": '", a.model, "' is compiled with ", p.ignoreIndex,
                     " (kfuse compile --train --ignore-index)"));
  const TensorType& in = forward.inputs.empty() ? TensorType() : forward.inputs[0].type;
  p.batch = in.rank() ? in.shape[0] : 1;
  if (a.batch > 0 && a.batch != p.batch)
    return Error(str("--batch=", a.batch, ": '", a.model, "' is compiled for batch ", p.batch));
  KF_ASSIGN_OR_RETURN(p.data, loadDataset(a.data, a.xKey, a.yKey, p.loss));
  std::vector<NamedType> inputs;
  std::vector<TensorType> outputs;
  for (const PackageTensor& x : forward.inputs) inputs.push_back({x.name, x.type});
  for (const PackageTensor& x : forward.outputs) outputs.push_back(x.type);
  KF_RETURN_IF_ERROR(checkDataset(p.data, forward.name, inputs, outputs, p.batch, p.loss, p.ignoreIndex));
  if (!a.cuda.arch.empty()) return Error("--arch: a package is compiled for its architecture (kfuse compile --arch)");
  if (!a.planning.cpu.empty()) return Error("--cpu: a package is compiled for its CPU (kfuse compile --cpu)");
  if (a.cuda.simulate) return Error("--simulate trains models, not packages (a package holds code for a GPU)");
  PackageRunnerOptions ro;
  ro.poison = a.poison;
  ro.cudaGraph = a.cuda.cudaGraph;
  ro.threads = a.threads;
  KF_ASSIGN_OR_RETURN(std::unique_ptr<PackageRunner> runner, PackageRunner::create(pkg, ro));
  std::cout << "package " << a.model << ": " << pkg->meta().target << ", loss " << t->loss << ", optimizer "
            << t->optimizer << ", batch " << p.batch << "\n";
  p.session = std::make_unique<PackageSession>(std::move(runner));
  return p;
}

int runTrain(const TrainArgs& a) {
  auto fail = [](const Error& e) { return reportError("train", e); };
  if (a.epochs < 1) return fail(Error(str("--epochs must be at least 1, got ", a.epochs)));
  if (a.ranks < 0) return fail(Error(str("--ranks must be at least 1, got ", a.ranks)));
  if (a.ranks > 1) {
    if (a.rank >= 0 || a.worldSize > 0) return fail(Error("--ranks starts the ranks itself: drop --rank and --world-size"));
    if (a.batch > 0 && a.batch % a.ranks != 0) return fail(unevenBatch(a.batch, a.ranks));
    if (auto s = launchRanks(a.ranks); !s) return fail(s.error());
    return 0;
  }
  bool package = std::filesystem::path(a.model).extension() == ".kfpkg";
  auto prepared = package ? preparePackage(a) : prepareModel(a);
  if (!prepared) return fail(prepared.error());
  Session& trainer = *prepared->session;
  const Dataset* data = &prepared->data;
  int64_t batch = prepared->batch;
  // This rank's slice of each global batch; rank 0 alone reports and writes.
  const int64_t slice = batch / prepared->ranks, first = prepared->rank * slice;
  const bool reporting = prepared->rank == 0;

  std::ofstream log;
  if (!a.logJson.empty() && reporting) {
    log.open(a.logJson, std::ios::trunc);
    if (!log) return fail(Error(str("cannot write --log-json '", a.logJson, "'")));
  }
  int64_t batches = data->size() / batch;
  if (data->size() % batch && reporting)
    std::cout << "note: the last " << data->size() % batch << " samples of each epoch are left out (--batch=" << batch
              << " does not divide " << data->size() << ")\n";
  for (int64_t epoch = 1; epoch <= a.epochs; ++epoch) {
    auto start = std::chrono::steady_clock::now();
    std::vector<int64_t> order = epochOrder(data->size(), !a.noShuffle, a.seed, epoch);
    double sum = 0;
    for (int64_t b = 0; b < batches; ++b) {
      auto loss = trainer.step(data->inputRows(order, b * batch + first, slice),
                               gatherRows(data->y, order, b * batch + first, slice), a.lr);
      if (!loss) return fail(loss.error());
      sum += *loss;
      if (log) log << nlohmann::json{{"type", "step"}, {"epoch", epoch}, {"step", trainer.stepCount()}, {"loss", *loss}} << "\n";
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double mean = sum / static_cast<double>(batches), rate = static_cast<double>(batches * batch) / secs;
    if (!reporting) continue;
    std::cout << "epoch " << epoch << "/" << a.epochs << "  loss " << std::setprecision(6) << mean << "  "
              << std::fixed << std::setprecision(1) << rate << " samples/s" << std::defaultfloat << "\n";
    if (log) log << nlohmann::json{{"type", "epoch"}, {"epoch", epoch}, {"loss", mean}, {"seconds", secs}, {"samples_per_s", rate}} << "\n";
  }
  // Every rank takes part in saving (ZeRO-1 gathers the state shards);
  // rank 0 writes.
  if (!reporting) {
    if (!a.saveWeights.empty())
      if (auto s = trainer.save(a.saveWeights); !s) return fail(s.error());
    return 0;
  }
  if (prepared->loss == LossKind::CrossEntropy) {
    auto acc = accuracy(trainer, *data, slice, prepared->ignoreIndex);
    if (!acc) return fail(acc.error());
    std::cout << "accuracy " << std::fixed << std::setprecision(2) << 100 * *acc << "%\n" << std::defaultfloat;
  }
  if (!a.saveWeights.empty()) {
    if (auto s = trainer.save(a.saveWeights); !s) return fail(s.error());
    std::cout << "weights written to " << a.saveWeights << "\n";
  }
  return 0;
}

}  // namespace

Action addTrainCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "Compile a model's training step and train it on a dataset");
  auto a = std::make_shared<TrainArgs>();
  cmd->add_option("model", a->model,
                  "Model (.kir or .onnx; its first function is the forward), or a training package (.kfpkg)")
      ->required();
  cmd->add_option("--data", a->data, "Dataset (.npz or .safetensors) with inputs and labels")->required();
  cmd->add_option("--x-key", a->xKey,
                  "Name of the input array (default x); a model with several inputs takes one per input: A,B,...");
  cmd->add_option("--y-key", a->yKey, "Name of the label array (default y)");
  addOptimizerFlags(cmd, a->opt);
  cmd->add_option("--lr", a->lr, "Learning rate (a runtime input: changing it never recompiles)");
  cmd->add_option("--epochs", a->epochs, "Passes over the dataset");
  cmd->add_option("--batch", a->batch, "Samples per step (default: the model's batch dimension)");
  cmd->add_flag("--no-shuffle", a->noShuffle, "Keep the dataset order");
  cmd->add_option("--seed", a->seed,
                  "Seed of the shuffling and of dropout masks (mixed into every dropout's seed; 0 keeps the model's)");
  cmd->add_option("--init-weights", a->initWeights, "Starting weights (.safetensors or .npz), by parameter name");
  cmd->add_option("--save-weights", a->saveWeights, "Write the trained weights and optimizer state here");
  cmd->add_option("--log-json", a->logJson, "Write one JSON record per step and per epoch (JSON Lines)");
  cmd->add_option("--target", a->target,
                  str("Where to run: ", join(availableTargets(), ", "), " (default ", defaultTarget(), ")"));
  addPlanningFlags(cmd, a->planning);
  addPoisonFlag(cmd, a->poison);
  addThreadsFlag(cmd, a->threads);
  cmd->add_option("--shape", a->shapes, "NAME=D0,D1,... binds an input's dynamic dimensions (ONNX models)");
  cmd->add_flag("--allow-nan", a->allowNaN, "Keep training when the loss becomes NaN or infinite");
  cmd->add_option("--ranks", a->ranks,
                  "Data-parallel: start this many local processes (ranks), each training on an equal slice of "
                  "every batch, gradients averaged through Gloo; rank 0 prints and writes");
  cmd->add_option("--rank", a->rank, "Data-parallel: this process's rank (default: $RANK, as torchrun sets it)");
  cmd->add_option("--world-size", a->worldSize,
                  "Data-parallel: the number of ranks (default: $WORLD_SIZE, as torchrun sets it, else 1)");
  cmd->add_option("--store", a->store,
                  "Data-parallel: where the ranks meet, file:DIR (a directory every rank reaches) or redis:HOST:PORT");
  cmd->add_option("--hostname", a->hostname,
                  "Data-parallel: the address this rank listens on for the others (default 127.0.0.1: one machine)");
  cmd->add_option("--comm-timeout", a->commTimeout,
                  "Data-parallel: seconds a rank waits for the others before it fails (default 60)");
  cmd->add_option("--bucket-mb", a->bucketMb, "Data-parallel: MiB of gradients per all-reduce bucket (default 25)");
  cmd->add_flag("--zero", a->zero,
                "Data-parallel: ZeRO-1, each rank holding and updating 1/N of the optimizer state (reduce-scatter of "
                "gradients, all-gather of parameters)");
  addCudaFlags(cmd, a->cuda);
  addInstrumentationFlags(cmd, a->instr);
  return [a] { return runTrain(*a); };
}

}  // namespace kfuse::cli
