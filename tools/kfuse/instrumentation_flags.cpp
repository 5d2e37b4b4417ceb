#include "tools/kfuse/instrumentation_flags.h"

#include "ir/support/strings.h"
#include "codegen/plan/plan_pass.h"
#include "passes/pass_registry.h"

namespace kfuse::cli {

Instrumentation InstrumentationFlags::toInstrumentation() const {
  Instrumentation instr;
  instr.printBefore.insert(printBefore.begin(), printBefore.end());
  instr.printAfter.insert(printAfter.begin(), printAfter.end());
  instr.printBeforeAll = printBeforeAll;
  instr.printAfterAll = printAfterAll;
  instr.printAfterChange = printAfterChange;
  instr.dumpDir = dumpDir;
  instr.timePasses = timePasses;
  instr.stopAfter = stopAfter;
  instr.verifyEach = verifyEach;
  return instr;
}

Status InstrumentationFlags::validate() const {
  for (const std::vector<std::string>* list : {&printBefore, &printAfter})
    for (const std::string& p : *list)
      if (!findPass(p) && !findPlanPass(p)) return Error(str("--print-ir-before/after names unknown pass '", p, "'"));
  return Status::ok();
}

void addInstrumentationFlags(CLI::App* cmd, InstrumentationFlags& f) {
  cmd->add_option("--print-ir-before", f.printBefore, "Print the IR before pass P")->delimiter(',');
  cmd->add_option("--print-ir-after", f.printAfter, "Print the IR after pass P")->delimiter(',');
  cmd->add_flag("--print-ir-before-all", f.printBeforeAll, "Print the IR before every pass");
  cmd->add_flag("--print-ir-after-all", f.printAfterAll, "Print the IR after every pass");
  cmd->add_flag("--print-ir-after-change", f.printAfterChange, "Print the IR after every pass that changed it");
  cmd->add_option("--dump-ir-dir", f.dumpDir, "Write 00-input.kir and NN-after-PASS.kir for every pass into DIR");
  cmd->add_flag("--time-passes", f.timePasses, "Report the time each pass took (on stderr)");
  cmd->add_option("--stop-after", f.stopAfter, "Stop the pipeline after pass P");
  cmd->add_flag("--verify-each", f.verifyEach, "Verify after every pass, changed or not");
}

}  // namespace kfuse::cli
