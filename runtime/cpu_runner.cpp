#include "runtime/cpu_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>

#include "exec/kernel_eval.h"
#include "runtime/blas.h"
#include "runtime/cpu_conv.h"
#include "exec/packed_gemm.h"
#include "ir/op_registry.h"
#include "ir/support/strings.h"

namespace kfuse {

namespace {
// Step times (CpuRunnerOptions::profile): monotonic, unlike the system clock.
using Clock = std::chrono::steady_clock;
}  // namespace

// The storage of one run: a pointer per buffer, into the runner's regions.
struct CpuRunner::Frame {
  std::vector<std::byte*> ptr;
};

CpuRunner::CpuRunner(std::shared_ptr<const Plan> plan, CpuFunctions code, CpuRunnerOptions opts)
    : plan_(std::move(plan)), kernels_(std::move(code.kernels)), steps_(std::move(code.steps)), opts_(opts) {
  kernels_.resize(plan_->kernels.size(), nullptr);
  steps_.resize(plan_->steps.size(), nullptr);
  packed_.resize(plan_->steps.size());
  packable_.assign(plan_->steps.size(), false);
  epilogueInside_.assign(plan_->steps.size(), false);
  for (size_t s = 0; s < plan_->steps.size(); ++s) {
    if (!steps_[s] || plan_->steps[s].kind() != StepKind::Gemm) continue;
    packable_[s] = packedGemmFits(*plan_, s);
    epilogueInside_[s] = packable_[s] && static_cast<bool>(packedEpilogue(*plan_, s));
  }
  const Plan& p = *plan_;
  uploaded_.resize(p.buffers.size());
  writtenInPlace_.assign(p.buffers.size(), false);
  for (size_t i = 0; i < p.buffers.size(); ++i)
    if (p.buffers[i].inPlace) writtenInPlace_[static_cast<size_t>(p.storageOf(static_cast<int>(i)))] = true;
  residentAhead_.assign(p.buffers.size(), false);
  for (const auto& [param, value] : p.updates) {
    int found = -1;
    for (size_t i = 0; i < p.buffers.size(); ++i)
      if (p.buffers[i].kind == BufferKind::Param && p.buffers[i].param == param) found = static_cast<int>(i);
    paramBuffer_.push_back(found);
    keepable_ = keepable_ && found >= 0 && p.buffers[static_cast<size_t>(found)].type == p.buffers[static_cast<size_t>(value)].type;
  }
  lastWriter_.assign(p.buffers.size(), -1);
  for (size_t s = 0; s < p.steps.size(); ++s)
    for (int b : stepWrites(p, p.steps[s])) {
      int storage = p.storageOf(b);
      lastWriter_[static_cast<size_t>(storage)] = static_cast<int>(s);
      if (p.buffers[static_cast<size_t>(storage)].kind == BufferKind::Param && firstParamWrite_ < 0)
        firstParamWrite_ = static_cast<int>(s);
    }
  dying_.resize(p.steps.size());
  last_.resize(p.updates.size());
  spare_.resize(p.updates.size());
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const PlanBuffer& b = p.buffers[i];
    // Inputs' resident copies are refilled every run, so they may die too.
    bool mortal = b.kind == BufferKind::Temp || b.kind == BufferKind::Input;
    if (mortal && b.lastUse >= 0 && static_cast<size_t>(b.lastUse) < p.steps.size())
      dying_[static_cast<size_t>(b.lastUse)].push_back(static_cast<int>(i));
  }
}

CpuRunner::~CpuRunner() {
  std::free(arena_);
  std::free(resident_);
}

Status CpuRunner::allocate() {
  auto region = [&](uint64_t bytes, std::byte*& out) -> Status {
    if (bytes == 0) return Status::ok();
    out = static_cast<std::byte*>(std::aligned_alloc(kBufferAlignment, bytes));
    if (!out) return Error(str("out of memory allocating ", bytes, " bytes for plan @", plan_->function));
    bytesAllocated_ += bytes;
    return Status::ok();
  };
  KF_RETURN_IF_ERROR(region(plan_->arenaBytes, arena_));
  return region(plan_->residentBytes, resident_);
}

