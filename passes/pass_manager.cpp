#include "passes/pass_manager.h"

#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "ir/module_io.h"
#include "ir/printer.h"
#include "ir/support/strings.h"
#include "ir/verifier.h"

namespace kfuse {

void PassManager::add(std::vector<std::unique_ptr<Pass>> ps) {
  for (auto& p : ps) passes_.push_back(std::move(p));
}

namespace pass_detail {

void printBanner(std::ostream& os, std::string_view what, std::string_view pass, bool after, bool changed) {
  // A comment line, so a printed dump stays parseable.
  os << "// ----- " << what << (after ? " after " : " before ") << pass;
  if (after) os << (changed ? " (changed)" : " (unchanged)");
  os << " -----\n";
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace pass_detail

Expected<std::string> dumpPath(const std::string& dir, int index, std::string_view label, std::string_view suffix) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error(str("cannot create dump directory '", dir, "': ", ec.message()));
  std::ostringstream name;
  name << std::setw(2) << std::setfill('0') << index << "-" << label << suffix;
  return (std::filesystem::path(dir) / name.str()).string();
}

void printPassTiming(const std::vector<PassRecord>& records, std::string_view title) {
  std::ostream& os = std::cerr;  // as MLIR does: never mixed with IR on stdout
  double total = 0;
  for (const PassRecord& r : records) total += r.seconds;
  auto ms = [](double s) { return s * 1e3; };
  os << "===-------------------------------------------------------------------------===\n"
     << "                         ... " << title << " execution timing report ...\n"
     << "===-------------------------------------------------------------------------===\n"
     << "  Total Execution Time: " << std::fixed << std::setprecision(3) << ms(total) << " ms\n\n"
     << "   ---Wall Time (ms)---  --- Name ---\n";
  for (const PassRecord& r : records) {
    double pct = total > 0 ? 100.0 * r.seconds / total : 0;
    os << "   " << std::setw(9) << std::setprecision(3) << ms(r.seconds) << " (" << std::setw(5)
       << std::setprecision(1) << pct << "%)  " << r.pass << "\n";
  }
  os << "   " << std::setw(9) << std::setprecision(3) << ms(total) << " (100.0%)  Total\n";
}

Status PassManager::run(Module& m, const PassContext& ctx) {
  Diagnostics localDiag;
  PassContext pc = ctx;
  if (!pc.diag) pc.diag = &localDiag;
  records_.clear();
  std::vector<PipelineStep<Module>> steps;
  for (auto& pass : passes_)
    steps.push_back({std::string(pass->name()), [&pc, p = pass.get()](Module& mod) -> PassResult {
                       bool changed = false;
                       for (const auto& f : mod.functions()) {
                         KF_ASSIGN_OR_RETURN(bool c, p->run(*f, pc));
                         changed |= c;
                       }
                       return changed;
                     }});
  UnitHooks<Module> hooks;
  hooks.what = "IR";
  hooks.print = [](std::ostream& os, const Module& mod) { printModule(os, mod); };
  hooks.dump = [](Module& mod, const std::string& dir, int index, const std::string& label) -> Status {
    KF_ASSIGN_OR_RETURN(std::string path, dumpPath(dir, index, label, ".kir"));
    WriteOptions opts;
    opts.adopt = false;  // a dump leaves the module as it is
    return writeModuleFile(mod, path, opts);
  };
  hooks.verify = [](const Module& mod) { return verifyModule(mod); };
  KF_RETURN_IF_ERROR(runInstrumented(m, steps, instr_, hooks, "input", 0, records_));
  if (instr_.timePasses) printPassTiming(records_, "Pass");
  return Status::ok();
}

}  // namespace kfuse
