// Runs a pipeline over every function of a module, verifying after each pass
// that changed something, with MLIR-style instrumentation: printing before or
// after chosen passes, dumping one numbered file per pass, timing, stopping.
#pragma once

#include <iosfwd>
#include <set>

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
  Status dump(Module& m, int index, const std::string& label);
  void print(const Module& m, std::string_view pass, bool after, bool changed);
  void printTiming();

  Instrumentation instr_;
  std::vector<std::unique_ptr<Pass>> passes_;
  std::vector<PassRecord> records_;
};

}  // namespace kfuse