namespace {

// A Tensor holding a copy of a buffer (outputs, updates, the interpreter paths).
Tensor copyOut(const std::byte* p, const TensorType& t) { return Tensor::copyOf(t, p); }

void copyIn(std::byte* p, const Tensor& t) {
  if (t.byteSize() > 0) std::memcpy(p, t.data(), t.byteSize());
}

template <typename T>
void fill(std::byte* p, size_t bytes, T value) {
  for (size_t i = 0; i + sizeof(T) <= bytes; i += sizeof(T)) std::memcpy(p + i, &value, sizeof(T));
}

}  // namespace

void CpuRunner::poison(int buffer, std::byte* p) const {
  const TensorType& t = plan_->buffers[static_cast<size_t>(buffer)].type;
  size_t bytes = t.byteSize();
  switch (t.dtype) {
    case DType::F32: fill(p, bytes, std::numeric_limits<float>::quiet_NaN()); break;
    case DType::F64: fill(p, bytes, std::numeric_limits<double>::quiet_NaN()); break;
    case DType::F16: fill(p, bytes, uint16_t{0x7E00}); break;
    case DType::BF16: fill(p, bytes, uint16_t{0x7FC0}); break;
    default: std::memset(p, 0xAB, bytes); break;
  }
}

bool CpuRunner::canGuard(int o) const {
  const Plan& p = *plan_;
  if (o < 0 || static_cast<size_t>(o) >= p.outputs.size()) return false;
  const PlanBuffer& b = p.buffers[static_cast<size_t>(p.outputs[static_cast<size_t>(o)])];
  if (b.type.dtype != DType::F32 && b.type.dtype != DType::F64) return false;
  int written = lastWriter_[static_cast<size_t>(p.storageOf(p.outputs[static_cast<size_t>(o)]))];
  return firstParamWrite_ < 0 || written < firstParamWrite_;
}

namespace {
bool allFinite(const std::byte* p, const TensorType& t) {
  for (int64_t i = 0; i < t.numElements(); ++i) {
    double v = t.dtype == DType::F32 ? static_cast<double>(reinterpret_cast<const float*>(p)[i])
                                     : reinterpret_cast<const double*>(p)[i];
    if (!std::isfinite(v)) return false;
  }
  return true;
}
}  // namespace

Expected<InterpreterResult> CpuRunner::runTrainingStep(const Module& m, const std::vector<Tensor>& args, int guard,
                                                       bool& kept) {
  kept = canKeepState() && (guard < 0 || canGuard(guard));
  if (!kept) return run(m, args);
  return run(m, args, RunOptions{.keepState = true, .finiteOutput = guard});
}

void CpuRunner::syncState(Module& m) {
  const Plan& p = *plan_;
  for (size_t u = 0; u < p.updates.size(); ++u) {
    int pb = paramBuffer_[u];
    if (pb < 0 || !residentAhead_[static_cast<size_t>(pb)]) continue;
    const PlanBuffer& b = p.buffers[static_cast<size_t>(pb)];
    auto value = std::make_shared<const Tensor>(copyOut(resident_ + b.offset, b.type));
    m.setParamData(p.updates[u].first, value);
    uploaded_[static_cast<size_t>(pb)] = value;
    residentAhead_[static_cast<size_t>(pb)] = false;
  }
}

