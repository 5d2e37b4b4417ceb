#include "codegen/cuda/gemm_emitter.h"

#include <algorithm>

#include "codegen/cuda/scalar_emitter.h"
#include "ir/support/strings.h"

namespace kfuse::cuda {

bool readOutsideStep(const Plan& plan, int buffer, size_t self) {
  int storage = plan.storageOf(buffer);
  auto same = [&](int b) { return b >= 0 && plan.storageOf(b) == storage; };
  for (int o : plan.outputs)
    if (same(o)) return true;
  for (const auto& [param, b] : plan.updates)
    if (same(b)) return true;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    if (i == self) continue;
    const Step& s = plan.steps[i];
    for (const auto& buffers : s.kernelBuffers)
      for (int b : buffers)
        if (same(b)) return true;
    if (s.kind() == StepKind::Reference)
      for (int b : s.reference().inputs)
        if (same(b)) return true;
    if (s.kind() == StepKind::Collective)
      for (int b : s.collective().inputs)
        if (same(b)) return true;
    if (s.kind() == StepKind::Gemm && (same(s.gemm().a) || same(s.gemm().b))) return true;
    if (s.kind() == StepKind::Conv &&
        (same(s.conv().operands().first) || same(s.conv().operands().second) || same(s.conv().bias)))
      return true;
  }
  return false;
}

