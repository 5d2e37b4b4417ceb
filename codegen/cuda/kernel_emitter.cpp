#include "codegen/cuda/kernel_emitter.h"

#include <functional>
#include <map>
#include <unordered_set>

#include "codegen/cuda/scalar_emitter.h"
#include "codegen/kernel/kernel_walk.h"
#include "ir/support/strings.h"

namespace kfuse::cuda {
namespace {

using kernel::Combiner;
using kernel::Kernel;
using kernel::StoreScope;

const char* combinerMacro(Combiner c) {
  switch (c) {
    case Combiner::Sum: return "KF_SUM";
    case Combiner::Max: return "KF_MAX";
    case Combiner::Min: return "KF_MIN";
  }
  return "KF_SUM";
}

// The fold's starting value, as the CPU backend's (max of no bools: false).
std::string initExpr(Combiner c, DType t) {
  if (t == DType::Bool) return c == Combiner::Min ? "true" : "false";
  if (t == DType::I64)
    return c == Combiner::Sum ? "0ll" : c == Combiner::Max ? "(-0x7fffffffffffffffll - 1)" : "0x7fffffffffffffffll";
  return constantExpr(kernel::combinerInit(c), t);
}

std::string combineExpr(Combiner c, const std::string& acc, const std::string& v) {
  return str("kf_combine<", combinerMacro(c), ">(", acc, ", ", v, ")");
}

// Globals' partials live in 8-byte slots; bools travel as i64.
DType partialType(DType acc) { return acc == DType::Bool ? DType::I64 : acc; }

// Vector-path state shared by the lanes of one chunk.
struct ChunkLoads {
  int vec = 1;
  std::vector<int64_t> innerStride;  // per access: 0 or 1
  std::map<size_t, std::string> loaded;  // load -> kf_vec (stride 1) or scalar (stride 0) variable
};

using P = kernel::Point<std::string>;

// The kernel walk (codegen/kernel/kernel_walk.h) as CUDA C: the schedule's
// thread mapping (kernel_schedule.h) around the walker's sections; offsets
// and indices are C expressions, values `const` variables.
class FunctionEmitter final : public kernel::KernelWalk<std::string> {
 public:
  FunctionEmitter(const Kernel& k, std::string name, const EmitOptions& opts, const KernelEmitContext& ctx)
      : KernelWalk(k), name_(std::move(name)), opts_(opts), ctx_(ctx), spaces_(s_.spaces),
        sched_(scheduleKernel(k, s_, opts)), idx_(sched_.wideIndex ? "kf_i64" : "int") {}

  KernelFunction run();
  std::string pointFunction(int productBuffer, DType accType);

 private:
  // values and effects
  std::string loadValue(const P& p, size_t i) override;
  std::string gatheredValue(const P& p, size_t i, std::string index) override;
  std::string gatheredOffset(const P& p, size_t access, const kernel::Gathered& g, const std::string& index);
  std::string elementRead(int b, const std::string& offset) const;
  std::string indexValue(const P& p, size_t d) override { return str("(kf_i64)(", p.index[d], ")"); }
  std::string accumulatorValue(size_t r) override { return accNames_[r]; }
  std::string globalValue(size_t g) override { return globalNames_[g]; }
  std::string convert(std::string v, DType from, DType to) override { return convertExpr(v, from, to); }
  std::string scalarNode(const ScalarNode& n, const std::vector<std::string>& args) override {
    return ScalarEmitter(w_).node(n, args);
  }
  void storeValue(const P& p, size_t s, std::string v) override;
  void scatterValue(const P& p, size_t s, std::string v, std::string index) override;
  void foldReduction(size_t r, std::string v) override {
    w_.line(accNames_[r], " = ", combineExpr(k_.reductions[r].combiner, accNames_[r], v), ";");
  }
  void foldGlobal(size_t g, std::string v) override {
    const kernel::Global& gl = g < k_.prologue.size() ? k_.prologue[g] : k_.globals[g - k_.prologue.size()];
    w_.line(globalNames_[g], " = ", combineExpr(gl.combiner, globalNames_[g], v), ";");
  }

