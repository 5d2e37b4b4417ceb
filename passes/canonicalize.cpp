// canonicalize: local algebraic simplifications, applied until nothing
// changes. Each rewrite keeps the value's type exactly (a rewrite that would
// change a shape through broadcasting is not applied). The 0s and 1s are
// constant nodes; a fixed exponent may also be a weight no function of the
// module updates (fixedData), as exporters write the model's constants.
//   identity(x), x+0, 0+x, x-0, x*1, 1*x, x/1, x^1, neg(neg(x)), cast to the same
//   dtype, transpose by the identity permutation, reshape/expand to the same
//   shape, concat of one operand                       -> x
//   x^2, x^3                                           -> x*x, (x*x)*x
//   transpose(transpose(x, p), q)                      -> transpose(x, p o q)
//   squeeze, unsqueeze, flatten                        -> reshape (one form)
//   reshape(reshape(x))                                -> reshape(x)
//   split(x) into n pieces                             -> n slices of x (data
//                                                         movement that fuses
//                                                         into its readers)
//   gather(x, constant indices i..i+k-1 ascending,
//   or one constant index, a scalar)                   -> slice of x (reshaped
//                                                         for a scalar index):
//                                                         a class token, the
//                                                         positions embedding
//   gather_grad of such indices                        -> pad of dy with zeros
//   transpose(matmul(a, b)) swapping two axes,
//   the product used nowhere else                      -> matmul(b, a), the
//                                                         transpose flags
//                                                         swapped and flipped
//   reduce_sum over axis 0 of matmul(a, b) with
//   transpose_a, a [n, t, m] and b [n, t, k], the
//   product used nowhere else                          -> matmul of a and b
//                                                         reshaped to [n*t, m]
//                                                         and [n*t, k]: one
//                                                         product n*t deep
//   matmul(a, transpose(w)) swapping w's two axes, w a
//   parameter or constant (a weight, an LM head tied to
//   its embedding)                                     -> matmul(a, w) with
//                                                         transpose_b flipped:
//                                                         no copy of the weight
#include <functional>
#include <optional>

#include "ir/builder.h"
#include "ir/ops/op_helpers.h"
#include "passes/pass_registry.h"

namespace kfuse {
namespace {

// True when every element of `t` equals `x`.
bool allEqual(const Tensor* t, double x) {
  if (!t) return false;
  for (int64_t i = 0; i < t->numElements(); ++i)
    if (t->at(i) != x) return false;
  return true;
}

// True when v is a constant whose every element equals `x`. (Not a weight
// that happens to hold zeros or ones, as a fresh bias or layer-norm scale
// does: weights may be loaded after the module compiles.)
bool isSplat(const Value* v, double x) {
  const Node* p = v->producer();
  return p && p->is(Op::Constant) && allEqual(&p->attr("value").asTensor(), x);
}

// True when v's value is fixed as the module compiles (fixedData: a
// constant, or a weight no function updates) and every element equals `x`:
// for the operands exporters keep as initializers though they are the
// model's constants (the 3 of GELU's cube).
bool isFixedSplat(const Value* v, double x) { return allEqual(fixedData(*v), x); }

class Canonicalizer {
 public:
  explicit Canonicalizer(Graph& g) : g_(g) {}

  // Applies the first matching rewrite to n; returns whether one applied.
  bool rewrite(Node* n) {
    const Op op = n->op().id;
    if (op == Op::Split) return splitToSlices(n);
    Value* out = n->numResults() == 1 ? n->result() : nullptr;
    if (!out) return false;
    auto operand = [&](size_t i) { return n->operand(i); };
    auto sameType = [&](const Value* v) { return v->type() == out->type(); };

    if (op == Op::Identity) return forward(n, operand(0));
    if (op == Op::Add && isSplat(operand(1), 0) && sameType(operand(0))) return forward(n, operand(0));
    if (op == Op::Add && isSplat(operand(0), 0) && sameType(operand(1))) return forward(n, operand(1));
    if (op == Op::Sub && isSplat(operand(1), 0) && sameType(operand(0))) return forward(n, operand(0));
    if (op == Op::Mul && isSplat(operand(1), 1) && sameType(operand(0))) return forward(n, operand(0));
    if (op == Op::Mul && isSplat(operand(0), 1) && sameType(operand(1))) return forward(n, operand(1));
    if (op == Op::Div && isSplat(operand(1), 1) && sameType(operand(0))) return forward(n, operand(0));
    if (op == Op::Neg && producedBy(operand(0), Op::Neg)) return forward(n, operand(0)->producer()->operand(0));
    if (op == Op::Cast && sameType(operand(0))) return forward(n, operand(0));
    if ((op == Op::Reshape || op == Op::Expand) && sameType(operand(0))) return forward(n, operand(0));
    if (op == Op::Concat && n->numOperands() == 1 && sameType(operand(0))) return forward(n, operand(0));
    if (op == Op::Pow) return powBySmallInteger(n);
    if (op == Op::Transpose) return rewriteTranspose(n);
    if (op == Op::Matmul) return foldWeightTranspose(n);
    if (op == Op::ReduceSum) return stackBatchedProducts(n);
    if (op == Op::Gather || op == Op::GatherGrad) return gatherOfRun(n);
    if (op == Op::Squeeze || op == Op::Unsqueeze || op == Op::Flatten) return replaceWithReshape(n, operand(0));
    if (op == Op::Reshape && producedBy(operand(0), Op::Reshape))
      return replaceWithReshape(n, operand(0)->producer()->operand(0));
    return false;
  }

