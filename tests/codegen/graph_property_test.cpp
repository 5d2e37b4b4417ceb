// Randomly generated GRAPHS (fixed seeds) through the cpu target, fused and
// unfused, against the reference interpreter. Where cpu_property_test.cpp
// randomizes single kernels, this one randomizes what the fusion pass,
// lowering, planning and the runtime see: chains of elementwise, broadcast,
// reduction, softmax-like and data-movement ops with random shapes (rank
// 0-4, broadcasting, size-1 dims), dtypes (f32, f64, i32, i64) and casts
// between them, values used by several consumers, parameters, constants,
// and results that are arguments or repeated.
//
// Tolerance. Integers are compared exactly. Floats are compared with
//   |got - want| <= rtol * |want| + 2 * err
// where rtol is 1e-5 (f32) or 1e-12 (f64) and err is a first-order bound on
// the rounding error of the compiled code, propagated through the graph
// alongside a bound on each value's magnitude (see Bound below). err is zero
// for exact operations on exact inputs; it covers cancellation (a - b with
// |a|, |b| >> |a - b|), f32 summation in a different order than the
// reference's double sum (sqrt(n) * u * sum|x| times 4: the probabilistic
// bound of Higham, "Accuracy and Stability of Numerical Algorithms" 4.2,
// with margin), and transcendental functions (8 ulps of LLVM's or libm's
// result). A wrong index, a missing broadcast or a lost update is off by the
// size of the values themselves, far beyond these bounds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <sstream>

#include "codegen/backend.h"
#include "ir/builder.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "ir/support/strings.h"

namespace kfuse {
namespace {

constexpr int kGraphsPerShard = 10;
constexpr int kShards = 10;  // 100 graphs in all

// Magnitude (an upper bound on |x| over the value's elements) and absolute
// error bound of one value.
struct Bound {
  double mag = 0, err = 0;
};

bool isInt(DType t) { return t == DType::I32 || t == DType::I64; }
// Unit roundoff of a float dtype (0 for integers: exact or refused).
double unitRoundoff(DType t) { return t == DType::F32 ? 0x1p-24 : t == DType::F64 ? 0x1p-53 : 0.0; }

bool broadcastable(const Shape& a, const Shape& b) {
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    int64_t x = a[a.size() - 1 - i], y = b[b.size() - 1 - i];
    if (x != y && x != 1 && y != 1) return false;
  }
  return true;
}

// The largest value an integer of `t` may reach here: far from overflow, so
// that the reference (double) and the compiled code (wrapping integers) agree.
double intLimit(DType t) { return t == DType::I32 ? 0x1p28 : 0x1p50; }

class RandomGraph {
 public:
  explicit RandomGraph(uint64_t seed) : rng_(seed) {}

  // Builds the module (@main) and the random inputs; same seed, same graph.
  struct Built {
    std::unique_ptr<Module> module;
    std::vector<Tensor> args;
    std::vector<Bound> resultBounds;
  };

  Built build() {
    auto m = std::make_unique<Module>("random");
    Graph* g = m->addFunction("main");
    g_ = g;
    m_ = m.get();
    pool_.clear();
    args_.clear();
    family_ = pick<DType>({DType::F32, DType::F32, DType::F32, DType::F64, DType::I32, DType::I64});

    // A base shape; operands are its suffixes with some dims set to 1, so
    // that most pairs broadcast.
    int rank = uniform(0, 4);
    Shape base;
    for (int i = 0; i < rank; ++i) base.push_back(pick<int64_t>({1, 2, 3, 5, 8, 17}));
    while (numElements(base) > 6000) base[static_cast<size_t>(uniform(0, rank - 1))] = 2;
    int numInputs = uniform(1, 3);
    for (int i = 0; i < numInputs; ++i) {
      Shape s(base.begin() + uniform(0, coin(0.3) ? rank : 0), base.end());
      for (auto& d : s)
        if (coin(0.25)) d = 1;
      DType t = coin(0.15) ? pick<DType>({DType::F32, DType::F64, DType::I32, DType::I64}) : family_;
      addInput(TensorType(t, s), i);
    }

    int numNodes = uniform(2, 9);
    for (int i = 0, tries = 0; i < numNodes && tries < 200; ++tries)
      if (addNode()) ++i;

    // Results: the last value, maybe another (or an argument, or the same
    // value twice).
    std::vector<Value*> results{pool_.back().v};
    std::vector<Bound> bounds{pool_.back().b};
    if (coin(0.4)) {
      const Entry& e = pool_[static_cast<size_t>(uniform(0, static_cast<int>(pool_.size()) - 1))];
      results.push_back(e.v);
      bounds.push_back(e.b);
    }
    g->setResults(results);
    return {std::move(m), args_, bounds};
  }