namespace {

constexpr int kThreads = 256;

bool isFloatStorage(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64; }

// kf_dt<> codes of the GEMM prelude (DType's order).
int dtCode(DType t) { return t == DType::F32 ? 0 : t == DType::F16 ? 1 : t == DType::BF16 ? 2 : 3; }

// The epilogue of a GEMM or convolution step and how it runs.
struct EpilogueCode {
  bool present = false;
  bool pointwise = false;
  bool storeProduct = true;
  std::string functions;
  std::string pointPrefix;  // "kf_epi(b3, b4" : the point call's buffer arguments
  std::string barrierCall;  // the whole call of barrier mode
  size_t smemBytes = 0;
  size_t scratchBytes = 0;  // after the barrier's 16 bytes
  std::string what;
};

Expected<EpilogueCode> prepareEpilogue(const Plan& plan, const Step& step, size_t self, int product,
                                       const Shape& productShape, DType accType, int64_t grid, EntryParams& params) {
  EpilogueCode e;
  e.storeProduct = readOutsideStep(plan, product, self);
  if (step.kernels.empty()) {
    e.storeProduct = true;
    return e;
  }
  e.present = true;
  const kernel::Kernel& k = plan.kernels[static_cast<size_t>(step.kernels[0])];
  const std::vector<int>& buffers = step.kernelBuffers[0];
  e.what = "@" + k.name;
  int productBuffer = -1;
  for (size_t i = 0; i < buffers.size(); ++i)
    if (!k.buffers[i].output && plan.storageOf(buffers[i]) == plan.storageOf(product)) productBuffer = static_cast<int>(i);
  e.pointwise = isPointwiseEpilogue(k, productBuffer, productShape);
  std::vector<std::string> args;
  for (size_t b = 0; b < k.buffers.size(); ++b) args.push_back(params.use(buffers[b], k.buffers[b].output));
  std::string name = deviceName(k.name);
  if (e.pointwise) {
    KernelEmitContext ctx = kernelContext(plan, k, buffers);
    e.functions = emitPointFunction(k, name, productBuffer, accType, ctx);
    e.pointPrefix = str(name, "(", join(args));
    return e;
  }
  e.storeProduct = true;
  EmitOptions opts;
  opts.threads = kThreads;
  opts.fixedBlocks = grid;
  KernelEmitContext ctx = kernelContext(plan, k, buffers, product);
  KF_ASSIGN_OR_RETURN(KernelFunction fn, emitKernelFunction(k, name, opts, ctx));
  e.functions = fn.source;
  e.smemBytes = fn.schedule.smemBytes;
  e.scratchBytes = fn.schedule.scratchBytes;
  if (fn.schedule.scratchBytes > 0) args.push_back("scratch + 16");
  args.push_back("(int)blockIdx.x");
  args.push_back("(int)gridDim.x");
  e.barrierCall = str(name, "(", join(args), ");");
  return e;
}

// What happens to one element of the product: stored, and/or handed to the
// pointwise epilogue with its indices.
void emitSink(CodeWriter& w, const EpilogueCode& e, const std::string& store, const std::vector<std::string>& index,
              const std::string& value) {
  if (e.storeProduct) w.line(store);
  if (e.pointwise) w.line(e.pointPrefix, ", ", join(index), ", ", value, ");");
}

StepSource finish(const Plan& plan, const Step& step, const EpilogueCode& e, EntryParams& params, const std::string& body,
                  int64_t grid, size_t mainSmem, const std::string& what) {
  StepSource out;
  out.name = step.name;
  bool barrier = e.present && !e.pointwise;
  KernelLaunch launch;
  launch.entry = "kfuse_entry";
  launch.block = kThreads;
  launch.grid = static_cast<uint32_t>(grid);
  launch.sharedBytes = static_cast<uint32_t>(std::max(mainSmem, e.smemBytes));
  launch.cooperative = barrier;
  launch.args = params.buffers();
  launch.what = e.present ? str(what, " + ", e.what) : what;
  std::string decls = params.declarations();
  if (barrier) {
    decls += ", unsigned char* scratch";
    launch.scratch = 0;
    out.scratchBytes = 16 + e.scratchBytes;
  }
  CodeWriter w;
  w.open("extern \"C\" __global__ void __launch_bounds__(", kThreads, ") kfuse_entry(", decls, ")");
  w.raw(body);
  if (barrier) {
    w.line("// the epilogue reads the product other blocks wrote: all blocks meet first");
    w.line("kf_grid_barrier((kf_u32*)scratch, gridDim.x);");
    w.line(e.barrierCall);
  }
  w.close();
  out.source = unitHeader(step.name, launch.what, true) + "\n" + e.functions + "\n" + w.text();
  out.note = !e.present ? str("generated ", what)
             : e.pointwise ? str("generated ", what, ", epilogue in registers")
                           : str("generated ", what, ", epilogue after a grid barrier (cooperative)");
  out.launches.push_back(std::move(launch));
  return out;
}

// The body's indentation inside the entry.
std::string indented(const CodeWriter& w) {
  std::string out;
  const std::string& text = w.text();
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out += "  " + text.substr(start, end - start);
    out += "\n";
    start = end + 1;
  }
  return out;
}

}  // namespace

