#include "codegen/cuda/host_compiler.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "ir/support/strings.h"
#include "runtime/cuda/sim/module.h"

extern char** environ;

namespace kfuse::cuda {
namespace fs = std::filesystem;

namespace {

// -fvisibility=hidden: the module exports only kfsim_module_init, so two
// modules (or the process) never interpose each other's symbols;
// -fno-gnu-unique: no STB_GNU_UNIQUE symbol pins it, so dlclose unloads it.
const std::vector<std::string>& compileFlags() {
  static const std::vector<std::string> flags = {"-std=c++17",          "-O2",
                                                 "-fPIC",               "-shared",
                                                 "-fvisibility=hidden", "-fno-gnu-unique",
                                                 "-Wno-unknown-pragmas", "-Wno-unused",
                                                 "-x",                  "c++"};
  return flags;
}

// Runs argv[0] with `argv`, its stdout and stderr into `log`; the exit
// status, or an error when it could not be started.
Expected<int> runProcess(const std::vector<std::string>& argv, const fs::path& logFile, std::string& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, logFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return Error(str("cannot run ", argv[0], ": ", std::strerror(rc)));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return Error(str("waiting for ", argv[0], ": ", std::strerror(errno)));
  std::ifstream in(logFile);
  std::ostringstream buf;
  buf << in.rdbuf();
  log = buf.str();
  while (!log.empty() && log.back() == '\n') log.pop_back();
  if (!WIFEXITED(status)) return Error(str(argv[0], " was killed by signal ", WTERMSIG(status)));
  return WEXITSTATUS(status);
}

// A private scratch folder, removed with everything in it.
class ScratchDir {
 public:
  static Expected<ScratchDir> create() {
    std::string pattern = (fs::temp_directory_path() / "kfuse-sim-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) return Error(str("cannot create a folder under ", fs::temp_directory_path().string()));
    return ScratchDir(pattern);
  }
  ScratchDir(ScratchDir&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  explicit ScratchDir(fs::path p) : path_(std::move(p)) {}
  fs::path path_;
};

Status writeFile(const fs::path& p, std::string_view text) {
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  std::ofstream out(p, std::ios::binary);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!out.flush()) return Error(str("cannot write ", p.string()));
  return Status::ok();
}

// An entry's __launch_bounds__ as the emitters write it
// ("__launch_bounds__(256) kfuse_entry("), 0 when it has none.
int launchBounds(const std::string& source, const std::string& entry) {
  size_t at = source.find(") " + entry + "(");
  if (at == std::string::npos) return 0;
  size_t open = source.rfind("__launch_bounds__(", at);
  if (open == std::string::npos || source.find('\n', open) < at) return 0;
  return std::atoi(source.c_str() + open + 18);
}

// The quoted log, indented under the message, at most `lines` lines.
std::string quoted(const std::string& log, size_t lines = 30) {
  std::string out;
  size_t start = 0, n = 0;
  while (start < log.size() && n < lines) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    out += "\n  " + log.substr(start, end - start);
    start = end + 1;
    ++n;
  }
  if (start < log.size()) out += "\n  ...";
  return out;
}

}  // namespace

Expected<std::string> hostCompilerIdentity(const HostCompileOptions& opts) {
  static std::mutex m;
  static std::map<std::string, std::string> versions;
  std::string version;
  {
    std::lock_guard<std::mutex> lock(m);
    auto it = versions.find(opts.compiler);
    if (it != versions.end()) version = it->second;
  }
  if (version.empty()) {
    KF_ASSIGN_OR_RETURN(ScratchDir dir, ScratchDir::create());
    std::string log;
    KF_ASSIGN_OR_RETURN(int rc, runProcess({opts.compiler, "--version"}, dir.path() / "version.log", log));
    if (rc != 0) return Error(str(opts.compiler, " --version failed:", quoted(log)));
    version = log.substr(0, log.find('\n'));
    std::lock_guard<std::mutex> lock(m);
    versions[opts.compiler] = version;
  }
  std::string id = str("kfuse-sim ", KFSIM_ABI_VERSION, "\n", version, "\n");
  for (const std::string& f : compileFlags()) id += f + '\0';
  id += "\n";
  id += simAbiHeader();
  id += simDeviceHeader();
  return id;
}

Expected<CompiledUnit> compileHostUnit(const std::string& source, const std::vector<std::string>& entries,
                                       const std::string& what, const HostCompileOptions& opts) {
  if (entries.empty()) return Error(str(what, ": a unit without entries"));
  KF_ASSIGN_OR_RETURN(ScratchDir dir, ScratchDir::create());
  const fs::path include = dir.path() / "include";
  KF_RETURN_IF_ERROR(writeFile(include / "runtime/cuda/sim/abi.h", simAbiHeader()));
  KF_RETURN_IF_ERROR(writeFile(include / "runtime/cuda/sim/device.h", simDeviceHeader()));
  // The entry table after the unit, on lines of its own: error line
  // numbers still refer to the unit as emitted.
  std::string unit = source;
  if (!unit.empty() && unit.back() != '\n') unit += '\n';
  std::string name;  // `what` as a C string literal
  for (char c : what) {
    if (c == '"' || c == '\\') name += '\\';
    if (c != '\n') name += c;
  }
  unit += str("KFSIM_MODULE(\"", name, "\",\n");
  for (const std::string& e : entries) unit += str("  KFSIM_ENTRY(", e, ", ", launchBounds(source, e), ")\n");
  unit += ")\n";
  const fs::path src = dir.path() / "unit.cu", out = dir.path() / "unit.so";
  KF_RETURN_IF_ERROR(writeFile(src, unit));

  std::vector<std::string> argv = {opts.compiler};
  for (const std::string& f : compileFlags()) argv.push_back(f);
  argv.insert(argv.end(), {"-I", include.string(), "-include", "runtime/cuda/sim/device.h", src.string(), "-o",
                           out.string()});
  std::string log;
  KF_ASSIGN_OR_RETURN(int rc, runProcess(argv, dir.path() / "compile.log", log));
  if (rc != 0) return Error(str(what, ": the simulator's compiler (", opts.compiler, ") failed:", quoted(log)));
  std::ifstream in(out, std::ios::binary);
  std::ostringstream so;
  so << in.rdbuf();
  if (so.str().empty()) return Error(str(what, ": ", opts.compiler, " wrote no shared object"));
  CompiledUnit u;
  u.cubin = sim::wrapModuleImage(so.str());
  u.log = log;
  return u;
}

}  // namespace kfuse::cuda
