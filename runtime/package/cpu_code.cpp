#include "runtime/package/cpu_code.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "ir/support/strings.h"

namespace kfuse {
namespace {

// The architecture this runtime was built for, as target triples begin.
constexpr std::string_view hostArch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "unknown";
#endif
}

#if defined(__x86_64__)
// The ISA extensions that change what code LLVM generates for kernels, with
// the CPU's answer. Features outside the list (tuning flags, extensions no
// kernel uses) are not checked.
std::optional<bool> hostHas(std::string_view f) {
#define KF_FEATURE(name) \
  if (f == name) return __builtin_cpu_supports(name) != 0;
  KF_FEATURE("sse3") KF_FEATURE("ssse3") KF_FEATURE("sse4.1") KF_FEATURE("sse4.2") KF_FEATURE("popcnt")
  KF_FEATURE("avx") KF_FEATURE("avx2") KF_FEATURE("fma") KF_FEATURE("bmi") KF_FEATURE("bmi2")
  KF_FEATURE("avx512f") KF_FEATURE("avx512vl") KF_FEATURE("avx512bw") KF_FEATURE("avx512dq")
  KF_FEATURE("avx512cd") KF_FEATURE("avx512ifma") KF_FEATURE("avx512vbmi") KF_FEATURE("avx512vbmi2")
  KF_FEATURE("avx512vnni") KF_FEATURE("avx512bitalg") KF_FEATURE("avx512vpopcntdq") KF_FEATURE("avx512bf16")
  KF_FEATURE("avx512fp16")
#undef KF_FEATURE
  return std::nullopt;
}
#else
std::optional<bool> hostHas(std::string_view) { return std::nullopt; }
#endif

}  // namespace

Status checkHostRuns(std::string_view triple, const std::vector<std::string>& features) {
  std::string_view arch = triple.substr(0, triple.find('-'));
  if (arch != hostArch())
    return Error(str("compiled for ", triple, ", and this machine is ", hostArch(),
                     " (compile the package on or for this machine)"));
  return checkFeatures(features, hostHas);
}

Status checkFeatures(const std::vector<std::string>& features,
                     const std::function<std::optional<bool>(std::string_view)>& has) {
  std::vector<std::string> missing;
  for (const std::string& f : features)
    if (has(f) == false) missing.push_back(f);
  if (!missing.empty())
    return Error(str("compiled for a CPU with ", join(missing), ", which this CPU lacks (compile with --cpu for an older "
                     "CPU, e.g. --cpu=x86-64-v3)"));
  return Status::ok();
}

Expected<std::unique_ptr<CpuCode>> CpuCode::load(std::string_view sharedObject, const std::string& what) {
  std::unique_ptr<CpuCode> code(new CpuCode());
  code->what_ = what;
  // The dynamic loader maps files, not memory: an anonymous in-memory file
  // gives it one without touching the disk.
  code->fd_ = memfd_create("kfuse-kernels", MFD_CLOEXEC);
  if (code->fd_ < 0) return Error(str(what, ": cannot create an in-memory file: ", std::strerror(errno)));
  for (size_t done = 0; done < sharedObject.size();) {
    ssize_t n = ::write(code->fd_, sharedObject.data() + done, sharedObject.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error(str(what, ": cannot write the kernels' code to memory: ", std::strerror(errno)));
    done += static_cast<size_t>(n);
  }
  std::string path = str("/proc/self/fd/", code->fd_);
  // RTLD_LOCAL: two packages loaded in one process never see each other's
  // symbols.
  code->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!code->handle_) return Error(str(what, ": cannot load the kernels' shared object: ", dlerror()));
  return code;
}

CpuCode::~CpuCode() {
  if (handle_) dlclose(handle_);
  if (fd_ >= 0) ::close(fd_);
}

Expected<KernelFn> CpuCode::function(const std::string& symbol) const {
  void* p = dlsym(handle_, symbol.c_str());
  if (!p) return Error(str(what_, ": the kernels' shared object does not define ", symbol));
  return reinterpret_cast<KernelFn>(p);
}

}  // namespace kfuse