Expected<StepSource> emitGemmStep(const Plan& plan, size_t self, const StepEmitOptions& opts) {
  const Step& step = plan.steps[self];
  const GemmSpec& g = step.gemm();
  auto dtype = [&](int b) { return plan.buffers[static_cast<size_t>(b)].type.dtype; };
  DType da = dtype(g.a), db = dtype(g.b), dc = dtype(g.c);
  if (!isFloatStorage(da) || !isFloatStorage(db) || !isFloatStorage(dc) || ((da == DType::F64) != (db == DType::F64)))
    return Error(str("step ", step.name, ": no generated GEMM for ", dtypeName(da), " @ ", dtypeName(db), " -> ",
                     dtypeName(dc)));
  DType acc = da == DType::F64 ? DType::F64 : DType::F32;
  const int64_t tilesM = (g.m + 63) / 64, tilesN = (g.n + 63) / 64, batches = numElements(g.batch);
  const int64_t items = batches * tilesM * tilesN;
  const int64_t grid = std::clamp<int64_t>(items, 1, opts.kernel.maxBlocks);
  Shape productShape = g.batch;
  productShape.push_back(g.m);
  productShape.push_back(g.n);

  EntryParams params(plan);
  std::string pa = params.use(g.a, false), pb = params.use(g.b, false);
  KF_ASSIGN_OR_RETURN(EpilogueCode e, prepareEpilogue(plan, step, self, g.c, productShape, acc, grid, params));
  std::string pc = e.storeProduct ? params.use(g.c, true) : "";

  CodeWriter w;
  std::string t = std::string(computeCType(acc));
  w.line("// C[", formatDims(productShape), "] = ", g.transA ? "A^T" : "A", " @ ", g.transB ? "B^T" : "B",
         " in 64x64 tiles, ", items, " tile(s)");
  w.line(t, " acc[4][4];");
  w.line("const int tx = (int)threadIdx.x % 16, ty = (int)threadIdx.x / 16;");
  {
    Block loop(w, "for (kf_i64 item = blockIdx.x; item < ", items, "; item += gridDim.x)");
    w.line("const kf_i64 tile = item % ", tilesM * tilesN, ";");
    w.line("[[maybe_unused]] const kf_i64 batch = item / ", tilesM * tilesN, ";");
    w.line("const kf_i64 row0 = tile / ", tilesN, " * 64, col0 = tile % ", tilesN, " * 64;");
    std::vector<std::string> index;
    std::string aoff = "0", boff = "0", coff = "0";
    {
      std::string rest = "batch";
      for (size_t d = g.batch.size(); d-- > 0;) {
        std::string z = str("z", d);
        if (d == 0) {
          w.line("[[maybe_unused]] const kf_i64 ", z, " = ", rest, ";");
        } else {
          w.line("[[maybe_unused]] const kf_i64 ", z, " = ", rest, " % ", g.batch[d], ";");
          w.line("const kf_i64 zq", d, " = ", rest, " / ", g.batch[d], ";");
          rest = str("zq", d);
        }
        if (g.aBatchStrides[d]) aoff += str(" + ", z, " * ", g.aBatchStrides[d]);
        if (g.bBatchStrides[d]) boff += str(" + ", z, " * ", g.bBatchStrides[d]);
        if (g.cBatchStrides[d]) coff += str(" + ", z, " * ", g.cBatchStrides[d]);
      }
      for (size_t d = 0; d < g.batch.size(); ++d) index.push_back(str("z", d));
    }
    w.line("kf_gemm_tile<", dtCode(da), ", ", dtCode(db), ", ", g.transA ? "true" : "false", ", ",
           g.transB ? "true" : "false", ">(", pa, " + ", aoff, ", ", pb, " + ", boff, ", ", g.m, ", ", g.n, ", ", g.k,
           ", row0, col0, acc, (", t, "*)kf_smem());");
    // Unrolled, so that acc stays in registers (indexing it with loop
    // variables would put it in local memory).
    w.line("#pragma unroll");
    Block i(w, "for (int i = 0; i < 4; ++i)");
    w.line("#pragma unroll");
    Block j(w, "for (int j = 0; j < 4; ++j)");
    w.line("const kf_i64 row = row0 + ty + 16 * i, col = col0 + tx + 16 * j;");
    Block inside(w, "if (row < ", g.m, " && col < ", g.n, ")");
    index.push_back("row");
    index.push_back("col");
    emitSink(w, e, str(pc, "[", coff, " + row * ", g.n, " + col] = kf_dt<", dtCode(dc), ">::store(acc[i][j]);"), index,
             "acc[i][j]");
  }
  size_t smem = 2 * 16 * 64 * dtypeSize(acc);
  return finish(plan, step, e, params, indented(w), grid, smem,
                str("matmul ", g.m, "x", g.k, " @ ", g.k, "x", g.n,
                    g.batch.empty() ? std::string() : str(" batch ", formatDims(g.batch))));
}

