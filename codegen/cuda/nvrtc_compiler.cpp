#include "codegen/cuda/nvrtc_compiler.h"

#include <dlfcn.h>
#include <nvrtc.h>

#include <filesystem>
#include <memory>
#include <mutex>

#include "ir/support/strings.h"

namespace kfuse::cuda {

std::vector<std::string> supportedArchs() { return {"sm_80", "sm_89", "sm_90"}; }

Expected<std::string> checkArch(std::string_view arch) {
  for (const std::string& a : supportedArchs())
    if (arch == a) return a;
  return Error(str("unsupported CUDA architecture '", arch, "' (kfuse compiles for ", join(supportedArchs()), ")"));
}

std::vector<std::string> nvrtcOptionList(const NvrtcOptions& o) {
  std::vector<std::string> opts = {"--gpu-architecture=" + o.arch, "--std=c++17"};
  if (o.lineInfo) opts.push_back("-lineinfo");
  if (o.warnOnSpills) opts.push_back("--ptxas-options=--warn-on-spills");
  return opts;
}

std::string nvrtcVersion() {
  int major = 0, minor = 0;
  if (::nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return str(major, ".", minor);
}

namespace {

struct ProgramDeleter {
  void operator()(nvrtcProgram p) const { nvrtcDestroyProgram(&p); }
};
using Program = std::unique_ptr<std::remove_pointer_t<nvrtcProgram>, ProgramDeleter>;

std::string programLog(nvrtcProgram p) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(p, &size) != NVRTC_SUCCESS || size <= 1) return "";
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(p, log.data()) != NVRTC_SUCCESS) return "";
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

// The log, each line indented under the message.
std::string quoteLog(const std::string& log) {
  std::string out;
  size_t start = 0;
  while (start <= log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    if (end > start) out += "\n  " + log.substr(start, end - start);
    start = end + 1;
  }
  return out;
}

// NVRTC opens libnvrtc-builtins.so.MAJOR.MINOR by name when it first
// compiles, which the loader finds only where the toolkit's library folder is
// in ld.so.conf or LD_LIBRARY_PATH; kfuse finds libnvrtc itself through its
// RUNPATH. With a toolkit copied onto a machine that has neither (the bare
// root of scripts/gpu-check-bare-root.sh), every compile failed with "failed
// to open libnvrtc-builtins.so.13.0". Opened here first, from libnvrtc's own
// folder, it is the library NVRTC's dlopen then finds already loaded (by its
// soname). Where this fails, NVRTC reports the missing library itself.
void loadNvrtcBuiltins() {
  static std::once_flag once;
  std::call_once(once, [] {
    int major = 0, minor = 0;
    if (::nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return;
    std::string name = str("libnvrtc-builtins.so.", major, ".", minor);
    if (dlopen(name.c_str(), RTLD_NOW | RTLD_NOLOAD)) return;  // loaded already
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void*>(&::nvrtcVersion), &info) || !info.dli_fname) return;
    std::filesystem::path beside = std::filesystem::path(info.dli_fname).parent_path() / name;
    dlopen(beside.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept for the process, as NVRTC keeps it
  });
}

}  // namespace

Expected<CompiledUnit> compileUnit(const std::string& source, const std::string& what, const NvrtcOptions& opts) {
  KF_RETURN_IF_ERROR(checkArch(opts.arch).status());
  loadNvrtcBuiltins();
  nvrtcProgram raw = nullptr;
  nvrtcResult r = nvrtcCreateProgram(&raw, source.c_str(), "kfuse.cu", 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS) return Error(str("NVRTC cannot create a program for ", what, ": ", nvrtcGetErrorString(r)));
  Program program(raw);
  std::vector<std::string> options = nvrtcOptionList(opts);
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  r = nvrtcCompileProgram(raw, static_cast<int>(argv.size()), argv.data());
  CompiledUnit unit;
  unit.log = programLog(raw);
  if (r != NVRTC_SUCCESS)
    return Error(str("NVRTC failed to compile ", what, " for ", opts.arch, " (", nvrtcGetErrorString(r), "):",
                     quoteLog(unit.log)));
  size_t size = 0;
  if (nvrtcGetCUBINSize(raw, &size) != NVRTC_SUCCESS || size == 0)
    return Error(str("NVRTC produced no CUBIN for ", what));
  unit.cubin.resize(size);
  if (nvrtcGetCUBIN(raw, unit.cubin.data()) != NVRTC_SUCCESS) return Error(str("NVRTC lost the CUBIN of ", what));
  if (nvrtcGetPTXSize(raw, &size) == NVRTC_SUCCESS && size > 1) {
    unit.ptx.resize(size);
    if (nvrtcGetPTX(raw, unit.ptx.data()) != NVRTC_SUCCESS) unit.ptx.clear();
    while (!unit.ptx.empty() && unit.ptx.back() == '\0') unit.ptx.pop_back();
  }
  return unit;
}

}  // namespace kfuse::cuda
