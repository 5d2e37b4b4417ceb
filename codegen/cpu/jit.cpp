#include "codegen/cpu/jit.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <type_traits>

#include "codegen/cpu/code_identity.h"
#include "ir/support/strings.h"
#include "runtime/threads.h"

namespace kfuse::cpu {
namespace {

Error fromLLVM(llvm::Error e, const std::string& what) { return Error(what + ": " + llvm::toString(std::move(e))); }

llvm::orc::JITTargetMachineBuilder machineBuilder(const CpuTarget& target) {
  llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(target.triple)};
  jtmb.setCPU(target.cpu);
  jtmb.setFeatures(target.features);
  jtmb.setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
  return jtmb;
}

}  // namespace

CpuJit::CpuJit(CpuSubtarget subtarget, std::unique_ptr<llvm::orc::LLJIT> jit, std::unique_ptr<llvm::TargetMachine> tm,
               std::string cacheDir)
    : subtarget_(std::move(subtarget)), jit_(std::move(jit)), tm_(std::move(tm)),
      cache_(ObjectCache::codeGeneratorId().empty() ? std::string() : std::move(cacheDir)) {}

CpuJit::~CpuJit() = default;

Expected<std::unique_ptr<CpuJit>> CpuJit::create(const CpuTarget& target, const std::string& cacheDir) {
  initializeNativeTarget();
  KF_ASSIGN_OR_RETURN(CpuSubtarget subtarget, subtargetOf(target));
  return create(std::move(subtarget), cacheDir);
}

Expected<std::unique_ptr<CpuJit>> CpuJit::create(CpuSubtarget subtarget, const std::string& cacheDir) {
  initializeNativeTarget();
  const CpuTarget target = subtarget.target;
  KF_RETURN_IF_ERROR(checkRunsHere(subtarget));
  auto tm = machineBuilder(target).createTargetMachine();
  if (!tm) return fromLLVM(tm.takeError(), "cannot create the host target machine");
  // Objects are linked by JITLink: LLVM 14's default for ELF, RuntimeDyld,
  // left the GOT entries of some objects' calls to libm unwritten (the call
  // jumped to address 0; seen under qemu, with one object per function).
  auto jit = llvm::orc::LLJITBuilder()
                 .setJITTargetMachineBuilder(machineBuilder(target))
                 .setObjectLinkingLayerCreator([](llvm::orc::ExecutionSession& es, const llvm::Triple&) {
                   return std::make_unique<llvm::orc::ObjectLinkingLayer>(es);
                 })
                 .create();
  if (!jit) return fromLLVM(jit.takeError(), "cannot create the LLVM JIT");
  // Kernels call libm and, after some optimisations, libc (memset).
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process) return fromLLVM(process.takeError(), "cannot search the process for symbols");
  (*jit)->getMainJITDylib().addGenerator(std::move(*process));
  // Vectorised kernels call glibc's vector math, which kfuse itself does not
  // link (subtarget.h's vectorMath).
  if (!subtarget.vectorMath.empty()) {
    auto mvec = llvm::orc::DynamicLibrarySearchGenerator::Load("libmvec.so.1", (*jit)->getDataLayout().getGlobalPrefix());
    if (!mvec) return fromLLVM(mvec.takeError(), "cannot load glibc's vector math library");
    (*jit)->getMainJITDylib().addGenerator(std::move(*mvec));
  }
  return std::unique_ptr<CpuJit>(new CpuJit(std::move(subtarget), std::move(*jit), std::move(*tm), cacheDir));
}

// The batch's functions by their code (code_identity.h): each distinct one
// a copy named after its code, compiled and linked once, and found in the
// object cache whatever the model called it.
struct JitUnits {
  struct Unit {
    CodeBatch batch;          // one function, named `name`
    std::string description;  // everything its code depends on but the CPU and options
    std::string name;         // its symbol's (symbolName)
    std::string shownAs;      // the first name the batch gave it, for errors
  };
  std::vector<Unit> units;  // one per distinct function
  FunctionNames names;      // each function of the batch: its unit's name
  // The renamed copies the units point into (deques: stable addresses).
  std::deque<kernel::Kernel> kernels;
  std::deque<DirectConv> convs;
  std::deque<PackedGemm> gemms;
  std::set<std::string> seen;  // the units' names
};