namespace {

// Index expressions of a convolution's tensors in their memory order.
struct ConvIndex {
  const ConvSpec& c;
  int64_t cpg() const { return c.c / c.groups; }
  std::string x(const std::string& n, const std::string& ci, const std::string& iy, const std::string& ix) const {
    return c.channelsLast ? str("((", n, " * ", c.h, " + ", iy, ") * ", c.wd, " + ", ix, ") * ", c.c, " + ", ci)
                          : str("((", n, " * ", c.c, " + ", ci, ") * ", c.h, " + ", iy, ") * ", c.wd, " + ", ix);
  }
  std::string w(const std::string& o, const std::string& cc, const std::string& ky, const std::string& kx) const {
    return c.filterLast ? str("((", o, " * ", c.kh, " + ", ky, ") * ", c.kw, " + ", kx, ") * ", cpg(), " + ", cc)
                        : str("((", o, " * ", cpg(), " + ", cc, ") * ", c.kh, " + ", ky, ") * ", c.kw, " + ", kx);
  }
  std::string y(const std::string& n, const std::string& o, const std::string& oy, const std::string& ox) const {
    return c.channelsLast ? str("((", n, " * ", c.oh, " + ", oy, ") * ", c.ow, " + ", ox, ") * ", c.o, " + ", o)
                          : str("((", n, " * ", c.o, " + ", o, ") * ", c.oh, " + ", oy, ") * ", c.ow, " + ", ox);
  }
};

// Splits flat index e into the named dims (outermost first) of the given
// extents, declaring each; returns the names.
std::vector<std::string> unflatten(CodeWriter& w, const std::vector<std::pair<std::string, int64_t>>& dims) {
  std::string rest = "e";
  for (size_t i = dims.size(); i-- > 1;) {
    std::string q = str("q", i);
    w.line("const kf_i64 ", dims[i].first, " = ", rest, " % ", dims[i].second, ", ", q, " = ", rest, " / ",
           dims[i].second, ";");
    rest = q;
  }
  w.line("const kf_i64 ", dims[0].first, " = ", rest, ";");
  std::vector<std::string> names;
  for (const auto& d : dims) names.push_back(d.first);
  return names;
}

// The loops of one result element: the operands a (x, or dy backward) and
// b (w, or x for dw) read through `loadA` / `loadB` ("kf_dt<0>::load(b3[" ...
// "])" around an index), summed into `acc`.
struct ConvLoops {
  const ConvSpec& c;
  CodeWriter& w;
  std::string loadA, loadB;  // prefixes: "kf_dt<0>::load(b3["

  std::string mul(const std::string& ia, const std::string& ib) const {
    return str("acc += ", loadA, ia, "]) * ", loadB, ib, "]);");
  }

  // The result element's indices, from the flat index e.
  std::vector<std::string> declareIndex() const {
    ConvIndex ix{c};
    switch (c.direction) {
      case ConvDirection::Forward:
        return c.channelsLast ? unflatten(w, {{"n", c.n}, {"oh", c.oh}, {"ow", c.ow}, {"o", c.o}})
                              : unflatten(w, {{"n", c.n}, {"o", c.o}, {"oh", c.oh}, {"ow", c.ow}});
      case ConvDirection::GradInput:
        return c.channelsLast ? unflatten(w, {{"n", c.n}, {"iy", c.h}, {"ix", c.wd}, {"ci", c.c}})
                              : unflatten(w, {{"n", c.n}, {"ci", c.c}, {"iy", c.h}, {"ix", c.wd}});
      case ConvDirection::GradWeight:
        return c.filterLast ? unflatten(w, {{"o", c.o}, {"ky", c.kh}, {"kx", c.kw}, {"cc", ix.cpg()}})
                            : unflatten(w, {{"o", c.o}, {"cc", ix.cpg()}, {"ky", c.kh}, {"kx", c.kw}});
    }
    return {};
  }

  void sum() const {
    switch (c.direction) {
      case ConvDirection::Forward: return forward();
      case ConvDirection::GradInput: return gradInput();
      case ConvDirection::GradWeight: return gradWeight();
    }
  }

