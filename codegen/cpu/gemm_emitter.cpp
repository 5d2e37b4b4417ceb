#include "codegen/cpu/gemm_emitter.h"

#include <algorithm>
#include <functional>

#include "codegen/cpu/llvm_emitter.h"
#include "codegen/cpu/vector_code.h"
#include "ir/support/strings.h"
#include "exec/packed_gemm.h"

namespace kfuse::cpu {
namespace {

using llvm::Value;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

constexpr int64_t kPanelGroupBytes = int64_t{256} << 10;

class GemmEmitter {
 public:
  GemmEmitter(const PackedGemm& g, llvm::Module& m, const std::string& symbol)
      : gemm_(g), g_(g.spec), t_(g.tiling), code_(m, symbol, t_.lanes), b_(code_.b()),
        width_(int64_t{t_.vectors} * t_.lanes) {}

  Expected<llvm::Function*> run();

 private:
  Value* i64(int64_t v) { return code_.i64(v); }
  Status emitRows();
  Status emitPanels();
  int64_t panelGroup() const;
  void forEachRowBlock(const std::function<void(Value* row0, int rows)>& body);
  Status emitRowBlock(Value* row0, int rows);
  void emitColumnBlocks(Value* row0, int rows, int64_t firstBlock);
  void emitBlock(Value* row0, int rows, Value* col0, Value* panelBase, int vectors, int64_t partialFrom);
  Status emitEpilogue(Value* row0, int rows);

