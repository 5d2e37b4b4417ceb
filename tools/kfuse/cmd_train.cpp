// kfuse train: compile a model's training step once and train it on a
// dataset, epoch by epoch.
#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "frontend/io/npz.h"
#include "ir/specialize.h"
#include "ir/support/strings.h"
#include "ir/weights.h"
#include "codegen/backend.h"
#include "runtime/trainer.h"
#include "tools/kfuse/commands.h"
#include "tools/kfuse/instrumentation_flags.h"
#include "tools/kfuse/model_loader.h"
#include "tools/kfuse/train_data.h"

namespace kfuse::cli {
namespace {

struct TrainArgs {
  std::string model, data, xKey = "x", yKey = "y";
  std::string loss = "cross_entropy", optimizer = "sgd";
  double lr = 0.01, momentum = 0, dampening = 0, weightDecay = 0, eps = 1e-8;
  bool nesterov = false;
  std::vector<double> betas{0.9, 0.999};
  int64_t epochs = 1, batch = 0;
  bool noShuffle = false, allowNaN = false, noFuse = false, noInplace = false, poison = false;
  uint64_t seed = 0;
  std::string initWeights, saveWeights, logJson, target = defaultTarget();
  std::string layout = "auto";
  std::vector<std::string> shapes;
  InstrumentationFlags instr;
};

Expected<TrainerOptions> trainerOptions(const TrainArgs& a) {
  TrainerOptions o;
  // "none" is meaningful to the autodiff pass, not to a training run.
  if (a.loss != "cross_entropy" && a.loss != "mse")
    return Error(str("unknown loss '", a.loss, "' (expected cross_entropy or mse)"));
  if (a.optimizer != "sgd" && a.optimizer != "adam" && a.optimizer != "adamw")
    return Error(str("unknown optimizer '", a.optimizer, "' (expected sgd, adam or adamw)"));
  KF_ASSIGN_OR_RETURN(o.training.loss, parseLossKind(a.loss));
  OptimizerOptions& opt = o.training.optimizer;
  KF_ASSIGN_OR_RETURN(opt.kind, parseOptimizerKind(a.optimizer));
  if (!(a.lr > 0)) return Error(str("--lr must be positive, got ", a.lr));
  if (a.betas.size() != 2) return Error("--betas takes two values, e.g. --betas 0.9,0.999");
  bool sgd = opt.kind == OptimizerKind::SGD;
  if (!sgd && (a.momentum != 0 || a.nesterov || a.dampening != 0))
    return Error(str("--momentum, --dampening and --nesterov are SGD options, not ", a.optimizer, "'s"));
  opt.momentum = a.momentum;
  opt.dampening = a.dampening;
  opt.nesterov = a.nesterov;
  // AdamW's default weight decay is 0.01, as in torch.optim.AdamW.
  opt.weightDecay = a.weightDecay != 0 || opt.kind != OptimizerKind::AdamW ? a.weightDecay : 0.01;
  opt.beta1 = a.betas[0];
  opt.beta2 = a.betas[1];
  opt.eps = a.eps;
  o.target = a.target;
  o.execution.inplace = !a.noInplace;
  o.execution.poison = a.poison;
  o.fuse = !a.noFuse;
  o.layout = a.layout;
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

Expected<ModelOptions> modelOptions(const std::vector<std::string>& specs) {
  ModelOptions o;
  for (const std::string& s : specs) {
    auto eq = s.find('=');
    if (eq == std::string::npos) return Error(str("--shape expects NAME=D0,D1,..., got '", s, "'"));
    std::vector<int64_t> dims;
    std::stringstream ss(s.substr(eq + 1));
    for (std::string d; std::getline(ss, d, ',');) {
      try {
        dims.push_back(std::stoll(d));
      } catch (...) {
        return Error(str("--shape '", s, "': '", d, "' is not a dimension"));
      }
    }
    o.shapes[s.substr(0, eq)] = dims;
  }
  return o;
}

// The fraction of samples whose arg-max logit is the label, over the full
// batches of the dataset (the forward is compiled for one batch size).
Expected<double> accuracy(Trainer& t, const Dataset& d, int64_t batch) {
  std::vector<int64_t> order = epochOrder(d.size(), false, 0, 0);
  int64_t correct = 0, seen = 0;
  for (int64_t b = 0; b + batch <= d.size(); b += batch) {
    KF_ASSIGN_OR_RETURN(auto out, t.eval({gatherRows(d.x, order, b, batch)}));
    const Tensor& logits = out[0];
    int64_t classes = logits.shape()[1];
    for (int64_t i = 0; i < batch; ++i) {
      int64_t best = 0;
      for (int64_t c = 1; c < classes; ++c)
        if (logits.at(i * classes + c) > logits.at(i * classes + best)) best = c;
      correct += best == d.y.as<int64_t>()[b + i];
      ++seen;
    }
  }
  return seen ? static_cast<double>(correct) / static_cast<double>(seen) : 0.0;
}

int runTrain(const TrainArgs& a) {
  auto fail = [](const Error& e) { return reportError("train", e); };
  auto opts = trainerOptions(a);
  if (!opts) return fail(opts.error());
  if (auto v = a.instr.validate(); !v) return fail(v.error());
  if (a.epochs < 1) return fail(Error(str("--epochs must be at least 1, got ", a.epochs)));
  auto mopts = modelOptions(a.shapes);
  if (!mopts) return fail(mopts.error());
  auto model = loadModel(a.model, *mopts);
  if (!model) return fail(model.error());
  if ((*model)->functions().empty()) return fail(Error(str("'", a.model, "' defines no function")));
  Graph& forward = *(*model)->functions().front();
  const TensorType& in = forward.arguments().empty() ? TensorType() : forward.argument(0)->type();
  int64_t batch = a.batch > 0 ? a.batch : (in.rank() ? in.shape[0] : 1);
  if (in.rank() && in.shape[0] != batch) {
    if (auto s = specializeBatch(forward, batch); !s)
      return fail(s.error().context(str("--batch=", batch, " (the model is compiled for batch ", in.shape[0], ")")));
  }
  auto data = loadDataset(a.data, a.xKey, a.yKey, opts->training.loss);
  if (!data) return fail(data.error());
  if (auto s = checkDataset(*data, forward, batch, opts->training.loss); !s) return fail(s.error());
  if (!a.initWeights.empty())
    if (auto s = loadInitWeights(**model, a.initWeights); !s) return fail(s.error());
  auto trainer = Trainer::create(std::move(*model), *opts);
  if (!trainer) return fail(trainer.error());

  std::ofstream log;
  if (!a.logJson.empty()) {
    log.open(a.logJson, std::ios::trunc);
    if (!log) return fail(Error(str("cannot write --log-json '", a.logJson, "'")));
  }
  int64_t batches = data->size() / batch;
  if (data->size() % batch)
    std::cout << "note: the last " << data->size() % batch << " samples of each epoch are left out (--batch=" << batch
              << " does not divide " << data->size() << ")\n";
  for (int64_t epoch = 1; epoch <= a.epochs; ++epoch) {
    auto start = std::chrono::steady_clock::now();
    std::vector<int64_t> order = epochOrder(data->size(), !a.noShuffle, a.seed, epoch);
    double sum = 0;
    for (int64_t b = 0; b < batches; ++b) {
      auto loss = (*trainer)->step({gatherRows(data->x, order, b * batch, batch)},
                                   gatherRows(data->y, order, b * batch, batch), a.lr);
      if (!loss) return fail(loss.error());
      sum += *loss;
      if (log) log << nlohmann::json{{"type", "step"}, {"epoch", epoch}, {"step", (*trainer)->stepCount()}, {"loss", *loss}} << "\n";
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double mean = sum / static_cast<double>(batches), rate = static_cast<double>(batches * batch) / secs;
    std::cout << "epoch " << epoch << "/" << a.epochs << "  loss " << std::setprecision(6) << mean << "  "
              << std::fixed << std::setprecision(1) << rate << " samples/s" << std::defaultfloat << "\n";
    if (log) log << nlohmann::json{{"type", "epoch"}, {"epoch", epoch}, {"loss", mean}, {"seconds", secs}, {"samples_per_s", rate}} << "\n";
  }
  if (opts->training.loss == LossKind::CrossEntropy) {
    auto acc = accuracy(**trainer, *data, batch);
    if (!acc) return fail(acc.error());
    std::cout << "accuracy " << std::fixed << std::setprecision(2) << 100 * *acc << "%\n" << std::defaultfloat;
  }
  if (!a.saveWeights.empty()) {
    if (auto s = (*trainer)->save(a.saveWeights); !s) return fail(s.error());
    std::cout << "weights written to " << a.saveWeights << "\n";
  }
  return 0;
}

}  // namespace

Action addTrainCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "Compile a model's training step and train it on a dataset");
  auto a = std::make_shared<TrainArgs>();
  cmd->add_option("model", a->model, "Model (.kir or .onnx); its first function is the forward")->required();
  cmd->add_option("--data", a->data, "Dataset (.npz or .safetensors) with inputs and labels")->required();
  cmd->add_option("--x-key", a->xKey, "Name of the input array (default x)");
  cmd->add_option("--y-key", a->yKey, "Name of the label array (default y)");
  cmd->add_option("--loss", a->loss, "cross_entropy (class labels) or mse (targets)");
  cmd->add_option("--optimizer", a->optimizer, "sgd, adam or adamw");
  cmd->add_option("--lr", a->lr, "Learning rate (a runtime input: changing it never recompiles)");
  cmd->add_option("--momentum", a->momentum, "SGD momentum");
  cmd->add_option("--dampening", a->dampening, "SGD dampening");
  cmd->add_flag("--nesterov", a->nesterov, "SGD with Nesterov momentum");
  cmd->add_option("--weight-decay", a->weightDecay, "Weight decay (AdamW: decoupled, default 0.01)");
  cmd->add_option("--betas", a->betas, "Adam betas, e.g. 0.9,0.999")->delimiter(',')->expected(2);
  cmd->add_option("--eps", a->eps, "Adam epsilon");
  cmd->add_option("--epochs", a->epochs, "Passes over the dataset");
  cmd->add_option("--batch", a->batch, "Samples per step (default: the model's batch dimension)");
  cmd->add_flag("--no-shuffle", a->noShuffle, "Keep the dataset order");
  cmd->add_option("--seed", a->seed, "Seed of the shuffling");
  cmd->add_option("--init-weights", a->initWeights, "Starting weights (.safetensors or .npz), by parameter name");
  cmd->add_option("--save-weights", a->saveWeights, "Write the trained weights and optimizer state here");
  cmd->add_option("--log-json", a->logJson, "Write one JSON record per step and per epoch (JSON Lines)");
  cmd->add_option("--target", a->target,
                  str("Where to run: ", join(availableTargets(), ", "), " (default ", defaultTarget(), ")"));
  cmd->add_flag("--no-fuse", a->noFuse, "Compile the step without the fusion pass: one launch per op");
  cmd->add_option("--layout", a->layout, "Image layout: auto (the target's cost model chooses per region), nchw or nhwc");
  cmd->add_flag("--no-inplace", a->noInplace,
                "Never let a step write its output over an input (optimizer updates included)");
  cmd->add_flag("--poison", a->poison,
                "Debug: fill each buffer with NaN (or 0xAB bytes) when its lifetime ends");
  cmd->add_option("--shape", a->shapes, "NAME=D0,D1,... binds an input's dynamic dimensions (ONNX models)");
  cmd->add_flag("--allow-nan", a->allowNaN, "Keep training when the loss becomes NaN or infinite");
  addInstrumentationFlags(cmd, a->instr);
  return [a] { return runTrain(*a); };
}

}  // namespace kfuse::cli
