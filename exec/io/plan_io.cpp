// Plans as JSON (plan_io.h): buffers, steps (kernels, GEMM and convolution
// geometry, reference ops with their attributes) and the plan's interface.
// Kernels' IR, tensor types and attributes are read and written by
// kernel_io.cpp, JSON values by json_read.cpp.
#include "exec/io/plan_io.h"

#include <array>
#include <cstdint>
#include <limits>
#include <memory>

#include "ir/builder.h"
#include "ir/op_registry.h"
#include "ir/support/strings.h"
#include "exec/io/json_read.h"
#include "exec/io/kernel_io.h"
#include "exec/packed_filter.h"
#include "exec/packed_gemm.h"

namespace kfuse {
namespace {

using namespace package::json_read;
using package::checkShape;
using package::kMaxRegionBytes;
using package::kMaxTensorElements;
using package::readAttr;
using package::readKernel;
using package::readType;
using package::writeAttr;
using package::writeKernel;
using Wide = __int128;  // products of sizes and strides, never overflowing

// Bounds far beyond any real plan (with kernel_io.h's), so that no product
// of sizes overflows.
constexpr int64_t kMaxBlasDim = std::numeric_limits<int32_t>::max();  // BLAS takes int
constexpr int64_t kMaxConvDim = int64_t{1} << 24;

constexpr std::array<std::string_view, 5> kBufferKinds = {"input", "param", "constant", "temp", "alias"};
constexpr std::array<std::string_view, 5> kStepKinds = {"kernels", "gemm", "conv", "reference", "collective"};
constexpr std::array<std::string_view, 2> kCollectivePhases = {"start", "wait"};
constexpr std::array<std::string_view, 3> kConvDirections = {"forward", "grad_input", "grad_weight"};

// ---- steps

ojson writeGemm(const GemmSpec& g) {
  ojson o{{"a", g.a},
          {"b", g.b},
          {"c", g.c},
          {"transA", g.transA},
          {"transB", g.transB},
          {"m", g.m},
          {"n", g.n},
          {"k", g.k},
          {"batch", g.batch},
          {"aBatchStrides", g.aBatchStrides},
          {"bBatchStrides", g.bBatchStrides},
          {"cBatchStrides", g.cBatchStrides}};
  if (g.packedB) o["packedB"] = true;  // absent: B as it is (older packages too)
  return o;
}

ojson writeConv(const ConvSpec& c) {
  ojson o{{"x", c.x},
               {"w", c.w},
               {"bias", c.bias},
               {"y", c.y},
               {"direction", nameOf(c.direction, kConvDirections)},
               {"workspace", c.workspace},
               {"n", c.n},
               {"c", c.c},
               {"h", c.h},
               {"wd", c.wd},
               {"o", c.o},
               {"kh", c.kh},
               {"kw", c.kw},
               {"oh", c.oh},
               {"ow", c.ow},
               {"groups", c.groups},
               {"strideH", c.strideH},
               {"strideW", c.strideW},
               {"padTop", c.padTop},
               {"padLeft", c.padLeft},
               {"dilH", c.dilH},
               {"dilW", c.dilW},
               {"channelsLast", c.channelsLast},
               {"filterLast", c.filterLast}};
  if (!c.liveTaps.empty()) o["liveTaps"] = c.liveTaps;  // absent: every tap live (older packages too)
  if (c.packedFilter) o["packedFilter"] = true;           // absent: the filter as it is (older packages too)
  return o;
}

ojson writeStep(const Step& s) {
  ojson o{{"name", s.name},
          {"kind", nameOf(s.kind(), kStepKinds)},
          {"phase", std::string(phaseName(s.phase))},
          {"ops", s.ops}};
  ojson kernels = ojson::array();
  for (size_t k = 0; k < s.kernels.size(); ++k)
    kernels.push_back(
        {{"kernel", s.kernels[k]}, {"buffers", k < s.kernelBuffers.size() ? s.kernelBuffers[k] : std::vector<int>{}}});
  o["kernels"] = std::move(kernels);
  switch (s.kind()) {
    case StepKind::Kernels: break;
    case StepKind::Gemm: o["gemm"] = writeGemm(s.gemm()); break;
    case StepKind::Conv: o["conv"] = writeConv(s.conv()); break;
    case StepKind::Reference: {
      o["op"] = s.reference().op ? s.reference().op->name : std::string();
      ojson attrs = ojson::object();
      for (const auto& [name, a] : s.reference().attrs) attrs[name] = writeAttr(a);
      o["attrs"] = std::move(attrs);
      o["inputs"] = s.reference().inputs;
      o["outputs"] = s.reference().outputs;
      break;
    }
    case StepKind::Collective: {
      const CollectiveSpec& c = s.collective();
      o["collective"] = {{"op", std::string(collectiveOpName(c.op))},
                         {"ranks", c.ranks},
                         {"phase", nameOf(c.phase, kCollectivePhases)},
                         {"bucket", c.bucket},
                         {"inputs", c.inputs},
                         {"outputs", c.outputs}};
      break;
    }
  }
  return o;
}

ojson writeBuffer(const PlanBuffer& b) {
  ojson o{{"name", b.name}, {"type", formatType(b.type)}, {"kind", nameOf(b.kind, kBufferKinds)}};
  if (b.kind == BufferKind::Input) o["input"] = b.input;
  if (b.kind == BufferKind::Param) o["param"] = b.param;
  if (b.kind == BufferKind::Alias) o["aliasOf"] = b.aliasOf;
  if (b.inPlace) o["inPlace"] = true;
  if (b.workspace) o["workspace"] = true;
  if (b.gradient) o["gradient"] = true;
  o["offset"] = b.offset;
  o["firstUse"] = b.firstUse;
  o["lastUse"] = b.lastUse;
  return o;
}

// Reads a plan and checks everything a runner indexes with.
class PlanReader {
 public:
  PlanReader(const json& j, const TensorMap& constants, PlanOffsets offsets)
      : j_(j), constants_(constants), offsets_(offsets) {}

