#include "runtime/cpu_runner.h"

#include <cassert>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>

#include "exec/kernel_eval.h"
#include "runtime/blas.h"
#include "runtime/cpu_conv.h"
#include "exec/conv_epilogue.h"
#include "exec/packed_filter.h"
#include "exec/packed_gemm.h"
#include "exec/parallel.h"
#include "runtime/threads.h"
#include "ir/op_registry.h"
#include "ir/support/strings.h"

namespace kfuse {

namespace {

// A Tensor holding a copy of a buffer (the interpreter paths).
Tensor copyOut(const std::byte* p, const TensorType& t) { return Tensor::copyOf(t, p); }

void copyIn(std::byte* p, const Tensor& t) {
  if (t.byteSize() > 0) std::memcpy(p, t.data(), t.byteSize());
}

template <typename T>
void fill(std::byte* p, size_t bytes, T value) {
  for (size_t i = 0; i + sizeof(T) <= bytes; i += sizeof(T)) std::memcpy(p + i, &value, sizeof(T));
}

// Outputs a run can write straight into the tensor it returns: temporary
// storage that holds this one output only (not a second output, not a
// state update the run copies or downloads after its steps), the same size
// as the output.
std::vector<int> handedOutputs(const Plan& p) {
  std::map<int, int> outputsOn;
  for (int o : p.outputs) ++outputsOn[p.storageOf(o)];
  for (const auto& [param, value] : p.updates) outputsOn[p.storageOf(value)] += 2;
  std::vector<int> handed;
  for (int o : p.outputs) {
    const int s = p.storageOf(o);
    const PlanBuffer& storage = p.buffers[static_cast<size_t>(s)];
    if (storage.kind == BufferKind::Temp && !storage.workspace && outputsOn[s] == 1 &&
        storage.type.byteSize() == p.buffers[static_cast<size_t>(o)].type.byteSize())
      handed.push_back(o);
  }
  return handed;
}

}  // namespace

CpuRunner::CpuRunner(std::shared_ptr<const Plan> plan, CpuFunctions code, CpuRunnerOptions opts)
    : PlanRunner(std::move(plan), opts), kernels_(std::move(code.kernels)), steps_(std::move(code.steps)),
      threads_(opts.threads > 0 ? opts.threads : availableCpus()) {
  kernels_.resize(plan_->kernels.size(), nullptr);
  for (const kernel::Kernel& k : plan_->kernels) kernelChunks_.push_back(chunksOf(kernelWork(k), threads_));
  steps_.resize(plan_->steps.size(), nullptr);
  packed_.resize(plan_->steps.size());
  packable_.assign(plan_->steps.size(), false);
  epilogueInside_.assign(plan_->steps.size(), false);
  for (size_t s = 0; s < plan_->steps.size(); ++s) {
    if (!steps_[s]) continue;
    if (plan_->steps[s].kind() == StepKind::Conv) {
      packable_[s] = packedFilterFits(*plan_, s);
      epilogueInside_[s] = static_cast<bool>(convEpilogue(*plan_, s));
    }
    if (plan_->steps[s].kind() != StepKind::Gemm) continue;
    packable_[s] = packedGemmFits(*plan_, s);
    epilogueInside_[s] = packable_[s] && static_cast<bool>(packedEpilogue(*plan_, s));
  }
  for (int o : handedOutputs(*plan_)) {
    HandedOutput& h = handed_.emplace_back();
    h.output = o;
    for (size_t b = 0; b < plan_->buffers.size(); ++b)
      if (plan_->storageOf(static_cast<int>(b)) == plan_->storageOf(o)) h.buffers.push_back(static_cast<int>(b));
  }
}

CpuRunner::~CpuRunner() {
  for (auto& [bucket, exchange] : inFlight_) exchange.wait();  // they write into the arena
  std::free(arena_);
  std::free(resident_);
}

Status CpuRunner::allocate() {
  for (const PlanBuffer& b : plan_->buffers)
    if (b.kind != BufferKind::Alias && b.offset < 0)
      return Error(str("buffer ", b.name, " of plan @", plan_->function, " has no offset (the plan was not planned)"));
  auto region = [&](uint64_t bytes, std::byte*& out) -> Status {
    if (bytes == 0) return Status::ok();
    out = static_cast<std::byte*>(std::aligned_alloc(kBufferAlignment, bytes));
    if (!out) return Error(str("out of memory allocating ", bytes, " bytes for plan @", plan_->function));
    bytesAllocated_ += bytes;
    return Status::ok();
  };
  KF_RETURN_IF_ERROR(region(plan_->arenaBytes, arena_));
  for (uint64_t bytes : convScratchSlots(*plan_, threads_)) {
    std::byte* slot = nullptr;
    KF_RETURN_IF_ERROR(region(alignedBytes(bytes), slot));
    convScratch_.emplace_back(slot, std::free);
  }
  KF_RETURN_IF_ERROR(region(plan_->residentBytes, resident_));
  ptr_.assign(plan_->buffers.size(), nullptr);
  for (size_t i = 0; i < ptr_.size(); ++i) ptr_[i] = home(static_cast<int>(i));
  return Status::ok();
}

// Where the plan put buffer `buffer`: its storage's offset in its region.
std::byte* CpuRunner::home(int buffer) const {
  const PlanBuffer& b = plan_->buffers[static_cast<size_t>(plan_->storageOf(buffer))];
  return (b.kind == BufferKind::Temp ? arena_ : resident_) + b.offset;
}

// Each handed-over output gets a fresh tensor, its bytes unfilled: the
// steps write every one before the run returns it.
Status CpuRunner::beginRun() {
  for (HandedOutput& h : handed_) {
    h.tensor = Tensor::uninitialized(plan_->buffers[static_cast<size_t>(h.output)].type);
    for (int b : h.buffers) ptr_[static_cast<size_t>(b)] = h.tensor->data();
  }
  return Status::ok();
}

Status CpuRunner::upload(int buffer, const Tensor& t) {
  copyIn(at(buffer), t);
  return Status::ok();
}

Status CpuRunner::download(int buffer, Tensor& into) {
  if (into.byteSize() > 0) std::memcpy(into.data(), at(buffer), into.byteSize());
  return Status::ok();
}

Expected<Tensor> CpuRunner::fetch(int buffer) {
  for (HandedOutput& h : handed_) {
    if (h.output != buffer || !h.tensor) continue;
    Tensor t = std::move(*h.tensor);
    h.tensor.reset();
    for (int b : h.buffers) ptr_[static_cast<size_t>(b)] = home(b);
    return t;
  }
  return Tensor::copyOf(plan_->buffers[static_cast<size_t>(buffer)].type, at(buffer));
}

Status CpuRunner::copyBuffer(int dst, int src) {
  std::memcpy(at(dst), at(src), plan_->buffers[static_cast<size_t>(dst)].type.byteSize());
  return Status::ok();
}

Status CpuRunner::poisonArena() {
  if (arena_) std::memset(arena_, 0xFF, plan_->arenaBytes);
  for (HandedOutput& h : handed_)
    if (h.tensor && h.tensor->byteSize() > 0) std::memset(h.tensor->data(), 0xFF, h.tensor->byteSize());
  return Status::ok();
}

Status CpuRunner::poisonBuffer(int buffer) {
  const TensorType& t = plan_->buffers[static_cast<size_t>(buffer)].type;
  std::byte* p = at(buffer);
  size_t bytes = t.byteSize();
  switch (t.dtype) {
    case DType::F32: fill(p, bytes, std::numeric_limits<float>::quiet_NaN()); break;
    case DType::F64: fill(p, bytes, std::numeric_limits<double>::quiet_NaN()); break;
    case DType::F16: fill(p, bytes, uint16_t{0x7E00}); break;
    case DType::BF16: fill(p, bytes, uint16_t{0x7FC0}); break;
    default: std::memset(p, 0xAB, bytes); break;
  }
  return Status::ok();
}

// The loss guard reads the output where it lies.
Expected<bool> CpuRunner::allFinite(int buffer) {
  const TensorType& t = plan_->buffers[static_cast<size_t>(buffer)].type;
  const std::byte* p = at(buffer);
  for (int64_t i = 0; i < t.numElements(); ++i) {
    double v = t.dtype == DType::F32 ? static_cast<double>(reinterpret_cast<const float*>(p)[i])
                                     : reinterpret_cast<const double*>(p)[i];
    if (!std::isfinite(v)) return false;
  }
  return true;
}

Status CpuRunner::runStep(size_t index) {
  const Step& s = plan_->steps[index];
  countLaunches(1);
  switch (s.kind()) {
    case StepKind::Kernels:
      for (size_t k = 0; k < s.kernels.size(); ++k) KF_RETURN_IF_ERROR(runKernel(s.kernels[k], s.kernelBuffers[k]));
      return Status::ok();
    case StepKind::Gemm:
    case StepKind::Conv:
      KF_RETURN_IF_ERROR(s.kind() == StepKind::Gemm ? runGemm(index) : runConv(index));
      if (!s.kernels.empty() && !epilogueInside_[index]) return runKernel(s.kernels[0], s.kernelBuffers[0]);
      return Status::ok();
    case StepKind::Reference: return runReference(s);
    case StepKind::Collective:
      if (s.collective().op == CollectiveOp::Shard && s.collective().phase == CollectivePhase::Wait)
        return Status::ok();  // done at its start
      return s.collective().phase == CollectivePhase::Start ? startCollective(s.collective())
                                                            : waitCollective(s.collective().bucket);
  }
  return Status::ok();
}

Status CpuRunner::runKernel(int kernel, const std::vector<int>& buffers) {
  const kernel::Kernel& k = plan_->kernels[static_cast<size_t>(kernel)];
  if (KernelFn fn = kernels_[static_cast<size_t>(kernel)]) {
    std::vector<void*> ptrs;
    for (int b : buffers) ptrs.push_back(at(b));
    runChunks(kernelChunks_[static_cast<size_t>(kernel)], [&](int64_t begin, int64_t end) { fn(ptrs.data(), begin, end); });
    return Status::ok();
  }
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < buffers.size(); ++i) tensors.push_back(copyOut(at(buffers[i]), k.buffers[i].type));
  std::vector<Tensor*> ptrs;
  for (Tensor& t : tensors) ptrs.push_back(&t);
  KF_RETURN_IF_ERROR(kernel::evaluateKernel(k, ptrs));
  for (size_t i = 0; i < buffers.size(); ++i)
    if (k.buffers[i].output) copyIn(at(buffers[i]), tensors[i]);
  return Status::ok();
}