  // structure: the thread mapping
  void declareGlobal(size_t g) override;
  void prologueLoop(const Body& body) override;
  void afterPrologue() override;
  void mainLoops() override {
    if (sched_.strategy == Strategy::Elementwise) {
      emitElementwise();
    } else {
      emitRows();
    }
  }
  void beginGroup(size_t first, size_t last, const P&) override {
    for (size_t r = first; r < last; ++r)
      w_.line(computeCType(s_.accumulators[r]), " ", accNames_[r], " = ",
              initExpr(k_.reductions[r].combiner, s_.accumulators[r]), ";");
  }
  void reduceLoop(const P&, size_t, size_t, const Body& body) override { teamRowLoop(body); }
  void endGroup(size_t first, size_t last) override {
    for (size_t r = first; r < last; ++r) emitTeamReduce(k_.reductions[r].combiner, s_.accumulators[r], accNames_[r]);
  }
  void elementLoop(const P&, const Body& body) override { teamRowLoop(body); }
  // Row stores and globals read row-invariant values: the row's first point.
  void rowLevel(const P& p, const Body& body) override {
    Block rowLevel(w_, "if (active && ty == 0)");
    body(p);
  }
  void finish() override { emitGlobalsFinish(); }

  std::string bufferName(int b) const { return k_.buffers[static_cast<size_t>(b)].name; }
  int accessBuffer(size_t a) const {
    return a < k_.loads.size() ? k_.loads[a].buffer : k_.stores[a - k_.loads.size()].buffer;
  }
  int64_t accessBase(size_t a) const {
    return a < k_.loads.size() ? k_.loads[a].map.base : k_.stores[a - k_.loads.size()].map.base;
  }

  std::string signature(bool point);
  // Offsets of every access for a point of `outer` (and `reduce`) space indices.
  std::vector<std::string> offsets(const std::vector<std::string>& outer, const std::vector<std::string>* reduce);
  // The index of every kernel dim from space indices.
  std::vector<std::string> kernelIndex(const std::vector<std::string>& outer, const std::vector<std::string>* reduce);
  std::vector<std::string> decompose(const Space& space, const std::string& linear, const std::string& prefix);
  // The point of outer space indices `outer` at reduce index 0.
  P rowStart(const std::vector<std::string>& outer);
  // The current row's points, the team's threads taking every teamY-th.
  void teamRowLoop(const Body& body);

  void emitElementwise();
  void emitRows();
  void emitTeamReduce(Combiner c, DType t, const std::string& var);
  void emitGlobalsFinish();

