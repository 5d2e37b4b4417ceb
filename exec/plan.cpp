#include "exec/plan.h"

#include <algorithm>
#include <sstream>

#include "ir/op_registry.h"
#include "ir/support/strings.h"

namespace kfuse {

std::string_view convDirectionName(ConvDirection d) {
  switch (d) {
    case ConvDirection::Forward: return "forward";
    case ConvDirection::GradInput: return "grad_input";
    case ConvDirection::GradWeight: return "grad_weight";
  }
  return "?";
}

std::string_view collectiveOpName(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::AllReduce: return "all_reduce";
    case CollectiveOp::ReduceScatter: return "reduce_scatter";
    case CollectiveOp::AllGather: return "all_gather";
    case CollectiveOp::Shard: return "shard";
  }
  return "?";
}

int Plan::storageOf(int b) const {
  while (buffers[static_cast<size_t>(b)].kind == BufferKind::Alias) b = buffers[static_cast<size_t>(b)].aliasOf;
  return b;
}

namespace {
// Calls f on every buffer reference of step s (its spec's, then its
// kernels'), -1 for absent operands among them: a const Step gives const
// references, a Step references dropBuffers may renumber.
template <class S, class F>
void forEachStepBuffer(S& s, F&& f) {
  switch (s.kind()) {
    case StepKind::Gemm:
      f(s.gemm().a), f(s.gemm().b), f(s.gemm().c);
      break;
    case StepKind::Conv:
      f(s.conv().x), f(s.conv().w), f(s.conv().bias), f(s.conv().y), f(s.conv().workspace);
      break;
    case StepKind::Reference:
      for (auto& b : s.reference().inputs) f(b);
      for (auto& b : s.reference().outputs) f(b);
      break;
    case StepKind::Collective:
      for (auto& b : s.collective().inputs) f(b);
      for (auto& b : s.collective().outputs) f(b);
      break;
    case StepKind::Kernels: break;
  }
  for (auto& bs : s.kernelBuffers)
    for (auto& b : bs) f(b);
}
}  // namespace

std::vector<int> stepBuffers(const Step& s) {
  std::vector<int> out;
  forEachStepBuffer(s, [&](int b) {
    if (b >= 0) out.push_back(b);
  });
  return out;
}

void dropBuffers(Plan& p, const std::vector<bool>& drop) {
  std::vector<int> renumbered(p.buffers.size(), -1);
  std::vector<PlanBuffer> kept;
  for (size_t i = 0; i < p.buffers.size(); ++i)
    if (i >= drop.size() || !drop[i]) {
      renumbered[i] = static_cast<int>(kept.size());
      kept.push_back(std::move(p.buffers[i]));
    }
  p.buffers = std::move(kept);
  auto fix = [&](int& b) {
    if (b >= 0) b = renumbered[static_cast<size_t>(b)];
  };
  for (PlanBuffer& b : p.buffers)
    if (b.kind == BufferKind::Alias) fix(b.aliasOf);
  for (Step& s : p.steps) forEachStepBuffer(s, fix);
  for (int& b : p.inputs) fix(b);
  for (int& b : p.outputs) fix(b);
  for (auto& update : p.updates) fix(update.second);
}

std::vector<int> stepWrites(const Plan& p, const Step& s) {
  std::vector<int> out;
  if (s.kind() == StepKind::Gemm) out.push_back(s.gemm().c);
  if (s.kind() == StepKind::Conv)
    for (int b : {s.conv().result(), s.conv().workspace})
      if (b >= 0) out.push_back(b);
  if (s.kind() == StepKind::Reference)
    out.insert(out.end(), s.reference().outputs.begin(), s.reference().outputs.end());
  // The exchange writes the bucket from its start to its wait.
  if (s.kind() == StepKind::Collective)
    out.insert(out.end(), s.collective().outputs.begin(), s.collective().outputs.end());
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    const kernel::Kernel& K = p.kernels[static_cast<size_t>(s.kernels[k])];
    for (size_t i = 0; i < K.buffers.size(); ++i)
      if (K.buffers[i].output) out.push_back(s.kernelBuffers[k][i]);
  }
  return out;
}

namespace {

std::string_view kindName(BufferKind k) {
  switch (k) {
    case BufferKind::Input: return "input";
    case BufferKind::Param: return "param";
    case BufferKind::Constant: return "constant";
    case BufferKind::Temp: return "temp";
    case BufferKind::Alias: return "alias";
  }
  return "?";
}

std::string bufferList(const Plan& p, const std::vector<int>& ids) {
  std::vector<std::string> names;
  for (int b : ids) names.push_back(str("b", b));
  return join(names);
}

}  // namespace

