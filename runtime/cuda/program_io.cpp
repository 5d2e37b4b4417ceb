// CUDA programs as JSON (program_io.h): modules by name, and for each plan
// step its mode, cuBLASLt matmul and kernel launches, every buffer index,
// launch dimension and matrix extent checked against the plan. JSON values
// are read by exec/io/json_read.h.
#include "runtime/cuda/program_io.h"

#include <algorithm>
#include <array>
#include <limits>

#include "ir/support/strings.h"
#include "exec/io/json_read.h"

namespace kfuse::cuda {
namespace {

using namespace package::json_read;
using Wide = __int128;  // extents of strided matrices, never overflowing

// Bounds beyond any real program: sizes the runner allocates, launch
// dimensions the driver takes, matrix sizes cuBLASLt takes.
constexpr int64_t kMaxBytes = int64_t{1} << 40;
constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxBlock = 1024;
constexpr int64_t kMaxSharedBytes = int64_t{1} << 20;

// The cuBLASLt epilogues a MatmulCall uses (codegen/cuda/matmul_match.cpp),
// with cublasLtEpilogue_t's values: this file builds without the CUDA
// headers, and the reader accepts no other epilogue (others read operands
// the call does not name). DGELU_BGRAD reads aux (the forward's GELU input)
// and writes the bias gradient through the bias pointer.
struct Epilogue {
  std::string_view name;
  uint32_t value;
  bool bias, aux;
};
constexpr std::array<Epilogue, 9> kEpilogues = {{{"DEFAULT", 1, false, false},
                                                 {"RELU", 2, false, false},
                                                 {"BIAS", 4, true, false},
                                                 {"RELU_BIAS", 6, true, false},
                                                 {"GELU", 32, false, false},
                                                 {"GELU_BIAS", 36, true, false},
                                                 {"GELU_AUX", 160, false, true},
                                                 {"GELU_AUX_BIAS", 164, true, true},
                                                 {"DGELU_BGRAD", 208, true, true}}};

ojson writeMatmul(const MatmulCall& c) {
  return ojson{{"a", c.a},
               {"b", c.b},
               {"d", c.d},
               {"bias", c.bias},
               {"aux", c.aux},
               {"dtype", std::string(dtypeName(c.dtype))},
               {"transA", c.transA},
               {"transB", c.transB},
               {"m", c.m},
               {"n", c.n},
               {"k", c.k},
               {"lda", c.lda},
               {"ldb", c.ldb},
               {"ldd", c.ldd},
               {"batch", c.batch},
               {"strideA", c.strideA},
               {"strideB", c.strideB},
               {"strideD", c.strideD},
               {"epilogue", c.epilogueName}};
}

ojson writeLaunch(const KernelLaunch& l) {
  return ojson{{"module", l.module},
               {"entry", l.entry},
               {"grid", l.grid},
               {"block", l.block},
               {"sharedBytes", l.sharedBytes},
               {"cooperative", l.cooperative},
               {"args", l.args},
               {"scratch", l.scratch},
               {"what", l.what}};
}

class ProgramReader {
 public:
  ProgramReader(const json& j, const Plan& plan) : j_(j), plan_(plan) {}

  CudaProgram run() {
    p_.arch = stringAt(j_, "arch");
    p_.scratchBytes = static_cast<size_t>(intAt(j_, "scratchBytes", 0, kMaxBytes));
    p_.matmulWorkspaceBytes = static_cast<size_t>(intAt(j_, "matmulWorkspaceBytes", 0, kMaxBytes));
    for (const json& m : arrayAt(j_, "modules")) p_.modules.push_back({toString(m, "a module name"), {}, {}});
    const json& steps = arrayAt(j_, "steps");
    if (steps.size() != plan_.steps.size())
      fail(str("the program has ", steps.size(), " steps for a plan of ", plan_.steps.size()));
    for (size_t i = 0; i < steps.size(); ++i)
      p_.steps.push_back(within(str("step ", i), [&] { return readStep(steps[i], plan_.steps[i]); }));
    return std::move(p_);
  }

