// The MLIR-style instrumentation flags, shared by every subcommand that runs
// a pipeline (opt, train, ...).
#pragma once

#include <CLI/CLI.hpp>

#include "passes/pass_manager.h"

namespace kfuse::cli {

struct InstrumentationFlags {
  std::vector<std::string> printBefore, printAfter;
  bool printBeforeAll = false, printAfterAll = false, printAfterChange = false;
  std::string dumpDir;
  bool timePasses = false;
  std::string stopAfter;
  bool verifyEach = false;

  bool printsIR() const {
    return printBeforeAll || printAfterAll || printAfterChange || !printBefore.empty() || !printAfter.empty();
  }
  Instrumentation toInstrumentation() const;
  // Unknown pass names in --print-ir-before/after are errors.
  Status validate() const;
};

void addInstrumentationFlags(CLI::App* cmd, InstrumentationFlags& f);

}  // namespace kfuse::cli