Expected<InterpreterResult> CpuRunner::run(const Module& m, const std::vector<Tensor>& args, const RunOptions& ro) {
  if (ro.keepState && !keepable_) return Error(str("plan @", plan_->function, " cannot keep its state on the device"));
  if (ro.finiteOutput >= 0 && !canGuard(ro.finiteOutput))
    return Error(str("output ", ro.finiteOutput, " of plan @", plan_->function, " is written after a parameter"));
  const Plan& plan = *plan_;
  if (args.size() != plan.inputs.size())
    return Error(str("plan @", plan.function, " takes ", plan.inputs.size(), " inputs, got ", args.size()));
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const PlanBuffer& b = plan.buffers[i];
    if (b.kind == BufferKind::Input) {
      const Tensor& t = args[b.input];
      if (t.dtype() != b.type.dtype || t.shape() != b.type.shape)
        return Error(str("input ", b.name, " must be ", formatType(b.type), ", got ", formatType(t.type())));
    } else if (b.kind == BufferKind::Param) {
      const Param* p = m.findParam(b.param);
      if (!p || !p->data) return Error(str("parameter @", b.param, " has no data"));
      if (p->data->byteSize() != b.type.byteSize())
        return Error(str("parameter @", b.param, " holds ", formatType(p->data->type()), ", the plan expects ",
                         formatType(b.type)));
    }
    if (b.kind != BufferKind::Alias && b.offset < 0)
      return Error(str("buffer ", b.name, " of plan @", plan.function, " has no offset (the plan was not planned)"));
  }
  if (bytesAllocated_ == 0 && plan.deviceBytes() > 0) KF_RETURN_IF_ERROR(allocate());
  Frame f;
  f.ptr.assign(plan.buffers.size(), nullptr);
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const PlanBuffer& b = plan.buffers[i];
    if (b.kind == BufferKind::Alias) continue;
    std::byte* base = b.kind == BufferKind::Temp ? arena_ : resident_;
    f.ptr[i] = base + b.offset;
    switch (b.kind) {
      case BufferKind::Input: copyIn(f.ptr[i], args[b.input]); break;
      case BufferKind::Param: {
        const std::shared_ptr<const Tensor>& data = m.findParam(b.param)->data;
        if (!residentAhead_[i] && uploaded_[i] != data) {
          copyIn(f.ptr[i], *data);
          uploaded_[i] = data;
        }
        break;
      }
      case BufferKind::Constant:
        if (!constantsCopied_) copyIn(f.ptr[i], *b.constant);
        break;
      case BufferKind::Temp:
      case BufferKind::Alias: break;
    }
  }
  constantsCopied_ = true;
  for (size_t i = 0; i < plan.buffers.size(); ++i)
    if (plan.buffers[i].kind == BufferKind::Alias) f.ptr[i] = f.ptr[static_cast<size_t>(plan.storageOf(static_cast<int>(i)))];
  if (opts_.poison && arena_) std::memset(arena_, 0xFF, plan.arenaBytes);
  // The guard: before the first launch that writes a parameter (or, when
  // none does, before a kept run copies its updates into them).
  auto guardFails = [&] {
    if (ro.finiteOutput < 0) return false;
    int o = plan.outputs[static_cast<size_t>(ro.finiteOutput)];
    return !allFinite(f.ptr[static_cast<size_t>(o)], plan.buffers[static_cast<size_t>(o)].type);
  };
  auto outputsOnly = [&] {
    InterpreterResult stopped;  // nothing written to a parameter yet
    for (int out : plan.outputs)
      stopped.outputs.push_back(copyOut(f.ptr[static_cast<size_t>(out)], plan.buffers[static_cast<size_t>(out)].type));
    return stopped;
  };
  if (opts_.profile) runTimes_.assign(plan.steps.size(), 0.0);
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& s = plan.steps[i];
    if (static_cast<int>(i) == firstParamWrite_ && guardFails()) return outputsOnly();
    // The step alone: poisoning after it is a debug cost, not the step's.
    Clock::time_point start = opts_.profile ? Clock::now() : Clock::time_point{};
    if (Status st = runStep(i, f); !st) return st.error().context(str("step ", s.name));
    if (opts_.profile) runTimes_[i] = std::chrono::duration<double>(Clock::now() - start).count();
    ++launches_;
    if (opts_.poison)
      for (int b : dying_[i]) poison(b, f.ptr[static_cast<size_t>(b)]);
  }
  if (opts_.profile) times_.add(runTimes_);
  if (firstParamWrite_ < 0 && guardFails()) return outputsOnly();
  InterpreterResult r = outputsOnly();
  // Parameter storage the run overwrote holds the new value of the update
  // written there, or nothing the module has.
  for (size_t i = 0; i < plan.buffers.size(); ++i)
    if (writtenInPlace_[i]) uploaded_[i] = nullptr;
  if (ro.keepState) {
    // Each parameter's storage gets its new value (written in place, or
    // copied from where the plan computed it) and is now ahead of the module.
    for (size_t u = 0; u < plan.updates.size(); ++u) {
      auto pb = static_cast<size_t>(paramBuffer_[u]);
      int value = plan.updates[u].second;
      if (static_cast<size_t>(plan.storageOf(value)) != pb)
        std::memcpy(f.ptr[pb], f.ptr[static_cast<size_t>(value)], plan.buffers[pb].type.byteSize());
      residentAhead_[pb] = true;
      uploaded_[pb] = nullptr;
    }
    return r;
  }
  for (size_t u = 0; u < plan.updates.size(); ++u) {
    if (paramBuffer_[u] >= 0) residentAhead_[static_cast<size_t>(paramBuffer_[u])] = false;
    const auto& [param, b] = plan.updates[u];
    std::shared_ptr<Tensor> value = updateTensor(u, f.ptr[static_cast<size_t>(b)], plan.buffers[static_cast<size_t>(b)].type);
    int storage = plan.storageOf(b);
    if (plan.buffers[static_cast<size_t>(storage)].kind == BufferKind::Param) uploaded_[static_cast<size_t>(storage)] = value;
    r.updates.emplace(param, std::move(value));
  }
  return r;
}

