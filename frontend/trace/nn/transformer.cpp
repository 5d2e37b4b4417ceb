#include "frontend/trace/nn/transformer.h"

#include <cmath>
#include <limits>

#include "frontend/trace/ops.h"
#include "ir/support/strings.h"

namespace kfuse::nn {

namespace {

kfuse::Tensor f32(Shape s) { return kfuse::Tensor(TensorType(DType::F32, std::move(s))); }

// The failed operand's problem, passed on (an empty operand becomes an error).
Tensor passOn(const Tensor& t) { return trace::identity(t); }

}  // namespace

// ---------------------------------------------------------------- MultiheadAttention

MultiheadAttention::MultiheadAttention(int64_t e, int64_t h, MultiheadAttentionOptions opts)
    : Module("MultiheadAttention"), embedDim(std::max<int64_t>(e, 0)), numHeads(h), options(opts) {
  if (e < 0 || h < 1 || e % h != 0)
    reportProblem(str("embed_dim = ", e, " must be >= 0 and divisible by num_heads = ", h, " (>= 1)"));
  if (!(opts.dropout >= 0.0 && opts.dropout <= 1.0))
    reportProblem(str("dropout = ", opts.dropout, " must be in [0, 1]"));
  registerParameter("in_proj_weight", f32({3 * embedDim, embedDim}));
  if (opts.bias) registerParameter("in_proj_bias", f32({3 * embedDim}));
  outProj = registerModule("out_proj", std::make_shared<Linear>(embedDim, embedDim, opts.bias));
  initParameters(defaultGenerator());
}

// torch's _reset_parameters: xavier_uniform_ in_proj_weight, zero biases
// (out_proj.weight keeps Linear's initialisation, drawn first).
void MultiheadAttention::initParameters(Generator& gen) {
  kfuse::Tensor w = f32({3 * embedDim, embedDim});
  (void)init::xavierUniform(w, 1.0, gen);  // rank 2: cannot fail
  (void)setTensor("in_proj_weight", std::move(w));
  if (options.bias) {
    (void)setTensor("in_proj_bias", f32({3 * embedDim}));
    (void)outProj->setTensor("bias", f32({embedDim}));
  }
  dropoutSeed_ = static_cast<int64_t>(gen.nextU64());
}

Tensor MultiheadAttention::forward(const Tensor& x) { return forward(x, x, x); }

Tensor MultiheadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                   const AttentionMasks& masks) {
  auto s = scope(query);
  if (!problem().empty()) return fail(query, problem());
  for (const Tensor* t : {&query, &key, &value})
    if (!t->ok()) return passOn(*t);
  const Shape &q = query.shape(), &k = key.shape(), &v = value.shape();
  size_t batch = options.batchFirst ? 0 : 1;
  bool fits = query.rank() == 3 && key.rank() == 3 && value.rank() == 3 && q[2] == embedDim && k == v &&
              k[2] == embedDim && q[batch] == k[batch];
  if (!fits)
    return fail(query, str("expected query ", options.batchFirst ? "[N, L, E]" : "[L, N, E]", " and key, value ",
                           options.batchFirst ? "[N, S, E]" : "[S, N, E]", " with E = ", embedDim, ", got ",
                           formatType(query.type()), ", ", formatType(key.type()), ", ", formatType(value.type())));
  auto batchFirst = [&](const Tensor& t) { return options.batchFirst ? t : trace::transpose(t, {1, 0, 2}); };
  bool self = query.value() == key.value() && key.value() == value.value();
  Tensor out = self ? attend(batchFirst(query), Tensor(), Tensor(), masks)
                    : attend(batchFirst(query), batchFirst(key), batchFirst(value), masks);
  return options.batchFirst ? out : trace::transpose(out, {1, 0, 2});
}

// q [N, L, E]; k, v [N, S, E], or empty for self-attention (k = v = q),
// which projects once with the packed weight.
Tensor MultiheadAttention::attend(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionMasks& masks) {
  const bool self = !k.ok();
  const int64_t n = q.shape()[0], l = q.shape()[1], s = self ? l : k.shape()[1];
  const int64_t e = embedDim, h = numHeads, d = e / h;
  Tensor w = param(q, "in_proj_weight");
  std::optional<Tensor> b;
  if (options.bias) b = param(q, "in_proj_bias");
  auto project = [](const Tensor& x, const Tensor& wi, const std::optional<Tensor>& bi) {
    Tensor y = trace::matmul(x, wi, false, true);
    return bi ? y + *bi : y;
  };
  std::vector<Tensor> qkv;
  if (self) {
    qkv = trace::split(project(q, w, b), {e, e, e}, -1);
  } else {
    std::vector<Tensor> ws = trace::split(w, {e, e, e}, 0);
    std::vector<std::optional<Tensor>> bs(3);
    if (b) {
      std::vector<Tensor> parts = trace::split(*b, {e, e, e}, 0);
      bs = {parts[0], parts[1], parts[2]};
    }
    qkv = {project(q, ws[0], bs[0]), project(k, ws[1], bs[1]), project(v, ws[2], bs[2])};
  }
  // [N, len, E] -> [N, H, len, D]. The batch is traced as -1 (inferred), so
  // the graph can be re-typed for another batch size (specializeBatch).
  auto heads = [&](const Tensor& t, int64_t len) {
    return trace::transpose(trace::reshape(t, {-1, len, h, d}), {0, 2, 1, 3});
  };
  // Separate statements keep the node order independent of argument evaluation order.
  Tensor scaledQ = heads(qkv[0], l) / std::sqrt(static_cast<double>(d));
  Tensor keys = heads(qkv[1], s);
  Tensor scores = trace::matmul(scaledQ, keys, false, true);
  Tensor attn = trace::softmax(masked(scores, masks, {n, h, l, s}), -1);
  if (isTraining() && options.dropout > 0)
    attn = options.dropout >= 1.0 ? attn * 0.0
                                  : trace::dropout(attn, options.dropout, q.tracer().seedFor(this, dropoutSeed_));
  Tensor context = trace::reshape(trace::transpose(trace::matmul(attn, heads(qkv[2], s)), {0, 2, 1, 3}), {-1, l, e});
  return outProj->forward(context);
}