 private:
  int bufferRef(const json& j, std::string_view what, bool optional = false) const {
    int64_t b = toInt(j, what, -1, kMaxInt32);
    if (optional && b == -1) return -1;
    if (b < 0 || static_cast<size_t>(b) >= plan_.buffers.size())
      fail(str(what, ": buffer ", b, " out of range (the plan has ", plan_.buffers.size(), " buffers)"));
    return static_cast<int>(b);
  }
  const TensorType& typeOf(int b) const { return plan_.buffers[static_cast<size_t>(b)].type; }

  StepProgram readStep(const json& o, const Step& planStep) const {
    StepProgram s;
    std::string mode = stringAt(o, "mode");
    if (mode != "device" && mode != "host") fail(str("unknown step mode '", mode, "'"));
    s.mode = mode == "host" ? StepMode::Host : StepMode::Device;
    s.note = stringAt(o, "note");
    // The runner hands host steps to the plan step's reference op.
    const bool hostKind = planStep.kind() == StepKind::Reference || planStep.kind() == StepKind::Collective;
    if ((s.mode == StepMode::Host) != hostKind)
      fail(str("a ", mode, " step for plan step ", planStep.name));
    if (o.contains("matmul")) s.matmul = within("matmul", [&] { return readMatmul(at(o, "matmul")); });
    const json& launches = arrayAt(o, "launches");
    for (size_t i = 0; i < launches.size(); ++i)
      s.launches.push_back(within(str("launch ", i), [&] { return readLaunch(launches[i]); }));
    if (s.mode == StepMode::Host && (s.matmul || !s.launches.empty())) fail("a host step launches nothing");
    return s;
  }

  KernelLaunch readLaunch(const json& o) const {
    KernelLaunch l;
    l.module = static_cast<int>(intAt(o, "module", 0, static_cast<int64_t>(p_.modules.size()) - 1));
    l.entry = stringAt(o, "entry");
    if (l.entry.empty()) fail("the entry has no name");
    l.grid = static_cast<uint32_t>(intAt(o, "grid", 1, kMaxInt32));
    l.block = static_cast<uint32_t>(intAt(o, "block", 1, kMaxBlock));
    l.sharedBytes = static_cast<uint32_t>(intAt(o, "sharedBytes", 0, kMaxSharedBytes));
    l.cooperative = boolAt(o, "cooperative");
    const json& args = arrayAt(o, "args");
    for (size_t i = 0; i < args.size(); ++i) l.args.push_back(bufferRef(args[i], str("argument ", i)));
    // A scratch pointer at the very end is fine: a kernel of no scratch.
    l.scratch = intAt(o, "scratch", -1, static_cast<int64_t>(p_.scratchBytes));
    l.what = stringAt(o, "what");
    return l;
  }

  // Column-major rows x cols at leading dimension ld, `batch` of them
  // `stride` apart: every element they reach lies in buffer b.
  void checkMatrix(int b, int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride,
                   std::string_view what) const {
    if (rows == 0 || cols == 0) return;
    if (ld < rows) fail(str(what, ": leading dimension ", ld, " below its ", rows, " rows"));
    // A batch of 0 still runs one matrix in the runner (it sets no batch count).
    Wide end = Wide(cols - 1) * ld + rows + Wide(std::max<int64_t>(batch, 1) - 1) * stride;
    if (end > typeOf(b).numElements())
      fail(str(what, " reaches element ", static_cast<int64_t>(end - 1), " of b", b, " (", typeOf(b).numElements(),
               " elements)"));
  }

