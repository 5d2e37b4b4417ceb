// Gradient-check cases of the linalg, pooling, normalization and loss ops (see gradcheck.h).
// Each operand stays at a few dozen elements: every element costs two
// interpreter runs of the whole graph.
#include "tests/unit/gradcheck.h"

namespace kfuse::test {
namespace {

using F = Fill;
using Ints = std::vector<int64_t>;


Operand tagged(Shape s, Layout l, Fill f = F::Normal) { return {TensorType(DType::F64, std::move(s), l), f}; }
Operand nhwc(Shape s) { return tagged(std::move(s), Layout::NHWC); }
Operand ohwi(Shape s) { return tagged(std::move(s), Layout::OHWI); }
// Batch norm's running statistics: buffers, not differentiated.
Operand stat(int64_t c, Fill f) { return fixed(TensorType(DType::F64, {c}), f); }
Operand labels(int64_t n, int64_t classes) { return fixed(TensorType(DType::I64, {n}), F::Labels, classes); }

void addMatmul(std::vector<GradCase>& cases) {
  auto mm = [&](std::string name, Operand a, Operand b, bool ta = false, bool tb = false) {
    cases.push_back({"matmul_" + name, "matmul", {std::move(a), std::move(b)},
                     {{"transpose_a", ta}, {"transpose_b", tb}}});
  };
  mm("2d", in({2, 3}), in({3, 4}));
  mm("transpose_a", in({3, 2}), in({3, 4}), true);
  mm("transpose_b", in({2, 3}), in({4, 3}), false, true);
  mm("transpose_both", in({3, 2}), in({4, 3}), true, true);
  mm("batched", in({2, 2, 3}), in({2, 3, 2}));
  mm("broadcast_batch", in({2, 1, 2, 3}), in({3, 3, 2}));
  mm("broadcast_batch_transposed", in({1, 3, 2}), in({2, 1, 2, 3}), true, true);
  mm("matrix_times_batch", in({2, 3}), in({2, 3, 2}));
  mm("vector_matrix", in({3}), in({3, 2}));
  mm("matrix_vector", in({2, 3}), in({3}));
  mm("vector_transposed_matrix", in({3}), in({2, 3}), false, true);
  mm("transposed_batch_vector", in({2, 3, 2}), in({3}), true);
  mm("dot", in({4}), in({4}));
  mm("vector_batched", in({3}), in({2, 3, 2}));
  // A layout-tagged operand gets a gradient with its tag.
  mm("nhwc_operand", nhwc({1, 2, 2, 3}), in({3, 2}));
}

void addConv(std::vector<GradCase>& cases) {
  auto conv = [&](std::string name, std::vector<Operand> ops, AttrMap attrs = {}) {
    cases.push_back({"conv2d_" + name, "conv2d", std::move(ops), std::move(attrs)});
  };
  conv("bias", {in({1, 2, 4, 4}), in({3, 2, 2, 2}), in({3})});
  conv("stride2_pad1", {in({1, 2, 5, 5}), in({2, 2, 3, 3})}, {{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}});
  // Stride 2 over 6 rows with a 2-row kernel and no bottom pad: the last row
  // is never read, and gets a zero gradient.
  conv("asymmetric_pads_tail", {in({2, 1, 6, 5}), in({2, 1, 2, 2}), in({2})},
       {{"strides", Ints{2, 2}}, {"pads", Ints{1, 0, 0, 1}}});
  conv("dilation2", {in({1, 2, 5, 5}), in({2, 2, 2, 2})}, {{"dilations", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}});
  conv("groups2", {in({1, 4, 3, 3}), in({4, 2, 2, 2}), in({4})}, {{"groups", int64_t{2}}});
  conv("depthwise", {in({1, 3, 4, 4}), in({3, 1, 3, 3})}, {{"groups", int64_t{3}}, {"pads", Ints{1, 1, 1, 1}}});
}

void addPools(std::vector<GradCase>& cases) {
  auto pool = [&](std::string name, std::string op, Operand x, AttrMap attrs) {
    cases.push_back({op + "_" + name, op, {std::move(x)}, std::move(attrs)});
  };
  // Normal data has no ties, so each window's maximum is unique and the
  // finite differences see the same routing as the rule.
  pool("k2", "max_pool2d", in({1, 2, 4, 4}), {{"kernel", Ints{2, 2}}});
  pool("overlap_pad", "max_pool2d", in({1, 1, 4, 5}),
       {{"kernel", Ints{3, 3}}, {"strides", Ints{1, 1}}, {"pads", Ints{1, 1, 1, 1}}});
  pool("asymmetric_pads", "max_pool2d", in({1, 1, 5, 4}),
       {{"kernel", Ints{3, 2}}, {"strides", Ints{2, 1}}, {"pads", Ints{2, 0, 1, 1}}});
  pool("dilation_ceil", "max_pool2d", in({1, 2, 5, 5}),
       {{"kernel", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"dilations", Ints{2, 1}}, {"ceil_mode", true}});

  pool("k2", "avg_pool2d", in({1, 2, 4, 4}), {{"kernel", Ints{2, 2}}});
  for (bool include : {false, true}) {
    std::string sfx = include ? "_include_pad" : "_exclude_pad";
    pool("pad1" + sfx, "avg_pool2d", in({1, 1, 5, 5}),
         {{"kernel", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}, {"count_include_pad", include}});
    // The ceil window runs past the padded input: its divisor is clipped.
    pool("ceil" + sfx, "avg_pool2d", in({1, 1, 6, 6}),
         {{"kernel", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}, {"ceil_mode", true},
          {"count_include_pad", include}});
  }
  pool("asymmetric_pads", "avg_pool2d", in({1, 1, 5, 4}),
       {{"kernel", Ints{3, 2}}, {"strides", Ints{1, 2}}, {"pads", Ints{2, 0, 1, 1}}});

  pool("plain", "global_avg_pool2d", in({2, 3, 2, 3}), {});
}

void addNorms(std::vector<GradCase>& cases) {
  auto bn = [&](std::string name, Operand x, int64_t c) {
    cases.push_back({"batch_norm_" + name, "batch_norm",
                     {std::move(x), in({c}), in({c}), stat(c, F::Normal), stat(c, F::Positive)},
                     {{"epsilon", 0.1}}});
  };
  bn("rank4", in({2, 3, 2, 2}), 3);
  bn("rank2", in({4, 3}), 3);
  bn("rank3", in({2, 3, 2}), 3);
  // The loss reads all three results, so the batch statistics' own
  // gradients are checked too.
  auto bnTrain = [&](std::string name, Operand x, int64_t c) {
    cases.push_back({"batch_norm_train_" + name, "batch_norm_train", {std::move(x), in({c}), in({c})}, {}});
  };
  bnTrain("rank4", in({2, 3, 2, 2}), 3);
  bnTrain("rank2", in({5, 3}), 3);

  auto ln = [&](std::string name, std::vector<Operand> ops, int64_t axis) {
    cases.push_back({"layer_norm_" + name, "layer_norm", std::move(ops), {{"axis", axis}, {"epsilon", 1e-3}}});
  };
  ln("last_affine", {in({2, 4}), in({4}), in({4})}, -1);
  ln("last_plain", {in({3, 4})}, -1);
  ln("last_scale_only", {in({2, 2, 4}), in({4})}, -1);
  ln("last2_affine", {in({2, 2, 3}), in({2, 3}), in({2, 3})}, 1);
  ln("last2_plain", {in({2, 2, 3})}, -2);

  cases.push_back({"dropout", "dropout", {in({3, 4})}, {{"ratio", 0.3}, {"seed", int64_t{5}}}});
  cases.push_back({"dropout_step", "dropout", {in({3, 4}), fixed(TensorType(DType::I64, {}), F::Step)},
                   {{"ratio", 0.5}, {"seed", int64_t{7}}}});
}

void addLosses(std::vector<GradCase>& cases) {
  auto ce = [&](std::string name, int64_t n, int64_t c, AttrMap attrs) {
    cases.push_back({"cross_entropy_" + name, "cross_entropy", {in({n, c}), labels(n, c)}, std::move(attrs)});
  };
  ce("mean", 4, 3, {});
  ce("sum", 4, 3, {{"reduction", "sum"}});
  // Two classes over six rows: ignore_index 0 or 1 leaves some rows out.
  ce("ignore0_mean", 6, 2, {{"ignore_index", int64_t{0}}});
  ce("ignore1_sum", 6, 2, {{"ignore_index", int64_t{1}}, {"reduction", "sum"}});

  cases.push_back({"mse_loss_mean", "mse_loss", {in({2, 3}), in({2, 3})}, {}});
  cases.push_back({"mse_loss_sum", "mse_loss", {in({2, 3}), in({2, 3})}, {{"reduction", "sum"}}});
  cases.push_back({"mse_loss_nhwc_and_plain", "mse_loss", {nhwc({1, 2, 2, 2}), in({1, 2, 2, 2})}, {}});
}

// Ops with a layout-tagged result: NHWC / NCHW images, OHWI filters.
void addTaggedResults(std::vector<GradCase>& cases) {
  auto add = [&](std::string name, std::string op, std::vector<Operand> ops, AttrMap attrs = {}) {
    cases.push_back({name, op, std::move(ops), std::move(attrs)});
  };
  add("conv2d_nhwc_ohwi", "conv2d", {nhwc({1, 4, 4, 2}), ohwi({3, 2, 2, 2}), in({3})},
      {{"strides", Ints{1, 2}}, {"pads", Ints{0, 1, 1, 0}}});
  add("conv2d_nhwc_oihw_groups", "conv2d", {nhwc({1, 3, 3, 4}), in({2, 2, 2, 2}), in({2})}, {{"groups", int64_t{2}}});
  add("conv2d_nchw_ohwi_depthwise", "conv2d", {tagged({1, 2, 4, 4}, Layout::NCHW), ohwi({4, 2, 2, 1})},
      {{"groups", int64_t{2}}, {"strides", Ints{2, 1}}, {"dilations", Ints{1, 2}}, {"pads", Ints{0, 1, 0, 1}}});
  add("max_pool2d_nhwc", "max_pool2d", {nhwc({1, 4, 4, 2})}, {{"kernel", Ints{2, 2}}, {"strides", Ints{1, 1}}});
  add("avg_pool2d_nhwc_ceil", "avg_pool2d", {nhwc({1, 5, 5, 2})},
      {{"kernel", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}, {"ceil_mode", true}, {"count_include_pad", true}});
  add("global_avg_pool2d_nhwc", "global_avg_pool2d", {nhwc({1, 2, 3, 2})});
  add("batch_norm_nhwc", "batch_norm",
      {nhwc({2, 2, 2, 3}), in({3}), in({3}), stat(3, F::Normal), stat(3, F::Positive)}, {{"epsilon", 0.1}});
  add("batch_norm_train_nhwc", "batch_norm_train", {nhwc({2, 2, 2, 3}), in({3}), in({3})});
}

}  // namespace

GradFamily nnGrads() {
  GradFamily family;
  addMatmul(family.cases);
  addConv(family.cases);
  addPools(family.cases);
  addNorms(family.cases);
  addLosses(family.cases);
  // Ops yielding layout-tagged results: the harness's loss reduces over a
  // tagged value, so these also check that gradients keep their tags.
  addTaggedResults(family.cases);
  // Gradient-only ops: no second derivatives. Their forward values are
  // checked against torch.autograd by the op reference cases.
  for (const char* op : {"conv2d_grad_input", "conv2d_grad_weight", "max_pool2d_grad", "avg_pool2d_grad",
                         "batch_norm_train_grad", "layer_norm_grad", "cross_entropy_grad"})
    family.notDifferentiable[op] = "gradient-only op";
  return family;
}

}  // namespace kfuse::test