namespace {

// Adds a unit for `f` unless the batch has its code already; the name of
// its code either way.
template <typename Function>
std::string addUnit(JitUnits& u, std::deque<Function>& copies, const Function& f, std::string_view kind) {
  const std::string code = codeOf(f);
  std::string name = codeName(kind, code);
  if (!u.seen.insert(name).second) return name;
  Function& copy = copies.emplace_back(f);
  copy.name = name;
  CodeBatch batch;
  if constexpr (std::is_same_v<Function, kernel::Kernel>) batch.kernels = std::span(&copy, 1);
  if constexpr (std::is_same_v<Function, DirectConv>) batch.convs = std::span(&copy, 1);
  if constexpr (std::is_same_v<Function, PackedGemm>) batch.gemms = std::span(&copy, 1);
  u.units.push_back({batch, str(name, "\n", code), name, f.name});
  return name;
}

std::unique_ptr<JitUnits> unitsOf(const CodeBatch& batch) {
  auto u = std::make_unique<JitUnits>();
  for (const kernel::Kernel& k : batch.kernels) u->names.kernels.push_back(addUnit(*u, u->kernels, k, "kernel"));
  for (const DirectConv& c : batch.convs) u->names.convs.push_back(addUnit(*u, u->convs, c, "conv"));
  for (const PackedGemm& g : batch.gemms) u->names.gemms.push_back(addUnit(*u, u->gemms, g, "gemm"));
  return u;
}

// An error from a unit names the function as the batch did.
Error shownAs(const Error& e, const JitUnits::Unit& unit) {
  const std::string name = "@" + unit.name;
  std::string message = e.message();
  for (size_t at = 0; (at = message.find(name, at)) != std::string::npos; at += unit.shownAs.size() + 1)
    message.replace(at, name.size(), "@" + unit.shownAs);
  return Error(message);
}

// A batch is one namespace of symbols, as its one module was: names must be
// unique across its kernels, convolutions and GEMMs.
Status checkUniqueNames(const CodeBatch& batch) {
  std::set<std::string> seen;
  auto check = [&](const std::string& name, const char* what) -> Status {
    if (!seen.insert(symbolName(name)).second)
      return Error(str(what, " @", name, ": the module already defines a symbol of that name"));
    return Status::ok();
  };
  for (const kernel::Kernel& k : batch.kernels) KF_RETURN_IF_ERROR(check(k.name, "kernel"));
  for (const DirectConv& c : batch.convs) KF_RETURN_IF_ERROR(check(c.name, "convolution"));
  for (const PackedGemm& g : batch.gemms) KF_RETURN_IF_ERROR(check(g.name, "GEMM"));
  return Status::ok();
}

}  // namespace

namespace {

// body(i) for i in [0, n) on one thread per CPU (at most n).
void onEveryCpu(size_t n, const std::function<void(size_t)>& body) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < n; i = next++) body(i);
  };
  const size_t threads = std::min<size_t>(static_cast<size_t>(availableCpus()), std::max<size_t>(n, 1));
  std::vector<std::thread> pool;
  for (size_t i = 1; i < threads; ++i) pool.emplace_back(worker);
  worker();
  for (std::thread& th : pool) th.join();
}

// A cache entry: the symbol its object defines for the unit, a newline, the
// object file.
std::string entryOf(const std::string& symbol, const std::string& object) { return symbol + "\n" + object; }
std::optional<std::pair<std::string, std::string>> parseEntry(const std::string& entry) {
  const size_t newline = entry.find('\n');
  if (newline == std::string::npos || newline == 0) return std::nullopt;
  return std::pair{entry.substr(0, newline), entry.substr(newline + 1)};
}

