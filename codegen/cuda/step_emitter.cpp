#include "codegen/cuda/step_emitter.h"

#include "codegen/cuda/prelude.h"
#include "codegen/cuda/scalar_emitter.h"
#include "ir/support/strings.h"

namespace kfuse::cuda {

std::string EntryParams::use(int buffer, bool written) {
  auto it = written_.find(buffer);
  if (it == written_.end()) {
    order_.push_back(buffer);
    written_[buffer] = written;
  } else {
    it->second = it->second || written;
  }
  return str("b", buffer);
}

std::string EntryParams::declarations() const {
  std::vector<std::string> decls;
  for (int b : order_) {
    DType dt = plan_->buffers[static_cast<size_t>(b)].type.dtype;
    decls.push_back(str(written_.at(b) ? "" : "const ", storageCType(dt), "* b", b));
  }
  return join(decls);
}

KernelEmitContext kernelContext(const Plan& plan, const kernel::Kernel& k, const std::vector<int>& buffers,
                                int writtenBefore) {
  KernelEmitContext ctx;
  size_t n = k.buffers.size();
  ctx.noAlias.assign(n, true);
  ctx.writtenBefore.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    int si = plan.storageOf(buffers[i]);
    if (writtenBefore >= 0 && si == plan.storageOf(writtenBefore)) ctx.writtenBefore[i] = true;
    for (size_t j = 0; j < n; ++j) {
      if (j == i || plan.storageOf(buffers[j]) != si) continue;
      if (k.buffers[i].output || k.buffers[j].output) ctx.noAlias[i] = false;
    }
  }
  return ctx;
}

std::string deviceName(const std::string& kernelName) {
  std::string out = "kf_";
  for (char c : kernelName) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

std::string unitHeader(const std::string& stepName, const std::string& what, bool withGemm) {
  std::string out = str("// kfuse: step ", stepName, ": ", what, "\n");
  out += corePrelude();
  if (withGemm) out += gemmPrelude();
  return out;
}

namespace {

// The kernels of one launch: their functions and the entry dispatching
// blocks to them.
struct Chunk {
  std::vector<size_t> kernels;  // indices into step.kernels
};

}  // namespace

Expected<StepSource> emitKernelStep(const Plan& plan, const Step& step, const StepEmitOptions& opts) {
  StepSource out;
  out.name = step.name;
  std::vector<KernelFunction> fns;
  std::vector<std::string> names;
  for (size_t i = 0; i < step.kernels.size(); ++i) {
    const kernel::Kernel& k = plan.kernels[static_cast<size_t>(step.kernels[i])];
    KernelEmitContext ctx = kernelContext(plan, k, step.kernelBuffers[i]);
    KF_ASSIGN_OR_RETURN(KernelFunction fn, emitKernelFunction(k, deviceName(k.name), opts.kernel, ctx));
    names.push_back(k.name);
    fns.push_back(std::move(fn));
  }

  // Cut into chunks whose pointers fit the parameter limit.
  std::vector<Chunk> chunks(1);
  {
    EntryParams probe(plan);
    bool scratch = false;
    for (size_t i = 0; i < fns.size(); ++i) {
      EntryParams next = probe;
      for (int b : step.kernelBuffers[i]) next.use(b, false);
      bool nextScratch = scratch || fns[i].schedule.scratchBytes > 0;
      if (!chunks.back().kernels.empty() && next.bytes(nextScratch) > opts.maxParamBytes) {
        chunks.emplace_back();
        probe = EntryParams(plan);
        for (int b : step.kernelBuffers[i]) probe.use(b, false);
        scratch = fns[i].schedule.scratchBytes > 0;
      } else {
        probe = next;
        scratch = nextScratch;
      }
      chunks.back().kernels.push_back(i);
    }
  }

  std::string body;
  for (const KernelFunction& fn : fns) body += fn.source + "\n";
  size_t scratchOffset = 0;
  for (size_t c = 0; c < chunks.size(); ++c) {
    EntryParams params(plan);
    CodeWriter entry;
    KernelLaunch launch;
    launch.entry = chunks.size() == 1 ? "kfuse_entry" : str("kfuse_entry_", c);
    launch.block = static_cast<uint32_t>(opts.kernel.threads);
    std::vector<std::string> calls;
    int64_t firstBlock = 0;
    size_t chunkScratch = 0;
    std::vector<std::string> what;
    for (size_t i : chunks[c].kernels) {
      const kernel::Kernel& k = plan.kernels[static_cast<size_t>(step.kernels[i])];
      const KernelSchedule& s = fns[i].schedule;
      std::vector<std::string> args;
      for (size_t b = 0; b < k.buffers.size(); ++b) args.push_back(params.use(step.kernelBuffers[i][b], k.buffers[b].output));
      if (s.scratchBytes > 0) {
        args.push_back(str("scratch + ", chunkScratch));
        chunkScratch += (s.scratchBytes + 15) / 16 * 16;
      }
      int64_t end = firstBlock + s.blocks;
      args.push_back(str("b - ", firstBlock));
      args.push_back(std::to_string(s.blocks));
      calls.push_back(str("if (b < ", end, ") { ", fns[i].name, "(", join(args), "); return; }"));
      firstBlock = end;
      launch.sharedBytes = std::max<uint32_t>(launch.sharedBytes, static_cast<uint32_t>(s.smemBytes));
      what.push_back("@" + k.name);
    }
    launch.grid = static_cast<uint32_t>(firstBlock);
    launch.args = params.buffers();
    std::string decls = params.declarations();
    if (chunkScratch > 0) {
      decls += decls.empty() ? "unsigned char* scratch" : ", unsigned char* scratch";
      launch.scratch = static_cast<int64_t>(scratchOffset);
      scratchOffset += chunkScratch;
    }
    launch.what = join(what);
    entry.open("extern \"C\" __global__ void __launch_bounds__(", opts.kernel.threads, ") ", launch.entry, "(", decls,
               ")");
    entry.line("const int b = (int)blockIdx.x;");
    for (const std::string& call : calls) entry.line(call);
    entry.close();
    body += entry.text();
    out.launches.push_back(std::move(launch));
  }
  out.scratchBytes = scratchOffset;
  out.source = unitHeader(step.name, str(fns.size(), " kernel(s) in ", chunks.size(), " launch(es)"), false) + "\n" + body;
  out.note = str(fns.size(), " kernel(s), ", chunks.size(), " launch(es)");
  return out;
}

}  // namespace kfuse::cuda