  Plan run() {
    p_.function = stringAt(j_, "function");
    return within(str("plan @", p_.function), [&] {
      p_.arenaBytes = regionBytes("arenaBytes");
      p_.residentBytes = regionBytes("residentBytes");
      numSteps_ = arrayAt(j_, "steps").size();
      numInputs_ = arrayAt(j_, "inputs").size();
      const json& buffers = arrayAt(j_, "buffers");
      for (size_t i = 0; i < buffers.size(); ++i) p_.buffers.push_back(readBuffer(buffers[i], i));
      checkAliases();
      const json& kernels = arrayAt(j_, "kernels");
      for (size_t i = 0; i < kernels.size(); ++i)
        p_.kernels.push_back(within(str("kernel ", i), [&] { return readKernel(kernels[i]); }));
      const json& steps = arrayAt(j_, "steps");
      for (size_t i = 0; i < steps.size(); ++i) p_.steps.push_back(readStep(steps[i], i));
      readInterface();
      return std::move(p_);
    });
  }

 private:
  uint64_t regionBytes(const char* key) const {
    auto v = static_cast<uint64_t>(intAt(j_, key, 0, kMaxRegionBytes));
    // Allocators take multiples of the alignment (aligned_alloc).
    if (v % kBufferAlignment != 0) fail(str(key, " ", v, " is not a multiple of ", kBufferAlignment));
    return v;
  }