// The emitted module's text with the unit's name (its function's, and its
// inlined epilogue's) replaced: units whose texts are equal compile to the
// same code. Training's SGD updates are elementwise over different weight
// shapes, and the emitted code of an elementwise kernel does not depend on
// its size (work units are elements): MobileNetV2's 27 were compiled 27
// times, now twice.
std::string codeText(const llvm::Module& module, const std::string& name) {
  std::string text = printModule(module);
  for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) text.replace(at, name.size(), "unit");
  return text;
}

}  // namespace

// Each unit's symbol and object: from the cache, or emitted, grouped with
// the batch's other units whose emitted code is the same, and compiled once
// per group (its first unit's symbol), on one thread per CPU; the first
// failure in batch order.
Expected<JitObjects> CpuJit::objectsOf(const JitUnits& batch, const CompileOptions& options, CompiledKernels& stats) {
  const std::vector<JitUnits::Unit>& units = batch.units;
  const CpuTarget& t = subtarget_.target;
  std::vector<std::string> keys(units.size()), codes(units.size());
  std::vector<std::optional<std::pair<std::string, std::string>>> found(units.size());  // symbol, object
  std::vector<std::optional<EmittedModule>> emitted(units.size());
  std::vector<std::optional<Error>> failed(units.size());
  std::atomic<size_t> hits{0};
  onEveryCpu(units.size(), [&](size_t i) {
    if (cache_.enabled()) {
      keys[i] = ObjectCache::key({"kfuse cpu object", ObjectCache::codeGeneratorId(), LLVM_VERSION_STRING, t.triple,
                                  t.cpu, t.features, std::to_string(static_cast<int>(options.optLevel)),
                                  subtarget_.inlineExp ? "exp inline" : "exp called",
                                  subtarget_.inlineErf ? "erf inline" : "erf called", units[i].description});
      if (auto entry = cache_.load(keys[i])) {
        if ((found[i] = parseEntry(*entry))) {
          ++hits;
          return;
        }
      }
    }
    Expected<EmittedModule> m = emitModule(units[i].batch, subtarget_);
    if (!m) {
      failed[i] = shownAs(m.error(), units[i]);
      return;
    }
    codes[i] = codeText(*m->module, units[i].name);  // compared whole: no hash to collide
    emitted[i] = std::move(*m);
  });
  // Each emitted unit's group: the first unit of the batch with its code.
  std::map<std::string, size_t> firstWith;
  std::vector<size_t> group(units.size()), firsts;
  for (size_t i = 0; i < units.size(); ++i) {
    if (!emitted[i]) continue;
    auto [at, fresh] = firstWith.emplace(std::move(codes[i]), i);
    group[i] = at->second;
    if (fresh)
      firsts.push_back(i);
    else
      emitted[i].reset();
  }
  std::vector<std::optional<std::string>> objects(units.size());
  onEveryCpu(firsts.size(), [&](size_t f) {
    const size_t i = firsts[f];
    CompileOptions co;
    co.optLevel = options.optLevel;
    Expected<ObjectCode> object = emitObject(std::move(*emitted[i]), subtarget_, co);
    emitted[i].reset();
    if (!object) {
      failed[i] = shownAs(object.error(), units[i]);
      return;
    }
    objects[i] = std::move(object->bytes);
  });
  stats.compiled = firsts.size();
  stats.cacheHits = hits;
  if (cache_.enabled())  // every compiled unit's entry, as the compiles ran: on every CPU
    onEveryCpu(units.size(), [&](size_t i) {
      if (!found[i] && !failed[i] && objects[group[i]])  // an unwritable cache only costs time
        (void)cache_.store(keys[i], entryOf(units[group[i]].name, *objects[group[i]]));
    });
  JitObjects out;
  for (size_t i = 0; i < units.size(); ++i) {
    if (failed[i]) return *failed[i];
    if (failed[group[i]] && !found[i]) return *failed[group[i]];
    std::string symbol = found[i] ? found[i]->first : units[group[i]].name;
    if (!out.objects.count(symbol)) out.objects.emplace(symbol, found[i] ? std::move(found[i]->second) : *objects[group[i]]);
    out.symbols.emplace(units[i].name, std::move(symbol));
  }
  return out;
}

