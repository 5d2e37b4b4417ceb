#include "runtime/cuda/sim/module.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "ir/support/strings.h"
#include "runtime/cuda/sim/scheduler.h"

namespace kfuse::cuda::sim {
namespace {

constexpr char kMagic[8] = {'K', 'F', 'S', 'I', 'M', 'S', 'O', '1'};
// A module is a few kernels: anything near this is not one.
constexpr uint64_t kMaxImageBytes = uint64_t{1} << 30;

}  // namespace

std::string wrapModuleImage(std::string_view so) {
  std::string out(kMagic, sizeof(kMagic));
  uint64_t n = so.size();
  for (int i = 0; i < 8; ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
  out += so;
  return out;
}

bool isModuleImage(const void* image) { return image && std::memcmp(image, kMagic, sizeof(kMagic)) == 0; }

Expected<std::unique_ptr<Module>> Module::load(const void* image) {
  if (!isModuleImage(image))
    return Error("not a simulator module (a CUBIN or PTX for a GPU? the simulator runs programs compiled with --simulate)");
  const auto* bytes = static_cast<const unsigned char*>(image);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(bytes[sizeof(kMagic) + static_cast<size_t>(i)]) << (8 * i);
  if (n < 64 || n > kMaxImageBytes || std::memcmp(bytes + 16, "\x7f" "ELF", 4) != 0)
    return Error(str("a corrupt simulator module (", n, " bytes, no shared object)"));

  // dlopen needs a file. Its name must be new to the process: glibc
  // returns the already loaded object for a name it has seen (so not
  // /proc/self/fd/N, whose N comes back). Removed once loaded.
  static std::atomic<uint64_t> counter{0};
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::temp_directory_path(ec);
  if (ec) dir = "/tmp";
  const std::string path = (dir / str("kfuse-sim-", ::getpid(), "-", counter++, ".so")).string();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
  if (fd < 0) return Error(str("cannot create ", path, " for a simulator module: ", std::strerror(errno)));
  const unsigned char* p = bytes + 16;
  uint64_t left = n;
  while (left > 0) {
    ssize_t w = ::write(fd, p, left);
    if (w <= 0) {
      ::close(fd);
      ::unlink(path.c_str());
      return Error(str("cannot write a simulator module to ", path, ": ", std::strerror(errno)));
    }
    p += w;
    left -= static_cast<uint64_t>(w);
  }
  ::close(fd);
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ::unlink(path.c_str());
  if (!handle) {
    const char* e = ::dlerror();
    return Error(str("cannot load a simulator module: ", e ? e : "dlopen failed"));
  }
  std::unique_ptr<Module> m(new Module());
  m->handle_ = handle;
  auto init = reinterpret_cast<kfsim_module_init_fn>(::dlsym(handle, KFSIM_MODULE_INIT_SYMBOL));
  if (!init) return Error("a simulator module without " KFSIM_MODULE_INIT_SYMBOL " (not compiled with the simulator's header)");
  int count = 0, version = 0;
  const char* name = nullptr;
  const kfsim_entry* entries = init(simulatorApi(), &count, &version, &name);
  m->name_ = name ? name : "a module";
  if (version != KFSIM_ABI_VERSION)
    return Error(str("a simulator module of ABI version ", version, ", this simulator's is ", KFSIM_ABI_VERSION,
                     " (recompile it)"));
  for (int i = 0; i < count; ++i) m->entries_.push_back(&entries[i]);
  return m;
}

Module::~Module() {
  if (handle_) ::dlclose(handle_);
}

const kfsim_entry* Module::entry(std::string_view name) const {
  for (const kfsim_entry* e : entries_)
    if (name == e->name) return e;
  return nullptr;
}

}  // namespace kfuse::cuda::sim
