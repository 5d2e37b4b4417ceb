// Einsum, lowered to kfuse's transpose, reshape, matmul, mul, where and
// reduce_sum: no einsum op of its own. The equation is parsed into one label
// list per operand (ellipsis dimensions become labels of their own, right-
// aligned so that they broadcast as NumPy's do), then
//   1. a label repeated within an operand takes the diagonal (where with a
//      constant identity mask, then reduce_sum: exact, unlike multiplying
//      by the mask, which would turn an inf beside the diagonal into NaN);
//   2. labels nobody else needs are summed out as early as possible;
//   3. operands are contracted left to right, two at a time: shared labels
//      needed later are batch axes, the others are the contraction, and the
//      pair becomes one batched matmul (or a broadcast mul when nothing is
//      contracted);
//   4. the last operand is transposed into the output's order.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "frontend/onnx/lower_util.h"
#include "frontend/onnx/op_table.h"

namespace kfuse::onnx_import {
namespace {

// Letters are labels by their character code; ellipsis dimension i (of the
// E the widest operand has) is kEllipsis + i.
constexpr int kEllipsis = 256;
using Labels = std::vector<int>;

struct Equation {
  std::vector<Labels> inputs;
  Labels output;
};

struct Term {
  std::string letters;  // '.' marks where the ellipsis was
  bool ellipsis = false;
};

Expected<Term> parseTerm(std::string_view text) {
  Term t;
  for (size_t i = 0; i < text.size(); ++i) {
    char ch = text[i];
    if (std::isalpha(static_cast<unsigned char>(ch))) {
      t.letters.push_back(ch);
    } else if (text.substr(i, 3) == "...") {
      if (t.ellipsis) return Error(str("term '", text, "' has two ellipses"));
      t.ellipsis = true;
      t.letters.push_back('.');
      i += 2;
    } else {
      return Error(str("term '", text, "' contains '", std::string(1, ch), "', not a letter or '...'"));
    }
  }
  return t;
}

// The labels of a term; `dims` is the count of dimensions its ellipsis
// stands for and `widest` the most any operand's does.
Labels labelsOf(const Term& t, int64_t dims, int64_t widest) {
  Labels out;
  for (char ch : t.letters) {
    if (ch != '.') {
      out.push_back(static_cast<unsigned char>(ch));
      continue;
    }
    for (int64_t i = widest - dims; i < widest; ++i) out.push_back(kEllipsis + static_cast<int>(i));
  }
  return out;
}

// ONNX's implicit output: the ellipsis dimensions, then the letters used
// exactly once in the whole equation, in ASCII order.
Labels implicitOutput(const std::vector<Term>& terms, int64_t widest) {
  Labels out;
  for (int64_t i = 0; i < widest; ++i) out.push_back(kEllipsis + static_cast<int>(i));
  std::map<char, int> uses;
  for (const Term& t : terms)
    for (char ch : t.letters)
      if (ch != '.') ++uses[ch];
  for (auto [ch, n] : uses)  // std::map: ASCII order
    if (n == 1) out.push_back(static_cast<unsigned char>(ch));
  return out;
}

Expected<Equation> parseEquation(std::string text, const std::vector<int64_t>& ranks) {
  text.erase(std::remove(text.begin(), text.end(), ' '), text.end());
  const size_t arrow = text.find("->");
  std::string lhs = text.substr(0, arrow);
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    KF_ASSIGN_OR_RETURN(Term t, parseTerm(std::string_view(lhs).substr(start, comma - start)));
    terms.push_back(std::move(t));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ranks.size())
    return Error(str("the equation has ", terms.size(), " input terms for ", ranks.size(), " inputs"));
  std::vector<int64_t> dims;
  int64_t widest = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    auto letters = static_cast<int64_t>(terms[i].letters.size()) - (terms[i].ellipsis ? 1 : 0);
    int64_t d = ranks[i] - letters;
    if (d < 0 || (d > 0 && !terms[i].ellipsis))
      return Error(str("term ", i, " '", terms[i].letters, "' does not match input ", i, " of rank ", ranks[i]));
    dims.push_back(d);
    widest = std::max(widest, d);
  }
  Equation eq;
  for (size_t i = 0; i < terms.size(); ++i) eq.inputs.push_back(labelsOf(terms[i], dims[i], widest));
  if (arrow == std::string::npos) {
    eq.output = implicitOutput(terms, widest);
    return eq;
  }
  KF_ASSIGN_OR_RETURN(Term out, parseTerm(std::string_view(text).substr(arrow + 2)));
  if (widest > 0 && !out.ellipsis)  // as NumPy, ONNX's reference: no implicit sum over them
    return Error(str("the output of '", text, "' drops the ", widest, " dimensions the ellipsis stands for"));
  eq.output = labelsOf(out, widest, widest);
  std::set<int> seen, used;
  for (const Labels& in : eq.inputs) used.insert(in.begin(), in.end());
  for (int l : eq.output) {
    if (!seen.insert(l).second) return Error(str("the output repeats a label in '", text, "'"));
    if (l < kEllipsis && !used.count(l))
      return Error(str("output label '", std::string(1, static_cast<char>(l)), "' is no input's"));
  }
  return eq;
}

