#include "codegen/cuda/compile_cache.h"


#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#if KFUSE_NVRTC_CACHE
#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/SHA256.h>
#endif
#include "ir/support/file_io.h"
#include "ir/support/strings.h"

namespace kfuse::cuda {

namespace fs = std::filesystem;

namespace {

#if KFUSE_NVRTC_CACHE
constexpr std::string_view kMagic = "KFUSE-NVRTC-1\n";
constexpr size_t kHeader = kMagic.size() + 3 * 8 + 32;

void putU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

uint64_t getU64(const std::string& in, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(in[at + static_cast<size_t>(i)])) << (8 * i);
  return v;
}

// SHA-256 from LLVM Support: a cryptographic hash, so two sources that
// differ never share an entry in practice (a weak hash here would run the
// wrong kernel without a word).
class Digest {
 public:
  Digest& update(std::string_view bytes) {
    sha_.update(llvm::StringRef(bytes.data(), bytes.size()));
    return *this;
  }
  std::string raw() { return sha_.final().str(); }
  std::string hex() { return llvm::toHex(sha_.final(), /*LowerCase=*/true); }

 private:
  llvm::SHA256 sha_;
};

std::string payloadDigest(const std::string& cubin, const std::string& ptx, const std::string& log) {
  return Digest().update(cubin).update(ptx).update(log).raw();
}
#endif

}  // namespace

CompileCache::CompileCache(std::string dir) : dir_(hashAvailable() ? std::move(dir) : std::string()) {}

bool CompileCache::hashAvailable() { return KFUSE_NVRTC_CACHE != 0; }

std::string CompileCache::defaultDir() {
  if (!hashAvailable()) return "";
  const char* home = std::getenv("HOME");  // where ~ is; not a kfuse setting
  if (!home || !*home) return "";
  return (fs::path(home) / ".cache" / "kfuse" / "nvrtc").string();
}

namespace {

std::string nvrtcIdentity(const NvrtcOptions& opts) {
  std::string id = str("nvrtc ", nvrtcVersion(), "\n");
  for (const std::string& o : nvrtcOptionList(opts)) {
    id += o;
    id += '\0';
  }
  return id;
}

}  // namespace

std::string CompileCache::key(const std::string& source, const NvrtcOptions& opts) {
  return key(source, nvrtcIdentity(opts));
}

std::string CompileCache::key(const std::string& source, const std::string& compilerIdentity) {
#if KFUSE_NVRTC_CACHE
  Digest h;
  h.update(compilerIdentity).update("\n").update(source);
  return h.hex();
#else
  (void)source, (void)compilerIdentity;
  return "";
#endif
}

UnitCompiler nvrtcUnitCompiler(const NvrtcOptions& opts) {
  return {nvrtcIdentity(opts), [opts](const CompileJob& j) { return compileUnit(j.source, j.what, opts); }};
}

std::string CompileCache::pathOf(const std::string& key) const { return (fs::path(dir_) / (key + ".kfc")).string(); }

std::optional<CompiledUnit> CompileCache::load(const std::string& key) const {
#if !KFUSE_NVRTC_CACHE
  (void)key;
  return std::nullopt;
#else
  if (!enabled()) return std::nullopt;
  std::string path = pathOf(key);
  Expected<std::string> read = readFile(path);
  if (!read) return std::nullopt;
  std::string bytes = std::move(*read);
  auto invalid = [&]() -> std::optional<CompiledUnit> {
    std::error_code ec;
    fs::remove(path, ec);  // recompiled and rewritten by the caller
    return std::nullopt;
  };
  if (bytes.size() < kHeader || bytes.compare(0, kMagic.size(), kMagic) != 0) return invalid();
  uint64_t cubin = getU64(bytes, kMagic.size()), ptx = getU64(bytes, kMagic.size() + 8),
           log = getU64(bytes, kMagic.size() + 16);
  if (cubin > bytes.size() || ptx > bytes.size() || log > bytes.size() || kHeader + cubin + ptx + log != bytes.size())
    return invalid();
  CompiledUnit unit;
  unit.cubin = bytes.substr(kHeader, cubin);
  unit.ptx = bytes.substr(kHeader + cubin, ptx);
  unit.log = bytes.substr(kHeader + cubin + ptx, log);
  if (payloadDigest(unit.cubin, unit.ptx, unit.log) != bytes.substr(kMagic.size() + 24, 32) || unit.cubin.empty())
    return invalid();
  return unit;
#endif
}

