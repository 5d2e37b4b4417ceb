// Runs a pipeline over every function of a module, verifying after each pass
// that changed something, with MLIR-style instrumentation: printing before or
// after chosen passes, dumping one numbered file per pass, timing, stopping.
#pragma once

#include <chrono>
#include <functional>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "ir/support/strings.h"

#include "passes/pass.h"

namespace kfuse {

struct Instrumentation {
  std::set<std::string, std::less<>> printBefore;  // --print-ir-before=P
  std::set<std::string, std::less<>> printAfter;   // --print-ir-after=P
  bool printBeforeAll = false;
  bool printAfterAll = false;
  bool printAfterChange = false;  // after every pass that changed the IR
  std::string dumpDir;            // --dump-ir-dir: 00-input.kir, 01-after-cse.kir, ...
  bool timePasses = false;
  std::string stopAfter;          // stop the pipeline after this pass
  bool verifyEach = false;        // verify after every pass, changed or not
  std::ostream* out = nullptr;    // where printed IR goes (stdout if null); timing goes to stderr
};

// Where --dump-ir-dir puts dump `index`: DIR/NN-LABEL followed by `suffix`
// ("03-after-fuse.kir"), DIR created first. Graph dumps and kfuse opt's
// plan dumps (tools/kfuse/plan_stage.h) number alike.
Expected<std::string> dumpPath(const std::string& dir, int index, std::string_view label, std::string_view suffix);

struct PassRecord {
  std::string pass;
  bool changed = false;
  double seconds = 0;
};

// What the instrumentation does with one kind of IR unit: a module (graph
// passes) or a function's plan (plan passes, codegen/plan/plan_pass.h).
template <typename Unit>
struct UnitHooks {
  // The unit's text, printed under a banner naming `what` ("IR", "plan
  // @forward") and the pass.
  std::string what;
  std::function<void(std::ostream&, const Unit&)> print;
  // Writes dump `index` labelled `label` ("input", "after-cse") into `dir`.
  std::function<Status(Unit&, const std::string& dir, int index, const std::string& label)> dump;
  // Checks the unit after a pass that changed it, or after every pass with
  // verifyEach; null: nothing to check.
  std::function<Status(const Unit&)> verify;
};

// One pass as the driver runs it.
template <typename Unit>
struct PipelineStep {
  std::string name;
  std::function<PassResult(Unit&)> run;
};

// Runs `steps` over `unit` with `instr`'s printing before and after,
// numbered dumps (the unit first as `inputLabel` at `firstDump`, then
// after-<pass> at the numbers that follow), timing (appended to `records`),
// verification and --stop-after: the one driver graph and plan pipelines
// share. A failed pass's error names it.
template <typename Unit>
Status runInstrumented(Unit& unit, const std::vector<PipelineStep<Unit>>& steps, const Instrumentation& instr,
                       const UnitHooks<Unit>& hooks, const std::string& inputLabel, int firstDump,
                       std::vector<PassRecord>& records);

// --time-passes' report of `records` (on stderr, as MLIR prints it).
void printPassTiming(const std::vector<PassRecord>& records, std::string_view title);

class PassManager {
 public:
  explicit PassManager(Instrumentation instr = {}) : instr_(std::move(instr)) {}
  void add(std::unique_ptr<Pass> p) { passes_.push_back(std::move(p)); }
  void add(std::vector<std::unique_ptr<Pass>> ps);

  // Runs every pass on every function. Fails if a pass reports an error or
  // leaves invalid IR (the message names the pass).
  Status run(Module& m, const PassContext& ctx);

  const std::vector<PassRecord>& records() const { return records_; }

 private:
  Instrumentation instr_;
  std::vector<std::unique_ptr<Pass>> passes_;
  std::vector<PassRecord> records_;
};

// ---- runInstrumented

namespace pass_detail {
void printBanner(std::ostream& os, std::string_view what, std::string_view pass, bool after, bool changed);
double secondsSince(std::chrono::steady_clock::time_point start);
}  // namespace pass_detail

template <typename Unit>
Status runInstrumented(Unit& unit, const std::vector<PipelineStep<Unit>>& steps, const Instrumentation& instr,
                       const UnitHooks<Unit>& hooks, const std::string& inputLabel, int firstDump,
                       std::vector<PassRecord>& records) {
  std::ostream& os = instr.out ? *instr.out : std::cout;
  auto print = [&](std::string_view pass, bool after, bool changed) {
    pass_detail::printBanner(os, hooks.what, pass, after, changed);
    hooks.print(os, unit);
    os << "\n";
  };
  const bool dumping = !instr.dumpDir.empty() && hooks.dump;
  int index = firstDump;
  if (dumping) KF_RETURN_IF_ERROR(hooks.dump(unit, instr.dumpDir, index, inputLabel));
  for (const PipelineStep<Unit>& step : steps) {
    ++index;
    if (instr.printBeforeAll || instr.printBefore.count(step.name)) print(step.name, false, false);
    auto start = std::chrono::steady_clock::now();
    PassResult changed = step.run(unit);
    records.push_back({step.name, changed && *changed, pass_detail::secondsSince(start)});
    if (!changed) return changed.error().context(str("pass '", step.name, "' failed"));
    if (hooks.verify && (*changed || instr.verifyEach)) {
      if (Status s = hooks.verify(unit); !s)
        return Error(str("internal error: ", hooks.what, " is invalid after pass '", step.name, "':\n", s.message()));
    }
    if (instr.printAfterAll || instr.printAfter.count(step.name) || (instr.printAfterChange && *changed))
      print(step.name, true, *changed);
    if (dumping) KF_RETURN_IF_ERROR(hooks.dump(unit, instr.dumpDir, index, "after-" + step.name));
    if (instr.stopAfter == step.name) break;
  }
  return Status::ok();
}

}  // namespace kfuse