std::shared_ptr<Tensor> CpuRunner::updateTensor(size_t u, const std::byte* p, const TensorType& t) {
  // Two steps ago's value is free again once the caller has applied the
  // step in between (only this runner holds it): refilling it skips an
  // allocation and the page faults of fresh memory, per parameter per step.
  std::shared_ptr<Tensor> value = std::move(spare_[u]);
  if (value && value.use_count() == 1 && value->type() == t) {
    if (t.byteSize() > 0) std::memcpy(value->data(), p, t.byteSize());
  } else {
    value = std::make_shared<Tensor>(copyOut(p, t));
  }
  spare_[u] = std::move(last_[u]);
  last_[u] = value;
  return value;
}

Status CpuRunner::runStep(size_t index, Frame& f) {
  const Step& s = plan_->steps[index];
  switch (s.kind()) {
    case StepKind::Kernels:
      for (size_t k = 0; k < s.kernels.size(); ++k) KF_RETURN_IF_ERROR(runKernel(s.kernels[k], s.kernelBuffers[k], f));
      return Status::ok();
    case StepKind::Gemm:
    case StepKind::Conv:
      KF_RETURN_IF_ERROR(s.kind() == StepKind::Gemm ? runGemm(index, f) : runConv(s.conv(), steps_[index], f));
      if (!s.kernels.empty() && !epilogueInside_[index]) return runKernel(s.kernels[0], s.kernelBuffers[0], f);
      return Status::ok();
    case StepKind::Reference: return runReference(s, f);
  }
  return Status::ok();
}

Status CpuRunner::runKernel(int kernel, const std::vector<int>& buffers, Frame& f) {
  const kernel::Kernel& k = plan_->kernels[static_cast<size_t>(kernel)];
  if (KernelFn fn = kernels_[static_cast<size_t>(kernel)]) {
    std::vector<void*> ptrs;
    for (int b : buffers) ptrs.push_back(f.ptr[static_cast<size_t>(b)]);
    fn(ptrs.data());
    return Status::ok();
  }
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < buffers.size(); ++i) tensors.push_back(copyOut(f.ptr[static_cast<size_t>(buffers[i])], k.buffers[i].type));
  std::vector<Tensor*> ptrs;
  for (Tensor& t : tensors) ptrs.push_back(&t);
  KF_RETURN_IF_ERROR(kernel::evaluateKernel(k, ptrs));
  for (size_t i = 0; i < buffers.size(); ++i)
    if (k.buffers[i].output) copyIn(f.ptr[static_cast<size_t>(buffers[i])], tensors[i]);
  return Status::ok();
}

