#include "codegen/cpu/shared_object.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Program.h>

#include <filesystem>

#include "codegen/cpu/compile.h"
#include "ir/support/file_io.h"
#include "ir/support/strings.h"

#ifndef KFUSE_HOST_CC
#define KFUSE_HOST_CC "cc"
#endif

namespace kfuse::cpu {
namespace {

// The C compiler kfuse was built with, else the first `cc` on PATH.
Expected<std::string> linkerDriver() {
  if (llvm::sys::fs::can_execute(KFUSE_HOST_CC)) return std::string(KFUSE_HOST_CC);
  auto found = llvm::sys::findProgramByName("cc");
  if (!found) return Error("no C compiler driver ('cc') on PATH to link the package's kernels");
  return *found;
}

// A directory removed, with its contents, when this goes out of scope.
struct TempDir {
  std::string path;
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

Expected<std::string> linkSharedObject(std::span<const std::string> objects,
                                       std::span<const std::pair<std::string, std::string>> aliases) {
  KF_ASSIGN_OR_RETURN(std::string driver, linkerDriver());
  TempDir dir;
  llvm::SmallString<128> tmp;
  if (auto ec = llvm::sys::fs::createUniqueDirectory("kfuse-link", tmp))
    return Error(str("cannot create a temporary directory to link in: ", ec.message()));
  dir.path = tmp.str().str();
  std::vector<std::string> args = {driver, "-shared", "-o", dir.path + "/kernels.so"};
  for (size_t i = 0; i < objects.size(); ++i) {
    std::string path = str(dir.path, "/kernels", i, ".o");
    KF_RETURN_IF_ERROR(writeFileAtomically(path, objects[i]));
    args.push_back(path);
  }
  for (const auto& [symbol, target] : aliases) args.push_back(str("-Wl,--defsym=", symbol, "=", target));
  if (usesVectorMath(llvm::Triple(llvm::sys::getProcessTriple()))) args.push_back("-lmvec");
  args.push_back("-lm");
  std::string log = dir.path + "/link.log";
  std::vector<llvm::StringRef> argv(args.begin(), args.end());
  llvm::Optional<llvm::StringRef> redirects[] = {llvm::StringRef(""), llvm::StringRef(log), llvm::StringRef(log)};
  std::string problem;
  int rc = llvm::sys::ExecuteAndWait(driver, argv, llvm::None, redirects, 0, 0, &problem);
  if (rc != 0) {
    auto output = readFile(log);
    return Error(str("linking the kernels with ", driver, " failed",
                     problem.empty() ? "" : ": " + problem, output ? ":\n" + *output : std::string()));
  }
  return readFile(dir.path + "/kernels.so");
}

}  // namespace kfuse::cpu
