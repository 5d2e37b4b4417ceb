// The kfuse subcommands. Each registers its flags on the app and returns the
// action to run when it is chosen; the action returns the exit status.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "ir/graph.h"
#include "ir/support/expected.h"
#include "codegen/backend.h"
#include "runtime/executor.h"

namespace kfuse::cli {

using Action = std::function<int()>;

Action addOptCommand(CLI::App& app);
Action addRunCommand(CLI::App& app);
Action addOpsCommand(CLI::App& app);
Action addTrainCommand(CLI::App& app);
Action addStatsCommand(CLI::App& app);
Action addProfileCommand(CLI::App& app);
Action addMemoryCommand(CLI::App& app);
Action addCompileCommand(CLI::App& app);
Action addInspectCommand(CLI::App& app);
#if KFUSE_WITH_ONNX
Action addImportCommand(CLI::App& app);
Action addTestOnnxCommand(CLI::App& app);
#endif

// Parses a module from a path, or from standard input for "-".
Expected<std::unique_ptr<Module>> loadModuleArg(const std::string& path);

// The cuda target's flags of run, train and profile: --arch (the
// architecture NVRTC compiles for), --cuda-graph, and --simulate with
// --sim-schedule (the simulated device, docs/cuda.md). Registers them on `cmd`.
struct CudaFlags {
  std::string arch;  // "": sm_90
  bool cudaGraph = false;
  bool simulate = false;
  std::string simSchedule;  // "": forward
};
void addCudaFlags(CLI::App* cmd, CudaFlags& f);
// How run, train and compile plan a model: --no-fuse, --layout,
// --no-inplace and --cpu, registered on `cmd` with one wording.
struct PlanningFlags {
  bool noFuse = false;
  std::string layout = "auto";
  bool noInplace = false;
  std::string cpu;  // "": this machine
};
void addPlanningFlags(CLI::App* cmd, PlanningFlags& f);
// --cpu alone, for the commands that plan without PlanningFlags.
void addCpuFlag(CLI::App* cmd, std::string& cpu);
BackendOptions backendOptions(const PlanningFlags& f);
// --poison (runtime/poison.h); `poison` starts at the build's default.
void addPoisonFlag(CLI::App* cmd, bool& poison);
// --threads for commands that run plans on the cpu target (0: the default).
void addThreadsFlag(CLI::App* cmd, int& threads);
// Errors when a flag is given for another target than cuda; else copies
// them into `exec`.
Status applyCudaFlags(const CudaFlags& f, const std::string& target, ExecutionOptions& exec);

// Prints an error to stderr as "kfuse <cmd>: error: msg" (or the message as
// is when it already carries a file:line:col location) and returns 1.
int reportError(const std::string& command, const Error& e);

}  // namespace kfuse::cli