  const PackedGemm& gemm_;
  const GemmSpec& g_;
  GemmTiling t_;
  VectorCode code_;
  llvm::IRBuilder<>& b_;
  int64_t width_;  // columns per block
  Value *a_ = nullptr, *bp_ = nullptr, *c_ = nullptr;
  std::vector<llvm::AllocaInst*> acc_;  // row-major, t_.vectors per row
  std::vector<Value*> epilogueBuffers_;  // the epilogue kernel's, as byte pointers
};

Expected<llvm::Function*> GemmEmitter::run() {
  a_ = code_.floatBuffer(0, "a");
  bp_ = code_.floatBuffer(1, "b_packed");
  c_ = code_.floatBuffer(2, "c");
  if (gemm_.epilogue)
    for (size_t i = 0; i < gemm_.epilogue->buffers.size(); ++i)
      epilogueBuffers_.push_back(code_.byteBuffer(static_cast<int>(3 + i), gemm_.epilogue->buffers[i].name.c_str()));
  for (int i = 0; i < t_.rows * t_.vectors; ++i) acc_.push_back(code_.accumulator());
  KF_RETURN_IF_ERROR(packedColumnsOuter(g_) ? emitPanels() : emitRows());
  return code_.finish();
}

// Rows outer. Work units (exec/parallel.h) are rows: the blocks that start
// in [begin, end), the full ones, then the remainder block.
Status GemmEmitter::emitRows() {
  const int64_t full = g_.m / t_.rows;
  Status status = Status::ok();
  auto firstBlockFrom = [&](Value* row) { return b_.CreateUDiv(b_.CreateAdd(row, i64(t_.rows - 1)), i64(t_.rows)); };
  Value* first = firstBlockFrom(code_.begin());
  Value* last = firstBlockFrom(code_.end());  // one past
  if (full > 0) {  // (an epilogue cut to a full block would not fit a smaller matrix)
    Value* fullEnd = b_.CreateSelect(b_.CreateICmpSLT(last, i64(full)), last, i64(full));
    code_.loopRange(first, fullEnd, "i", [&](Value* i) {
      if (status) status = emitRowBlock(b_.CreateMul(i, i64(t_.rows)), t_.rows);
    });
  }
  if (const int64_t rest = g_.m % t_.rows; rest > 0 && status) {
    Value* mine = b_.CreateAnd(b_.CreateICmpSLE(first, i64(full)), b_.CreateICmpSGT(last, i64(full)));
    code_.part(static_cast<double>(rest) / static_cast<double>(g_.m), [&] {
      code_.when(mine, "rest", [&] { status = emitRowBlock(i64(full * t_.rows), static_cast<int>(rest)); });
    });
  }
  return status;
}

// Columns outer (packedColumnsOuter: B too large to stream for every block
// of rows). Work units are panels of packed B, taken in groups
// (panelGroup): each block of rows of A passes over every panel of a group
// before the next block, so the block stays in the first-level cache and
// the group's panels in the second, where one panel at a time kept the
// panel in the first level and read A's rows from the second. No
// epilogue: a row of C is complete only at the end.
Status GemmEmitter::emitPanels() {
  const int64_t fullPanels = g_.n / kPackedPanel;
  const int64_t perPanel = kPackedPanel / width_;
  const int64_t group = panelGroup();
  if (fullPanels > 0) {
    Value* end = b_.CreateSelect(b_.CreateICmpSLT(code_.end(), i64(fullPanels)), code_.end(), i64(fullPanels));
    // Groups of `group` panels from begin: the last one may be cut short.
    Value* groups = b_.CreateUDiv(b_.CreateAdd(b_.CreateSub(end, code_.begin()), i64(group - 1)), i64(group));
    code_.loopRange(i64(0), b_.CreateSelect(b_.CreateICmpSLT(end, code_.begin()), i64(0), groups), "g", [&](Value* gi) {
      Value* first = b_.CreateAdd(code_.begin(), b_.CreateMul(gi, i64(group)));
      Value* past = b_.CreateAdd(first, i64(group));
      past = b_.CreateSelect(b_.CreateICmpSLT(past, end), past, end);
      for (int64_t w = 0; w < perPanel; ++w)
        forEachRowBlock([&](Value* row0, int rows) {
          code_.loopRange(first, past, "p", [&](Value* p) {
            Value* col0 = b_.CreateAdd(b_.CreateMul(p, i64(kPackedPanel)), i64(w * width_));
            Value* base = b_.CreateAdd(b_.CreateMul(p, i64(kPackedPanel * g_.k)), i64(w * width_));
            emitBlock(row0, rows, col0, base, t_.vectors, -1);
          });
        });
    });
  }
  if (g_.n % kPackedPanel != 0) {
    Value* mine = b_.CreateAnd(b_.CreateICmpSLE(code_.begin(), i64(fullPanels)),
                               b_.CreateICmpSGT(code_.end(), i64(fullPanels)));
    code_.when(mine, "last_panel", [&] {
      forEachRowBlock([&](Value* row0, int rows) { emitColumnBlocks(row0, rows, fullPanels * perPanel); });
    });
  }
  return Status::ok();
}

// How many panels a block of rows of A passes over before the next block:
// as many as fit kPanelGroupBytes (a part of the smallest second-level
// cache of the x86-64 CPUs kfuse names, as ConvTiling::chunkBytes is), at
// least one. On a Xeon (Emerald Rapids, AVX-512, one thread, gemm_bench
// best of 3, two alternated runs), one panel at a time -> groups: an LM
// head 128x256x50257 (groups of 8) 29.3 -> 22.9-26.1 ms, 196x1536x384 (1)
// 1.36 -> 1.19-1.22, 197x384x1536 (5) 1.36-1.45 -> 1.19-1.29,
// 128x768x3072 (2) 3.43-3.77 -> 3.36-3.51; in AVX2 code (--cpu haswell)
// the LM head 43.2-44.9 -> 43.8-45.2, level.
int64_t GemmEmitter::panelGroup() const {
  const int64_t panelBytes = kPackedPanel * g_.k * int64_t{sizeof(float)};
  return std::max<int64_t>(1, kPanelGroupBytes / panelBytes);
}

// body(row0, rows) for every block of rows of C: the full ones in a loop,
// then the remainder.
void GemmEmitter::forEachRowBlock(const std::function<void(Value* row0, int rows)>& body) {
  const int64_t full = g_.m / t_.rows;
  code_.loop(full, "i", [&](Value* i) { body(b_.CreateMul(i, i64(t_.rows)), t_.rows); });
  if (const int64_t rest = g_.m % t_.rows; rest > 0)
    code_.part(static_cast<double>(rest) / static_cast<double>(g_.m),
               [&] { body(i64(full * t_.rows), static_cast<int>(rest)); });
}

// Rows [row0, row0 + rows) of C, then the epilogue over those rows.
Status GemmEmitter::emitRowBlock(Value* row0, int rows) {
  emitColumnBlocks(row0, rows, 0);
  return gemm_.epilogue ? emitEpilogue(row0, rows) : Status::ok();
}

// Rows [row0, row0 + rows) of C from column block `firstBlock` to the end:
// the blocks that end inside the matrix in a loop, then the last, partial
// one (its masks constant).
void GemmEmitter::emitColumnBlocks(Value* row0, int rows, int64_t firstBlock) {
  const int64_t perPanel = kPackedPanel / width_;
  const int64_t clean = g_.n / width_;
  code_.loop(clean - firstBlock, "j", [&](Value* jj) {
    Value* j = b_.CreateAdd(jj, i64(firstBlock));
    Value* panel = b_.CreateUDiv(j, i64(perPanel));
    Value* within = b_.CreateMul(b_.CreateURem(j, i64(perPanel)), i64(width_));
    Value* panelBase = b_.CreateAdd(b_.CreateMul(panel, i64(kPackedPanel * g_.k)), within);
    emitBlock(row0, rows, b_.CreateMul(j, i64(width_)), panelBase, t_.vectors, -1);
  });
  if (const int64_t rest = g_.n - clean * width_; rest > 0) {
    const int64_t col0 = clean * width_;
    const int64_t panelBase = col0 / kPackedPanel * kPackedPanel * g_.k + col0 % kPackedPanel;
    code_.part(static_cast<double>(rest) / static_cast<double>(g_.n), [&] {
      emitBlock(row0, rows, i64(col0), i64(panelBase), static_cast<int>(ceilDiv(rest, t_.lanes)), col0);
    });
  }
}

// C[row0 .. row0 + rows, col0 .. col0 + vectors * lanes) = A[rows, :] @ B[:, cols].
// partialFrom >= 0: the block is the last one, starting at that column, and
// lanes past n are not stored.
void GemmEmitter::emitBlock(Value* row0, int rows, Value* col0, Value* panelBase, int vectors, int64_t partialFrom) {
  auto acc = [&](int r, int v) { return acc_[static_cast<size_t>(r * t_.vectors + v)]; };
  for (int r = 0; r < rows; ++r)
    for (int v = 0; v < vectors; ++v) b_.CreateStore(llvm::Constant::getNullValue(code_.vec()), acc(r, v));
  llvm::Constant* all = code_.mask([](int64_t) { return true; });
  std::vector<Value*> aRow;  // A's row r starts at element (row0 + r) * k
  for (int r = 0; r < rows; ++r) aRow.push_back(b_.CreateMul(b_.CreateAdd(row0, i64(r)), i64(g_.k)));
  code_.loop(g_.k, "k", [&](Value* kk) {
    Value* bRow = b_.CreateAdd(panelBase, b_.CreateMul(kk, i64(kPackedPanel)));
    std::vector<Value*> bv;
    for (int v = 0; v < vectors; ++v)
      bv.push_back(code_.load(code_.vectorAt(bp_, b_.CreateAdd(bRow, i64(int64_t{v} * t_.lanes))), all));
    for (int r = 0; r < rows; ++r) {
      Value* a = code_.splat(code_.loadFloat(a_, b_.CreateAdd(aRow[static_cast<size_t>(r)], kk)));
      for (int v = 0; v < vectors; ++v) code_.multiplyAdd(acc(r, v), a, bv[static_cast<size_t>(v)]);
    }
  });
  for (int r = 0; r < rows; ++r) {
    Value* cRow = b_.CreateMul(b_.CreateAdd(row0, i64(r)), i64(g_.n));
    for (int v = 0; v < vectors; ++v) {
      const int64_t first = partialFrom + int64_t{v} * t_.lanes;
      llvm::Constant* m = partialFrom < 0 ? all : code_.mask([&](int64_t l) { return first + l < g_.n; });
      Value* ptr = code_.vectorAt(c_, b_.CreateAdd(cRow, b_.CreateAdd(col0, i64(int64_t{v} * t_.lanes))));
      code_.store(b_.CreateLoad(code_.vec(), acc(r, v)), ptr, m);
    }
  }
}

// The epilogue cut to `rows` rows (one function per row count, inlined),
// called with every buffer moved to row0.
Status GemmEmitter::emitEpilogue(Value* row0, int rows) {
  const kernel::Kernel& k = *gemm_.epilogue;
  kernel::Kernel cut = kernel::rowBlockKernel(k, gemm_.blocks, rows);
  cut.name = str(gemm_.name, "_epilogue_rows", rows);
  std::vector<Value*> moved;
  for (size_t i = 0; i < epilogueBuffers_.size(); ++i) {
    const int64_t bytes = gemm_.blocks.rowStrides[i] * static_cast<int64_t>(dtypeSize(k.buffers[i].type.dtype));
    moved.push_back(b_.CreateGEP(b_.getInt8Ty(), epilogueBuffers_[i], b_.CreateMul(row0, i64(bytes))));
  }
  return code_.callEpilogue(cut, moved);
}

}  // namespace

PackedGemm packedGemmOf(const Plan& plan, size_t step, std::string name, const GemmTiling& t) {
  const Step& s = plan.steps[step];
  PackedGemm g{std::move(name), s.gemm(), t};
  if (auto blocks = packedEpilogue(plan, step)) {
    g.epilogue = &plan.kernels[static_cast<size_t>(s.kernels[0])];
    g.blocks = std::move(*blocks);
  }
  return g;
}

PackedGemmPolicy packedGemmPolicy(const GemmTiling& t) {
  return [t](const GemmSpec& g) {
    return !packedColumnsOuter(g) || g.m * g.k * int64_t{sizeof(float)} <= t.columnsOuterMaxA;
  };
}

Expected<llvm::Function*> emitPackedGemm(const PackedGemm& gemm, llvm::Module& module) {
  const GemmSpec& g = gemm.spec;
  const GemmTiling& t = gemm.tiling;
  auto fail = [&](const std::string& msg) { return Error(str("GEMM @", gemm.name, ": ", msg)); };
  if (!packedGemmShape(g))
    return fail("has no packed form (cpu/gemm_emitter.h): a batch, a transposed A or an empty dim");
  const int64_t width = int64_t{t.vectors} * t.lanes;
  if (t.lanes < 1 || t.vectors < 1 || t.rows < 1 || kPackedPanel % width != 0)
    return fail(str("tiling of ", t.rows, " rows x ", t.vectors, "x", t.lanes, " does not divide the packed panel"));
  const std::string symbol = symbolName(gemm.name);
  if (module.getNamedValue(symbol)) return fail("the module already defines a symbol of that name");
  if (gemm.epilogue && (gemm.blocks.rowStrides.size() != gemm.epilogue->buffers.size()))
    return fail("the epilogue's row blocks do not match its buffers");
  auto fn = GemmEmitter(gemm, module, symbol).run();
  if (!fn) return fail(fn.error().message());
  return fn;
}

std::string describePackedGemm(const GemmSpec& g, const GemmTiling& t, bool epilogue) {
  return str("packed B, ", packedColumnsOuter(g) ? "columns outer, " : "", "blocks of ",
             std::min<int64_t>(t.rows, g.m), " rows x ", std::min<int64_t>(t.vectors, ceilDiv(g.n, t.lanes)), "x",
             t.lanes, " columns",
             epilogue ? ", epilogue per block of rows" : "");
}

}  // namespace kfuse::cpu
