// The transformer ops of opset 23 and later: Attention (23, 24, 25) and
// RotaryEmbedding (23), lowered to kfuse's matmul, softmax and elementwise
// ops with ONNX's reference semantics (onnx/reference/ops/op_attention.py):
// the fusion pass then fuses the scaling, masking and softmax around the two
// batched GEMMs as it does for exported attention subgraphs. Shapes are
// static, so head splits, the causal and sliding-window masks and the
// grouped-query repetition are decided at import; a mask, a KV cache or
// nonpad_kv_seqlen given at run time is combined at run time.
#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#include "frontend/onnx/lower_util.h"
#include "frontend/onnx/op_table.h"
#include "frontend/onnx/tensor_proto.h"

namespace kfuse::onnx_import {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

Expected<Value*> transpose(LoweringContext& c, Value* x, std::vector<int64_t> perm) {
  return c.build("transpose", {x}, {{"perm", Attribute(std::move(perm))}});
}

Expected<Value*> sliceLast(LoweringContext& c, Value* x, int64_t start, int64_t end, int64_t step = 1) {
  auto last = static_cast<int64_t>(x->type().rank()) - 1;
  return c.build("slice", {x}, {{"starts", Attribute(std::vector<int64_t>{start})},
                                {"ends", Attribute(std::vector<int64_t>{end})},
                                {"axes", Attribute(std::vector<int64_t>{last})},
                                {"steps", Attribute(std::vector<int64_t>{step})}});
}

Expected<Value*> concatLast(LoweringContext& c, std::vector<Value*> parts) {
  auto last = static_cast<int64_t>(parts[0]->type().rank()) - 1;
  return c.build("concat", parts, {{"axis", last}});
}

// A constant of `like`'s dtype and the given shape.
Value* filled(LoweringContext& c, DType dtype, const Shape& shape, const std::vector<double>& values) {
  return c.constant(Tensor::fromDoubles(TensorType(dtype, shape), values));
}

// ---------------------------------------------------------------- Attention

struct AttentionAttrs {
  bool causal = false;
  int64_t qHeads = 0, kvHeads = 0;  // 0: not given (4-D inputs)
  int64_t qkMode = 0;
  std::optional<double> scale;
  double softcap = 0;
  std::optional<DType> softmaxType;
  int64_t leftWindow = -1, rightWindow = -1;
};

Expected<AttentionAttrs> readAttention(LoweringContext& c) {
  AttentionAttrs a;
  KF_ASSIGN_OR_RETURN(int64_t causal, c.attrs().getInt("is_causal", 0));
  a.causal = causal != 0;
  KF_ASSIGN_OR_RETURN(a.qHeads, c.attrs().getInt("q_num_heads", 0));
  KF_ASSIGN_OR_RETURN(a.kvHeads, c.attrs().getInt("kv_num_heads", 0));
  KF_ASSIGN_OR_RETURN(a.qkMode, c.attrs().getInt("qk_matmul_output_mode", 0));
  if (a.qkMode < 0 || a.qkMode > 3) return Error(str("qk_matmul_output_mode = ", a.qkMode, " is not 0 to 3"));
  if (c.attrs().has("scale")) {
    KF_ASSIGN_OR_RETURN(double s, c.attrs().getFloat("scale"));
    a.scale = s;
  }
  KF_ASSIGN_OR_RETURN(a.softcap, c.attrs().getFloat("softcap", 0.0));
  if (c.attrs().has("softmax_precision")) {
    KF_ASSIGN_OR_RETURN(int64_t p, c.attrs().getInt("softmax_precision"));
    auto t = dtypeFromOnnx(static_cast<int>(p));
    if (!t || !isFloat(*t)) return c.unsupported(str("Attention with softmax_precision ", p));
    a.softmaxType = *t;
  }
  if (c.version() >= 25) {
    KF_ASSIGN_OR_RETURN(a.leftWindow, c.attrs().getInt("left_window_size", -1));
    KF_ASSIGN_OR_RETURN(a.rightWindow, c.attrs().getInt("right_window_size", -1));
    if (a.leftWindow < -1 || a.rightWindow < -1) return Error("window sizes must be -1 or nonnegative");
  }
  return a;
}

// Q, K or V of rank 3 ([B, S, heads * D]) as [B, heads, S, D]; rank 4 as is.
Expected<Value*> toHeads(LoweringContext& c, Value* x, int64_t heads, const char* what) {
  const Shape& s = x->type().shape;
  if (s.size() == 4) return x;
  if (s.size() != 3) return Error(str(what, " must have rank 3 or 4, got ", formatType(x->type())));
  if (heads < 1 || s[2] % heads != 0)
    return Error(str(what, " ", formatType(x->type()), ": its hidden size is not a multiple of ", heads, " heads"));
  KF_ASSIGN_OR_RETURN(Value* split, reshapeTo(c, x, {s[0], s[1], heads, s[2] / heads}));
  return transpose(c, split, {0, 2, 1, 3});
}

// The [q, kv] bias of a frontier rule: 0 where query i may attend key j
// (allowed(i + offset - j)), -inf elsewhere; offset is a compile-time count
// of earlier keys (the KV cache's length, or 0). With d = i + offset - j,
// causal masking allows d >= 0, a window of (left, right) allows
// -right <= d <= left (-1: that side unbounded).
Value* frontierBias(LoweringContext& c, DType dtype, int64_t q, int64_t kv, int64_t offset,
                    const std::function<bool(int64_t)>& allowed) {
  std::vector<double> v;
  for (int64_t i = 0; i < q; ++i)
    for (int64_t j = 0; j < kv; ++j) v.push_back(allowed(i + offset - j) ? 0.0 : kNegInf);
  return filled(c, dtype, {q, kv}, v);
}

// The same per batch, with offset[b] = nonpad_kv_seqlen[b] - q given at run
// time: a [B, 1, q, kv] bias.
Expected<Value*> runtimeFrontierBias(LoweringContext& c, DType dtype, Value* nonpad, int64_t q, int64_t kv,
                                     int64_t left, int64_t right) {
  int64_t batch = nonpad->type().numElements();
  KF_ASSIGN_OR_RETURN(Value* n, castTo(c, nonpad, DType::I64));
  KF_ASSIGN_OR_RETURN(n, reshapeTo(c, n, {batch, 1, 1}));
  std::vector<double> diff;  // i - q - j, so that i + offset - j = diff + nonpad
  for (int64_t i = 0; i < q; ++i)
    for (int64_t j = 0; j < kv; ++j) diff.push_back(static_cast<double>(i - q - j));
  KF_ASSIGN_OR_RETURN(Value* d, c.build("add", {n, filled(c, DType::I64, {q, kv}, diff)}));
  Value* ok = nullptr;
  if (right >= 0) {
    KF_ASSIGN_OR_RETURN(ok, c.build("greater_equal", {d, c.scalar(DType::I64, static_cast<double>(-right))}));
  }
  if (left >= 0) {
    KF_ASSIGN_OR_RETURN(Value* within, c.build("less_equal", {d, c.scalar(DType::I64, static_cast<double>(left))}));
    if (ok) {
      KF_ASSIGN_OR_RETURN(ok, c.build("logical_and", {ok, within}));
    } else {
      ok = within;
    }
  }
  KF_ASSIGN_OR_RETURN(Value* bias, c.build("where", {ok, c.scalar(dtype, 0.0), c.scalar(dtype, kNegInf)}));
  return reshapeTo(c, bias, {batch, 1, q, kv});
}

Expected<Value*> addBias(LoweringContext& c, Value* bias, Value* more) {
  if (!bias) return more;
  return c.build("add", {bias, more});
}

// The additive bias of the mask, the causal and sliding-window frontiers
// and the padding of nonpad_kv_seqlen (null when there is none).
Expected<Value*> attentionBias(LoweringContext& c, const AttentionAttrs& a, DType dtype, int64_t q, int64_t kv,
                               int64_t past, Value* nonpad) {
  Value* bias = nullptr;
  if (c.hasInput(3)) {
    KF_ASSIGN_OR_RETURN(Value* mask, c.input(3));
    const Shape& m = mask->type().shape;
    if (m.empty()) return Error("attn_mask must have rank 1 or more");
    int64_t pad = kv - m.back();
    if (pad < 0) return Error(str("attn_mask's last axis ", m.back(), " is longer than the ", kv, " keys"));
    if (mask->type().dtype == DType::Bool) {
      KF_ASSIGN_OR_RETURN(mask, c.build("where", {mask, c.scalar(dtype, 0.0), c.scalar(dtype, kNegInf)}));
    } else {
      KF_ASSIGN_OR_RETURN(mask, castTo(c, mask, dtype));
    }
    if (pad > 0) {  // keys past the mask's end are masked out
      std::vector<int64_t> pads(2 * m.size(), 0);
      pads[2 * m.size() - 1] = pad;
      KF_ASSIGN_OR_RETURN(mask, c.build("pad", {mask}, {{"pads", Attribute(pads)}, {"mode", std::string("constant")},
                                                        {"value", kNegInf}}));
    }
    bias = mask;
  }
  auto frontier = [&](int64_t left, int64_t right) -> Expected<Value*> {
    auto rule = [left, right](int64_t d) { return (right < 0 || d >= -right) && (left < 0 || d <= left); };
    if (nonpad && past == 0) return runtimeFrontierBias(c, dtype, nonpad, q, kv, left, right);
    return frontierBias(c, dtype, q, kv, past, rule);
  };
  if (a.causal) {
    KF_ASSIGN_OR_RETURN(Value* causal, frontier(-1, 0));
    KF_ASSIGN_OR_RETURN(bias, addBias(c, bias, causal));
  }
  if (a.leftWindow >= 0 || a.rightWindow >= 0) {
    KF_ASSIGN_OR_RETURN(Value* window, frontier(a.leftWindow, a.rightWindow));
    KF_ASSIGN_OR_RETURN(bias, addBias(c, bias, window));
  }
  if (nonpad) {  // keys at or past nonpad_kv_seqlen[b] are padding
    int64_t batch = nonpad->type().numElements();
    KF_ASSIGN_OR_RETURN(Value* n, castTo(c, nonpad, DType::I64));
    KF_ASSIGN_OR_RETURN(n, reshapeTo(c, n, {batch, 1, 1, 1}));
    std::vector<double> keys;
    for (int64_t j = 0; j < kv; ++j) keys.push_back(static_cast<double>(j));
    KF_ASSIGN_OR_RETURN(Value* valid, c.build("less", {filled(c, DType::I64, {kv}, keys), n}));
    KF_ASSIGN_OR_RETURN(Value* padding, c.build("where", {valid, c.scalar(dtype, 0.0), c.scalar(dtype, kNegInf)}));
    KF_ASSIGN_OR_RETURN(bias, addBias(c, bias, padding));
  }
  return bias;
}

// Grouped-query attention: each of the kv heads repeated for q / kv
// consecutive query heads ([h0, h0, h1, h1, ...]).
Expected<Value*> repeatHeads(LoweringContext& c, Value* x, int64_t qHeads) {
  const Shape& s = x->type().shape;
  int64_t kvHeads = s[1];
  if (qHeads == kvHeads) return x;
  if (kvHeads == 0 || qHeads % kvHeads != 0)
    return Error(str(qHeads, " query heads are not a multiple of ", kvHeads, " key/value heads"));
  KF_ASSIGN_OR_RETURN(Value* u, reshapeTo(c, x, {s[0], kvHeads, 1, s[2], s[3]}));
  KF_ASSIGN_OR_RETURN(u, c.build("expand", {u}, {{"shape", Attribute(Shape{s[0], kvHeads, qHeads / kvHeads, s[2], s[3]})}}));
  return reshapeTo(c, u, {s[0], qHeads, s[2], s[3]});
}

// softmax over the keys, with rows that the bias masks entirely giving 0
// (not NaN), decided on the bias as the reference does.
Expected<Value*> guardedSoftmax(LoweringContext& c, Value* scores, Value* bias) {
  auto last = static_cast<int64_t>(scores->type().rank()) - 1;
  KF_ASSIGN_OR_RETURN(Value* p, c.build("softmax", {scores}, {{"axis", last}}));
  if (!bias) return p;
  auto biasLast = static_cast<int64_t>(bias->type().rank()) - 1;
  KF_ASSIGN_OR_RETURN(Value* top, c.build("reduce_max", {bias}, {{"axes", Attribute(std::vector<int64_t>{biasLast})},
                                                                 {"keepdims", true}}));
  KF_ASSIGN_OR_RETURN(Value* masked, c.build("equal", {top, scalarLike(c, top, kNegInf)}));
  return c.build("where", {masked, scalarLike(c, p, 0.0), p});
}

Status lowerAttention(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(AttentionAttrs a, readAttention(c));
  KF_ASSIGN_OR_RETURN(Value* q, c.input(0));
  KF_ASSIGN_OR_RETURN(Value* k, c.input(1));
  KF_ASSIGN_OR_RETURN(Value* v, c.input(2));
  KF_RETURN_IF_ERROR(requireFloat(c, q, "operands"));
  const bool rank3 = q->type().rank() == 3;
  if (k->type().rank() != q->type().rank() || v->type().rank() != q->type().rank())
    return Error("Q, K and V must have the same rank");
  if (rank3 && (a.qHeads < 1 || a.kvHeads < 1)) return Error("3-D inputs need q_num_heads and kv_num_heads");
  if (!rank3 && c.version() >= 25 && (a.qHeads || a.kvHeads))
    return Error("q_num_heads and kv_num_heads are not given for 4-D inputs");
  int64_t batch = q->type().shape[0], qLen = q->type().shape[1];
  KF_ASSIGN_OR_RETURN(q, toHeads(c, q, a.qHeads, "Q"));
  KF_ASSIGN_OR_RETURN(k, toHeads(c, k, a.kvHeads, "K"));
  KF_ASSIGN_OR_RETURN(v, toHeads(c, v, a.kvHeads, "V"));
  if (!rank3) qLen = q->type().shape[2];
  const DType dtype = q->type().dtype;

  int64_t past = 0;
  if (c.hasInput(4) != c.hasInput(5)) return Error("past_key and past_value must be given together");
  if (c.hasInput(4)) {
    KF_ASSIGN_OR_RETURN(Value* pk, c.input(4));
    KF_ASSIGN_OR_RETURN(Value* pv, c.input(5));
    past = pk->type().shape.size() == 4 ? pk->type().shape[2] : 0;
    KF_ASSIGN_OR_RETURN(k, c.build("concat", {pk, k}, {{"axis", int64_t{2}}}));
    KF_ASSIGN_OR_RETURN(v, c.build("concat", {pv, v}, {{"axis", int64_t{2}}}));
  }
  if (c.hasOutput(1)) c.setOutput(1, k);
  if (c.hasOutput(2)) c.setOutput(2, v);
  Value* nonpad = nullptr;
  if (c.version() >= 24 && c.hasInput(6)) {
    if (c.hasInput(4)) return Error("nonpad_kv_seqlen cannot be combined with past_key and past_value");
    KF_ASSIGN_OR_RETURN(nonpad, c.input(6));
    if (nonpad->type().numElements() != batch) return Error("nonpad_kv_seqlen must have one value per batch");
  }
  int64_t kvLen = k->type().shape[2];
  KF_ASSIGN_OR_RETURN(Value* bias, attentionBias(c, a, dtype, qLen, kvLen, past, nonpad));

  // Q and K each scaled by sqrt(scale), rounded to the input type, as the
  // reference (and its function body) does.
  double scale = a.scale ? *a.scale : 1.0 / std::sqrt(static_cast<double>(q->type().shape[3]));
  Value* root = scalarLike(c, q, std::sqrt(scale));
  KF_ASSIGN_OR_RETURN(Value* qs, c.build("mul", {q, root}));
  KF_ASSIGN_OR_RETURN(Value* ks, c.build("mul", {k, root}));
  int64_t heads = q->type().shape[1];
  KF_ASSIGN_OR_RETURN(ks, repeatHeads(c, ks, heads));
  KF_ASSIGN_OR_RETURN(v, repeatHeads(c, v, heads));
  KF_ASSIGN_OR_RETURN(Value* scores, c.build("matmul", {qs, ks}, {{"transpose_b", true}}));
  if (a.softcap > 0) {  // softcap * tanh(scores / softcap), before the mask so -inf stays -inf
    KF_ASSIGN_OR_RETURN(Value* t, c.build("div", {scores, scalarLike(c, scores, a.softcap)}));
    KF_ASSIGN_OR_RETURN(t, c.build("tanh", {t}));
    KF_ASSIGN_OR_RETURN(scores, c.build("mul", {t, scalarLike(c, t, a.softcap)}));
  }
  Value* qkOut = scores;  // modes 0 and 1
  Value* withBias = scores;
  if (bias) {
    KF_ASSIGN_OR_RETURN(withBias, c.build("add", {scores, bias}));
  }
  if (a.qkMode == 2) qkOut = withBias;
  Value* logits = withBias;
  if (a.softmaxType) {
    KF_ASSIGN_OR_RETURN(logits, castTo(c, logits, *a.softmaxType));
  }
  KF_ASSIGN_OR_RETURN(Value* probs, guardedSoftmax(c, logits, bias));
  if (a.qkMode == 3) qkOut = probs;
  KF_ASSIGN_OR_RETURN(probs, castTo(c, probs, dtype));
  if (c.hasOutput(3)) {
    KF_ASSIGN_OR_RETURN(qkOut, castTo(c, qkOut, dtype));
    c.setOutput(3, qkOut);
  }
  KF_ASSIGN_OR_RETURN(Value* y, c.build("matmul", {probs, v}));
  if (rank3) {
    KF_ASSIGN_OR_RETURN(y, transpose(c, y, {0, 2, 1, 3}));
    const Shape& s = y->type().shape;
    KF_ASSIGN_OR_RETURN(y, reshapeTo(c, y, {s[0], s[1], s[2] * s[3]}));
  }
  return done(c, y);
}

// ---------------------------------------------------------------- RotaryEmbedding

// Splits x_rotate ([B, S, H, rd]) into the two parts the rotation pairs:
// halves, or even and odd positions when interleaved.
Expected<std::pair<Value*, Value*>> rotationPairs(LoweringContext& c, Value* x, int64_t rd, bool interleaved) {
  if (interleaved) {
    KF_ASSIGN_OR_RETURN(Value* x1, sliceLast(c, x, 0, rd, 2));
    KF_ASSIGN_OR_RETURN(Value* x2, sliceLast(c, x, 1, rd, 2));
    return std::pair{x1, x2};
  }
  KF_ASSIGN_OR_RETURN(Value* x1, sliceLast(c, x, 0, rd / 2));
  KF_ASSIGN_OR_RETURN(Value* x2, sliceLast(c, x, rd / 2, rd));
  return std::pair{x1, x2};
}

// The cos or sin cache for each token: rows picked by position_ids
// ([B, S] of [max_position, rd / 2]), or already [B, S, rd / 2]; then a
// head axis to broadcast over.
Expected<Value*> cacheRows(LoweringContext& c, Value* cache, Value* positions, int64_t half) {
  Value* rows = cache;
  if (positions) {
    KF_ASSIGN_OR_RETURN(rows, c.build("gather", {cache, positions}, {{"axis", int64_t{0}}}));
  }
  if (rows->type().rank() != 3 || rows->type().shape[2] != half)
    return Error(str("the cos and sin caches give rows of ", formatType(rows->type()), ", not [batch, sequence, ",
                     half, "]"));
  return c.build("unsqueeze", {rows}, {{"axes", Attribute(std::vector<int64_t>{2})}});
}

Status lowerRotaryEmbedding(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(Value* x, c.input(0));
  KF_ASSIGN_OR_RETURN(Value* cosCache, c.input(1));
  KF_ASSIGN_OR_RETURN(Value* sinCache, c.input(2));
  KF_RETURN_IF_ERROR(requireFloat(c, x, "input"));
  KF_ASSIGN_OR_RETURN(int64_t interleaved, c.attrs().getInt("interleaved", 0));
  KF_ASSIGN_OR_RETURN(int64_t rd, c.attrs().getInt("rotary_embedding_dim", 0));
  KF_ASSIGN_OR_RETURN(int64_t heads, c.attrs().getInt("num_heads", 0));
  const Shape original = x->type().shape;
  // As [batch, sequence, heads, head size].
  if (original.size() == 4) {
    KF_ASSIGN_OR_RETURN(x, transpose(c, x, {0, 2, 1, 3}));
  } else if (original.size() == 3) {
    if (heads < 1 || original[2] % heads != 0)
      return Error(str("a 3-D input needs num_heads dividing its hidden size ", original[2]));
    KF_ASSIGN_OR_RETURN(x, reshapeTo(c, x, {original[0], original[1], heads, original[2] / heads}));
  } else {
    return Error(str("input must have rank 3 or 4, got ", formatType(x->type())));
  }
  int64_t headSize = x->type().shape[3];
  if (rd == 0) rd = headSize;
  if (rd < 2 || rd % 2 != 0 || rd > headSize)
    return Error(str("rotary_embedding_dim = ", rd, " must be even and at most the head size ", headSize));
  Value* positions = nullptr;
  if (c.hasInput(3)) {
    KF_ASSIGN_OR_RETURN(positions, c.input(3));
  }
  KF_ASSIGN_OR_RETURN(Value* cosRows, cacheRows(c, cosCache, positions, rd / 2));
  KF_ASSIGN_OR_RETURN(Value* sinRows, cacheRows(c, sinCache, positions, rd / 2));
  KF_ASSIGN_OR_RETURN(Value* rotate, sliceLast(c, x, 0, rd));
  KF_ASSIGN_OR_RETURN(auto pair, rotationPairs(c, rotate, rd, interleaved != 0));
  auto [x1, x2] = pair;
  // real = cos x1 - sin x2, imag = sin x1 + cos x2
  KF_ASSIGN_OR_RETURN(Value* cx1, c.build("mul", {cosRows, x1}));
  KF_ASSIGN_OR_RETURN(Value* sx2, c.build("mul", {sinRows, x2}));
  KF_ASSIGN_OR_RETURN(Value* sx1, c.build("mul", {sinRows, x1}));
  KF_ASSIGN_OR_RETURN(Value* cx2, c.build("mul", {cosRows, x2}));
  KF_ASSIGN_OR_RETURN(Value* real, c.build("sub", {cx1, sx2}));
  KF_ASSIGN_OR_RETURN(Value* imag, c.build("add", {sx1, cx2}));
  Value* rotated = nullptr;
  if (interleaved) {  // pairs back into even and odd positions
    KF_ASSIGN_OR_RETURN(Value* r, c.build("unsqueeze", {real}, {{"axes", Attribute(std::vector<int64_t>{4})}}));
    KF_ASSIGN_OR_RETURN(Value* i, c.build("unsqueeze", {imag}, {{"axes", Attribute(std::vector<int64_t>{4})}}));
    KF_ASSIGN_OR_RETURN(Value* both, concatLast(c, {r, i}));
    KF_ASSIGN_OR_RETURN(rotated, reshapeTo(c, both, rotate->type().shape));
  } else {
    KF_ASSIGN_OR_RETURN(rotated, concatLast(c, {real, imag}));
  }
  Value* y = rotated;
  if (rd < headSize) {
    KF_ASSIGN_OR_RETURN(Value* keep, sliceLast(c, x, rd, headSize));
    KF_ASSIGN_OR_RETURN(y, concatLast(c, {rotated, keep}));
  }
  if (original.size() == 4) {
    KF_ASSIGN_OR_RETURN(y, transpose(c, y, {0, 2, 1, 3}));
  } else {
    KF_ASSIGN_OR_RETURN(y, reshapeTo(c, y, original));
  }
  return done(c, y);
}

const std::vector<OpLowering> kTable = {
    {"Attention", {23, 24, 25}, lowerAttention,
     "reshape + transpose per head split, mul (sqrt of the scale), matmul, tanh (softcap), add of the mask, causal, "
     "window and padding biases, softmax (fully masked rows: 0), matmul; grouped-query heads: expand"},
    {"RotaryEmbedding", {23}, lowerRotaryEmbedding,
     "gather of the cos and sin rows (position_ids), slices, mul + sub + add, concat"},
};

}  // namespace

std::span<const OpLowering> attentionLowerings() { return kTable; }

}  // namespace kfuse::onnx_import