// A value and the label of each of its axes.
struct Operand {
  Value* v;
  Labels labels;
  int64_t extent(size_t axis) const { return v->type().shape[axis]; }
};

std::string labelName(int l) {
  if (l >= kEllipsis) return str("ellipsis dimension ", l - kEllipsis);
  return str("label '", std::string(1, static_cast<char>(l)), "'");
}

bool has(const Labels& ls, int l) { return std::find(ls.begin(), ls.end(), l) != ls.end(); }

Expected<Value*> transposed(LoweringContext& c, Value* v, const std::vector<int64_t>& perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == static_cast<int64_t>(i);
  if (identity) return v;
  return c.build("transpose", {v}, {{"perm", Attribute(perm)}});
}

// Operand x with its axes reordered to `order` (labels it has).
Expected<Operand> permuted(LoweringContext& c, const Operand& x, const Labels& order) {
  std::vector<int64_t> perm;
  for (int l : order)
    perm.push_back(std::find(x.labels.begin(), x.labels.end(), l) - x.labels.begin());
  KF_ASSIGN_OR_RETURN(Value* v, transposed(c, x.v, perm));
  return Operand{v, order};
}

// Step 1: the diagonal over each repeated label, until none repeats.
Expected<Operand> diagonals(LoweringContext& c, Operand x) {
  for (size_t i = 0; i < x.labels.size(); ++i) {
    for (size_t j = i + 1; j < x.labels.size(); ++j) {
      if (x.labels[i] != x.labels[j]) continue;
      const int64_t n = x.extent(i);
      if (x.extent(j) != n)
        return Error(str("repeated ", labelName(x.labels[i]), " spans axes ", i, " and ", j, " of different sizes in ",
                         formatType(x.v->type())));
      Shape maskShape(x.labels.size(), 1);
      maskShape[i] = maskShape[j] = n;
      Tensor eye(TensorType(DType::Bool, maskShape));
      for (int64_t k = 0; k < n; ++k) eye.set(k * n + k, 1);
      KF_ASSIGN_OR_RETURN(Value* kept, c.build("where", {c.constant(std::move(eye)), x.v, scalarLike(c, x.v, 0)}));
      const std::vector<int64_t> axis{static_cast<int64_t>(j)};
      KF_ASSIGN_OR_RETURN(x.v, c.build("reduce_sum", {kept}, {{"axes", Attribute(axis)}}));
      x.labels.erase(x.labels.begin() + static_cast<std::ptrdiff_t>(j));
      --j;
    }
  }
  return x;
}