  int bufferRef(const json& j, std::string_view what, bool optional = false) const {
    int64_t b = toInt(j, what, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
    if (optional && b == -1) return -1;
    if (b < 0 || static_cast<size_t>(b) >= p_.buffers.size())
      fail(str(what, " ", b, " out of range (the plan has ", p_.buffers.size(), " buffers)"));
    return static_cast<int>(b);
  }
  int bufferAt(const json& o, const char* key, bool optional = false) const {
    return bufferRef(at(o, key), str("buffer '", key, "'"), optional);
  }
  std::vector<int> buffersAt(const json& o, const char* key, std::string_view what) const {
    std::vector<int> out;
    for (const json& b : arrayAt(o, key)) out.push_back(bufferRef(b, what));
    return out;
  }
  const TensorType& typeOf(int b) const { return p_.buffers[static_cast<size_t>(b)].type; }

  PlanBuffer readBuffer(const json& o, size_t i) {
    std::string name = within(str("buffer ", i), [&] { return stringAt(o, "name"); });
    return within(str("buffer ", i, " (", name, ")"), [&] {
      PlanBuffer b;
      b.name = name;
      b.type = readType(at(o, "type"));
      b.kind = enumNamed<BufferKind>(stringAt(o, "kind"), kBufferKinds, "buffer kind");
      b.inPlace = optionalBool(o, "inPlace");
      b.workspace = optionalBool(o, "workspace");
      b.gradient = optionalBool(o, "gradient");
      if (b.inPlace && b.kind != BufferKind::Alias) fail("only an alias is written in place");
      if (b.workspace && b.kind != BufferKind::Temp) fail("only a temp is a workspace");
      auto steps = static_cast<int64_t>(numSteps_);
      b.firstUse = static_cast<int>(intAt(o, "firstUse", -1, steps));
      b.lastUse = static_cast<int>(intAt(o, "lastUse", -1, steps));
      b.offset = intAt(o, "offset", -1, kMaxRegionBytes);
      switch (b.kind) {
        case BufferKind::Input:
          b.input = static_cast<size_t>(intAt(o, "input", 0, static_cast<int64_t>(numInputs_) - 1));
          break;
        case BufferKind::Param: b.param = stringAt(o, "param"); break;
        case BufferKind::Constant: b.constant = constant(static_cast<int>(i), b.type); break;
        case BufferKind::Alias:
          // In range here; cycles once every buffer is read.
          b.aliasOf = static_cast<int>(
              toInt(at(o, "aliasOf"), "aliasOf", 0, static_cast<int64_t>(arrayAt(j_, "buffers").size()) - 1));
          if (static_cast<size_t>(b.aliasOf) == i) fail("the buffer aliases itself");
          if (b.offset != -1) fail("an alias has no offset of its own");
          return b;
        case BufferKind::Temp: break;
      }
      if (b.offset == -1 && offsets_ == PlanOffsets::Optional) return b;
      uint64_t region = b.kind == BufferKind::Temp ? p_.arenaBytes : p_.residentBytes;
      uint64_t size = alignedBytes(b.type.byteSize());
      if (b.offset < 0) fail("the buffer has no offset (the plan was not planned)");
      if (b.offset % static_cast<int64_t>(kBufferAlignment) != 0) fail(str("offset ", b.offset, " is not aligned"));
      if (static_cast<uint64_t>(b.offset) + size > region)
        fail(str("[", b.offset, ", ", static_cast<uint64_t>(b.offset) + size, ") ends past its region of ", region,
                 " bytes"));
      return b;
    });
  }

  std::shared_ptr<const Tensor> constant(int buffer, const TensorType& type) const {
    std::string key = constantKey(p_.function, buffer);
    auto it = constants_.find(key);
    if (it == constants_.end()) fail(str("constant '", key, "' is missing"));
    const Tensor& t = it->second;
    // The weights file keeps no layout tags: the buffer's type restores it.
    if (t.dtype() != type.dtype || t.shape() != type.shape || t.byteSize() != type.byteSize())
      fail(str("constant '", key, "' is ", formatType(t.type()), ", the buffer is ", formatType(type)));
    return std::make_shared<const Tensor>(t.withType(type));
  }

  // Alias chains end at a storage buffer (Plan::storageOf walks them), and
  // each alias fits in what it aliases.
  void checkAliases() const {
    enum class Mark : uint8_t { None, Walking, Done };
    std::vector<Mark> mark(p_.buffers.size(), Mark::None);
    for (size_t i = 0; i < p_.buffers.size(); ++i) {
      std::vector<size_t> path;
      size_t b = i;
      while (mark[b] == Mark::None && p_.buffers[b].kind == BufferKind::Alias) {
        mark[b] = Mark::Walking;
        path.push_back(b);
        b = static_cast<size_t>(p_.buffers[b].aliasOf);
      }
      if (mark[b] == Mark::Walking) fail(str("buffer ", i, " (", p_.buffers[i].name, "): alias chain has a cycle"));
      for (size_t a : path) mark[a] = Mark::Done;
      mark[b] = Mark::Done;
      const PlanBuffer& x = p_.buffers[i];
      if (x.kind == BufferKind::Alias && x.type.byteSize() > typeOf(x.aliasOf).byteSize())
        fail(str("buffer ", i, " (", x.name, "): ", formatType(x.type), " aliases b", x.aliasOf, " of only ",
                 formatType(typeOf(x.aliasOf))));
    }
  }

  Step readStep(const json& o, size_t i) {
    std::string name = within(str("step ", i), [&] { return stringAt(o, "name"); });
    return within(str("step ", i, " (", name, ")"), [&] {
      Step s;
      s.name = name;
      const StepKind kind = enumNamed<StepKind>(stringAt(o, "kind"), kStepKinds, "step kind");
      s.phase = enumNamed<Phase>(stringAt(o, "phase"), 4, phaseName, "phase");
      s.ops = static_cast<size_t>(intAt(o, "ops", 0, std::numeric_limits<int32_t>::max()));
      for (const json& k : arrayAt(o, "kernels")) {
        auto id = static_cast<size_t>(toInt(at(k, "kernel"), "kernel", 0, static_cast<int64_t>(p_.kernels.size()) - 1));
        s.kernels.push_back(static_cast<int>(id));
        s.kernelBuffers.push_back(kernelBuffers(k, p_.kernels[id]));
      }
      // Library calls and reference ops run at most their one epilogue.
      size_t maxKernels = kind == StepKind::Kernels                                   ? s.kernels.size()
                         : kind == StepKind::Reference || kind == StepKind::Collective ? 0
                                                                                      : 1;
      if (s.kernels.size() > maxKernels)
        fail(str("a ", kStepKinds[static_cast<size_t>(kind)], " step runs ", s.kernels.size(), " kernels"));
      switch (kind) {
        case StepKind::Kernels: s.body = KernelBundle{}; break;
        case StepKind::Gemm: s.body = readGemm(at(o, "gemm")); break;
        case StepKind::Conv: s.body = readConv(at(o, "conv")); break;
        case StepKind::Reference: s.body = readReference(o); break;
        case StepKind::Collective: s.body = readCollective(at(o, "collective")); break;
      }
      return s;
    });
  }

  std::vector<int> kernelBuffers(const json& o, const kernel::Kernel& k) const {
    std::vector<int> out = buffersAt(o, "buffers", "kernel buffer");
    if (out.size() != k.buffers.size())
      fail(str("kernel @", k.name, " takes ", k.buffers.size(), " buffers, the step gives ", out.size()));
    for (size_t i = 0; i < out.size(); ++i) {
      const TensorType &want = k.buffers[i].type, &have = typeOf(out[i]);
      if (want.dtype != have.dtype || want.numElements() != have.numElements())
        fail(str("kernel @", k.name, " buffer ", k.buffers[i].name, " is ", formatType(want), ", plan buffer ", out[i],
                 " is ", formatType(have)));
    }
    return out;
  }

  // The operand `b` holds every element a batch of `matrix`-element
  // matrices at the given batch strides reaches.
  void checkExtent(int b, const Shape& batch, const std::vector<int64_t>& strides, Wide matrix,
                   std::string_view what) const {
    if (matrix == 0 || numElements(batch) == 0) return;
    Wide end = matrix;
    for (size_t d = 0; d < batch.size(); ++d) end += Wide(batch[d] - 1) * strides[d];
    if (end > typeOf(b).numElements())
      fail(str(what, " reaches element ", static_cast<int64_t>(end - 1), " of b", b, " (", typeOf(b).numElements(),
               " elements)"));
  }

  GemmSpec readGemm(const json& o) const {
    return within("gemm", [&] {
      GemmSpec g;
      g.a = bufferAt(o, "a");
      g.b = bufferAt(o, "b");
      g.c = bufferAt(o, "c");
      g.transA = boolAt(o, "transA");
      g.transB = boolAt(o, "transB");
      g.m = intAt(o, "m", 0, kMaxBlasDim);
      g.n = intAt(o, "n", 0, kMaxBlasDim);
      g.k = intAt(o, "k", 0, kMaxBlasDim);
      g.batch = intsAt(o, "batch", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
      checkShape(g.batch, "batch");
      g.aBatchStrides = intsAt(o, "aBatchStrides", 0, kMaxTensorElements);
      g.bBatchStrides = intsAt(o, "bBatchStrides", 0, kMaxTensorElements);
      g.cBatchStrides = intsAt(o, "cBatchStrides", 0, kMaxTensorElements);
      for (const auto* s : {&g.aBatchStrides, &g.bBatchStrides, &g.cBatchStrides})
        if (s->size() != g.batch.size())
          fail(str("batch strides ", formatDims(*s), " for batch ", formatDims(g.batch)));
      if (o.contains("packedB")) {
        g.packedB = boolAt(o, "packedB");
        if (g.packedB && !packedGemmShape(g)) fail("packedB on a GEMM that has no packed form (exec/packed_gemm.h)");
      }
      DType dt = typeOf(g.c).dtype;
      if (typeOf(g.a).dtype != dt || typeOf(g.b).dtype != dt)
        fail(str("operands ", formatType(typeOf(g.a)), " and ", formatType(typeOf(g.b)), " for a result ",
                 formatType(typeOf(g.c))));
      if (g.m > 0 && g.n > 0) {
        checkExtent(g.a, g.batch, g.aBatchStrides, Wide(g.m) * g.k, "operand a");
        checkExtent(g.b, g.batch, g.bBatchStrides, Wide(g.k) * g.n, "operand b");
        checkExtent(g.c, g.batch, g.cBatchStrides, Wide(g.m) * g.n, "result c");
      }
      return g;
    });
  }

  ConvSpec readConv(const json& o) const {
    return within("conv", [&] {
      ConvSpec c;
      c.x = bufferAt(o, "x");
      c.w = bufferAt(o, "w");
      c.bias = bufferAt(o, "bias", true);
      c.y = bufferAt(o, "y");
      // Absent in package format 2, whose convolutions all ran forward.
      if (o.contains("direction"))
        c.direction = enumNamed<ConvDirection>(stringAt(o, "direction"), kConvDirections, "convolution direction");
      // The CPU convolution keeps its patches there (runtime/cpu_conv.h);
      // -1 where the target needs none (direct convolutions, cuda).
      c.workspace = bufferAt(o, "workspace", true);
      c.n = intAt(o, "n", 0, kMaxConvDim);
      using Field = std::pair<const char*, int64_t*>;
      for (auto [key, field] : std::initializer_list<Field>{{"c", &c.c},
                                                            {"h", &c.h},
                                                            {"wd", &c.wd},
                                                            {"o", &c.o},
                                                            {"kh", &c.kh},
                                                            {"kw", &c.kw},
                                                            {"oh", &c.oh},
                                                            {"ow", &c.ow},
                                                            {"groups", &c.groups},
                                                            {"strideH", &c.strideH},
                                                            {"strideW", &c.strideW},
                                                            {"dilH", &c.dilH},
                                                            {"dilW", &c.dilW}})
        *field = intAt(o, key, 1, kMaxConvDim);
      c.padTop = intAt(o, "padTop", 0, kMaxConvDim);
      c.padLeft = intAt(o, "padLeft", 0, kMaxConvDim);
      c.channelsLast = boolAt(o, "channelsLast");
      c.filterLast = boolAt(o, "filterLast");
      if (o.contains("liveTaps")) {
        c.liveTaps = intsAt(o, "liveTaps", 0, 1);
        const Wide taps = Wide(c.kh) * c.kw, size = static_cast<Wide>(c.liveTaps.size());
        if (size == 0 || size % taps != 0 || (c.c / c.groups) % static_cast<int64_t>(size / taps) != 0)
          fail(str("liveTaps has ", c.liveTaps.size(), " entries, not a period of the group's channels times ", c.kh,
                   "x", c.kw, " taps"));
      }
      if (c.c % c.groups != 0 || c.o % c.groups != 0)
        fail(str(c.c, " channels in, ", c.o, " out do not split into ", c.groups, " groups"));
      if (o.contains("packedFilter")) {
        c.packedFilter = boolAt(o, "packedFilter");
        if (c.packedFilter && !packedFilterShape(c))
          fail("packedFilter on a convolution that has no form with a packed filter (exec/packed_filter.h)");
      }
      DType dt = typeOf(c.y).dtype;
      for (int b : {c.x, c.w, c.bias})
        if (b >= 0 && typeOf(b).dtype != dt)
          fail(str("b", b, " is ", formatType(typeOf(b)), ", the result ", formatType(typeOf(c.y))));
      DType wsType = dt == DType::F64 ? DType::F64 : DType::F32;
      if (c.workspace >= 0 && typeOf(c.workspace).dtype != wsType) fail(str("the workspace must be ", dtypeName(wsType)));
      Wide taps = Wide(c.c / c.groups) * c.kh * c.kw, pixels = Wide(c.oh) * c.ow;
      if (taps > kMaxBlasDim || pixels > kMaxBlasDim) fail("the patch matrix is beyond BLAS's int sizes");
      auto need = [&](int b, Wide elements, std::string_view what) {
        if (elements > typeOf(b).numElements())
          fail(str(what, " b", b, " ", formatType(typeOf(b)), " holds fewer than ", static_cast<int64_t>(elements),
                   " elements"));
      };
      need(c.x, Wide(c.n) * c.c * c.h * c.wd, "the input");
      need(c.w, Wide(c.o) * taps, "the filter");
      need(c.y, Wide(c.n) * c.o * pixels, "the result");
      if (c.workspace >= 0) need(c.workspace, taps * pixels, "the workspace");
      if (c.bias >= 0) need(c.bias, c.o, "the bias");
      return c;
    });
  }

  // An all-reduce phase: float buffers, each input the type of its output.
  CollectiveSpec readCollective(const json& o) const {
    CollectiveSpec c;
    c.op = enumNamed<CollectiveOp>(stringAt(o, "op"), 4, collectiveOpName, "collective");
    c.ranks = intAt(o, "ranks", 0, std::numeric_limits<int32_t>::max());
    if (c.op != CollectiveOp::AllReduce && c.ranks < 1) fail(str(collectiveOpName(c.op), " over ", c.ranks, " ranks"));
    c.phase = enumNamed<CollectivePhase>(stringAt(o, "phase"), kCollectivePhases, "collective phase");
    c.bucket = static_cast<int>(intAt(o, "bucket", 0, std::numeric_limits<int32_t>::max()));
    c.inputs = buffersAt(o, "inputs", "input buffer");
    c.outputs = buffersAt(o, "outputs", "output buffer");
    if (c.outputs.empty()) fail("a collective without buffers");
    if (c.phase == CollectivePhase::Start && c.inputs.size() != c.outputs.size())
      fail(str("a collective start with ", c.inputs.size(), " inputs and ", c.outputs.size(), " outputs"));
    if (c.phase == CollectivePhase::Wait && !c.inputs.empty()) fail("a collective wait with inputs");
    if (c.op != CollectiveOp::AllReduce && c.outputs.size() != 1) fail(str("a ", collectiveOpName(c.op), " of several buffers"));
    for (size_t i = 0; i < c.outputs.size(); ++i) {
      const TensorType& t = typeOf(c.outputs[i]);
      if (t.dtype != DType::F32 && t.dtype != DType::F64) fail(str("collective output b", c.outputs[i], " is ", formatType(t)));
      if (c.op != CollectiveOp::AllReduce && c.phase == CollectivePhase::Start) {
        // One side is the whole tensor, the other this rank's shard of it.
        const TensorType& whole = typeOf(c.op == CollectiveOp::AllGather ? c.outputs[0] : c.inputs[0]);
        const TensorType& part = typeOf(c.op == CollectiveOp::AllGather ? c.inputs[0] : c.outputs[0]);
        if (whole.dtype != part.dtype || part.numElements() * c.ranks < whole.numElements() ||
            (part.numElements() - 1) * c.ranks >= whole.numElements() + (whole.numElements() == 0 ? 1 : 0))
          fail(str(collectiveOpName(c.op), ": ", formatType(part), " is not a shard of ", formatType(whole), " over ",
                   c.ranks, " ranks"));
        continue;
      }
      if (i < c.inputs.size() && !(typeOf(c.inputs[i]) == t))
        fail(str("collective input b", c.inputs[i], " is ", formatType(typeOf(c.inputs[i])), ", its output ",
                 formatType(t)));
    }
    return c;
  }

  ReferenceOp readReference(const json& o) const {
    ReferenceOp r;
    std::string opName = stringAt(o, "op");
    r.op = OpRegistry::global().find(opName);
    if (!r.op) fail(str("unknown op '", opName, "'"));
    // A body graph does not travel in a plan.
    if (r.op->hasBody) fail(str("op '", opName, "' needs a body"));
    const json& attrs = at(o, "attrs");
    if (!attrs.is_object()) fail("field 'attrs' must be an object");
    AttrMap given;
    for (auto it = attrs.begin(); it != attrs.end(); ++it)
      given.emplace(it.key(), within(str("attribute '", it.key(), "'"), [&] { return readAttr(it.value()); }));
    auto full = completeAttrs(*r.op, std::move(given));
    if (!full) fail(full.error().message());
    r.attrs = std::move(*full);
    r.inputs = buffersAt(o, "inputs", "input buffer");
    r.outputs = buffersAt(o, "outputs", "output buffer");
    // The reference implementation writes results of the inferred types.
    std::vector<TensorType> in;
    for (int b : r.inputs) in.push_back(typeOf(b));
    auto types = inferResultTypes(*r.op, r.attrs, in);
    if (!types) fail(types.error().message());
    if (types->size() != r.outputs.size())
      fail(str("op '", opName, "' has ", types->size(), " results, the step ", r.outputs.size(), " outputs"));
    for (size_t i = 0; i < types->size(); ++i)
      if (!((*types)[i] == typeOf(r.outputs[i])))
        fail(str("result ", i, " of op '", opName, "' is ", formatType((*types)[i]), ", output b", r.outputs[i], " is ",
                 formatType(typeOf(r.outputs[i]))));
    return r;
  }

  void readInterface() {
    p_.inputs = buffersAt(j_, "inputs", "plan input buffer");
    for (size_t i = 0; i < p_.inputs.size(); ++i) {
      const PlanBuffer& b = p_.buffers[static_cast<size_t>(p_.inputs[i])];
      if (b.kind != BufferKind::Input || b.input != i)
        fail(str("input ", i, " is b", p_.inputs[i], ", not input buffer ", i));
    }
    p_.outputs = buffersAt(j_, "outputs", "plan output buffer");
    for (const json& u : arrayAt(j_, "updates")) {
      const json& pair = arrayOf(u, "an update");
      if (pair.size() != 2) fail("an update must be [param, buffer]");
      p_.updates.emplace_back(toString(pair[0], "an update's parameter"), bufferRef(pair[1], "update buffer"));
    }
  }

  const json& j_;
  const TensorMap& constants_;
  PlanOffsets offsets_;
  Plan p_;
  size_t numSteps_ = 0, numInputs_ = 0;
};

}  // namespace

std::string constantKey(std::string_view function, int buffer) { return str("const/", function, "/", buffer); }

std::string serializePlan(const Plan& p, std::vector<std::pair<std::string, const Tensor*>>& constants) {
  ojson buffers = ojson::array(), kernels = ojson::array(), steps = ojson::array(), updates = ojson::array();
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const PlanBuffer& b = p.buffers[i];
    buffers.push_back(writeBuffer(b));
    if (b.kind == BufferKind::Constant && b.constant)
      constants.emplace_back(constantKey(p.function, static_cast<int>(i)), b.constant.get());
  }
  for (const kernel::Kernel& k : p.kernels) kernels.push_back(writeKernel(k));
  for (const Step& s : p.steps) steps.push_back(writeStep(s));
  for (const auto& [param, b] : p.updates) updates.push_back(ojson::array({param, b}));
  ojson o{{"function", p.function},
          {"arenaBytes", p.arenaBytes},
          {"residentBytes", p.residentBytes},
          {"inputs", p.inputs},
          {"outputs", p.outputs},
          {"updates", std::move(updates)},
          {"buffers", std::move(buffers)},
          {"kernels", std::move(kernels)},
          {"steps", std::move(steps)}};
  // Invalid UTF-8 in a name must not make dump() throw.
  return o.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

Expected<Plan> parsePlan(std::string_view text, const TensorMap& constants, PlanOffsets offsets) {
  return parseJson<Plan>(text, "plan", [&](const json& j) { return PlanReader(j, constants, offsets).run(); });
}

std::string gemmSpecJson(const GemmSpec& g) { return writeGemm(g).dump(); }
std::string convSpecJson(const ConvSpec& c) { return writeConv(c).dump(); }

}  // namespace kfuse