  // y: the window of one output pixel over the group's input channels.
  void forward() const {
    ConvIndex ix{c};
    w.line("const kf_i64 group = o / ", c.o / c.groups, ";");
    Block ch(w, "for (kf_i64 cc = 0; cc < ", ix.cpg(), "; ++cc)");
    w.line("const kf_i64 ci = group * ", ix.cpg(), " + cc;");
    Block ky(w, "for (kf_i64 ky = 0; ky < ", c.kh, "; ++ky)");
    w.line("const kf_i64 iy = oh * ", c.strideH, " - ", c.padTop, " + ky * ", c.dilH, ";");
    w.line("if (iy < 0 || iy >= ", c.h, ") continue;");
    Block kx(w, "for (kf_i64 kx = 0; kx < ", c.kw, "; ++kx)");
    w.line("const kf_i64 ix = ow * ", c.strideW, " - ", c.padLeft, " + kx * ", c.dilW, ";");
    w.line("if (ix < 0 || ix >= ", c.wd, ") continue;");
    w.line(mul(ix.x("n", "ci", "iy", "ix"), ix.w("o", "cc", "ky", "kx")));
  }

  // dx: dy over the output pixels whose windows read this input element
  // (the taps where the row and column minus the tap's offset fall on the
  // stride), times the filter values they read it with.
  void gradInput() const {
    ConvIndex ix{c};
    const int64_t opg = c.o / c.groups;
    w.line("const kf_i64 group = ci / ", ix.cpg(), ", cc = ci % ", ix.cpg(), ";");
    Block ky(w, "for (kf_i64 ky = 0; ky < ", c.kh, "; ++ky)");
    w.line("const kf_i64 ty = iy + ", c.padTop, " - ky * ", c.dilH, ";");
    w.line("if (ty < 0 || ty % ", c.strideH, " != 0 || ty / ", c.strideH, " >= ", c.oh, ") continue;");
    w.line("const kf_i64 oh = ty / ", c.strideH, ";");
    Block kx(w, "for (kf_i64 kx = 0; kx < ", c.kw, "; ++kx)");
    w.line("const kf_i64 tx = ix + ", c.padLeft, " - kx * ", c.dilW, ";");
    w.line("if (tx < 0 || tx % ", c.strideW, " != 0 || tx / ", c.strideW, " >= ", c.ow, ") continue;");
    w.line("const kf_i64 ow = tx / ", c.strideW, ";");
    Block oc(w, "for (kf_i64 oo = 0; oo < ", opg, "; ++oo)");
    w.line("const kf_i64 o = group * ", opg, " + oo;");
    w.line(mul(ix.y("n", "o", "oh", "ow"), ix.w("o", "cc", "ky", "kx")));
  }

  // dw: dy times the input this tap read, over every image and output pixel.
  void gradWeight() const {
    ConvIndex ix{c};
    w.line("const kf_i64 ci = o / ", c.o / c.groups, " * ", ix.cpg(), " + cc;");
    Block n(w, "for (kf_i64 n = 0; n < ", c.n, "; ++n)");
    Block oh(w, "for (kf_i64 oh = 0; oh < ", c.oh, "; ++oh)");
    w.line("const kf_i64 iy = oh * ", c.strideH, " - ", c.padTop, " + ky * ", c.dilH, ";");
    w.line("if (iy < 0 || iy >= ", c.h, ") continue;");
    Block ow(w, "for (kf_i64 ow = 0; ow < ", c.ow, "; ++ow)");
    w.line("const kf_i64 ix = ow * ", c.strideW, " - ", c.padLeft, " + kx * ", c.dilW, ";");
    w.line("if (ix < 0 || ix >= ", c.wd, ") continue;");
    w.line(mul(ix.y("n", "o", "oh", "ow"), ix.x("n", "ci", "iy", "ix")));
  }
};

}  // namespace

