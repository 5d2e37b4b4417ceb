// kfuse memory: how much device memory a model's plan (inference, or a whole
// training step) needs at each batch size, and where it goes; read off the
// same plans the runtime executes, before anything runs.
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "codegen/backend.h"
#include "codegen/plan/memory_report.h"
#include "ir/support/strings.h"
#include "tools/kfuse/commands.h"
#include "tools/kfuse/plan_args.h"

namespace kfuse::cli {
namespace {

struct MemoryArgs : PlanModelArgs {
  std::vector<int64_t> batches;  // empty: the model's own batch size
  bool listInPlace = false;
  int threads = 0;
};

struct Row {
  const char* key;    // JSON name
  const char* label;  // table label
  uint64_t MemoryReport::*field;
};

constexpr Row kRows[] = {
    {"parameters", "parameters", &MemoryReport::parameters},
    {"optimizer_state", "optimizer state", &MemoryReport::optimizerState},
    {"other_buffers", "other buffers (running stats)", &MemoryReport::otherBuffers},
    {"constants", "constants", &MemoryReport::constants},
    {"inputs", "inputs", &MemoryReport::inputs},
    {"gradients", "gradients", &MemoryReport::gradients},
    {"saved_activations", "activations saved for backward", &MemoryReport::savedActivations},
    {"temporaries", "temporaries", &MemoryReport::temporaries},
    {"workspace", "workspace (conv im2col)", &MemoryReport::workspace},
    {"device_scratch", "device scratch (cuda)", &MemoryReport::deviceScratch},
    {"library_workspace", "library workspace (cuBLASLt)", &MemoryReport::libraryWorkspace},
    {"packed_weights", "packed weights (cpu)", &MemoryReport::packedWeights},
    {"thread_scratch", "im2col of other threads (cpu)", &MemoryReport::threadScratch},
    {"exchange_staging", "all-reduce staging (cpu, Gloo)", &MemoryReport::exchangeStaging},
    {"no_reuse", "no-reuse total (arena buffers)", &MemoryReport::noReuse},
    {"lower_bound", "lower bound (most alive at once)", &MemoryReport::lowerBound},
    {"arena", "arena", &MemoryReport::arena},
    {"predicted_peak", "predicted peak (resident+arena+device)", &MemoryReport::predictedPeak},
};

std::string mb(uint64_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(3) << static_cast<double>(bytes) / 1e6;
  return os.str();
}

std::string ratio(double r) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(3) << r;
  return os.str();
}

double noReuseOverArena(const MemoryReport& r) {
  return r.arena ? static_cast<double>(r.noReuse) / static_cast<double>(r.arena) : 1.0;
}

bool scales(const std::vector<MemoryReport>& rs, uint64_t MemoryReport::*f) {
  for (const MemoryReport& r : rs)
    if (r.*f != rs.front().*f) return true;
  return false;
}

// Rows only some targets and plans fill (cuda; cpu im2col convolutions
// split across threads), shown where they are not 0.
bool deviceOnly(const Row& row) {
  return row.field == &MemoryReport::deviceScratch || row.field == &MemoryReport::libraryWorkspace ||
         row.field == &MemoryReport::threadScratch || row.field == &MemoryReport::exchangeStaging;
}

void printTable(const MemoryArgs& a, const std::vector<int64_t>& batches, const std::vector<MemoryReport>& rs) {
  std::cout << a.model << (a.train ? " (training step, " + a.loss + ", " + a.optimizer : std::string(" (inference"))
            << ", target " << a.target << (a.noInplace ? ", no in-place" : "") << "), MB (1e6 bytes)\n";
  constexpr int kLabel = 40, kCol = 12;
  std::cout << std::left << std::setw(kLabel) << "batch" << std::right;
  for (int64_t b : batches) std::cout << std::setw(kCol) << (b > 0 ? str(b) : std::string("model"));
  bool several = rs.size() > 1;
  if (several) std::cout << "  grows with batch";
  std::cout << "\n";
  for (const Row& row : kRows) {
    if (deviceOnly(row) && !scales(rs, row.field) && rs.front().*row.field == 0) continue;  // cpu: none
    std::cout << std::left << std::setw(kLabel) << row.label << std::right;
    for (const MemoryReport& r : rs) std::cout << std::setw(kCol) << mb(r.*row.field);
    if (several) std::cout << "  " << (scales(rs, row.field) ? "yes" : "no");
    std::cout << "\n";
  }
  std::cout << std::left << std::setw(kLabel) << "arena / lower bound" << std::right;
  for (const MemoryReport& r : rs) std::cout << std::setw(kCol) << ratio(r.arenaOverLowerBound());
  std::cout << "\n" << std::left << std::setw(kLabel) << "no-reuse / arena" << std::right;
  for (const MemoryReport& r : rs) std::cout << std::setw(kCol) << ratio(noReuseOverArena(r));
  std::cout << "\n";
  for (size_t i = 0; i < rs.size(); ++i)
    std::cout << "predicted peak" << (batches[i] > 0 ? str(" at batch ", batches[i]) : std::string()) << ": "
              << rs[i].predictedPeak << " bytes\n";
  const MemoryReport& first = rs.front();
  std::cout << "in place: " << first.inPlace.size() << (first.inPlace.size() == 1 ? " output writes" : " outputs write")
            << " over an input" << (several ? " (first batch size)" : "") << (a.listInPlace ? ":" : "") << "\n";
  if (a.listInPlace)
    for (const std::string& l : first.inPlace) std::cout << "  " << l << "\n";
}

nlohmann::json toJson(const MemoryReport& r, int64_t batch) {
  nlohmann::json j;
  if (batch > 0) j["batch"] = batch;
  for (const Row& row : kRows) j[row.key] = r.*row.field;
  j["arena_over_lower_bound"] = r.arenaOverLowerBound();
  j["no_reuse_over_arena"] = noReuseOverArena(r);
  j["in_place"] = r.inPlace;
  return j;
}

int runMemory(const MemoryArgs& a) {
  for (int64_t b : a.batches)
    if (b <= 0) return reportError("memory", Error(str("--batch sizes must be positive, got ", b)));
  // 0: the model as written.
  std::vector<int64_t> batches = a.batches.empty() ? std::vector<int64_t>{0} : a.batches;
  auto backend = backendFor(a.target, {.layout = a.layout, .cpu = a.cpu, .threads = a.threads});
  if (!backend) return reportError("memory", backend.error());
  std::vector<MemoryReport> reports;
  for (int64_t b : batches) {
    auto c = compileModelPlan(a, b, true);
    if (!c) return reportError("memory", b > 0 ? c.error().context(str("at batch ", b)) : c.error());
    reports.push_back(memoryReport(c->plan, c->trainable));
    if (backend->deviceBytes) {
      auto d = backend->deviceBytes(c->plan);
      if (!d) return reportError("memory", d.error());
      addDeviceBytes(reports.back(), *d);
    }
  }
  if (a.json) {
    nlohmann::json per = nlohmann::json::array();
    for (size_t i = 0; i < reports.size(); ++i) per.push_back(toJson(reports[i], batches[i]));
    nlohmann::json grows = nlohmann::json::array();
    for (const Row& row : kRows)
      if (scales(reports, row.field)) grows.push_back(row.key);
    std::cout << nlohmann::json{{"model", a.model},       {"train", a.train},   {"target", a.target},
                                {"inplace", !a.noInplace}, {"batches", per},    {"grows_with_batch", grows}}
                     .dump(2)
              << "\n";
    return 0;
  }
  printTable(a, batches, reports);
  return 0;
}

}  // namespace

Action addMemoryCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "memory", "Device memory of a model's plan per batch size: weights, state, activations, arena, peak");
  auto a = std::make_shared<MemoryArgs>();
  addPlanModelOptions(cmd, *a, "is measured");
  cmd->add_option("--batch", a->batches, "Batch sizes, e.g. 1,8,64,256 (default: the model's own)")->delimiter(',');
  cmd->add_flag("--list-inplace", a->listInPlace, "List every output written over an input");
  addThreadsFlag(cmd, a->threads);
  return [a] { return runMemory(*a); };
}

}  // namespace kfuse::cli