// Step 2: sums away the labels not in `needed`.
Expected<Operand> sumUnneeded(LoweringContext& c, Operand x, const std::set<int>& needed) {
  std::vector<int64_t> axes;
  Labels kept;
  for (size_t i = 0; i < x.labels.size(); ++i) {
    if (needed.count(x.labels[i]))
      kept.push_back(x.labels[i]);
    else
      axes.push_back(static_cast<int64_t>(i));
  }
  if (axes.empty()) return x;
  KF_ASSIGN_OR_RETURN(Value* v, c.build("reduce_sum", {x.v}, {{"axes", Attribute(axes)}}));
  return Operand{v, kept};
}

int64_t extentOf(const Operand& x, int l) {
  return x.extent(static_cast<size_t>(std::find(x.labels.begin(), x.labels.end(), l) - x.labels.begin()));
}

// x with the axis of label l broadcast to n (ellipsis axes of extent 1).
Expected<Operand> broadcastLabel(LoweringContext& c, Operand x, int l, int64_t n) {
  Shape shape = x.v->type().shape;
  shape[static_cast<size_t>(std::find(x.labels.begin(), x.labels.end(), l) - x.labels.begin())] = n;
  KF_ASSIGN_OR_RETURN(x.v, c.build("expand", {x.v}, {{"shape", Attribute(shape)}}));
  return x;
}

// Shared labels must agree in extent, or be 1 on one side (ellipsis axes
// broadcast); the side of extent 1 is expanded so the pair lines up.
Status alignExtents(LoweringContext& c, Operand& a, Operand& b) {
  for (int l : a.labels) {
    if (!has(b.labels, l)) continue;
    int64_t ea = extentOf(a, l), eb = extentOf(b, l);
    if (ea == eb) continue;
    if (ea != 1 && eb != 1) return Error(str(labelName(l), " has sizes ", ea, " and ", eb, " in two inputs"));
    if (ea == 1) {
      KF_ASSIGN_OR_RETURN(a, broadcastLabel(c, a, l, eb));
    } else {
      KF_ASSIGN_OR_RETURN(b, broadcastLabel(c, b, l, ea));
    }
  }
  return Status::ok();
}

Shape extentsOf(const Operand& x, const Labels& ls) {
  Shape s;
  for (int l : ls) s.push_back(extentOf(x, l));
  return s;
}

int64_t product(const Shape& s) { return numElements(s); }

// Step 3: one pair. Batch labels (shared, needed later) lead; a's own
// labels, then b's, follow; the contracted ones are summed by a matmul.
Expected<Operand> contract(LoweringContext& c, Operand a, Operand b, const std::set<int>& needed) {
  KF_RETURN_IF_ERROR(alignExtents(c, a, b));
  Labels batch, contracted, aOnly, bOnly;
  for (int l : a.labels) {
    if (!has(b.labels, l))
      aOnly.push_back(l);
    else
      (needed.count(l) ? batch : contracted).push_back(l);
  }
  for (int l : b.labels)
    if (!has(a.labels, l)) bOnly.push_back(l);
  Shape bs = extentsOf(a, batch), as = extentsOf(a, aOnly), ks = extentsOf(a, contracted), ns = extentsOf(b, bOnly);
  Labels resultLabels = batch;
  resultLabels.insert(resultLabels.end(), aOnly.begin(), aOnly.end());
  resultLabels.insert(resultLabels.end(), bOnly.begin(), bOnly.end());
  Shape resultShape = bs;
  resultShape.insert(resultShape.end(), as.begin(), as.end());
  resultShape.insert(resultShape.end(), ns.begin(), ns.end());
  Labels aOrder = batch, bOrder = batch;
  aOrder.insert(aOrder.end(), aOnly.begin(), aOnly.end());
  aOrder.insert(aOrder.end(), contracted.begin(), contracted.end());
  bOrder.insert(bOrder.end(), contracted.begin(), contracted.end());
  bOrder.insert(bOrder.end(), bOnly.begin(), bOnly.end());
  KF_ASSIGN_OR_RETURN(Operand pa, permuted(c, a, aOrder));
  KF_ASSIGN_OR_RETURN(Operand pb, permuted(c, b, bOrder));
  Shape aView = {product(bs), product(as), product(ks)};
  Shape bView = {product(bs), product(ks), product(ns)};
  Value* y = nullptr;
  if (contracted.empty()) {  // an outer or elementwise product: broadcast mul
    aView.back() = 1;
    KF_ASSIGN_OR_RETURN(Value* av, reshapeTo(c, pa.v, aView));
    KF_ASSIGN_OR_RETURN(Value* bv, reshapeTo(c, pb.v, bView));
    KF_ASSIGN_OR_RETURN(y, c.build("mul", {av, bv}));
  } else {
    KF_ASSIGN_OR_RETURN(Value* av, reshapeTo(c, pa.v, aView));
    KF_ASSIGN_OR_RETURN(Value* bv, reshapeTo(c, pb.v, bView));
    KF_ASSIGN_OR_RETURN(y, c.build("matmul", {av, bv}));
  }
  KF_ASSIGN_OR_RETURN(y, reshapeTo(c, y, resultShape));
  return Operand{y, resultLabels};
}

