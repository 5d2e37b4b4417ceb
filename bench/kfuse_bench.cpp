// The kfuse side of the benchmark (bench/run.py drives it). Reads a manifest
// of workloads, each an ONNX model exported by PyTorch plus its inputs as
// .npy files:
//
//   NAME infer MODEL.onnx X.npy
//   NAME infer MODEL.onnx INPUT=X.npy [INPUT=Y.npy ...]   (named inputs; their
//                                             shapes bind symbolic dims)
//   NAME train MODEL.onnx X.npy Y.npy LR [adam|sgd]
//                                            (cross-entropy + Adam, or SGD
//                                             with momentum 0.9)
//
// compiles every workload once for the cpu target (for this machine, or
// with `--cpu NAME` for a named CPU it can run: haswell on an AVX-512
// machine runs AVX2 code; `--threads N` threads per step, default the
// CPUs the process may use), printing one JSON line per
// workload (compile times, launches per step, where it wrote its first
// outputs / loss; for training, first_step_ms: from reading the model to the
// end of the first step), then "ready", and then serves commands on stdin, one JSON
// line each:
//
//   run NAME N     N timed iterations: {"name":..., "ms":[...]}
//   quit
//
// so that run.py can alternate kfuse, PyTorch and onnxruntime rounds while
// every engine compiles (or warms up) once. Times are wall-clock per
// iteration (steady_clock); a training iteration is Trainer::step, which
// returns the loss as a double, so the step has finished when it returns.
#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "codegen/backend.h"
#include "frontend/onnx/importer.h"
#include "ir/npy.h"
#include "exec/plan.h"
#include "codegen/trainer.h"

using namespace kfuse;
using Clock = std::chrono::steady_clock;