Status CompileCache::store(const std::string& key, const CompiledUnit& unit) const {
#if !KFUSE_NVRTC_CACHE
  (void)key, (void)unit;
  return Status::ok();
#else
  if (!enabled()) return Status::ok();
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return Error(str("cannot create the NVRTC cache directory ", dir_, ": ", ec.message()));
  std::string bytes(kMagic);
  putU64(bytes, unit.cubin.size());
  putU64(bytes, unit.ptx.size());
  putU64(bytes, unit.log.size());
  bytes += payloadDigest(unit.cubin, unit.ptx, unit.log);
  bytes += unit.cubin;
  bytes += unit.ptx;
  bytes += unit.log;
  std::string path = pathOf(key);
  return writeFileAtomically(path, bytes);
#endif
}

std::vector<Expected<CompiledUnit>> compileEach(const std::vector<CompileJob>& jobs, const NvrtcOptions& opts,
                                                const CompileCache& cache, int threads, CompileStats* stats) {
  return compileEach(jobs, nvrtcUnitCompiler(opts), cache, threads, stats);
}

std::vector<Expected<CompiledUnit>> compileEach(const std::vector<CompileJob>& jobs, const UnitCompiler& compiler,
                                                const CompileCache& cache, int threads, CompileStats* stats) {
  auto start = std::chrono::steady_clock::now();
  std::vector<std::optional<Expected<CompiledUnit>>> results(jobs.size());
  std::atomic<size_t> next{0}, hits{0}, compiled{0};
  // Workers take jobs in order; each job's result has its own slot.
  auto worker = [&] {
    for (size_t i = next++; i < jobs.size(); i = next++) {
      std::string key = cache.enabled() ? CompileCache::key(jobs[i].source, compiler.identity) : std::string();
      if (auto cached = cache.load(key)) {
        results[i] = std::move(*cached);
        ++hits;
        continue;
      }
      Expected<CompiledUnit> unit = compiler.compile(jobs[i]);
      ++compiled;
      if (unit) (void)cache.store(key, *unit);  // a cache that cannot be written only costs time
      results[i] = std::move(unit);
    }
  };
  int n = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  n = static_cast<int>(std::min<size_t>(static_cast<size_t>(n), std::max<size_t>(jobs.size(), 1)));
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  std::vector<Expected<CompiledUnit>> out;
  out.reserve(jobs.size());
  for (auto& r : results) out.push_back(std::move(*r));
  if (stats) {
    stats->units = jobs.size();
    stats->compiled = compiled;
    stats->cacheHits = hits;
    stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return out;
}

Expected<std::vector<CompiledUnit>> compileAll(const std::vector<CompileJob>& jobs, const NvrtcOptions& opts,
                                               const CompileCache& cache, int threads, CompileStats* stats) {
  return compileAll(jobs, nvrtcUnitCompiler(opts), cache, threads, stats);
}

Expected<std::vector<CompiledUnit>> compileAll(const std::vector<CompileJob>& jobs, const UnitCompiler& compiler,
                                               const CompileCache& cache, int threads, CompileStats* stats) {
  std::vector<CompiledUnit> out;
  for (Expected<CompiledUnit>& r : compileEach(jobs, compiler, cache, threads, stats)) {
    if (!r) return r.error();
    out.push_back(std::move(*r));
  }
  return out;
}

}  // namespace kfuse::cuda
