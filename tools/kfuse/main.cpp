// kfuse: the command-line driver.
#include <iostream>
#include <new>

#include "tools/kfuse/commands.h"

#ifndef KFUSE_VERSION
#define KFUSE_VERSION "unknown"
#endif

int main(int argc, char** argv) {
  CLI::App app{"kfuse: an ahead-of-time compiler for neural-network graphs"};
  app.set_version_flag("--version", std::string("kfuse ") + KFUSE_VERSION);
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, kfuse::cli::Action>> commands;
  auto add = [&](kfuse::cli::Action (*fn)(CLI::App&)) {
    size_t before = app.get_subcommands({}).size();
    kfuse::cli::Action a = fn(app);
    commands.emplace_back(app.get_subcommands({})[before], std::move(a));
  };
  add(kfuse::cli::addOptCommand);
  add(kfuse::cli::addRunCommand);
  add(kfuse::cli::addOpsCommand);
  add(kfuse::cli::addTrainCommand);
  add(kfuse::cli::addStatsCommand);
  add(kfuse::cli::addProfileCommand);
  add(kfuse::cli::addMemoryCommand);
  add(kfuse::cli::addCompileCommand);
  add(kfuse::cli::addInspectCommand);
#if KFUSE_WITH_ONNX
  add(kfuse::cli::addImportCommand);
  add(kfuse::cli::addTestOnnxCommand);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;
  }
  // Errors are values everywhere; the one thing that can still escape is a
  // failed allocation (a valid model too large for this machine's memory).
  try {
    for (auto& [sub, action] : commands)
      if (sub->parsed()) return action();
  } catch (const std::bad_alloc&) {
    std::cerr << "kfuse: error: out of memory (the model's tensors do not fit in this machine's memory)\n";
  }
  return 1;
}