namespace {

double msSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

struct Workload {
  std::string name, kind;
  std::unique_ptr<Module> module;       // inference
  std::unique_ptr<Executor> exec;       // inference
  std::unique_ptr<Trainer> trainer;     // training
  std::vector<Tensor> inputs;
  Tensor labels;
  double lr = 1e-3;
};

[[noreturn]] void die(const std::string& what) {
  std::cerr << "kfuse_bench: " << what << "\n";
  std::exit(1);
}

// A manifest's path: absolute, or relative to the manifest's folder.
std::string pathIn(const std::string& dir, const std::string& p) { return !p.empty() && p[0] == '/' ? p : dir + "/" + p; }

template <typename T>
T orDie(Expected<T> e, const std::string& what) {
  if (!e) die(what + ": " + e.error().message());
  return std::move(*e);
}

// Compiles one workload, runs it once (outputs written beside the model as
// NAME.kfuse.npy, or its first loss reported), and prints its JSON line.
Workload setUp(std::istringstream& line, const std::string& dir, const std::string& cpu, int threads) {
  Workload w;
  std::string model, x, y, optimizer = "adam";
  line >> w.name >> w.kind >> model >> x;
  if (w.kind == "train") line >> y >> w.lr >> optimizer;
  if (optimizer != "adam" && optimizer != "sgd") die(w.name + ": unknown optimizer " + optimizer);
  onnx_import::ImportOptions importOptions;
  std::map<std::string, Tensor> named;
  if (x.find('=') == std::string::npos) {
    w.inputs.push_back(orDie(readNpy(pathIn(dir, x)), x));
  } else {
    for (std::string arg = x; !arg.empty(); arg.clear(), line >> arg) {
      auto eq = arg.find('=');
      if (eq == std::string::npos) die(w.name + ": input " + arg + " is not NAME=FILE");
      Tensor t = orDie(readNpy(pathIn(dir, arg.substr(eq + 1))), arg);
      importOptions.shapes[arg.substr(0, eq)] = t.shape();
      named.emplace(arg.substr(0, eq), std::move(t));
    }
  }
  std::ostringstream json;
  json << std::setprecision(9) << "{\"name\": \"" << w.name << "\", \"kind\": \"" << w.kind << "\"";

  auto t0 = Clock::now();
  auto imported = orDie(onnx_import::importModelFile(pathIn(dir, model), importOptions), model);
  if (!named.empty())  // in the order of the function's arguments
    for (const auto& arg : imported->functions().front()->arguments()) {
      auto it = named.find(arg->name());
      if (it == named.end()) die(w.name + ": no input given for " + arg->name());
      w.inputs.push_back(it->second);
    }
  json << ", \"import_ms\": " << msSince(t0);
  if (w.kind == "infer") {
    w.module = std::move(imported);
    auto backend = orDie(backendFor("cpu", {.cpu = cpu}), "backend");
    auto t1 = Clock::now();
    if (Status s = prepareModule(*w.module, backend); !s) die(w.name + ": " + s.message());
    double passes = msSince(t1);
    w.exec = orDie(createExecutor("cpu", {.cpu = cpu, .threads = threads}), "executor");
    auto t2 = Clock::now();
    const Graph& fn = *w.module->functions().front();
    const Plan* plan = w.exec->planFor(fn);  // plans and JIT-compiles every kernel
    if (!plan) die(w.name + ": no plan");
    double jit = msSince(t2);
    uint64_t before = w.exec->launches();
    auto out = orDie(w.exec->run(fn, w.inputs), w.name);
    if (Status s = writeNpy(pathIn(dir, w.name + ".kfuse.npy"), out.outputs.at(0)); !s) die(s.message());
    json << ", \"passes_ms\": " << passes << ", \"plan_jit_ms\": " << jit << ", \"kernels\": " << plan->kernels.size()
         << ", \"plan_launches\": " << plan->launches() << ", \"launches_per_iter\": " << w.exec->launches() - before;
  } else {
    w.labels = orDie(readNpy(pathIn(dir, y)), y);
    TrainerOptions opts;
    opts.target = "cpu";
    opts.execution.cpu = cpu;
    opts.execution.threads = threads;
    opts.training.loss = LossKind::CrossEntropy;
    opts.training.optimizer.kind = optimizer == "sgd" ? OptimizerKind::SGD : OptimizerKind::Adam;
    if (optimizer == "sgd") opts.training.optimizer.momentum = 0.9;
    auto t1 = Clock::now();
    w.trainer = orDie(Trainer::create(std::move(imported), opts), w.name);
    double passes = msSince(t1);
    auto t2 = Clock::now();
    const Plan* plan = w.trainer->trainPlan();
    if (!plan) die(w.name + ": no plan");
    double jit = msSince(t2);
    uint64_t before = w.trainer->launches();
    double loss = orDie(w.trainer->step(w.inputs, w.labels, w.lr), w.name);
    json << ", \"first_step_ms\": " << msSince(t0) << ", \"passes_ms\": " << passes << ", \"plan_jit_ms\": " << jit << ", \"kernels\": " << plan->kernels.size()
         << ", \"plan_launches\": " << plan->launches()
         << ", \"launches_per_iter\": " << w.trainer->launches() - before << ", \"first_loss\": " << loss;
  }
  json << "}";
  std::cout << json.str() << std::endl;
  return w;
}

void runIterations(Workload& w, int n) {
  std::ostringstream json;
  json << std::setprecision(6) << "{\"name\": \"" << w.name << "\", \"ms\": [";
  const Graph* fn = w.module ? w.module->functions().front().get() : nullptr;
  for (int i = 0; i < n; ++i) {
    auto t = Clock::now();
    if (w.trainer) {
      orDie(w.trainer->step(w.inputs, w.labels, w.lr), w.name);
    } else {
      orDie(w.exec->run(*fn, w.inputs), w.name);
    }
    json << (i ? ", " : "") << msSince(t);
  }
  json << "]}";
  std::cout << json.str() << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cpu;
  int threads = 0;
  int i = 1;
  for (; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--cpu") cpu = argv[i + 1];
    else if (flag == "--threads") threads = std::atoi(argv[i + 1]);
    else break;
  }
  if (i != argc - 1 || threads < 0) die("usage: kfuse_bench [--cpu NAME] [--threads N] MANIFEST (see bench/kfuse_bench.cpp)");
  std::string manifest = argv[argc - 1];
  std::string dir = manifest.substr(0, manifest.find_last_of('/') == std::string::npos ? 0 : manifest.find_last_of('/'));
  if (dir.empty()) dir = ".";
  std::ifstream in(manifest);
  if (!in) die("cannot read " + manifest);
  std::map<std::string, Workload> workloads;
  for (std::string text; std::getline(in, text);) {
    if (text.empty() || text[0] == '#') continue;
    std::istringstream line(text);
    Workload w = setUp(line, dir, cpu, threads);
    std::string name = w.name;
    workloads.emplace(name, std::move(w));
  }
  std::cout << "ready" << std::endl;
  for (std::string text; std::getline(std::cin, text);) {
    std::istringstream line(text);
    std::string cmd, name;
    int n = 0;
    line >> cmd >> name >> n;
    if (cmd == "quit") break;
    auto it = workloads.find(name);
    if (cmd != "run" || it == workloads.end() || n <= 0) die("bad command: " + text);
    runIterations(it->second, n);
  }
  return 0;
}