  MatmulCall readMatmul(const json& o) const {
    MatmulCall c;
    c.a = bufferRef(at(o, "a"), "a");
    c.b = bufferRef(at(o, "b"), "b");
    c.d = bufferRef(at(o, "d"), "d");
    c.bias = bufferRef(at(o, "bias"), "bias", true);
    c.aux = bufferRef(at(o, "aux"), "aux", true);
    std::string dtype = stringAt(o, "dtype");
    std::optional<DType> dt = parseDType(dtype);
    if (!dt || !(*dt == DType::F32 || *dt == DType::F16 || *dt == DType::BF16 || *dt == DType::F64))
      fail(str("cuBLASLt runs no matmul of dtype '", dtype, "'"));
    c.dtype = *dt;
    for (int b : {c.a, c.b, c.d, c.bias, c.aux})
      if (b >= 0 && typeOf(b).dtype != c.dtype)
        fail(str("b", b, " is ", formatType(typeOf(b)), " in a ", dtype, " matmul"));
    c.transA = boolAt(o, "transA");
    c.transB = boolAt(o, "transB");
    c.m = intAt(o, "m", 0, kMaxInt32);
    c.n = intAt(o, "n", 0, kMaxInt32);
    c.k = intAt(o, "k", 0, kMaxInt32);
    c.lda = intAt(o, "lda", 0, kMaxInt32);
    c.ldb = intAt(o, "ldb", 0, kMaxInt32);
    c.ldd = intAt(o, "ldd", 0, kMaxInt32);
    c.batch = intAt(o, "batch", 0, kMaxInt32);
    c.strideA = intAt(o, "strideA", 0, kMaxBytes);
    c.strideB = intAt(o, "strideB", 0, kMaxBytes);
    c.strideD = intAt(o, "strideD", 0, kMaxBytes);
    checkMatrix(c.a, c.transA ? c.k : c.m, c.transA ? c.m : c.k, c.lda, c.batch, c.strideA, "a");
    checkMatrix(c.b, c.transB ? c.n : c.k, c.transB ? c.k : c.n, c.ldb, c.batch, c.strideB, "b");
    checkMatrix(c.d, c.m, c.n, c.ldd, c.batch, c.strideD, "d");
    std::string name = stringAt(o, "epilogue");
    const Epilogue* e = nullptr;
    for (const Epilogue& x : kEpilogues)
      if (x.name == name) e = &x;
    if (!e) fail(str("unknown epilogue '", name, "'"));
    c.epilogue = e->value;
    c.epilogueName = name;
    if (e->bias != (c.bias >= 0)) fail(str("epilogue ", name, (e->bias ? " needs a bias" : " takes no bias")));
    if (e->aux != (c.aux >= 0))
      fail(str("epilogue ", name, (e->aux ? " needs an aux buffer" : " takes no aux buffer")));
    if (c.bias >= 0 && typeOf(c.bias).numElements() < c.m)
      fail(str("the bias b", c.bias, " has fewer than ", c.m, " elements"));
    if (c.aux >= 0) checkMatrix(c.aux, c.m, c.n, c.m, 1, 0, "aux");
    return c;
  }

  const json& j_;
  const Plan& plan_;
  CudaProgram p_;
};

}  // namespace

std::string serializeProgram(const CudaProgram& p) {
  ojson modules = ojson::array(), steps = ojson::array();
  for (const ModuleImage& m : p.modules) modules.push_back(m.name);
  for (const StepProgram& s : p.steps) {
    ojson launches = ojson::array();
    for (const KernelLaunch& l : s.launches) launches.push_back(writeLaunch(l));
    ojson o{{"mode", s.mode == StepMode::Host ? "host" : "device"}, {"note", s.note}};
    if (s.matmul) o["matmul"] = writeMatmul(*s.matmul);
    o["launches"] = std::move(launches);
    steps.push_back(std::move(o));
  }
  ojson o{{"arch", p.arch},
          {"scratchBytes", p.scratchBytes},
          {"matmulWorkspaceBytes", p.matmulWorkspaceBytes},
          {"modules", std::move(modules)},
          {"steps", std::move(steps)}};
  return o.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

Expected<CudaProgram> parseProgram(std::string_view text, const Plan& plan) {
  return parseJson<CudaProgram>(text, "cuda program", [&](const json& j) {
    return within("cuda program", [&] { return ProgramReader(j, plan).run(); });
  });
}

}  // namespace kfuse::cuda