 private:
  static bool producedBy(const Value* v, Op op) { return v->producer() && v->producer()->is(op); }

  // Replaces n's single result by v (which has the same type).
  bool forward(Node* n, Value* v) {
    if (!(v->type() == n->result()->type())) return false;
    if (v->name().empty() && v->kind() == Value::Kind::Result) v->setName(n->result()->name());
    g_.replaceAllUsesWith(n->result(), v);
    g_.eraseNode(n);
    return true;
  }

  // n replaced by op(operands) when that has n's type (nothing changes
  // otherwise).
  bool replaceWithNode(Node* n, Op op, const std::vector<Value*>& operands, AttrMap attrs) {
    auto built = buildNode(g_, op, operands, std::move(attrs), n);
    if (!built || !((*built)->result()->type() == n->result()->type())) {
      if (built) g_.eraseNode(*built);
      return false;
    }
    (*built)->copyProvenance(*n);
    (*built)->result()->setName(n->result()->name());
    g_.replaceAllUsesWith(n->result(), (*built)->result());
    g_.eraseNode(n);
    return true;
  }

  bool replaceWithReshape(Node* n, Value* input) {
    if (input->type() == n->result()->type()) return forward(n, input);
    const TensorType& t = n->result()->type();
    return replaceWithNode(n, Op::Reshape, {input},
                           {{"shape", Attribute(t.shape)}, {"layout", std::string(layoutName(t.layout))}});
  }

  // x ^ k for a fixed exponent k of 1, 2 or 3 is x, x*x or (x*x)*x:
  // multiplications vectorize where pow is a libm call per element (GELU's
  // tanh form cubes its input, and exporters keep the 3 as an initializer).
  // x*x rounds as pow does; (x*x)*x is within an ulp of it.
  bool powBySmallInteger(Node* n) {
    Value* x = n->operand(0);
    if (!(x->type() == n->result()->type())) return false;
    if (isFixedSplat(n->operand(1), 1)) return forward(n, x);
    const bool cube = isFixedSplat(n->operand(1), 3);
    if (!cube && !isFixedSplat(n->operand(1), 2)) return false;
    if (!cube) return replaceWithNode(n, Op::Mul, {x, x}, {});
    auto square = buildNode(g_, Op::Mul, {x, x}, {}, n);
    if (!square) return false;
    (*square)->copyProvenance(*n);
    return replaceWithNode(n, Op::Mul, {(*square)->result(), x}, {}) || (g_.eraseNode(*square), false);
  }

  bool rewriteTranspose(Node* n) {
    // perm = [] means "reverse the axes": resolve it before reasoning about it.
    auto resolved = ops::resolvePermutation(n->attr("perm").asInts(), n->operand(0)->type());
    if (!resolved) return false;
    const std::vector<int64_t>& q = *resolved;
    bool identity = true;
    for (size_t i = 0; i < q.size(); ++i) identity &= q[i] == static_cast<int64_t>(i);
    if (identity) return forward(n, n->operand(0));
    Node* inner = n->operand(0)->producer();
    if (inner && inner->is(Op::Matmul)) return transposedProduct(n, q);
    if (!inner || !inner->is(Op::Transpose)) return false;
    // out[i] = mid[q[i]] and mid[j] = x[p[j]], so out[i] = x[p[q[i]]].
    auto innerPerm = ops::resolvePermutation(inner->attr("perm").asInts(), inner->operand(0)->type());
    if (!innerPerm) return false;
    const std::vector<int64_t>& p = *innerPerm;
    std::vector<int64_t> composed(q.size());
    for (size_t i = 0; i < q.size(); ++i) composed[i] = p[static_cast<size_t>(q[i])];
    return replaceWithNode(n, Op::Transpose, {inner->operand(0)}, {{"perm", Attribute(composed)}});
  }