namespace {

using Pointers = std::vector<std::byte*>;

// A GEMM step splits by matrices and, where they are few, by blocks of
// columns or rows (exec/parallel.h's blasGemmSplit), each unit one BLAS call on one
// thread (runtime/blas.h says why).
void gemm(const Blas& blas, int threads, const GemmSpec& g, DType dt, const Pointers& ptr) {
  // BLAS rejects leading dimensions below 1, even for empty matrices.
  auto ld = [](int64_t d) { return static_cast<int>(std::max<int64_t>(d, 1)); };
  int lda = ld(g.transA ? g.m : g.k), ldb = ld(g.transB ? g.k : g.n), ldc = ld(g.n);
  auto ta = g.transA ? CblasTrans : CblasNoTrans, tb = g.transB ? CblasTrans : CblasNoTrans;
  auto k = static_cast<int>(g.k);
  if (g.m == 0 || g.n == 0) return;
  // Matrix bi's offsets: its batch index, decomposed row-major.
  auto offsets = [&](int64_t bi) {
    int64_t ao = 0, bo = 0, co = 0;
    for (size_t d = g.batch.size(); d-- > 0;) {
      int64_t i = bi % g.batch[d];
      bi /= g.batch[d];
      ao += i * g.aBatchStrides[d];
      bo += i * g.bBatchStrides[d];
      co += i * g.cBatchStrides[d];
    }
    return std::array<int64_t, 3>{ao, bo, co};
  };
  // Unit u: matrix u / blocks, and of it (exec/parallel.h's blasGemmSplit)
  // either columns of C [j0, j0 + width), B's columns from j0 (its rows when
  // transposed), or rows of C [i0, i0 + m), A's rows from i0 (its columns
  // when transposed).
  const GemmSplit split = blasGemmSplit(g);
  auto one = [&](int64_t u) {
    auto [ao, bo, co] = offsets(u / split.blocks);
    const int64_t block = u % split.blocks;
    const int64_t j0 = split.rows ? 0 : block * split.columns, i0 = split.rows ? block * split.rows : 0;
    const int width = static_cast<int>(std::min<int64_t>(split.columns, g.n - j0));
    const int m = static_cast<int>(split.rows ? std::min<int64_t>(split.rows, g.m - i0) : g.m);
    bo += g.transB ? j0 * ldb : j0;
    ao += g.transA ? i0 : i0 * lda;
    co += j0 + i0 * ldc;
    if (dt == DType::F32) {
      auto* a = reinterpret_cast<const float*>(ptr[static_cast<size_t>(g.a)]) + ao;
      auto* b = reinterpret_cast<const float*>(ptr[static_cast<size_t>(g.b)]) + bo;
      auto* c = reinterpret_cast<float*>(ptr[static_cast<size_t>(g.c)]) + co;
      blas.sgemm(CblasRowMajor, ta, tb, m, width, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
    } else {
      auto* a = reinterpret_cast<const double*>(ptr[static_cast<size_t>(g.a)]) + ao;
      auto* b = reinterpret_cast<const double*>(ptr[static_cast<size_t>(g.b)]) + bo;
      auto* c = reinterpret_cast<double*>(ptr[static_cast<size_t>(g.c)]) + co;
      blas.dgemm(CblasRowMajor, ta, tb, m, width, k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
    }
  };
  const Work w = blasGemmWork(g);
  if (w.units == 1) return one(0);
  runChunks(chunksOf(w, threads), [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) one(u);
  });
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

Status CpuRunner::runGemm(size_t index) {
  if (KernelFn fn = steps_[index]) return runPackedGemm(index, fn);
  const GemmSpec& g = plan_->steps[index].gemm();
  KF_ASSIGN_OR_RETURN(const Blas* blas, openBlas());
  DType dt = plan_->buffers[static_cast<size_t>(g.c)].type.dtype;
  if (isHalf(dt)) {
    widenedToF32(*plan_, ptr_, {g.a, g.b}, g.c,
                 [&](const Pointers& wide) { gemm(*blas, threads_, g, DType::F32, wide); });
    return Status::ok();
  }
  if (dt != DType::F32 && dt != DType::F64) return Error(str("a GEMM of ", dtypeName(dt), " has no CPU implementation"));
  gemm(*blas, threads_, g, dt, ptr_);
  return Status::ok();
}

// The packed copy of step `index`'s constant operand `buffer`
// (`elements` floats, written by `pack` from the operand): packed on the
// first run and again whenever the resident copy it came from holds
// another tensor (a new upload of the parameter).
Expected<float*> CpuRunner::packedCopy(size_t index, int buffer, int64_t elements,
                                       const std::function<void(const float*, float*)>& pack) {
  const PlanBuffer& b = plan_->buffers[static_cast<size_t>(plan_->storageOf(buffer))];
  const std::shared_ptr<const Tensor>& source =
      b.kind == BufferKind::Constant ? b.constant : uploaded(plan_->storageOf(buffer));
  PackedB& p = packed_[index];
  if (!p.data || !source || p.source != source) {
    if (!p.data) {
      auto bytes = static_cast<uint64_t>(elements) * sizeof(float);
      p.data.reset(static_cast<float*>(std::aligned_alloc(kBufferAlignment, (bytes + kBufferAlignment - 1) /
                                                                              kBufferAlignment * kBufferAlignment)));
      if (!p.data) return Error(str("out of memory allocating ", bytes, " bytes for a packed operand"));
      bytesAllocated_ += bytes;
    }
    pack(reinterpret_cast<const float*>(at(buffer)), p.data.get());
    p.source = source;
  }
  return p.data.get();
}

Status CpuRunner::runPackedGemm(size_t index, KernelFn fn) {
  if (!packable_[index])
    return Error("a packed GEMM was compiled for a GEMM whose B is not constant while the plan runs");
  const GemmSpec& g = plan_->steps[index].gemm();
  KF_ASSIGN_OR_RETURN(float* packed, packedCopy(index, g.b, packedBElements(g),
                                                [&](const float* b, float* out) { packB(g, b, out); }));
  std::vector<void*> args = {at(g.a), packed, at(g.c)};
  if (epilogueInside_[index])
    for (int buffer : plan_->steps[index].kernelBuffers[0]) args.push_back(at(buffer));
  runChunks(chunksOf(packedGemmWork(g), threads_), [&](int64_t begin, int64_t end) { fn(args.data(), begin, end); });
  return Status::ok();
}

Status CpuRunner::runConv(size_t index) {
  const ConvSpec& c = plan_->steps[index].conv();
  KernelFn direct = steps_[index];
  DType dt = plan_->buffers[static_cast<size_t>(c.y)].type.dtype;
  if (direct && ((dt != DType::F32 && !isHalf(dt)) || c.direction != ConvDirection::Forward))
    return Error(str("a direct convolution was compiled for a ", convDirectionName(c.direction), " convolution of ",
                     dtypeName(dt), " (forward, f32 only)"));
  const Blas* blas = nullptr;
  if (!direct) {
    if (c.workspace < 0)
      return Error("the plan gives this convolution no im2col workspace and no direct convolution was compiled for it");
    KF_ASSIGN_OR_RETURN(blas, openBlas());
  }
  float* packed = nullptr;  // the filter packed (packedFilterFits: f32 only, so `ptr` below is ptr_)
  if (direct && packable_[index]) {
    KF_ASSIGN_OR_RETURN(packed, packedCopy(index, c.w, packedFilterElements(c),
                                           [&](const float* from, float* out) { packFilter(c, from, out); }));
  }
  auto conv = [&](DType as, const Pointers& ptr) {
    auto at = [&](int b) { return b < 0 ? nullptr : ptr[static_cast<size_t>(b)]; };
    if (direct) {
      std::vector<void*> args = {at(c.x), packed ? static_cast<void*>(packed) : at(c.w), at(c.bias), at(c.y)};
      if (epilogueInside_[index])  // f32 only (convEpilogue): `ptr` is ptr_
        for (int buffer : plan_->steps[index].kernelBuffers[0]) args.push_back(at(buffer));
      return runChunks(chunksOf(directConvWork(c, packable_[index]), threads_),
                       [&](int64_t begin, int64_t end) { direct(args.data(), begin, end); });
    }
    // The first range uses the plan's workspace, the others scratch of
    // their own, kept between runs.
    const ConvBuffers buffers{at(c.x), at(c.w), at(c.bias), at(c.y)};
    const auto chunks = chunksOf(im2colConvWork(c), threads_);
    assert(chunks.size() <= convScratch_.size() + 1 && "convScratchSlots counts every range");
    runChunks(chunks, [&](int64_t begin, int64_t end) {
      size_t i = 0;
      while (chunks[i].first != begin) ++i;
      std::byte* workspace = i == 0 ? at(c.workspace) : convScratch_[i - 1].get();
      runConv2d(*blas, c, as, buffers, workspace, plan_->buffers[static_cast<size_t>(c.workspace)].type.byteSize(), begin,
                end);
    });
  };
  auto [a, b] = c.operands();
  if (isHalf(dt)) {
    widenedToF32(*plan_, ptr_, {a, b, c.bias}, c.result(), [&](const Pointers& wide) { conv(DType::F32, wide); });
    return Status::ok();
  }
  if (dt != DType::F32 && dt != DType::F64)
    return Error(str("a convolution of ", dtypeName(dt), " has no CPU implementation"));
  conv(dt, ptr_);
  return Status::ok();
}

// The tensor a reference step reads for buffer `b` without copying it: a
// constant's own tensor, or the tensor last uploaded for a parameter, when
// nothing writes it while the plan runs and it has the buffer's type
// exactly; else null. (An embedding table was copied on every run to look
// up 128 of its rows: 39 of GPT-2's 160 ms.)
const Tensor* CpuRunner::unchangedTensor(int b) const {
  if (!readOnlyWhileRunning(*plan_, b)) return nullptr;
  const int storage = plan_->storageOf(b);
  const PlanBuffer& buffer = plan_->buffers[static_cast<size_t>(storage)];
  const Tensor* t = buffer.kind == BufferKind::Constant ? buffer.constant.get() : uploaded(storage).get();
  return t && t->type() == plan_->buffers[static_cast<size_t>(b)].type ? t : nullptr;
}

Status CpuRunner::runReference(const Step& s) {
  std::vector<Tensor> copies;
  copies.reserve(s.reference().inputs.size());
  std::vector<const Tensor*> ptrs;
  std::vector<TensorType> inTypes, outTypes;
  for (int b : s.reference().inputs) {
    const Tensor* t = unchangedTensor(b);
    if (!t) t = &copies.emplace_back(copyOut(at(b), plan_->buffers[static_cast<size_t>(b)].type));
    ptrs.push_back(t);
    inTypes.push_back(t->type());
  }
  for (int b : s.reference().outputs) outTypes.push_back(plan_->buffers[static_cast<size_t>(b)].type);
  OpCall call{*s.reference().op, s.reference().attrs, inTypes};
  KF_ASSIGN_OR_RETURN(std::vector<Tensor> outs, s.reference().op->reference(call, ptrs, outTypes));
  for (size_t i = 0; i < outs.size(); ++i) copyIn(at(s.reference().outputs[i]), outs[i]);
  return Status::ok();
}

// The bucket's values move into its outputs (unless computed there), and
// the exchange starts; the steps up to its wait run meanwhile.
Status CpuRunner::startCollective(const CollectiveSpec& c) {
  if (c.op != CollectiveOp::AllReduce) return startSharded(c);
  KF_RETURN_IF_ERROR(bucketIntoOutputs(c));
  std::vector<CommBuffer> buffers;
  for (int b : c.outputs) {
    const TensorType& t = plan_->buffers[static_cast<size_t>(b)].type;
    buffers.push_back({at(b), t.numElements(), t.dtype});
  }
  if (!opts_.communicator || opts_.communicator->size() == 1) return Status::ok();  // the mean over one rank
  return launchExchange(c.bucket, [comm = opts_.communicator, buffers = std::move(buffers)] {
    return comm->allReduceMean(buffers);
  });
}

// The exchange runs on a thread of its own once the one started before it
// is done, so that every rank issues them in the plan's order.
Status CpuRunner::launchExchange(int bucket, std::function<Status()> exchange) {
  if (inFlight_.count(bucket)) return Error(str("bucket ", bucket, " started twice"));
  std::shared_future<Status> before = lastExchange_;
  lastExchange_ = std::async(std::launch::async, [exchange = std::move(exchange), before] {
                    if (before.valid()) before.wait();
                    return exchange();
                  }).share();
  inFlight_.emplace(bucket, lastExchange_);
  return Status::ok();
}

// ZeRO-1 (ir/ops/collective.cpp): this rank's shard of the input (shard, at
// once; reduce_scatter, of the input's mean over the ranks), or the whole
// tensor from every rank's shard (all_gather). What the exchange reads is
// copied at the start, so the input may be overwritten before the wait.
Status CpuRunner::startSharded(const CollectiveSpec& c) {
  const std::shared_ptr<Communicator>& comm = opts_.communicator;
  const int size = comm ? comm->size() : 1, rank = comm ? comm->rank() : 0;
  if (size != c.ranks)
    return Error(str(collectiveOpName(c.op), " cuts tensors into ", c.ranks, " shards; this run has ", size,
                     size == 1 ? " rank" : " ranks"));
  const TensorType& in = plan_->buffers[static_cast<size_t>(c.inputs[0])].type;
  const TensorType& out = plan_->buffers[static_cast<size_t>(c.outputs[0])].type;
  const size_t elem = dtypeSize(in.dtype);
  std::byte* src = at(c.inputs[0]);
  std::byte* dst = at(c.outputs[0]);
  if (size == 1) {  // one shard, the whole tensor: a copy
    std::memcpy(dst, src, std::min(in.byteSize(), out.byteSize()));
    return Status::ok();
  }
  if (c.op == CollectiveOp::AllGather) {
    const auto shard = static_cast<size_t>(in.numElements()) * elem, whole = out.byteSize();
    return launchExchange(c.bucket, [comm, mine = std::vector<std::byte>(src, src + shard), dst, whole] {
      return comm->allGatherWhole(mine.data(), mine.size(), dst, whole);
    });
  }
  const auto shard = static_cast<size_t>(out.numElements()) * elem, whole = in.byteSize();
  const size_t first = std::min(whole, static_cast<size_t>(rank) * shard);
  if (c.op == CollectiveOp::Shard) {
    const size_t n = std::min(shard, whole - first);
    std::memcpy(dst, src + first, n);
    std::memset(dst + n, 0, shard - n);
    return Status::ok();
  }
  // reduce_scatter: the mean of the whole (zero-padded) tensor, of which
  // this rank keeps its shard. (An all-reduce moves twice what a
  // reduce-scatter must; Gloo's has no new-style reduce-scatter.)
  std::vector<std::byte> padded(shard * static_cast<size_t>(size));
  std::memcpy(padded.data(), src, whole);
  return launchExchange(c.bucket, [comm, padded = std::move(padded), dst, shard, mineAt = static_cast<size_t>(rank) * shard,
                                   dt = in.dtype, elements = out.numElements() * size]() mutable -> Status {
    CommBuffer b{padded.data(), elements, dt};
    KF_RETURN_IF_ERROR(comm->allReduceMean(std::span<const CommBuffer>(&b, 1)));
    std::memcpy(dst, padded.data() + mineAt, shard);
    return Status::ok();
  });
}

Status CpuRunner::waitCollective(int bucket) {
  auto it = inFlight_.find(bucket);
  if (it == inFlight_.end()) return Status::ok();
  Status s = it->second.get();
  inFlight_.erase(it);
  return s;
}

// A run the loss guard stopped leaves exchanges in flight: they finish
// before the next run reuses their buffers.
Status CpuRunner::finishRun() {
  Status first = Status::ok();
  for (auto& [bucket, exchange] : inFlight_)
    if (Status s = exchange.get(); !s && first) first = s;
  inFlight_.clear();
  return first;
}

}  // namespace kfuse
