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

void PassManager::print(const Module& m, std::string_view pass, bool after, bool changed) {
  std::ostream& os = instr_.out ? *instr_.out : std::cout;
  // A comment line, so a printed dump stays parseable.
  os << "// ----- IR " << (after ? "after " : "before ") << pass;
  if (after) os << (changed ? " (changed)" : " (unchanged)");
  os << " -----\n";
  printModule(os, m);
  os << "\n";
}

Expected<std::string> dumpPath(const std::string& dir, int index, std::string_view label, std::string_view suffix) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error(str("cannot create dump directory '", dir, "': ", ec.message()));
  std::ostringstream name;
  name << std::setw(2) << std::setfill('0') << index << "-" << label << suffix;
  return (std::filesystem::path(dir) / name.str()).string();
}

Status PassManager::dump(Module& m, int index, const std::string& label) {
  KF_ASSIGN_OR_RETURN(std::string path, dumpPath(instr_.dumpDir, index, label, ".kir"));
  WriteOptions opts;
  opts.adopt = false;
  return writeModuleFile(m, path, opts);
}

void PassManager::printTiming() {
  std::ostream& os = std::cerr;  // as MLIR does: never mixed with IR on stdout
  double total = 0;
  for (const PassRecord& r : records_) total += r.seconds;
  auto ms = [](double s) { return s * 1e3; };
  os << "===-------------------------------------------------------------------------===\n"
     << "                         ... Pass execution timing report ...\n"
     << "===-------------------------------------------------------------------------===\n"
     << "  Total Execution Time: " << std::fixed << std::setprecision(3) << ms(total) << " ms\n\n"
     << "   ---Wall Time (ms)---  --- Name ---\n";
  for (const PassRecord& r : records_) {
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
  if (!instr_.dumpDir.empty()) KF_RETURN_IF_ERROR(dump(m, 0, "input"));
  int index = 0;
  for (auto& pass : passes_) {
    ++index;
    std::string name(pass->name());
    if (instr_.printBeforeAll || instr_.printBefore.count(name)) print(m, name, false, false);
    auto start = std::chrono::steady_clock::now();
    bool changed = false;
    for (const auto& f : m.functions()) changed |= pass->run(*f, pc);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    records_.push_back({name, changed, secs});
    if (pc.diag->failed()) {
      std::string msg = str("pass '", name, "' failed: ", join(pc.diag->errors(), "\n"));
      pc.diag->clearErrors();
      return Error(msg);
    }
    if (changed || instr_.verifyEach) {
      if (auto s = verifyModule(m); !s)
        return Error(str("internal error: IR is invalid after pass '", name, "':\n", s.message()));
    }
    if (instr_.printAfterAll || instr_.printAfter.count(name) || (instr_.printAfterChange && changed))
      print(m, name, true, changed);
    if (!instr_.dumpDir.empty()) KF_RETURN_IF_ERROR(dump(m, index, "after-" + name));
    if (instr_.stopAfter == name) break;
  }
  if (instr_.timePasses) printTiming();
  return Status::ok();
}

}  // namespace kfuse