  // The only use of v is `user`: no function result, no other node but
  // dead ones (a rewrite in this sweep may have left them).
  static bool onlyUse(const Value* v, const Node* user) {
    if (v->graphUses() > 0) return false;
    for (const Use& u : v->uses()) {
      bool live = false;
      for (size_t r = 0; r < u.user->numResults(); ++r) live |= u.user->result(r)->hasUses();
      if (u.user != user && live) return false;
    }
    return true;
  }

  // (A B)^T = B^T A^T: a product read only through the swap of its two axes
  // is computed swapped, its operands read transposed where they lie. A
  // weight's gradient (x^T dy) is wanted as the weight lies, [out, in]: the
  // optimizer update read it through a transpose, a column at a time.
  bool transposedProduct(Node* n, const std::vector<int64_t>& perm) {
    Node* mm = n->operand(0)->producer();
    if (perm != std::vector<int64_t>{1, 0} || !onlyUse(n->operand(0), n)) return false;
    if (mm->operand(0)->type().rank() != 2 || mm->operand(1)->type().rank() != 2) return false;
    AttrMap attrs = mm->attrs();
    attrs["transpose_a"] = Attribute(!mm->attr("transpose_b").asBool());
    attrs["transpose_b"] = Attribute(!mm->attr("transpose_a").asBool());
    return replaceWithNode(n, Op::Matmul, {mm->operand(1), mm->operand(0)}, std::move(attrs));  // dce takes mm
  }

  // The sum over the batch of a batched A^T B (a weight's gradient from
  // [batch, tokens, features] activations, one product per sequence) is one
  // product over the sequences stacked, batch x tokens deep. ViT-tiny's
  // weight gradients were 8 products 17 deep each, then a sum over 8 copies
  // of the gradient.
  bool stackBatchedProducts(Node* n) {
    Node* mm = n->operand(0)->producer();
    if (!mm || !mm->is(Op::Matmul) || !onlyUse(n->operand(0), n)) return false;
    if (!mm->attr("transpose_a").asBool() || mm->attr("transpose_b").asBool()) return false;
    Value* a = mm->operand(0);
    Value* b = mm->operand(1);
    const TensorType& ta = a->type();
    const TensorType& tb = b->type();
    if (ta.rank() != 3 || tb.rank() != 3 || ta.layout != Layout::Plain || tb.layout != Layout::Plain) return false;
    if (ta.shape[0] != tb.shape[0] || ta.shape[1] != tb.shape[1]) return false;
    const std::vector<int64_t>& axes = n->attr("axes").asInts();
    if (axes.size() != 1 || (axes[0] != 0 && axes[0] != -3)) return false;
    const int64_t rows = ta.shape[0] * ta.shape[1];
    std::vector<Node*> built;  // erased, last first, if the rewrite does not apply
    auto add = [&](Op op, const std::vector<Value*>& operands, AttrMap attrs) -> Value* {
      auto node = buildNode(g_, op, operands, std::move(attrs), n);
      if (!node) return nullptr;
      (*node)->copyProvenance(*mm);
      built.push_back(*node);
      return (*node)->result();
    };
    auto stacked = [&](Value* v, int64_t columns) {
      return add(Op::Reshape, {v}, {{"shape", Attribute(std::vector<int64_t>{rows, columns})}});
    };
    Value* sa = stacked(a, ta.shape[2]);
    Value* sb = sa ? stacked(b, tb.shape[2]) : nullptr;
    Value* product = sb ? add(Op::Matmul, {sa, sb}, mm->attrs()) : nullptr;
    if (product && replaceWithReshape(n, product)) return true;  // dce takes mm
    for (auto it = built.rbegin(); it != built.rend(); ++it) g_.eraseNode(*it);
    return false;
  }

  bool splitToSlices(Node* n) {
    int64_t axis = n->attr("axis").asInt();
    const std::vector<int64_t>& sizes = n->attr("sizes").asInts();
    if (sizes.size() != n->numResults()) return false;
    std::vector<Node*> slices;
    int64_t start = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      auto built = buildNode(g_, Op::Slice, {n->operand(0)},
                             {{"starts", Attribute(std::vector<int64_t>{start})},
                              {"ends", Attribute(std::vector<int64_t>{start + sizes[i]})},
                              {"axes", Attribute(std::vector<int64_t>{axis})},
                              {"steps", Attribute(std::vector<int64_t>{1})}},
                             n);
      start += sizes[i];
      if (!built || !((*built)->result()->type() == n->result(i)->type())) {
        if (built) g_.eraseNode(*built);
        for (Node* s : slices) g_.eraseNode(s);
        return false;
      }
      slices.push_back(*built);
    }
    for (size_t i = 0; i < slices.size(); ++i) {
      slices[i]->copyProvenance(*n);
      slices[i]->result()->setName(n->result(i)->name());
      g_.replaceAllUsesWith(n->result(i), slices[i]->result());
    }
    g_.eraseNode(n);
    return true;
  }