// Bool masks set masked scores to -inf; float masks are added.
Tensor MultiheadAttention::masked(const Tensor& scores, const AttentionMasks& masks, const Shape& nhls) {
  if (!scores.ok()) return scores;
  const int64_t n = nhls[0], h = nhls[1], l = nhls[2], s = nhls[3];
  Tensor out = scores;
  auto apply = [&](const Tensor& mask, const Tensor& shaped) {
    if (mask.dtype() != DType::Bool) return out + shaped;
    Tensor minusInf = scores.tracer().scalar(-std::numeric_limits<double>::infinity(), scores.dtype());
    return trace::where(shaped, minusInf, out);
  };
  if (masks.attnMask) {
    const Tensor& m = *masks.attnMask;
    if (!m.ok()) return passOn(m);
    if (m.shape() == Shape{l, s})
      out = apply(m, m);
    else if (m.shape() == Shape{n * h, l, s})
      out = apply(m, trace::reshape(m, {-1, h, l, s}));
    else
      return fail(scores, str("attn_mask must be [L, S] = [", l, ", ", s, "] or [N * num_heads, L, S] = [", n * h,
                              ", ", l, ", ", s, "], got ", formatType(m.type())));
  }
  if (masks.keyPaddingMask) {
    const Tensor& m = *masks.keyPaddingMask;
    if (!m.ok()) return passOn(m);
    if (m.shape() != Shape{n, s})
      return fail(scores, str("key_padding_mask must be [N, S] = [", n, ", ", s, "], got ", formatType(m.type())));
    out = apply(m, trace::reshape(m, {-1, 1, 1, s}));
  }
  return out;
}

// ---------------------------------------------------------------- TransformerEncoderLayer

TransformerEncoderLayer::TransformerEncoderLayer(int64_t dModel, int64_t nhead, TransformerEncoderLayerOptions opts)
    : Module("TransformerEncoderLayer"), options(std::move(opts)) {
  if (options.activation != "relu" && options.activation != "gelu")
    reportProblem(str("activation \"", options.activation, "\" must be \"relu\" or \"gelu\""));
  // Registration order is torch's, so stateDict() lists names in its order.
  selfAttn = registerModule(
      "self_attn", std::make_shared<MultiheadAttention>(
                       dModel, nhead, MultiheadAttentionOptions{.dropout = options.dropout, .batchFirst = options.batchFirst}));
  linear1 = registerModule("linear1", std::make_shared<Linear>(dModel, options.dimFeedforward));
  dropout = registerModule("dropout", std::make_shared<Dropout>(options.dropout));
  linear2 = registerModule("linear2", std::make_shared<Linear>(options.dimFeedforward, dModel));
  LayerNormOptions norm{.eps = options.layerNormEps};
  norm1 = registerModule("norm1", std::make_shared<LayerNorm>(Shape{dModel}, norm));
  norm2 = registerModule("norm2", std::make_shared<LayerNorm>(Shape{dModel}, norm));
  dropout1 = registerModule("dropout1", std::make_shared<Dropout>(options.dropout));
  dropout2 = registerModule("dropout2", std::make_shared<Dropout>(options.dropout));
}

Tensor TransformerEncoderLayer::forward(const Tensor& src) { return forward(src, {}); }

Tensor TransformerEncoderLayer::forward(const Tensor& src, const AttentionMasks& masks) {
  auto s = scope(src);
  if (!problem().empty()) return fail(src, problem());
  Tensor x = src;
  if (options.normFirst) {
    x = x + selfAttentionBlock(norm1->forward(x), masks);
    return x + feedForwardBlock(norm2->forward(x));
  }
  x = norm1->forward(x + selfAttentionBlock(x, masks));
  return norm2->forward(x + feedForwardBlock(x));
}

Tensor TransformerEncoderLayer::selfAttentionBlock(const Tensor& x, const AttentionMasks& masks) {
  return dropout1->forward(selfAttn->forward(x, x, x, masks));
}

Tensor TransformerEncoderLayer::feedForwardBlock(const Tensor& x) {
  Tensor h = linear1->forward(x);
  h = options.activation == "gelu" ? trace::gelu(h) : trace::relu(h);
  return dropout2->forward(linear2->forward(dropout->forward(h)));
}

}  // namespace kfuse::nn
