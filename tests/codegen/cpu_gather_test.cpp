// Gathered loads and scatter-adds (exec/kernel_ir.h's Gathered: a row
// picked by a run-time index, ONNX Gather and its gradient): generated
// code against the kernel interpreter, on indices inside the table,
// negative ones, repeated ones and ones past either end (both clamp them
// into the table); the verifier's and the package reader's checks of them.
#include <gtest/gtest.h>

#include "exec/io/kernel_io.h"
#include "exec/kernel_eval.h"
#include "tests/codegen/jit_harness.h"
#include "tests/codegen/kernel_builder.h"

namespace kfuse::testing {
namespace {

// out[b, s, :] = table[ids[b, s], :] + pos[s, :]: an embedding lookup
// with its position embedding, rows of `width`.
Kernel embeddingKernel(int64_t batch, int64_t seq, int64_t rows, int64_t width, DType idType) {
  KernelBuilder b("embed", {batch, seq, width});
  int table = b.input(DType::F32, {rows, width});
  int ids = b.input(idType, {batch, seq});
  int pos = b.input(DType::F32, {seq, width});
  int out = b.output(DType::F32, {batch, seq, width});
  Scalar row = b.gather(table, {0, 0, 1}, b.loadAxes(ids, {0, 1}), width, rows);
  b.storeOuter(out, row + b.loadAxes(pos, {1, 2}));
  return b.build();
}

TEST(GatheredLoad, EmbeddingRowsMatchTheInterpreter) {
  for (DType idType : {DType::I64, DType::I32})
    for (int64_t width : {1, 7, 64}) {
      Kernel k = embeddingKernel(3, 5, 6, width, idType);
      ASSERT_TRUE(verifyKernel(k)) << verifyKernel(k).message();
      // Indices in [-9, 9]: inside the table, counted from its end, and
      // past either end.
      EXPECT_TRUE(matchesInterpreter(k, Tolerance::exact(), 7, InputSpec{-9, 9}))
          << dtypeName(idType) << " width " << width;
    }
}

TEST(GatheredLoad, IndicesPastEitherEndReadTheNearestRow) {
  Kernel k = embeddingKernel(1, 4, 3, 2, DType::I64);
  std::vector<Tensor> buffers = randomBuffers(k, 3);
  const int64_t ids[] = {12, -11, -1, 1};
  for (int64_t s = 0; s < 4; ++s) buffers[1].set(s, static_cast<double>(ids[s]));
  for (int64_t i = 0; i < buffers[2].numElements(); ++i) buffers[2].set(i, 0);
  ASSERT_TRUE(runJit(k, buffers));
  const int64_t want[] = {2, 0, 2, 1};  // clamped high, clamped low, the last, as is
  for (int64_t s = 0; s < 4; ++s)
    for (int64_t c = 0; c < 2; ++c)
      EXPECT_EQ(buffers[3].at(s * 2 + c), buffers[0].at(want[s] * 2 + c)) << "position " << s;
}

// The index varies along the innermost (vectorised) dim: x[r, idx[c]].
TEST(GatheredLoad, IndexAlongTheInnermostDim) {
  KernelBuilder b("pick_columns", {4, 33});
  int x = b.input(DType::F32, {4, 9});
  int idx = b.input(DType::I32, {33});
  int out = b.output(DType::F32, {4, 33});
  b.storeOuter(out, b.gather(x, {9, 0}, b.loadAxes(idx, {1}), 1, 9) * 2.0);
  EXPECT_TRUE(matchesInterpreter(b.build(), Tolerance::exact(), 11, InputSpec{-12, 12}));
}

// Summed over a row: out[b] = sum over s of table[ids[b, s]] (a bag of
// embeddings), the index read inside the reduce loop; and indices computed
// in the kernel (ids * 2 - 1).
TEST(GatheredLoad, InsideRowReductionsAndFromComputedIndices) {
  KernelBuilder b("bag", {3}, {6});
  int table = b.input(DType::F32, {5});
  int ids = b.input(DType::I64, {3, 6});
  int out = b.output(DType::F32, {3});
  Scalar id = b.loadAxes(ids, {0, 1});
  Scalar sum = b.reduce(Combiner::Sum, b.gather(table, {0, 0}, id, 1, 5) + b.gather(table, {0, 0}, id * 2.0 - 1.0, 1, 5));
  b.storeAxes(out, {0}, sum, StoreScope::Row);
  EXPECT_TRUE(matchesInterpreter(b.build(), Tolerance::f32(), 5, InputSpec{-6, 6}));
}

TEST(GatheredLoad, VerifierChecksRowsIndexAndWhatItReads) {
  auto message = [](const Kernel& k) { return verifyKernel(k).message(); };
  {  // rows past the table: 6 rows of 4 in a table of 20 elements
    KernelBuilder b("too_many_rows", {2, 4});
    int t = b.input(DType::F32, {5, 4});
    int i = b.input(DType::I64, {2});
    b.storeOuter(b.output(DType::F32, {2, 4}), b.gather(t, {0, 1}, b.loadAxes(i, {0}), 4, 6));
    EXPECT_NE(message(b.build()).find("load 1: offsets 0..23 fall outside in0 (20 elements)"), std::string::npos)
        << message(b.build());
  }
  {  // a float index; an index read through another gathered load
    KernelBuilder b("bad_index", {2});
    int t = b.input(DType::F32, {5});
    int i = b.input(DType::I64, {2});
    Scalar first = b.gather(t, {0}, b.loadAxes(i, {0}), 1, 5);
    Scalar second = b.gather(t, {0}, cast(first, DType::I64), 1, 5);
    Scalar third = b.gather(t, {0}, first, 1, 5);
    b.storeOuter(b.output(DType::F32, {2}), second + third);
    const std::string m = message(b.build());
    EXPECT_NE(m.find("load 2's gathered index reads load 1, which is gathered itself"), std::string::npos) << m;
    EXPECT_NE(m.find("load 3's gathered index is f32, not i64"), std::string::npos) << m;
  }
  {  // accumulators are not indices
    KernelBuilder b("acc_index", {2}, {3});
    int t = b.input(DType::F32, {5});
    int i = b.input(DType::I64, {2, 3});
    Scalar acc = b.reduce(Combiner::Max, b.loadAxes(i, {0, 1}));
    b.storeAxes(b.output(DType::F32, {2}), {0}, b.gather(t, {0, 0}, acc, 1, 5), StoreScope::Row);
    const std::string m = message(b.build());
    EXPECT_NE(m.find("gathered index reads leaf 2, which is not a load"), std::string::npos) << m;
  }
}

// out[v, c] += dy[r, c] where ids[r] picks v (an embedding's gradient),
// rows of `width`: many rows pick the same v, in order.
Kernel scatterKernel(int64_t count, int64_t rows, int64_t width, DType idType) {
  KernelBuilder b("scatter", {width}, {count});
  int dy = b.input(DType::F32, {count, width});
  int ids = b.input(idType, {count});
  int out = b.output(DType::F32, {rows, width});
  Scalar value = b.loadAxes(dy, {1, 0});
  Scalar row = b.loadAxes(ids, {1});
  b.scatterAdd(out, {1, 0}, value, row, width, rows);
  return b.build();
}

TEST(GatheredStore, ScatterAddsMatchTheInterpreterBitForBit) {
  for (DType idType : {DType::I64, DType::I32})
    for (int64_t width : {1, 5, 64}) {
      Kernel k = scatterKernel(40, 6, width, idType);
      ASSERT_TRUE(verifyKernel(k)) << verifyKernel(k).message();
      // 40 indices in [-8, 8] over 6 rows: repeats, negatives, past the ends.
      EXPECT_TRUE(matchesInterpreter(k, Tolerance::exact(), 13, InputSpec{-8, 8}))
          << dtypeName(idType) << " width " << width << "\n"
          << printKernel(k);
    }
}

TEST(GatheredStore, RowsAddUpInOrder) {
  Kernel k = scatterKernel(4, 3, 2, DType::I64);
  EXPECT_NE(printKernel(k).find("store out2[i0 + 2*gather(L1, 3)] (element) += L0"), std::string::npos)
      << printKernel(k);
  std::vector<Tensor> buffers = randomBuffers(k, 3);
  const int64_t ids[] = {1, -2, 7, -1};  // rows 1, 1, 2 (clamped), 2
  for (int64_t r = 0; r < 4; ++r) buffers[1].set(r, static_cast<double>(ids[r]));
  for (int64_t i = 0; i < 8; ++i) buffers[0].set(i, static_cast<double>(i + 1));
  for (int64_t i = 0; i < 6; ++i) buffers[2].set(i, 0.5);
  ASSERT_TRUE(runJit(k, buffers));
  const double want[] = {0.5, 0.5, 0.5 + 1 + 3, 0.5 + 2 + 4, 0.5 + 5 + 7, 0.5 + 6 + 8};
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(buffers[2].at(i), want[i]) << "element " << i;
}

TEST(GatheredStore, VerifierWantsScattersThatWriteApart) {
  {  // every row to the same element: the outer points would collide
    KernelBuilder b("collide", {4}, {3});
    int dy = b.input(DType::F32, {3, 4});
    int ids = b.input(DType::I64, {3});
    int out = b.output(DType::F32, {5});
    Scalar value = b.loadAxes(dy, {1, 0});
    b.scatterAdd(out, {0, 0}, value, b.loadAxes(ids, {1}), 1, 5);
    const std::string m = verifyKernel(b.build()).message();
    EXPECT_NE(m.find("store 0: a scatter's outer points must write apart, but its map does not span outer dim 0"),
              std::string::npos) << m;
  }
  {  // accumulating without a gathered row, gathered without accumulating
    KernelBuilder b("half_scatter", {4});
    int x = b.input(DType::F32, {4});
    int out = b.output(DType::F32, {4});
    Kernel k = (b.storeOuter(out, b.loadOuter(x)), b.build());
    k.stores[0].accumulate = true;
    EXPECT_NE(verifyKernel(k).message().find("only element stores scatter, gathered and accumulating"), std::string::npos)
        << verifyKernel(k).message();
  }
}

// Packages carry kernels as JSON: a gathered load round-trips, and a
// gathered axis reaching past its buffer is refused on reading.
TEST(GatheredLoad, PackageJsonKeepsItAndScattersAndBoundsTheirRows) {
  Kernel k = embeddingKernel(2, 3, 4, 8, DType::I64);
  package::json_read::ojson j = package::writeKernel(k);
  auto read = [](const package::json_read::ojson& o) -> Expected<kernel::Kernel> {
    try {
      return package::readKernel(package::json_read::json::parse(o.dump()));
    } catch (package::json_read::Invalid& e) {
      return Error(e.message);
    }
  };
  auto back = read(j);
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(printKernel(*back), printKernel(k));
  EXPECT_NE(printKernel(k).find("8*gather(L0, 4)"), std::string::npos) << printKernel(k);
  Kernel scatter = scatterKernel(7, 3, 4, DType::I32);
  auto scatterBack = read(package::writeKernel(scatter));
  ASSERT_TRUE(scatterBack) << scatterBack.error().message();
  EXPECT_EQ(printKernel(*scatterBack), printKernel(scatter));
  j["loads"][1]["gathered"]["size"] = 5;
  auto bad = read(j);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("load 1: offsets 0..39 fall outside in0 (32 elements)"), std::string::npos)
      << bad.error().message();
}

}  // namespace
}  // namespace kfuse::testing