std::set<int> neededAfter(const Equation& eq, size_t i) {
  std::set<int> needed(eq.output.begin(), eq.output.end());
  for (size_t j = i + 1; j < eq.inputs.size(); ++j) needed.insert(eq.inputs[j].begin(), eq.inputs[j].end());
  return needed;
}

Status lowerEinsum(LoweringContext& c) {
  KF_ASSIGN_OR_RETURN(std::string text, c.attrs().getString("equation"));
  std::vector<Operand> ops;
  std::vector<int64_t> ranks;
  for (size_t i = 0; i < c.numInputs(); ++i) {
    KF_ASSIGN_OR_RETURN(Value* v, c.input(i));
    KF_RETURN_IF_ERROR(requireFloat(c, v, "operands"));
    ops.push_back({v, {}});
    ranks.push_back(static_cast<int64_t>(v->type().rank()));
  }
  if (ops.empty()) return Error("Einsum needs at least one input");
  KF_ASSIGN_OR_RETURN(Equation eq, parseEquation(text, ranks));
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].v->type().dtype != ops[0].v->type().dtype) return Error("inputs of different types");
    ops[i].labels = eq.inputs[i];
    KF_ASSIGN_OR_RETURN(ops[i], diagonals(c, ops[i]));
  }
  // Before each pair, each side keeps what the other, later operands or the
  // output need.
  Operand acc = ops[0];
  for (size_t i = 1; i <= ops.size(); ++i) {
    std::set<int> later = neededAfter(eq, i - 1);
    std::set<int> forAcc = later;
    if (i < ops.size()) forAcc.insert(ops[i].labels.begin(), ops[i].labels.end());
    KF_ASSIGN_OR_RETURN(acc, sumUnneeded(c, acc, forAcc));
    if (i == ops.size()) break;
    std::set<int> forNext = neededAfter(eq, i);
    forNext.insert(acc.labels.begin(), acc.labels.end());
    KF_ASSIGN_OR_RETURN(Operand next, sumUnneeded(c, ops[i], forNext));
    KF_ASSIGN_OR_RETURN(acc, contract(c, acc, next, neededAfter(eq, i)));
  }
  KF_ASSIGN_OR_RETURN(acc, permuted(c, acc, eq.output));
  return done(c, acc.v);
}

const std::vector<OpLowering> kTable = {
    {"Einsum", {12, 28}, lowerEinsum,
     "transpose + reshape + matmul (or mul) per pair of inputs, reduce_sum, where + reduce_sum for diagonals"},
};

}  // namespace

std::span<const OpLowering> einsumLowerings() { return kTable; }

}  // namespace kfuse::onnx_import