 private:
  struct Entry {
    Value* v;
    Bound b;
  };

  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool coin(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <typename T>
  T pick(std::initializer_list<T> xs) {
    return xs.begin()[uniform(0, static_cast<int>(xs.size()) - 1)];
  }

  void addInput(const TensorType& t, int i) {
    Tensor data(t);
    bool integer = isInt(t.dtype);
    for (int64_t k = 0; k < data.numElements(); ++k)
      data.set(k, integer ? uniform(-20, 20) : std::uniform_real_distribution<double>(-2, 2)(rng_));
    Value* v;
    if (coin(0.25)) {  // a parameter of the module rather than an argument
      std::string name = str("p", i);
      m_->addParam(name, t, coin(0.5));
      m_->setParamData(name, data);
      v = g_->paramValue(name);
    } else {
      v = g_->addArgument(str("x", i), t);
      args_.push_back(std::move(data));
    }
    pool_.push_back({v, {integer ? 20.0 : 2.0, 0}});
  }

  // Recent values are likelier operands; older ones get several consumers.
  const Entry& operand() {
    int n = static_cast<int>(pool_.size());
    return pool_[static_cast<size_t>(coin(0.6) ? n - 1 : uniform(0, n - 1))];
  }

  Value* node(std::string_view op, const std::vector<Value*>& operands, AttrMap attrs = {}) {
    auto n = buildNode(*g_, op, operands, std::move(attrs));
    return n ? (*n)->result(0) : nullptr;
  }
  bool push(Value* v, Bound b) {
    if (!v) return false;
    pool_.push_back({v, b});
    return true;
  }
  Value* constant(DType t, double x) {
    return node("constant", {}, {{"value", Attribute(Tensor::scalar(t, x))}});
  }

  // One random node (or a small pattern: q = b*b + 1 as a safe divisor or
  // log/sqrt operand); false when the pick does not apply.
  bool addNode() {
    const Entry& a = operand();
    DType t = a.v->type().dtype;
    double u = unitRoundoff(t), u8 = 8 * u;
    const Bound A = a.b;
    int kind = uniform(0, 99);
    if (kind < 30) return binary(a);
    if (kind < 50) {  // unary elementwise
      if (isInt(t)) {
        std::string op = pick<const char*>({"neg", "abs", "relu"});
        return push(node(op, {a.v}), A);
      }
      switch (uniform(0, 7)) {
        case 0: return push(node("neg", {a.v}), A);
        case 1: return push(node("abs", {a.v}), A);
        case 2: return push(node("relu", {a.v}), A);
        case 3: return push(node("tanh", {a.v}), {std::min(1.0, A.mag), A.err + u8});
        case 4: return push(node("sigmoid", {a.v}), {1, A.err / 4 + u8});
        case 5: return push(node(pick<const char*>({"sin", "cos"}), {a.v}), {1, A.err + u8 * std::max(1.0, A.mag)});
        case 6:
          if (A.mag > 8) return false;
          return push(node("exp", {a.v}), {std::exp(A.mag), std::exp(A.mag) * (A.err + u8)});
        default: return safeUnary(a);
      }
    }
    if (kind < 75) return reduction(a);
    if (kind < 85) return softmaxLike(a);
    if (kind < 92) return cast(a);
    return movement(a);
  }

  bool binary(const Entry& a) {
    DType t = a.v->type().dtype;
    std::vector<const Entry*> partners;
    for (const Entry& e : pool_)
      if (e.v->type().dtype == t && broadcastable(e.v->type().shape, a.v->type().shape)) partners.push_back(&e);
    const Entry& b = *partners[static_cast<size_t>(uniform(0, static_cast<int>(partners.size()) - 1))];
    Value *x = a.v, *y = b.v;
    Bound A = a.b, B = b.b;
    if (coin(0.5)) std::swap(x, y), std::swap(A, B);
    double u = unitRoundoff(t);
    std::string op = pick<const char*>({"add", "sub", "mul", "maximum", "minimum", "where_max", "div"});
    Bound r;
    if (op == "add" || op == "sub") {
      r = {A.mag + B.mag, A.err + B.err + u * (A.mag + B.mag)};
    } else if (op == "mul") {
      r = {A.mag * B.mag, A.err * B.mag + B.err * A.mag + u * A.mag * B.mag};
    } else if (op == "maximum" || op == "minimum") {
      r = {std::max(A.mag, B.mag), std::max(A.err, B.err)};
    } else if (op == "where_max") {  // where(a > b, a, b): continuous, so a flipped comparison costs little
      Value* c = node("greater", {x, y});
      if (!c) return false;
      return push(node("where", {c, x, y}), {std::max(A.mag, B.mag), std::max(A.err, B.err)});
    } else {  // x / (y*y + 1)
      if (isInt(t)) return false;
      auto [q, Q] = safeDivisor(y, B);
      if (!q) return false;
      return push(node("div", {x, q}), {A.mag, A.err + A.mag * Q.err + u * A.mag});
    }
    if (isInt(t) && r.mag > intLimit(t)) return false;
    return push(node(op, {x, y}), r);
  }

  // q = y*y + 1 >= 1, with its bound.
  std::pair<Value*, Bound> safeDivisor(Value* y, Bound B) {
    DType t = y->type().dtype;
    double u = unitRoundoff(t);
    Value* one = constant(t, 1.0);
    Value* sq = node("mul", {y, y});
    Value* q = sq && one ? node("add", {sq, one}) : nullptr;
    double mag = B.mag * B.mag + 1;
    return {q, {mag, 2 * B.mag * B.err + 2 * u * mag}};
  }

  // log, sqrt, rsqrt, reciprocal of q = x*x + 1 (domain >= 1, so their
  // derivatives are at most 1).
  bool safeUnary(const Entry& a) {
    auto [q, Q] = safeDivisor(a.v, a.b);
    if (!q) return false;
    double u8 = 8 * unitRoundoff(a.v->type().dtype);
    switch (uniform(0, 3)) {
      case 0: return push(node("log", {q}), {std::log(Q.mag), Q.err + u8 * std::max(1.0, std::log(Q.mag))});
      case 1: return push(node("sqrt", {q}), {std::sqrt(Q.mag), Q.err / 2 + u8 * std::sqrt(Q.mag)});
      case 2: return push(node("rsqrt", {q}), {1, Q.err / 2 + u8});
      default: return push(node("reciprocal", {q}), {1, Q.err + u8});
    }
  }

  // reduce_{sum,mean,max,min} over a random subset of axes (all when empty).
  bool reduction(const Entry& a) {
    const Shape& s = a.v->type().shape;
    DType t = a.v->type().dtype;
    std::vector<int64_t> axes;
    int64_t n = 1;
    for (size_t d = 0; d < s.size(); ++d)
      if (coin(0.5)) {
        axes.push_back(coin(0.3) ? static_cast<int64_t>(d) - static_cast<int64_t>(s.size()) : static_cast<int64_t>(d));
        n *= s[d];
      }
    if (axes.empty() && !coin(0.3)) return false;
    if (axes.empty()) n = numElements(s);
    bool keep = coin(0.5);
    std::string op = pick<const char*>({"reduce_sum", "reduce_sum", "reduce_mean", "reduce_max", "reduce_min"});
    double u = unitRoundoff(t), dn = static_cast<double>(n);
    const Bound A = a.b;
    Bound r;
    double sumErr = 4 * std::sqrt(dn) * u * dn * A.mag;  // see the header
    if (op == "reduce_sum") {
      r = {dn * A.mag, dn * A.err + sumErr};
      if (isInt(t) && r.mag > intLimit(t)) return false;
    } else if (op == "reduce_mean") {
      if (isInt(t)) return false;
      r = {A.mag, A.err + sumErr / dn + u * A.mag};
    } else {
      r = A;
    }
    return push(node(op, {a.v}, {{"axes", Attribute(axes)}, {"keepdims", Attribute(keep)}}), r);
  }

  bool softmaxLike(const Entry& a) {
    const Shape& s = a.v->type().shape;
    DType t = a.v->type().dtype;
    if (isInt(t) || s.empty()) return false;
    int64_t axis = uniform(0, static_cast<int>(s.size()) - 1);
    double dn = static_cast<double>(s[static_cast<size_t>(axis)]);
    if (coin(0.3)) axis -= static_cast<int64_t>(s.size());
    double u = unitRoundoff(t), u8 = 8 * u;
    const Bound A = a.b;
    double sumRel = 4 * std::sqrt(dn) * u;
    switch (uniform(0, 2)) {
      case 0: return push(node("softmax", {a.v}, {{"axis", Attribute(axis)}}), {1, 2 * A.err + u8 + sumRel});
      case 1: {
        double mag = 2 * A.mag + std::log(dn);
        return push(node("log_softmax", {a.v}, {{"axis", Attribute(axis)}}), {mag, 2 * A.err + u8 + sumRel + u * mag});
      }
      default: {
        // layer_norm over [axis, rank): y = (x - mean) / sqrt(var + 1e-5).
        // |y| <= sqrt(n); errors in x and in var are amplified by at most
        // 1 / sqrt(1e-5).
        int64_t first = axis < 0 ? axis + static_cast<int64_t>(s.size()) : axis;
        double n = 1;
        for (size_t d = static_cast<size_t>(first); d < s.size(); ++d) n *= static_cast<double>(s[d]);
        double inv = 1 / std::sqrt(1e-5);
        double xErr = A.err + 4 * std::sqrt(n) * u * A.mag;
        double varErr = 2 * A.mag * xErr + 4 * std::sqrt(n) * u * A.mag * A.mag;
        double err = inv * 2 * xErr + std::sqrt(n) * varErr / 2e-5 + u8 * std::sqrt(n);
        return push(node("layer_norm", {a.v}, {{"axis", Attribute(axis)}}), {std::sqrt(n), err});
      }
    }
  }

  // Casts that are continuous: integers to floats, between float widths,
  // and (for integer-valued data) between integer widths.
  bool cast(const Entry& a) {
    DType from = a.v->type().dtype;
    DType to = pick<DType>({DType::F32, DType::F64, DType::I32, DType::I64});
    if (to == from || (isInt(to) && !isInt(from))) return false;
    if (to == DType::I32 && a.b.mag > intLimit(DType::I32)) return false;
    Bound r = a.b;
    if (!isInt(to)) r.err += unitRoundoff(to) * r.mag;
    return push(node("cast", {a.v}, {{"to", Attribute(std::string(dtypeName(to)))}}), r);
  }

  // Data movement: transpose, expand to a broadcast shape, a reshape that
  // adds or removes size-1 axes.
  bool movement(const Entry& a) {
    const Shape& s = a.v->type().shape;
    switch (uniform(0, 2)) {
      case 0: {
        if (s.size() < 2) return false;
        std::vector<int64_t> perm(s.size());
        for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
        std::shuffle(perm.begin(), perm.end(), rng_);
        return push(node("transpose", {a.v}, {{"perm", Attribute(perm)}}), a.b);
      }
      case 1: {
        // To the shape of a value it broadcasts with.
        for (const Entry& e : pool_) {
          const Shape& o = e.v->type().shape;
          if (o != s && o.size() >= s.size() && broadcastable(o, s) && coin(0.5)) {
            Shape target = o;
            for (size_t i = 0; i < s.size(); ++i) {
              int64_t& d = target[o.size() - 1 - i];
              d = std::max(d, s[s.size() - 1 - i]);
            }
            return push(node("expand", {a.v}, {{"shape", Attribute(std::vector<int64_t>(target))}}), a.b);
          }
        }
        return false;
      }
      default: {
        std::vector<int64_t> shape(s.begin(), s.end());
        if (coin(0.5) || s.empty())
          shape.insert(shape.begin() + uniform(0, static_cast<int>(s.size())), 1);
        else
          shape = Shape{numElements(s)};
        return push(node("reshape", {a.v}, {{"shape", Attribute(shape)}}), a.b);
      }
    }
  }

  std::mt19937_64 rng_;
  Module* m_ = nullptr;
  Graph* g_ = nullptr;
  DType family_ = DType::F32;
  std::vector<Entry> pool_;
  std::vector<Tensor> args_;
};

// "" when every element of `got` is within the bound, else the first that is
// not. `worst`: the largest |got - want| / allowed seen (how tight it was).
std::string compare(const Tensor& got, const Tensor& want, const Bound& b, double& worst) {
  if (got.type() != want.type())
    return str("type ", formatType(got.type()), " != expected ", formatType(want.type()));
  double rtol = want.dtype() == DType::F32 ? 1e-5 : 1e-12;
  for (int64_t i = 0; i < want.numElements(); ++i) {
    double g = got.at(i), w = want.at(i);
    if (std::isnan(g) && std::isnan(w)) continue;
    double allowed = rtol * std::abs(w) + 2 * b.err;
    if (!isInt(want.dtype()) && std::isfinite(w) && allowed > 0) worst = std::max(worst, std::abs(g - w) / allowed);
    bool ok = isInt(want.dtype()) || std::isinf(w) ? g == w : std::abs(g - w) <= allowed;
    if (!ok)
      return str("element ", i, ": got ", g, ", expected ", w, " (|diff| ", std::abs(g - w), ", allowed ",
                 rtol * std::abs(w) + 2 * b.err, ")");
  }
  return "";
}

uint64_t seedOf(int shard, int i) { return 0x6b667573ull + static_cast<uint64_t>(shard * kGraphsPerShard + i); }

class GraphProperty : public ::testing::TestWithParam<int> {};

TEST_P(GraphProperty, CpuTargetMatchesInterpreter) {
  for (int i = 0; i < kGraphsPerShard; ++i) {
    uint64_t seed = seedOf(GetParam(), i);
    RandomGraph::Built ref = RandomGraph(seed).build();
    std::string input = printModule(*ref.module);
    const Graph& refFn = *ref.module->functions().front();
    auto want = interpret(refFn, ref.args);
    ASSERT_TRUE(want) << "seed " << seed << ": " << want.error().message() << "\n" << input;

    for (bool fuse : {true, false}) {
      RandomGraph::Built b = RandomGraph(seed).build();
      auto backend = backendFor("cpu", {.fuse = fuse});
      ASSERT_TRUE(backend) << backend.error().message();
      Status prepared = prepareModule(*b.module, *backend);
      ASSERT_TRUE(prepared) << "seed " << seed << ": " << prepared.message() << "\n" << input;
      auto exec = createExecutor("cpu");
      ASSERT_TRUE(exec) << exec.error().message();
      const Graph& fn = *b.module->functions().front();
      auto got = (*exec)->run(fn, b.args);
      std::string context = str("seed ", seed, (fuse ? ", fused" : ", unfused"), "\n--- input\n", input,
                                "--- compiled\n", printModule(*b.module));
      ASSERT_TRUE(got) << got.error().message() << "\n" << context;
      ASSERT_EQ(got->outputs.size(), want->outputs.size()) << context;
      double worst = 0;
      for (size_t r = 0; r < want->outputs.size(); ++r) {
        std::string diff = compare(got->outputs[r], want->outputs[r], b.resultBounds[r], worst);
        EXPECT_EQ(diff, "") << "result " << r << "\n" << context;
        if (!diff.empty()) return;
      }
      // KFUSE_PROPERTY_VERBOSE=1: one line per graph; 2: and its IR.
      if (const char* v = std::getenv("KFUSE_PROPERTY_VERBOSE")) {
        const Plan* plan = (*exec)->planFor(fn);
        std::cout << "seed " << seed << (fuse ? " fused" : " unfused") << ": " << refFn.numNodes() << " nodes, "
                  << (plan ? plan->launches() : 0) << " launches, worst |diff|/allowed " << worst << "\n";
        if (std::string(v) == "2") std::cout << context;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, GraphProperty, ::testing::Range(0, kShards));

// The property above could hold vacuously: if nothing were fused, if the
// generator silently dropped ops (a buildNode that always fails), or if the
// error bounds were so loose that anything passes. So: most graphs fuse and
// take fewer launches than they have nodes, every op, dtype and rank occurs,
// and a result moved by 1e-3 of its largest element is rejected.
TEST(GraphPropertyCoverage, GraphsFuseVaryAndBoundsBite) {
  int multi = 0, fused = 0, fewerLaunches = 0, perturbed = 0, rejected = 0;
  std::map<std::string, int> opCounts;
  std::map<DType, int> dtypeCounts;
  std::map<size_t, int> rankCounts;
  for (int shard = 0; shard < kShards; ++shard)
    for (int i = 0; i < kGraphsPerShard; ++i) {
      RandomGraph::Built b = RandomGraph(seedOf(shard, i)).build();
      Graph& fn = *b.module->functions().front();
      size_t before = fn.numNodes();
      for (const auto& n : fn.nodeList()) ++opCounts[n->op().name];
      for (const Value* r : fn.results()) ++dtypeCounts[r->type().dtype], ++rankCounts[r->type().shape.size()];
      for (const auto& a : fn.arguments()) ++rankCounts[a->type().shape.size()];
      // The bounds are tight enough to matter: the interpreter's own first
      // result, with its largest element moved by 1e-3 of itself (integers:
      // by 1), must be rejected.
      auto want = interpret(fn, b.args);
      ASSERT_TRUE(want) << want.error().message();
      const Tensor& exact = want->outputs[0];
      if (exact.numElements() > 0) {
        Tensor moved = exact;
        int64_t at = 0;
        for (int64_t k = 0; k < exact.numElements(); ++k)
          if (std::abs(exact.at(k)) > std::abs(exact.at(at)) || !std::isfinite(exact.at(at))) at = k;
        double x = exact.at(at);
        if (std::isfinite(x) && x != 0) {
          moved.set(at, isInt(exact.dtype()) ? x + 1 : x * (1 + 1e-3));
          double worst = 0;
          ++perturbed;
          rejected += !compare(moved, exact, b.resultBounds[0], worst).empty();
        }
      }
      auto backend = backendFor("cpu");
      ASSERT_TRUE(backend);
      ASSERT_TRUE(prepareModule(*b.module, *backend));
      if (before < 3) continue;
      ++multi;
      bool any = false;
      for (const auto& n : fn.nodeList()) any |= n->op().name == "fused";
      fused += any;
      auto exec = createExecutor("cpu");
      ASSERT_TRUE(exec);
      const Plan* plan = (*exec)->planFor(fn);
      ASSERT_NE(plan, nullptr);
      fewerLaunches += plan->launches() < before;
    }
  EXPECT_GE(multi, 60);
  EXPECT_GE(perturbed, 80);
  EXPECT_GE(rejected, perturbed * 9 / 10) << "of " << perturbed << " results moved by 1e-3 relative";
  for (const char* op : {"add", "sub", "mul", "div", "maximum", "minimum", "where", "neg", "abs", "relu", "tanh",
                         "sigmoid", "exp", "log", "sqrt", "rsqrt", "reciprocal", "reduce_sum", "reduce_mean",
                         "reduce_max", "reduce_min", "softmax", "log_softmax", "layer_norm", "cast", "transpose",
                         "expand", "reshape", "constant"})
    EXPECT_GE(opCounts[op], 2) << op << " is rarely generated";
  for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64})
    EXPECT_GE(dtypeCounts[t], 5) << dtypeName(t) << " results are rarely generated";
  for (size_t rank = 0; rank <= 4; ++rank) EXPECT_GE(rankCounts[rank], 5) << "rank " << rank;
  EXPECT_GE(fused, multi * 3 / 4) << "of " << multi << " graphs with 3 or more nodes";
  EXPECT_GE(fewerLaunches, multi * 3 / 4) << "of " << multi << " graphs with 3 or more nodes";
}

}  // namespace
}  // namespace kfuse
