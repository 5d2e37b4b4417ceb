#include "codegen/plan/memory_report.h"

#include <algorithm>
#include <set>

#include "codegen/plan/buffer_plan.h"
#include "ir/support/strings.h"

namespace kfuse {
namespace {

// The step writing each buffer (-1: none), from what each step writes.
std::vector<int> writers(const Plan& p) {
  std::vector<int> w(p.buffers.size(), -1);
  auto wrote = [&](int b, size_t s) {
    if (b >= 0 && w[static_cast<size_t>(b)] < 0) w[static_cast<size_t>(b)] = static_cast<int>(s);
  };
  for (size_t s = 0; s < p.steps.size(); ++s)
    for (int b : stepWrites(p, p.steps[s])) wrote(b, s);
  return w;
}

}  // namespace

MemoryReport memoryReport(const Plan& p, const std::set<std::string>& trainable) {
  MemoryReport r;
  std::vector<int> writer = writers(p);
  int end = static_cast<int>(p.steps.size());
  auto phaseAt = [&](int s) { return s >= 0 && s < end ? p.steps[static_cast<size_t>(s)].phase : Phase::Forward; };
  // Parameters updated after the forward (by the optimizer, whose updates
  // may fuse into backward launches; running statistics update in the
  // forward).
  std::set<std::string> optimized;
  for (const auto& [param, b] : p.updates) {
    int v = b;
    while (writer[static_cast<size_t>(v)] < 0 && p.buffers[static_cast<size_t>(v)].kind == BufferKind::Alias &&
           !p.buffers[static_cast<size_t>(v)].inPlace)
      v = p.buffers[static_cast<size_t>(v)].aliasOf;
    int s = writer[static_cast<size_t>(v)];
    if (s < 0) continue;
    if (phaseAt(s) != Phase::Forward) optimized.insert(param);
  }
  // Storage holding a gradient, through any buffer that aliases it (an
  // in-place rewrite may have put the gradient over a dying activation).
  std::vector<bool> gradient(p.buffers.size(), false);
  for (size_t i = 0; i < p.buffers.size(); ++i)
    if (p.buffers[i].gradient) gradient[static_cast<size_t>(p.storageOf(static_cast<int>(i)))] = true;
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const PlanBuffer& b = p.buffers[i];
    uint64_t bytes = b.type.byteSize();
    switch (b.kind) {
      case BufferKind::Param:
        if (trainable.count(b.param)) r.parameters += bytes;
        else if (optimized.count(b.param)) r.optimizerState += bytes;
        else r.otherBuffers += bytes;
        break;
      case BufferKind::Constant: r.constants += bytes; break;
      case BufferKind::Input: r.inputs += bytes; break;
      case BufferKind::Temp: {
        bool lastReadBefore = b.lastUse >= 0 && b.lastUse < end;
        Phase born = phaseAt(b.firstUse), dies = phaseAt(b.lastUse);
        if (b.workspace) r.workspace += bytes;
        else if (gradient[i]) r.gradients += bytes;
        else if (born == Phase::Forward && lastReadBefore && (dies == Phase::Loss || dies == Phase::Backward))
          r.savedActivations += bytes;
        else r.temporaries += bytes;
        break;
      }
      case BufferKind::Alias:
        if (b.inPlace) {
          const PlanBuffer& over = p.buffers[static_cast<size_t>(b.aliasOf)];
          int s = writer[i];
          r.inPlace.push_back(str("b", i, " ", b.name, " over b", b.aliasOf, " ", over.name,
                                  over.kind == BufferKind::Param ? str(" (@", over.param, ")") : std::string(),
                                  s >= 0 ? str(" at step ", s, " ", p.steps[static_cast<size_t>(s)].name) : std::string()));
        }
        break;
    }
    if (b.kind != BufferKind::Temp && b.kind != BufferKind::Alias) r.predictedPeak += alignedBytes(bytes);
  }
  ArenaBounds bounds = arenaBounds(p);
  r.arena = p.arenaBytes;
  r.noReuse = bounds.noReuse;
  r.lowerBound = bounds.lowerBound;
  r.predictedPeak += r.arena;
  return r;
}

uint64_t exchangeStagingBytes(const Plan& p) {
  uint64_t f32 = 0, f64 = 0, shards = 0;
  for (const Step& s : p.steps) {
    if (s.kind() != StepKind::Collective || s.collective().phase != CollectivePhase::Start) continue;
    const CollectiveSpec& c = s.collective();
    // ZeRO-1: the whole tensor, padded, in which the ranks' shards meet.
    if (c.op == CollectiveOp::ReduceScatter || c.op == CollectiveOp::AllGather) {
      const TensorType& part = p.buffers[static_cast<size_t>(c.op == CollectiveOp::AllGather ? c.inputs[0] : c.outputs[0])].type;
      shards = std::max<uint64_t>(shards, part.byteSize() * static_cast<uint64_t>(c.ranks));
    }
    if (c.op != CollectiveOp::AllReduce) continue;
    uint64_t bytes[2] = {0, 0};
    int count[2] = {0, 0};
    for (int b : s.collective().outputs) {
      const TensorType& t = p.buffers[static_cast<size_t>(b)].type;
      int k = t.dtype == DType::F64 ? 1 : 0;
      bytes[k] += t.byteSize();
      ++count[k];
    }
    if (count[0] > 1) f32 = std::max(f32, bytes[0]);
    if (count[1] > 1) f64 = std::max(f64, bytes[1]);
  }
  return std::max(f32 + f64, shards);
}

void addDeviceBytes(MemoryReport& r, const DeviceBytes& d) {
  r.deviceScratch = d.scratch;
  r.libraryWorkspace = d.libraryWorkspace;
  r.packedWeights = d.packedWeights;
  r.threadScratch = d.convScratch;
  r.exchangeStaging = d.exchangeStaging;
  r.predictedPeak = d.total;
}

}  // namespace kfuse
