#include <iostream>
#include <sstream>

#include "ir/parser.h"
#include "ir/support/strings.h"
#include "runtime/poison.h"

#include "tools/kfuse/commands.h"

namespace kfuse::cli {

Expected<std::unique_ptr<Module>> loadModuleArg(const std::string& path) {
  if (path != "-") return parseModuleFile(path);
  std::ostringstream text;
  text << std::cin.rdbuf();
  return parseModule(text.str(), "<stdin>");
}

void addCudaFlags(CLI::App* cmd, CudaFlags& f) {
  cmd->add_option("--arch", f.arch, "cuda: the GPU architecture to compile for: sm_80, sm_89 or sm_90 (default)");
  cmd->add_flag("--cuda-graph", f.cudaGraph,
                "cuda: capture each run as a CUDA Graph and replay it (one launch per run from the host)");
  cmd->add_flag("--simulate", f.simulate,
                "cuda, a debugging aid: run on the simulated device (kernels compiled as host C++ by g++, every CUDA "
                "thread a fiber, CUDA's barrier and warp rules checked; slow) instead of a GPU");
  cmd->add_option("--sim-schedule", f.simSchedule,
                  "cuda --simulate: the order the simulator runs threads and blocks in: forward (default), reverse "
                  "or random:SEED");
}

Status applyCudaFlags(const CudaFlags& f, const std::string& target, ExecutionOptions& exec) {
  if (target != "cuda" && (!f.arch.empty() || f.cudaGraph || f.simulate))
    return Error(str(!f.arch.empty() ? "--arch" : f.cudaGraph ? "--cuda-graph" : "--simulate",
                     " applies to --target=cuda, not ", target));
  if (!f.simSchedule.empty() && !f.simulate) return Error("--sim-schedule applies with --simulate");
  if (!f.arch.empty()) exec.cudaArch = f.arch;
  exec.cudaGraph = f.cudaGraph;
  exec.cudaSimulate = f.simulate;
  if (!f.simSchedule.empty()) exec.cudaSimSchedule = f.simSchedule;
  return Status::ok();
}

void addPlanningFlags(CLI::App* cmd, PlanningFlags& f) {
  cmd->add_flag("--no-fuse", f.noFuse, "Compile without the fusion pass: one launch per op");
  cmd->add_option("--layout", f.layout, "Image layout: auto (the target's cost model chooses per region), nchw or nhwc");
  cmd->add_flag("--no-inplace", f.noInplace,
                "Never let a step write its output over an input (optimizer updates included)");
  addCpuFlag(cmd, f.cpu);
}

void addCpuFlag(CLI::App* cmd, std::string& cpu) {
  cmd->add_option("--cpu", cpu,
                  "cpu: the CPU to generate code for, by LLVM's name (x86-64-v2, haswell, skylake-avx512; "
                  "default: this machine)");
}

BackendOptions backendOptions(const PlanningFlags& f) {
  return BackendOptions{.fuse = !f.noFuse, .layout = f.layout, .cpu = f.cpu};
}

void addPoisonFlag(CLI::App* cmd, bool& poison) {
  poison = poisonByDefault();
  cmd->add_flag("--poison", poison,
                str("Debug: fill each buffer with NaN (or 0xAB bytes) when its lifetime ends",
                    poisonByDefault() ? " (on by default: this kfuse was built with KFUSE_POISON_BY_DEFAULT)" : ""));
}

void addThreadsFlag(CLI::App* cmd, int& threads) {
  cmd->add_option("--threads", threads,
                  "cpu: threads each step may use (default: one per CPU this process may run on); results do not "
                  "depend on it")
      ->check(CLI::NonNegativeNumber);
}

int reportError(const std::string& command, const Error& e) {
  const std::string& msg = e.message();
  // Messages from the parser already read "file:line:col: error: ...".
  if (msg.find(": error: ") != std::string::npos)
    std::cerr << msg << "\n";
  else
    std::cerr << "kfuse " << command << ": error: " << msg << "\n";
  return 1;
}

}  // namespace kfuse::cli