std::string printPlan(const Plan& p) {
  std::ostringstream os;
  os << "plan @" << p.function << ": " << p.buffers.size() << " buffers, " << p.launches() << (p.launches() == 1 ? " launch, arena " : " launches, arena ")
     << p.arenaBytes << " bytes, resident " << p.residentBytes << " bytes\n";
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const PlanBuffer& b = p.buffers[i];
    os << "  b" << i << " " << kindName(b.kind) << " " << formatType(b.type) << " " << b.name;
    if (b.kind == BufferKind::Alias) os << " = b" << b.aliasOf << (b.inPlace ? " in-place" : "");
    if (b.workspace) os << " workspace";
    if (b.offset >= 0)
      os << (b.kind == BufferKind::Temp ? " arena " : " resident ") << "offset " << b.offset << " size "
         << alignedBytes(b.type.byteSize());
    // "end": read after the last step (an output or a state update).
    auto stepName = [&](int s) { return s == static_cast<int>(p.steps.size()) ? std::string("end") : str(s); };
    if (b.firstUse >= 0) os << " live " << stepName(b.firstUse) << ".." << stepName(b.lastUse);
    os << "\n";
  }
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    os << "  step " << i << ": ";
    switch (s.kind()) {
      case StepKind::Kernels: {
        std::vector<std::string> parts;
        for (size_t k = 0; k < s.kernels.size(); ++k)
          parts.push_back(str("@", p.kernels[static_cast<size_t>(s.kernels[k])].name, "(",
                              bufferList(p, s.kernelBuffers[k]), ")"));
        os << "kernels " << join(parts);
        break;
      }
      case StepKind::Gemm: {
        const GemmSpec& g = s.gemm();
        os << "gemm b" << g.c << " = b" << g.a << (g.transA ? "^T" : "") << " @ b" << g.b << (g.transB ? "^T" : "")
           << " [" << g.m << "x" << g.k << " @ " << g.k << "x" << g.n
           << (g.batch.empty() ? "" : str(", batch ", formatDims(g.batch))) << "]";
        if (!s.kernels.empty())
          os << " epilogue @" << p.kernels[static_cast<size_t>(s.kernels[0])].name << "("
             << bufferList(p, s.kernelBuffers[0]) << ")";
        break;
      }
      case StepKind::Conv: {
        const ConvSpec& c = s.conv();
        auto [a, b] = c.operands();
        os << (c.direction == ConvDirection::Forward ? std::string("conv2d") : str("conv2d ", convDirectionName(c.direction)))
           << " b" << c.result() << " = b" << a << " * b" << b << (c.bias >= 0 ? str(" + b", c.bias) : std::string())
           << " [" << c.n << "x" << c.c << "x" << c.h << "x" << c.wd << " -> " << c.o << " channels, " << c.kh << "x"
           << c.kw << " kernel, groups " << c.groups << (c.channelsLast ? ", nhwc" : "") << "]";
        if (!s.kernels.empty())
          os << " epilogue @" << p.kernels[static_cast<size_t>(s.kernels[0])].name << "("
             << bufferList(p, s.kernelBuffers[0]) << ")";
        if (c.workspace >= 0) os << " workspace b" << c.workspace;
        break;
      }
      case StepKind::Reference: {
        const ReferenceOp& r = s.reference();
        os << "reference " << r.op->name << " (" << bufferList(p, r.inputs) << ") -> (" << bufferList(p, r.outputs)
           << ")";
        break;
      }
      case StepKind::Collective: {
        const CollectiveSpec& c = s.collective();
        const std::string ranks = c.op == CollectiveOp::AllReduce ? std::string() : str(" of ", c.ranks, " ranks");
        if (c.phase == CollectivePhase::Start)
          os << collectiveOpName(c.op) << ".start bucket " << c.bucket << ranks << " (" << bufferList(p, c.inputs)
             << ") -> (" << bufferList(p, c.outputs) << ")";
        else
          os << collectiveOpName(c.op) << ".wait bucket " << c.bucket << " (" << bufferList(p, c.outputs) << ")";
        break;
      }
    }
    os << "\n";
  }
  return os.str();
}

EpilogueStorage epilogueStorage(const Plan& p, const Step& s, int result) {
  const kernel::Kernel& k = p.kernels[static_cast<size_t>(s.kernels[0])];
  const std::vector<int>& buffers = s.kernelBuffers[0];
  auto storage = [&](size_t i) { return p.storageOf(buffers[i]); };
  EpilogueStorage out;
  for (size_t i = 0; i < k.buffers.size(); ++i)
    if (k.buffers[i].output) out.written.push_back(storage(i));
  for (size_t i = 0; i < k.buffers.size(); ++i)
    out.confined.push_back(storage(i) == p.storageOf(result) ||
                           std::find(out.written.begin(), out.written.end(), storage(i)) != out.written.end());
  for (size_t i = 0; i < k.buffers.size(); ++i) {
    bool alone = k.buffers[i].output && storage(i) != p.storageOf(result);
    for (size_t j = 0; j < k.buffers.size(); ++j) alone = alone && (j == i || storage(j) != storage(i));
    for (const kernel::Load& l : k.loads) alone = alone && l.buffer != static_cast<int>(i);
    out.storedOnly.push_back(alone);
  }
  return out;
}

bool readOnlyWhileRunning(const Plan& p, int b) {
  const int storage = p.storageOf(b);
  if (storage < 0) return false;
  const PlanBuffer& buffer = p.buffers[static_cast<size_t>(storage)];
  if (buffer.kind != BufferKind::Param && buffer.kind != BufferKind::Constant) return false;
  for (const auto& update : p.updates)
    if (buffer.kind == BufferKind::Param && update.first == buffer.param) return false;
  for (const Step& s : p.steps)
    for (int w : stepWrites(p, s))
      if (p.storageOf(w) == storage) return false;
  return true;
}

}  // namespace kfuse