namespace {

using Pointers = std::vector<std::byte*>;

void gemm(const Blas& blas, const GemmSpec& g, DType dt, const Pointers& ptr) {
  int64_t batches = numElements(g.batch);
  std::vector<int64_t> idx(g.batch.size(), 0);
  // BLAS rejects leading dimensions below 1, even for empty matrices.
  auto ld = [](int64_t d) { return static_cast<int>(std::max<int64_t>(d, 1)); };
  int lda = ld(g.transA ? g.m : g.k), ldb = ld(g.transB ? g.k : g.n), ldc = ld(g.n);
  auto ta = g.transA ? CblasTrans : CblasNoTrans, tb = g.transB ? CblasTrans : CblasNoTrans;
  auto m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  if (m == 0 || n == 0) return;
  for (int64_t bi = 0; bi < batches; ++bi) {
    int64_t ao = 0, bo = 0, co = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      ao += idx[d] * g.aBatchStrides[d];
      bo += idx[d] * g.bBatchStrides[d];
      co += idx[d] * g.cBatchStrides[d];
    }
    if (dt == DType::F32) {
      auto* a = reinterpret_cast<const float*>(ptr[static_cast<size_t>(g.a)]) + ao;
      auto* b = reinterpret_cast<const float*>(ptr[static_cast<size_t>(g.b)]) + bo;
      auto* c = reinterpret_cast<float*>(ptr[static_cast<size_t>(g.c)]) + co;
      blas.sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
    } else {
      auto* a = reinterpret_cast<const double*>(ptr[static_cast<size_t>(g.a)]) + ao;
      auto* b = reinterpret_cast<const double*>(ptr[static_cast<size_t>(g.b)]) + bo;
      auto* c = reinterpret_cast<double*>(ptr[static_cast<size_t>(g.c)]) + co;
      blas.dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
    }
    for (int64_t d = static_cast<int64_t>(idx.size()) - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < g.batch[static_cast<size_t>(d)]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
}

bool isHalf(DType dt) { return dt == DType::F16 || dt == DType::BF16; }

// Runs `body` on f32 copies of half-precision buffers `inputs` and `output`
// and rounds the output back once: BLAS has no half GEMM, and widening is
// what PyTorch's CPU half matmul and convolution do too (f32 accumulation).
template <typename Body>
void widenedToF32(const Plan& plan, const Pointers& ptr, const std::vector<int>& inputs, int output, Body body) {
  Pointers wide = ptr;
  std::vector<std::vector<float>> storage;
  auto widen = [&](int b, bool load) {
    const TensorType& t = plan.buffers[static_cast<size_t>(b)].type;
    auto& v = storage.emplace_back(static_cast<size_t>(t.numElements()));
    const auto* src = reinterpret_cast<const uint16_t*>(ptr[static_cast<size_t>(b)]);
    if (load)
      for (size_t i = 0; i < v.size(); ++i) v[i] = t.dtype == DType::F16 ? halfToFloat(src[i]) : bfloat16ToFloat(src[i]);
    wide[static_cast<size_t>(b)] = reinterpret_cast<std::byte*>(v.data());
  };
  for (int b : inputs)
    if (b >= 0) widen(b, true);
  widen(output, false);
  body(wide);
  DType dt = plan.buffers[static_cast<size_t>(output)].type.dtype;
  const std::vector<float>& out = storage.back();
  auto* dst = reinterpret_cast<uint16_t*>(ptr[static_cast<size_t>(output)]);
  for (size_t i = 0; i < out.size(); ++i) dst[i] = dt == DType::F16 ? floatToHalf(out[i]) : floatToBFloat16(out[i]);
}

}  // namespace

Status CpuRunner::runGemm(size_t index, Frame& f) {
  if (KernelFn fn = steps_[index]) return runPackedGemm(index, fn, f);
  const GemmSpec& g = plan_->steps[index].gemm();
  KF_ASSIGN_OR_RETURN(const Blas* blas, openBlas());
  DType dt = plan_->buffers[static_cast<size_t>(g.c)].type.dtype;
  if (isHalf(dt)) {
    widenedToF32(*plan_, f.ptr, {g.a, g.b}, g.c, [&](const Pointers& wide) { gemm(*blas, g, DType::F32, wide); });
    return Status::ok();
  }
  if (dt != DType::F32 && dt != DType::F64) return Error(str("a GEMM of ", dtypeName(dt), " has no CPU implementation"));
  gemm(*blas, g, dt, f.ptr);
  return Status::ok();
}

// B is packed on the first run and again whenever the resident copy it came
// from holds another tensor (a new upload of the parameter).
Status CpuRunner::runPackedGemm(size_t index, KernelFn fn, Frame& f) {
  if (!packable_[index])
    return Error("a packed GEMM was compiled for a GEMM whose B is not constant while the plan runs");
  const GemmSpec& g = plan_->steps[index].gemm();
  const PlanBuffer& b = plan_->buffers[static_cast<size_t>(plan_->storageOf(g.b))];
  const std::shared_ptr<const Tensor>& source =
      b.kind == BufferKind::Constant ? b.constant : uploaded_[static_cast<size_t>(plan_->storageOf(g.b))];
  PackedB& p = packed_[index];
  if (!p.data || !source || p.source != source) {
    if (!p.data) {
      auto bytes = static_cast<uint64_t>(packedBElements(g)) * sizeof(float);
      p.data.reset(static_cast<float*>(std::aligned_alloc(kBufferAlignment, (bytes + kBufferAlignment - 1) /
                                                                              kBufferAlignment * kBufferAlignment)));
      if (!p.data) return Error(str("out of memory allocating ", bytes, " bytes for a packed GEMM operand"));
      bytesAllocated_ += bytes;
    }
    packB(g, reinterpret_cast<const float*>(f.ptr[static_cast<size_t>(g.b)]), p.data.get());
    p.source = source;
  }
  std::vector<void*> args = {f.ptr[static_cast<size_t>(g.a)], p.data.get(), f.ptr[static_cast<size_t>(g.c)]};
  if (epilogueInside_[index])
    for (int buffer : plan_->steps[index].kernelBuffers[0]) args.push_back(f.ptr[static_cast<size_t>(buffer)]);
  fn(args.data());
  return Status::ok();
}

Status CpuRunner::runConv(const ConvSpec& c, KernelFn direct, Frame& f) {
  DType dt = plan_->buffers[static_cast<size_t>(c.y)].type.dtype;
  if (direct && dt != DType::F32 && !isHalf(dt))
    return Error(str("a direct convolution was compiled for a convolution of ", dtypeName(dt), " (f32 only)"));
  const Blas* blas = nullptr;
  if (!direct) {
    if (c.workspace < 0)
      return Error("the plan gives this convolution no im2col workspace and no direct convolution was compiled for it");
    KF_ASSIGN_OR_RETURN(blas, openBlas());
  }
  auto conv = [&](DType as, const Pointers& ptr) {
    auto at = [&](int b) { return b < 0 ? nullptr : ptr[static_cast<size_t>(b)]; };
    if (direct) {
      void* args[] = {at(c.x), at(c.w), at(c.bias), at(c.y)};
      return direct(args);
    }
    runConv2d(*blas, c, as, at(c.x), at(c.w), at(c.bias), at(c.y), at(c.workspace));
  };
  if (isHalf(dt)) {
    widenedToF32(*plan_, f.ptr, {c.x, c.w, c.bias}, c.y, [&](const Pointers& wide) { conv(DType::F32, wide); });
    return Status::ok();
  }
  if (dt != DType::F32 && dt != DType::F64)
    return Error(str("a convolution of ", dtypeName(dt), " has no CPU implementation"));
  conv(dt, f.ptr);
  return Status::ok();
}

Status CpuRunner::runReference(const Step& s, Frame& f) {
  std::vector<Tensor> inputs;
  std::vector<TensorType> inTypes, outTypes;
  for (int b : s.reference().inputs) {
    inputs.push_back(copyOut(f.ptr[static_cast<size_t>(b)], plan_->buffers[static_cast<size_t>(b)].type));
    inTypes.push_back(inputs.back().type());
  }
  for (int b : s.reference().outputs) outTypes.push_back(plan_->buffers[static_cast<size_t>(b)].type);
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs) ptrs.push_back(&t);
  OpCall call{*s.reference().op, s.reference().attrs, inTypes};
  KF_ASSIGN_OR_RETURN(std::vector<Tensor> outs, s.reference().op->reference(call, ptrs, outTypes));
  for (size_t i = 0; i < outs.size(); ++i) copyIn(f.ptr[static_cast<size_t>(s.reference().outputs[i])], outs[i]);
  return Status::ok();
}

}  // namespace kfuse