// A direct convolution in any direction, one element of the result per
// thread (grid-stride), with the step's epilogue.
Expected<StepSource> emitConvStep(const Plan& plan, size_t self, const StepEmitOptions& opts) {
  const Step& step = plan.steps[self];
  const ConvSpec& c = step.conv();
  auto dtype = [&](int b) { return plan.buffers[static_cast<size_t>(b)].type.dtype; };
  const auto [a, b] = c.operands();
  const int result = c.result();
  DType da = dtype(a), db = dtype(b), dr = dtype(result);
  if (!isFloatStorage(da) || !isFloatStorage(db) || !isFloatStorage(dr) || (c.bias >= 0 && !isFloatStorage(dtype(c.bias))))
    return Error(str("step ", step.name, ": no generated convolution for ", dtypeName(da), " and ", dtypeName(db)));
  if (c.groups <= 0 || c.c % c.groups != 0 || c.o % c.groups != 0)
    return Error(str("step ", step.name, ": ", c.groups, " groups do not divide the channels"));
  if (c.bias >= 0 && c.direction != ConvDirection::Forward)
    return Error(str("step ", step.name, ": a bias in a backward convolution"));
  DType acc = dr == DType::F64 ? DType::F64 : DType::F32;
  const std::string t(computeCType(acc));
  const Shape& resultShape = plan.buffers[static_cast<size_t>(result)].type.shape;
  const int64_t total = numElements(resultShape);
  const int64_t grid = std::clamp<int64_t>((total + kThreads - 1) / kThreads, 1, opts.kernel.maxBlocks);
  const int64_t cpg = c.c / c.groups;

  EntryParams params(plan);
  std::string pa = params.use(a, false), pb = params.use(b, false);
  std::string pbias = c.bias >= 0 ? params.use(c.bias, false) : "";
  KF_ASSIGN_OR_RETURN(EpilogueCode e, prepareEpilogue(plan, step, self, result, resultShape, acc, grid, params));
  std::string pr = e.storeProduct ? params.use(result, true) : "";

  CodeWriter w;
  const std::string_view dir = c.direction == ConvDirection::Forward ? "" : convDirectionName(c.direction);
  w.line("// direct convolution", dir.empty() ? "" : str(" ", dir), ", one result element per thread: ", c.n, "x", c.c,
         "x", c.h, "x", c.wd, " (", c.channelsLast ? "NHWC" : "NCHW", ") * ", c.o, "x", cpg, "x", c.kh, "x", c.kw, " (",
         c.filterLast ? "OHWI" : "OIHW", "), ", c.groups, " group(s)");
  std::vector<std::string> index;
  {
    Block loop(w, "for (kf_i64 e = (kf_i64)blockIdx.x * ", kThreads, " + threadIdx.x; e < ", total,
               "; e += (kf_i64)gridDim.x * ", kThreads, ")");
    ConvLoops loops{c, w, str("kf_dt<", dtCode(da), ">::load(", pa, "["), str("kf_dt<", dtCode(db), ">::load(", pb, "[")};
    index = loops.declareIndex();
    w.line(t, " acc = ",
           c.bias >= 0 ? str("kf_dt<", dtCode(dtype(c.bias)), ">::load(", pbias, "[o])") : str("(", t, ")0"), ";");
    {
      Block body(w, "");
      loops.sum();
    }
    emitSink(w, e, str(pr, "[e] = kf_dt<", dtCode(dr), ">::store(acc);"), index, "acc");
  }
  std::string what = str("conv2d", dir.empty() ? "" : str(" ", dir), " ", c.n, "x", c.c, "x", c.h, "x", c.wd, " * ", c.o,
                         "x", cpg, "x", c.kh, "x", c.kw);
  return finish(plan, step, e, params, indented(w), grid, 0, what);
}

}  // namespace kfuse::cuda
