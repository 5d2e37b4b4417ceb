#include "tools/kfuse/rank_launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "ir/support/strings.h"

extern char** environ;

namespace kfuse::cli {
namespace {

std::string exitText(int status) {
  if (WIFSIGNALED(status)) return str("was killed by signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")");
  return str("exited with status ", WEXITSTATUS(status));
}

Expected<pid_t> spawnRank(const std::vector<std::string>& argv, int rank, int ranks, const std::string& store) {
  std::vector<std::string> args = argv;
  for (std::string a : {std::string("--rank"), str(rank), std::string("--world-size"), str(ranks),
                        std::string("--store"), "file:" + store})
    args.push_back(std::move(a));
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (rank != 0) posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  int err = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, cargs.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) return Error(str("starting rank ", rank, ": ", std::strerror(err)));
  return pid;
}

}  // namespace

std::vector<std::string> withoutRanksOption(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--ranks") {
      ++i;  // and its value
      continue;
    }
    if (argv[i].rfind("--ranks=", 0) == 0) continue;
    out.push_back(argv[i]);
  }
  return out;
}

Status launchRanks(int ranks) {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> argv;
  for (std::string arg; std::getline(in, arg, '\0');) argv.push_back(arg);
  if (argv.empty()) return Error("cannot read this process's command line (/proc/self/cmdline)");
  argv = withoutRanksOption(argv);
  std::string tmpl = (std::filesystem::temp_directory_path() / "kfuse-ranks-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) return Error(str("cannot create a rendezvous directory: ", std::strerror(errno)));
  const std::string store = tmpl;
  std::map<pid_t, int> running;  // pid -> rank
  Status result = Status::ok();
  for (int r = 0; r < ranks && result; ++r) {
    auto pid = spawnRank(argv, r, ranks, store);
    if (pid)
      running.emplace(*pid, r);
    else
      result = pid.error();
  }
  bool stopping = !result;
  if (stopping)
    for (const auto& [pid, r] : running) kill(pid, SIGTERM);
  while (!running.empty()) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    auto it = running.find(pid);
    if (it == running.end()) continue;
    const int rank = it->second;
    running.erase(it);
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (ok || stopping) continue;
    // The first failure: the others would only wait for it until their timeout.
    result = Error(str("rank ", rank, " (pid ", pid, ") ", exitText(status), "; ",
                       ranks == 2 ? std::string("the other rank was") : str("the other ", ranks - 1, " ranks were"),
                       " stopped"));
    stopping = true;
    for (const auto& [other, r] : running) kill(other, SIGTERM);
  }
  std::error_code ec;
  std::filesystem::remove_all(store, ec);
  return result;
}

}  // namespace kfuse::cli