Expected<CompiledKernels> CpuJit::compile(const CodeBatch& batch, const CompileOptions& options) {
  if (options.keepOptimizedIR || options.assembly) return compileOneModule(batch, options);
  KF_RETURN_IF_ERROR(checkUniqueNames(batch));
  std::unique_ptr<JitUnits> units = unitsOf(batch);
  CompiledKernels out;
  KF_ASSIGN_OR_RETURN(JitObjects objects, objectsOf(*units, options, out));
  std::lock_guard<std::mutex> lock(mutex_);
  auto dylib = jit_->createJITDylib(str("kfuse_batch_", batches_++));
  if (!dylib) return fromLLVM(dylib.takeError(), "cannot create a JITDylib");
  dylib->addToLinkOrder(jit_->getMainJITDylib());
  for (const auto& [symbol, object] : objects.objects)
    if (llvm::Error e = jit_->addObjectFile(*dylib, llvm::MemoryBuffer::getMemBufferCopy(object, symbol)))
      return fromLLVM(std::move(e), "cannot add compiled code");
  for (auto* names : {&units->names.kernels, &units->names.convs, &units->names.gemms})
    for (std::string& name : *names) name = objects.symbols.at(name);
  return lookupAll(*dylib, batch, units->names, std::move(out));
}

// Each function of the batch, found under its symbol `names` gives.
Expected<CompiledKernels> CpuJit::lookupAll(llvm::orc::JITDylib& dylib, const CodeBatch& batch,
                                            const FunctionNames& names, CompiledKernels out) {
  auto lookup = [&](const std::string& name, const std::string& shown, const char* what,
                    std::vector<KernelFn>& into) -> Status {
    auto symbol = jit_->lookup(dylib, symbolName(name));
    if (!symbol) return fromLLVM(symbol.takeError(), str(what, " @", shown));
    into.push_back(reinterpret_cast<KernelFn>(static_cast<uintptr_t>(symbol->getAddress())));
    return Status::ok();
  };
  for (size_t i = 0; i < batch.kernels.size(); ++i)
    KF_RETURN_IF_ERROR(lookup(names.kernels[i], batch.kernels[i].name, "kernel", out.functions));
  for (size_t i = 0; i < batch.convs.size(); ++i)
    KF_RETURN_IF_ERROR(lookup(names.convs[i], batch.convs[i].name, "convolution", out.convs));
  for (size_t i = 0; i < batch.gemms.size(); ++i)
    KF_RETURN_IF_ERROR(lookup(names.gemms[i], batch.gemms[i].name, "GEMM", out.gemms));
  return out;
}

Expected<CompiledKernels> CpuJit::compileOneModule(const CodeBatch& batch, const CompileOptions& options) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto ctx = std::make_unique<llvm::LLVMContext>();
  KF_ASSIGN_OR_RETURN(std::unique_ptr<llvm::Module> module, buildKernelModule(batch, *ctx, *tm_, subtarget_, options.optLevel));
  CompiledKernels out;
  if (options.keepOptimizedIR) out.optimizedIR = printModule(*module);

  auto dylib = jit_->createJITDylib(str("kfuse_batch_", batches_++));
  if (!dylib) return fromLLVM(dylib.takeError(), "cannot create a JITDylib");
  dylib->addToLinkOrder(jit_->getMainJITDylib());
  llvm::orc::ThreadSafeModule tsm(std::move(module), std::move(ctx));
  if (llvm::Error e = jit_->addIRModule(*dylib, std::move(tsm))) return fromLLVM(std::move(e), "cannot add kernels");
  out.compiled = batch.kernels.size() + batch.convs.size() + batch.gemms.size();
  FunctionNames names;  // one module: the batch's own names
  for (const kernel::Kernel& k : batch.kernels) names.kernels.push_back(k.name);
  for (const DirectConv& c : batch.convs) names.convs.push_back(c.name);
  for (const PackedGemm& g : batch.gemms) names.gemms.push_back(g.name);
  return lookupAll(*dylib, batch, names, std::move(out));
}

}  // namespace kfuse::cpu