  // The first index of the ascending run of consecutive in-range indices
  // that `v` holds (a constant of rank 0 or 1), negatives counted from the
  // end of an axis of `size`.
  static std::optional<int64_t> runStart(const Value* v, int64_t size) {
    const Node* p = v->producer();
    if (!p || !p->is(Op::Constant) || v->type().rank() > 1) return std::nullopt;
    const Tensor& t = p->attr("value").asTensor();
    if (t.numElements() == 0) return std::nullopt;
    auto at = [&](int64_t i) { return t.at(i) < 0 ? static_cast<int64_t>(t.at(i)) + size : static_cast<int64_t>(t.at(i)); };
    for (int64_t i = 0; i < t.numElements(); ++i)
      if (at(i) != at(0) + i || at(i) < 0 || at(i) >= size) return std::nullopt;
    return at(0);
  }

  // gather reading a run of rows is a slice (a strided view that fuses into
  // its readers); its gradient puts dy back into that run, zeros around it.
  bool gatherOfRun(Node* n) {
    const bool grad = n->is(Op::GatherGrad);
    const Value* indices = n->operand(1);
    const TensorType& x = grad ? n->result()->type() : n->operand(0)->type();
    auto axis = normalizeAxis(n->attr("axis").asInt(), static_cast<int64_t>(x.rank()));
    if (!axis || x.layout != Layout::Plain) return false;
    const size_t a = static_cast<size_t>(*axis);
    auto start = runStart(indices, x.shape[a]);
    if (!start) return false;
    const int64_t count = std::max<int64_t>(indices->type().numElements(), 1);
    Shape run = x.shape;  // the run as x's axes (an extent-1 axis for a scalar index)
    run[a] = count;
    if (!grad) {
      auto slice = buildNode(g_, Op::Slice, {n->operand(0)},
                             {{"starts", Attribute(std::vector<int64_t>{*start})},
                              {"ends", Attribute(std::vector<int64_t>{*start + count})},
                              {"axes", Attribute(std::vector<int64_t>{*axis})},
                              {"steps", Attribute(std::vector<int64_t>{1})}},
                             n);
      if (!slice) return false;
      (*slice)->copyProvenance(*n);
      return replaceWithReshape(n, (*slice)->result()) || (g_.eraseNode(*slice), false);
    }
    auto shaped = buildNode(g_, Op::Reshape, {n->operand(0)}, {{"shape", Attribute(run)}}, n);
    if (!shaped) return false;
    std::vector<int64_t> pads(2 * x.rank(), 0);
    pads[a] = *start;
    pads[a + x.rank()] = x.shape[a] - *start - count;
    (*shaped)->copyProvenance(*n);
    return replaceWithNode(n, Op::Pad, {(*shaped)->result()}, {{"pads", Attribute(pads)}}) ||
           (g_.eraseNode(*shaped), false);
  }

  // B of a matmul read through a transpose of its last two axes: BLAS and
  // the packed GEMMs read a transposed B as it lies. Only for parameters and
  // constants, which would otherwise be copied on every run (activations
  // stay: OpenBLAS ran a batched attention product slower transposed).
  bool foldWeightTranspose(Node* n) {
    Node* t = n->operand(1)->producer();
    if (!t || !t->is(Op::Transpose)) return false;
    const Value* w = t->operand(0);
    bool weight = w->kind() == Value::Kind::Param || (w->producer() && w->producer()->is(Op::Constant));
    if (!weight || w->type().rank() != 2) return false;
    auto perm = ops::resolvePermutation(t->attr("perm").asInts(), w->type());
    if (!perm || *perm != std::vector<int64_t>{1, 0}) return false;
    AttrMap attrs = n->attrs();
    attrs["transpose_b"] = Attribute(!n->attr("transpose_b").asBool());
    return replaceWithNode(n, Op::Matmul, {n->operand(0), t->operand(0)}, std::move(attrs));
  }

  Graph& g_;
};

class CanonicalizePass : public Pass {
 public:
  std::string_view name() const override { return "canonicalize"; }
  PassResult run(Graph& g, const PassContext&) override {
    bool changed = false;
    Canonicalizer c(g);
    // Each rewrite removes a node or replaces one by a simpler form, so the
    // sweep reaches a fixed point; the bound only guards against a bug.
    for (int sweep = 0; sweep < 64; ++sweep) {
      bool any = false;
      for (Node* n : g.nodes()) any |= c.rewrite(n);
      changed |= any;
      if (!any) break;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> createCanonicalizePass() { return std::make_unique<CanonicalizePass>(); }

}  // namespace kfuse