  std::string name_;
  const EmitOptions& opts_;
  const KernelEmitContext& ctx_;
  const KernelSpaces& spaces_;
  KernelSchedule sched_;
  std::string idx_;
  CodeWriter w_;
  // Leaf names: accumulators of the current row, globals.
  std::vector<std::string> accNames_, globalNames_;
  // Row strategies: the current row's outer space indices.
  std::vector<std::string> rowOuter_;
  // The elementwise fast path: the chunk and lane being written, and the
  // vector variables of its stride-1 stores (by access).
  ChunkLoads* chunk_ = nullptr;
  int lane_ = 0;
  const std::map<size_t, std::string>* vectorStores_ = nullptr;
  // Point functions: the product's buffer and the variable it is in.
  int productBuffer_ = -1;
  std::string productValue_;
  DType productType_ = DType::F32;
};

std::string FunctionEmitter::loadValue(const P& p, size_t i) {
  int b = k_.loads[i].buffer;
  DType storage = k_.buffers[static_cast<size_t>(b)].type.dtype;
  std::string raw;
  if (b == productBuffer_) {  // point functions: the product, rounded as a store would
    raw = storeConvertExpr(productValue_, productType_, storage);
  } else if (chunk_ && chunk_->innerStride[i] == 1) {
    auto it = chunk_->loaded.find(i);
    if (it == chunk_->loaded.end()) {
      std::string v = w_.fresh("vl");
      w_.line("const kf_vec<", storageCType(storage), ", ", chunk_->vec, "> ", v, " = kf_vload<", storageCType(storage),
              ", ", chunk_->vec, ">(", bufferName(b), " + ", p.offsets[i], ");");
      it = chunk_->loaded.emplace(i, v).first;
    }
    raw = str(it->second, ".v[", lane_, "]");
  } else {
    if (chunk_) {  // a broadcast load: once per chunk
      if (auto it = chunk_->loaded.find(i); it != chunk_->loaded.end()) return it->second;
    }
    raw = elementRead(b, p.offsets[i]);
  }
  std::string v = w_.fresh("L");
  w_.line("const ", computeCType(computeType(storage)), " ", v, " = ", loadConvertExpr(raw, storage), ";");
  if (chunk_ && chunk_->innerStride[i] == 0) chunk_->loaded.emplace(i, v);
  return v;
}

// Buffer b's element at `offset` (a C expression): through the L2 where
// this launch wrote the buffer before (__ldcg), else a plain read.
std::string FunctionEmitter::elementRead(int b, const std::string& offset) const {
  bool coherent = !ctx_.writtenBefore.empty() && ctx_.writtenBefore[static_cast<size_t>(b)];
  return coherent ? str("__ldcg(", bufferName(b), " + ", offset, ")") : str(bufferName(b), "[", offset, "]");
}

// Access `a`'s element offset at the row gatheredRow picks
// (exec/kernel_ir.h), as a kf_i64 expression.
std::string FunctionEmitter::gatheredOffset(const P& p, size_t a, const kernel::Gathered& g, const std::string& index) {
  std::string row = w_.fresh("row");
  w_.line("const kf_i64 ", row, " = kf_imin(kf_imax(", index, " < 0 ? ", index, " + ", g.size, "LL : ", index, ", 0LL), ",
          g.size - 1, "LL);");
  // In a chunk, p's offsets are the chunk's first lane's.
  const int64_t lane = chunk_ && chunk_->innerStride[a] == 1 ? lane_ : 0;
  return str("(kf_i64)(", p.offsets[a], ") + ", lane, " + ", row, " * ", g.stride, "LL");
}

// A gathered load reads one element per point (its row may differ from
// lane to lane).
std::string FunctionEmitter::gatheredValue(const P& p, size_t i, std::string index) {
  const kernel::Load& l = k_.loads[i];
  DType storage = k_.buffers[static_cast<size_t>(l.buffer)].type.dtype;
  std::string at = gatheredOffset(p, i, *l.gathered, index);
  std::string raw = elementRead(l.buffer, str("(", at, ")"));
  std::string v = w_.fresh("L");
  w_.line("const ", computeCType(computeType(storage)), " ", v, " = ", loadConvertExpr(raw, storage), ";");
  return v;
}

// A scatter-add: one thread adds a row's points in order (kernel_schedule.h
// gives scatters a thread per outer point).
void FunctionEmitter::scatterValue(const P& p, size_t s, std::string v, std::string index) {
  const kernel::Store& st = k_.stores[s];
  DType storage = k_.buffers[static_cast<size_t>(st.buffer)].type.dtype, t = computeType(storage);
  std::string at = gatheredOffset(p, k_.loads.size() + s, *st.gathered, index);
  std::string element = str(bufferName(st.buffer), "[", at, "]");
  std::string old = w_.fresh("old");
  w_.line("const ", computeCType(t), " ", old, " = ", loadConvertExpr(element, storage), ";");
  std::string add = convertExpr(v, st.value->type, t);
  std::string sum = t == DType::Bool ? str("(", old, " || ", add, ")") : str("(", old, " + ", add, ")");
  w_.line(element, " = ", storeConvertExpr(sum, t, storage), ";");
}

// With a chunk, stride-1 stores go to the lane of their vector variable.
void FunctionEmitter::storeValue(const P& p, size_t s, std::string v) {
  const kernel::Store& st = k_.stores[s];
  DType storage = k_.buffers[static_cast<size_t>(st.buffer)].type.dtype;
  std::string value = storeConvertExpr(v, st.value->type, storage);
  size_t access = k_.loads.size() + s;
  if (vectorStores_ && vectorStores_->count(access)) {
    w_.line(vectorStores_->at(access), ".v[", lane_, "] = ", value, ";");
  } else {
    w_.line(bufferName(st.buffer), "[", p.offsets[access], "] = ", value, ";");
  }
}

std::string FunctionEmitter::signature(bool point) {
  std::vector<std::string> params;
  for (size_t b = 0; b < k_.buffers.size(); ++b) {
    const kernel::Buffer& buf = k_.buffers[b];
    bool restrict = !ctx_.noAlias.empty() && ctx_.noAlias[b];
    params.push_back(str(buf.output ? "" : "const ", storageCType(buf.type.dtype), "* ",
                         restrict ? "__restrict__ " : "", buf.name));
  }
  if (point) {
    for (size_t d = 0; d < k_.outer.size(); ++d) params.push_back(str("kf_i64 i", d));
    params.push_back(str(computeCType(productType_), " product"));
  } else {
    if (sched_.scratchBytes > 0) params.push_back("unsigned char* scratch");
    params.push_back("int block");
    params.push_back("int nblocks");
  }
  return str("KF_FN void ", name_, "(", join(params), ")");
}

std::vector<std::string> FunctionEmitter::decompose(const Space& space, const std::string& linear,
                                                    const std::string& prefix) {
  std::vector<std::string> names(space.dims.size());
  if (space.dims.size() == 1) {
    names[0] = linear;
    return names;
  }
  std::string rest = linear;
  for (size_t d = space.dims.size(); d-- > 0;) {
    names[d] = w_.fresh(prefix);
    if (d == 0) {
      w_.line("[[maybe_unused]] const ", idx_, " ", names[d], " = ", rest, ";");
      break;
    }
    int64_t e = space.dims[d].extent;
    w_.line("[[maybe_unused]] const ", idx_, " ", names[d], " = ", rest, " % ", e, ";");
    std::string next = w_.fresh("q");
    w_.line("[[maybe_unused]] const ", idx_, " ", next, " = ", rest, " / ", e, ";");
    rest = next;
  }
  return names;
}

std::vector<std::string> FunctionEmitter::offsets(const std::vector<std::string>& outer,
                                                  const std::vector<std::string>* reduce) {
  std::vector<std::string> out;
  for (size_t a = 0; a < numAccesses(k_); ++a) {
    std::string term = offsetTerm(spaces_.outer, outer, a);
    if (reduce) {
      std::string r = offsetTerm(spaces_.reduce, *reduce, a);
      term = term.empty() ? r : r.empty() ? term : str(term, " + ", r);
    }
    int64_t base = accessBase(a);
    if (term.empty()) {
      out.push_back(std::to_string(base));
    } else {
      out.push_back(base == 0 ? term : str(base, " + ", term));
    }
  }
  return out;
}

std::vector<std::string> FunctionEmitter::kernelIndex(const std::vector<std::string>& outer,
                                                      const std::vector<std::string>* reduce) {
  std::vector<std::string> index(k_.numDims(), "0");
  for (size_t d = 0; d < spaces_.outer.dims.size(); ++d)
    if (spaces_.outer.dims[d].kernelDim >= 0) index[static_cast<size_t>(spaces_.outer.dims[d].kernelDim)] = outer[d];
  if (reduce)
    for (size_t d = 0; d < spaces_.reduce.dims.size(); ++d)
      if (spaces_.reduce.dims[d].kernelDim >= 0)
        index[static_cast<size_t>(spaces_.reduce.dims[d].kernelDim)] = (*reduce)[d];
  return index;
}

P FunctionEmitter::rowStart(const std::vector<std::string>& outer) {
  std::vector<std::string> zeros(spaces_.reduce.dims.size(), "0");
  return P{offsets(outer, nullptr), kernelIndex(outer, &zeros)};
}

void FunctionEmitter::declareGlobal(size_t g) {
  const kernel::Global& gl = g < k_.prologue.size() ? k_.prologue[g] : k_.globals[g - k_.prologue.size()];
  w_.line(computeCType(s_.globals[g]), " ", globalNames_[g], " = ", initExpr(gl.combiner, s_.globals[g]), ";");
}

// Every block folds the prologue over all outer points in the same order.
void FunctionEmitter::prologueLoop(const Body& body) {
  w_.line("// prologue globals: every block folds all ", spaces_.outer.points, " outer points, in the same order");
  Block loop(w_, "for (", idx_, " o = (", idx_, ")threadIdx.x; o < ", spaces_.outer.points, "; o += ", opts_.threads,
             ")");
  body(rowStart(decompose(spaces_.outer, "o", "p")));
}

void FunctionEmitter::afterPrologue() {
  for (size_t g = 0; g < k_.prologue.size(); ++g)
    w_.line(globalNames_[g], " = kf_block_reduce<", combinerMacro(k_.prologue[g].combiner), ">(", globalNames_[g],
            ", (", computeCType(s_.globals[g]), "*)kf_smem());");
}

void FunctionEmitter::emitElementwise() {
  const Space& space = spaces_.outer;
  const int64_t n = space.points;
  const std::string first = str("(", idx_, ")block * ", opts_.threads, " + (", idx_, ")threadIdx.x");
  const std::string stride = str("(", idx_, ")nblocks * ", opts_.threads);
  std::string start = "0";
  if (sched_.vec > 1) {
    const int vec = sched_.vec;
    ChunkLoads chunk;
    chunk.vec = vec;
    for (size_t a = 0; a < numAccesses(k_); ++a) chunk.innerStride.push_back(space.dims.back().strides[a]);
    // The fast path needs every unit-stride buffer aligned to its vector.
    std::vector<std::string> checks;
    std::unordered_set<int> seen;
    for (size_t a = 0; a < numAccesses(k_); ++a) {
      int b = accessBuffer(a);
      if (chunk.innerStride[a] != 1 || !seen.insert(b).second) continue;
      checks.push_back(str("kf_aligned(", bufferName(b), ", ",
                           dtypeSize(k_.buffers[static_cast<size_t>(b)].type.dtype) * static_cast<size_t>(vec), ")"));
    }
    w_.line(idx_, " start = 0;");
    start = "start";
    Block fast(w_, "if (", join(checks, " && "), ")");
    w_.line("// fast path: ", vec, " elements per thread and step, vector loads and stores");
    w_.line("const ", idx_, " chunks = ", n / vec, ";");
    {
      Block loop(w_, "for (", idx_, " c = ", first, "; c < chunks; c += ", stride, ")");
      std::vector<std::string> outer = decompose(space, str("c * ", vec), "d");
      std::vector<std::string> offs = offsets(outer, nullptr);
      std::map<size_t, std::string> vectorStores;
      for (size_t s = 0; s < k_.stores.size(); ++s) {
        size_t a = k_.loads.size() + s;
        if (chunk.innerStride[a] != 1) continue;
        std::string v = w_.fresh("vs");
        w_.line("kf_vec<", storageCType(k_.buffers[static_cast<size_t>(k_.stores[s].buffer)].type.dtype), ", ", vec, "> ",
                v, ";");
        vectorStores[a] = v;
      }
      chunk_ = &chunk;
      vectorStores_ = &vectorStores;
      for (int j = 0; j < vec; ++j) {
        std::vector<std::string> laneIndex = outer;
        if (!laneIndex.empty() && j > 0) laneIndex.back() = str("(", laneIndex.back(), " + ", j, ")");
        lane_ = j;
        wholePoint(P{offs, kernelIndex(laneIndex, nullptr)});
      }
      chunk_ = nullptr;
      vectorStores_ = nullptr;
      lane_ = 0;
      for (const auto& [a, v] : vectorStores) {
        const kernel::Store& st = k_.stores[a - k_.loads.size()];
        w_.line("kf_vstore(", bufferName(st.buffer), " + ", offs[a], ", ", v, ");");
      }
    }
    w_.line("start = chunks * ", vec, ";");
  }
  w_.line("// element by element", sched_.vec > 1 ? " (the remainder, or all of it when misaligned)" : "");
  Block loop(w_, "for (", idx_, " e = ", start, " + ", first, "; e < ", n, "; e += ", stride, ")");
  std::vector<std::string> outer = decompose(space, "e", "d");
  wholePoint(P{offsets(outer, nullptr), kernelIndex(outer, nullptr)});
}

void FunctionEmitter::emitTeamReduce(Combiner c, DType t, const std::string& var) {
  switch (sched_.strategy) {
    case Strategy::RowWarp: w_.line(var, " = kf_warp_reduce<", combinerMacro(c), ">(", var, ");"); break;
    case Strategy::RowBlock:
      w_.line(var, " = kf_block_reduce<", combinerMacro(c), ">(", var, ", (", computeCType(t), "*)kf_smem());");
      break;
    case Strategy::Column:
      w_.line(var, " = kf_column_reduce<", combinerMacro(c), ">(", var, ", (", computeCType(t), "*)kf_smem());");
      break;
    default: break;  // one thread per row
  }
}

void FunctionEmitter::teamRowLoop(const Body& body) {
  Block active(w_, "if (active)");
  Block loop(w_, "for (", idx_, " r = ty; r < ", spaces_.reduce.points, "; r += ", sched_.teamY, ")");
  std::vector<std::string> reduce = decompose(spaces_.reduce, "r", "s");
  body(P{offsets(rowOuter_, &reduce), kernelIndex(rowOuter_, &reduce)});
}

void FunctionEmitter::emitRows() {
  const int64_t n = spaces_.outer.points;
  const int threads = opts_.threads;
  switch (sched_.strategy) {
    case Strategy::RowThread: w_.line("[[maybe_unused]] const int tx = (int)threadIdx.x, ty = 0;"); break;
    case Strategy::RowWarp: w_.line("[[maybe_unused]] const int tx = (int)threadIdx.x / 32, ty = (int)threadIdx.x % 32;"); break;
    case Strategy::RowBlock: w_.line("[[maybe_unused]] const int tx = 0, ty = (int)threadIdx.x;"); break;
    default: w_.line("[[maybe_unused]] const int tx = (int)threadIdx.x % 32, ty = (int)threadIdx.x / 32;"); break;
  }
  w_.line("// rows ", sched_.teamX, " at a time per block, ", sched_.teamY, " thread(s) per row; ", threads,
          " threads");
  Block loop(w_, "for (", idx_, " base = (", idx_, ")block * ", sched_.teamX, "; base < ", n, "; base += (", idx_,
             ")nblocks * ", sched_.teamX, ")");
  w_.line("const ", idx_, " o = base + tx;");
  w_.line("[[maybe_unused]] const bool active = o < ", n, ";");
  rowOuter_ = decompose(spaces_.outer, "o", "d");
  outerPoint(rowStart(rowOuter_));
}

// Block partials, then the last block folds them in block order and writes
// the final stores.
void FunctionEmitter::emitGlobalsFinish() {
  std::vector<std::string> outerZeros(spaces_.outer.dims.size(), "0"), reduceZeros(spaces_.reduce.dims.size(), "0");
  const P origin{offsets(outerZeros, &reduceZeros), std::vector<std::string>(k_.numDims(), "0")};
  if (k_.globals.empty()) {
    if (!s_.finalStores) return;
    Block once(w_, "if (block == 0 && threadIdx.x == 0)");
    finalPoint(origin);
    return;
  }
  w_.line("// globals: block partials, folded in block order by the last block");
  const size_t np = k_.prologue.size();
  for (size_t g = 0; g < k_.globals.size(); ++g) {
    DType t = s_.globals[np + g];
    std::string& name = globalNames_[np + g];
    w_.line(name, " = kf_block_reduce<", combinerMacro(k_.globals[g].combiner), ">(", name, ", (", computeCType(t),
            "*)kf_smem());");
  }
  {
    Block publish(w_, "if (threadIdx.x == 0)");
    for (size_t g = 0; g < k_.globals.size(); ++g) {
      DType p = partialType(s_.globals[np + g]);
      w_.line("((", computeCType(p), "*)(scratch + ", sched_.globalOffsets[g], "))[block] = ",
              convertExpr(globalNames_[np + g], s_.globals[np + g], p), ";");
    }
  }
  Block last(w_, "if (kf_last_block((kf_u32*)scratch, (kf_u32)nblocks) && threadIdx.x == 0)");
  for (size_t g = 0; g < k_.globals.size(); ++g) {
    DType t = s_.globals[np + g], p = partialType(t);
    std::string& name = globalNames_[np + g];
    w_.line(name, " = ", initExpr(k_.globals[g].combiner, t), ";");
    Block fold(w_, "for (int b = 0; b < nblocks; ++b)");
    std::string part = convertExpr(str("__ldcg((const ", computeCType(p), "*)(scratch + ", sched_.globalOffsets[g],
                                       ") + b)"),
                                   p, t);
    w_.line(name, " = ", combineExpr(k_.globals[g].combiner, name, part), ";");
  }
  finalPoint(origin);
}

KernelFunction FunctionEmitter::run() {
  for (size_t r = 0; r < k_.reductions.size(); ++r) accNames_.push_back(str("acc", r));
  for (size_t g = 0; g < s_.numGlobals(); ++g) globalNames_.push_back(str("g", g));
  w_.line("// kernel @", k_.name, ": outer", formatDims(k_.outer),
          k_.reduce.empty() ? std::string() : str(" reduce", formatDims(k_.reduce)), "; ",
          strategyName(sched_.strategy), sched_.vec > 1 ? str(", vectors of ", sched_.vec) : std::string(), ", ",
          sched_.blocks, " block(s)");
  {
    Block fn(w_, signature(false));
    walk();
  }
  return {name_, w_.text(), sched_};
}

std::string FunctionEmitter::pointFunction(int productBuffer, DType accType) {
  productBuffer_ = productBuffer;
  productValue_ = "product";
  productType_ = accType;
  w_.line("// kernel @", k_.name, " per output element of the product (an epilogue in registers)");
  w_.open(signature(true));
  std::vector<std::string> index;
  for (size_t d = 0; d < k_.outer.size(); ++d) index.push_back(str("i", d));
  std::vector<std::string> offs;
  for (size_t a = 0; a < numAccesses(k_); ++a) {
    const kernel::IndexMap& m = a < k_.loads.size() ? k_.loads[a].map : k_.stores[a - k_.loads.size()].map;
    std::string term = std::to_string(m.base);
    for (size_t d = 0; d < k_.outer.size(); ++d)
      if (m.strides[d] != 0) term += str(" + i", d, " * ", m.strides[d]);
    offs.push_back(term);
  }
  wholePoint(P{offs, index});
  w_.close();
  return w_.text();
}

}  // namespace

Expected<KernelFunction> emitKernelFunction(const Kernel& k, const std::string& name, const EmitOptions& opts,
                                            const KernelEmitContext& ctx) {
  KF_RETURN_IF_ERROR(verifyKernel(k));
  if (Status s = kernel::checkKernelScalars(k, "CUDA"); !s) return Error(str("kernel @", k.name, ": ", s.message()));
  if (opts.threads < 64 || opts.threads % 64 != 0 || opts.threads > 1024)
    return Error(str("threads per block must be a multiple of 64 up to 1024, not ", opts.threads));
  return FunctionEmitter(k, name, opts, ctx).run();
}

bool isPointwiseEpilogue(const Kernel& k, int productBuffer, const Shape& productShape) {
  if (!k.reduce.empty() || !k.globals.empty() || !k.prologue.empty() || k.outer != productShape) return false;
  std::vector<int64_t> rowMajor = stridesOf(productShape);
  for (const auto& l : k.loads)
    if (l.buffer == productBuffer && (l.map.base != 0 || l.map.strides != rowMajor)) return false;
  for (const auto& s : k.stores)
    if (s.scope != StoreScope::Element) return false;
  return true;
}

std::string emitPointFunction(const Kernel& k, const std::string& name, int productBuffer, DType accType,
                              const KernelEmitContext& ctx) {
  EmitOptions opts;
  return FunctionEmitter(k, name, opts, ctx).pointFunction(productBuffer, accType);
}

}  // namespace kfuse::cuda
