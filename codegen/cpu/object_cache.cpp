#include "codegen/cpu/object_cache.h"

#include <elf.h>
#include <link.h>

#include <cstdlib>
#include <filesystem>

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/SHA256.h>

#include "ir/support/file_io.h"
#include "ir/support/strings.h"

namespace kfuse::cpu {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kMagic = "KFUSE-CPU-OBJECT-1\n";
constexpr size_t kHeader = kMagic.size() + 8 + 32;

void putU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

uint64_t getU64(const std::string& in, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(in[at + static_cast<size_t>(i)])) << (8 * i);
  return v;
}

std::string sha256(std::string_view bytes) {
  llvm::SHA256 sha;
  sha.update(llvm::StringRef(bytes.data(), bytes.size()));
  return sha.final().str();
}

struct BuildIdSearch {
  uintptr_t address;  // inside the object searched for
  std::string id;
};

// The GNU build-id note of the loaded object (the executable, or a shared
// library) that contains `search->address`.
int findBuildId(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<BuildIdSearch*>(data);
  bool contains = false;
  for (int i = 0; i < info->dlpi_phnum && !contains; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
    contains = ph.p_type == PT_LOAD && search->address >= begin && search->address < begin + ph.p_memsz;
  }
  if (!contains) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const char* name = p + sizeof(ElfW(Nhdr));
      const char* desc = name + ((note->n_namesz + 3) & ~3u);
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && std::string_view(name, 3) == "GNU")
        search->id.assign(desc, note->n_descsz);
      p = desc + ((note->n_descsz + 3) & ~3u);
    }
  }
  return 1;
}

}  // namespace

std::string ObjectCache::codeGeneratorId() {
  static const std::string id = [] {
    BuildIdSearch search{reinterpret_cast<uintptr_t>(&findBuildId), ""};
    dl_iterate_phdr(findBuildId, &search);
    return llvm::toHex(search.id, /*LowerCase=*/true);
  }();
  return id;
}

std::string ObjectCache::defaultDir() {
  const char* home = std::getenv("HOME");  // where ~ is; not a kfuse setting
  if (!home || !*home) return "";
  return (fs::path(home) / ".cache" / "kfuse" / "cpu").string();
}

std::string ObjectCache::key(const std::vector<std::string_view>& parts) {
  llvm::SHA256 sha;
  for (std::string_view p : parts) {
    std::string length;
    putU64(length, p.size());
    sha.update(llvm::StringRef(length));
    sha.update(llvm::StringRef(p.data(), p.size()));
  }
  return llvm::toHex(sha.final(), /*LowerCase=*/true);
}

std::string ObjectCache::pathOf(const std::string& key) const { return (fs::path(dir_) / (key + ".o.kfc")).string(); }

std::optional<std::string> ObjectCache::load(const std::string& key) const {
  if (!enabled()) return std::nullopt;
  std::string path = pathOf(key);
  Expected<std::string> read = readFile(path);
  if (!read) return std::nullopt;
  std::string bytes = std::move(*read);
  auto invalid = [&]() -> std::optional<std::string> {
    std::error_code ec;
    fs::remove(path, ec);  // compiled again and rewritten by the caller
    return std::nullopt;
  };
  if (bytes.size() < kHeader || bytes.compare(0, kMagic.size(), kMagic) != 0) return invalid();
  uint64_t size = getU64(bytes, kMagic.size());
  if (size == 0 || size != bytes.size() - kHeader) return invalid();
  std::string object = bytes.substr(kHeader);
  if (sha256(object) != bytes.substr(kMagic.size() + 8, 32)) return invalid();
  return object;
}

Status ObjectCache::store(const std::string& key, const std::string& object) const {
  if (!enabled()) return Status::ok();
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return Error(str("cannot create the kernel cache directory ", dir_, ": ", ec.message()));
  std::string bytes(kMagic);
  putU64(bytes, object.size());
  bytes += sha256(object);
  bytes += object;
  std::string path = pathOf(key);
  return writeFileAtomically(path, bytes);
}

}  // namespace kfuse::cpu
