// Randomized kernels (fixed seed): shapes with broadcast and size-0/1 dims,
// transposed loads and stores, every storage dtype, random expressions,
// reductions with element and row stores, globals. Each batch compiles in
// one module; every kernel must match the interpreter.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "tests/codegen/jit_harness.h"
#include "tests/codegen/kernel_builder.h"

namespace kfuse::testing {
namespace {

enum class Family { Float, Double, Int };

struct Case {
  Kernel kernel;
  Tolerance tol;
  InputSpec spec;
};

class RandomKernels {
 public:
  explicit RandomKernels(uint64_t seed) : rng_(seed) {}

  Case next(int id) {
    family_ = pick<Family>({Family::Float, Family::Float, Family::Double, Family::Int, Family::Int});
    outer_ = shape(uniform(0, 3));
    reduce_ = coin(0.4) ? shape(uniform(1, 2)) : Shape{};
    const Shape& outer = outer_;
    const Shape& reduce = reduce_;
    KernelBuilder b("random_" + std::to_string(id), outer, reduce);
    dims_ = outer.size() + reduce.size();
    leaves_.clear();
    for (int i = uniform(1, 3); i > 0; --i) leaves_.push_back(randomLoad(b));
    std::vector<int> outerDims(outer.size()), allDims(dims_);
    for (size_t d = 0; d < dims_; ++d) allDims[d] = static_cast<int>(d);
    std::copy_n(allDims.begin(), outer.size(), outerDims.begin());

    Scalar rowValue;
    if (reduce.empty()) {
      for (int i = uniform(1, 2); i > 0; --i) storePermuted(b, allDims, expr(2), StoreScope::Element);
    } else {
      auto c = pick<Combiner>({Combiner::Sum, Combiner::Max, Combiner::Min});
      rowValue = b.reduce(c, expr(1));
      storePermuted(b, outerDims, rowValue, StoreScope::Row);
      if (coin(0.6)) {
        leaves_.push_back(rowValue);
        storePermuted(b, allDims, expr(1), StoreScope::Element);
      }
    }
    bool global = rowValue.node() && coin(0.3);
    if (global) {
      Scalar g = b.global(Combiner::Sum, rowValue);
      b.store(b.output(outputDType(), {}), std::vector<int64_t>(dims_, 0), g, StoreScope::Final);
    }
    Kernel k = b.build();
    return {k, tolerance(k, global), family_ == Family::Int ? InputSpec{-20, 20} : InputSpec{-2, 2}};
  }

 private:
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool coin(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <typename T>
  T pick(std::initializer_list<T> xs) {
    return xs.begin()[uniform(0, static_cast<int>(xs.size()) - 1)];
  }

  Shape shape(int rank) {
    Shape s;
    for (int i = 0; i < rank; ++i) s.push_back(coin(0.04) ? 0 : pick<int64_t>({1, 2, 3, 5, 8, 17, 33, 70}));
    return s;
  }

  DType computeDType() const {
    return family_ == Family::Int ? DType::I64 : family_ == Family::Double ? DType::F64 : DType::F32;
  }

  DType inputDType() {
    switch (family_) {
      case Family::Float: return pick({DType::F32, DType::F32, DType::F16, DType::BF16});
      case Family::Double: return DType::F64;
      case Family::Int: return pick({DType::I64, DType::I32, DType::I8, DType::U8});
    }
    return DType::F32;
  }

  DType outputDType() {
    switch (family_) {
      case Family::Float: return pick({DType::F32, DType::F16, DType::BF16, DType::F64});
      case Family::Double: return pick({DType::F64, DType::F32});
      case Family::Int: return pick({DType::I64, DType::I32, DType::I8, DType::U8, DType::F32, DType::F64});
    }
    return DType::F32;
  }

  // A buffer over a random subset of the kernel dims in a random order
  // (broadcast + transpose), sometimes with an extra axis of extent 1.
  Scalar randomLoad(KernelBuilder& b) {
    std::vector<int> axes;
    for (size_t d = 0; d < dims_; ++d)
      if (coin(0.75)) axes.push_back(static_cast<int>(d));
    std::shuffle(axes.begin(), axes.end(), rng_);
    if (coin(0.15)) axes.insert(axes.begin() + uniform(0, static_cast<int>(axes.size())), -1);
    return b.loadAxes(b.input(inputDType(), shapeOf(axes)), axes);
  }

  void storePermuted(KernelBuilder& b, std::vector<int> axes, const Scalar& v, StoreScope scope) {
    std::shuffle(axes.begin(), axes.end(), rng_);
    b.storeAxes(b.output(outputDType(), shapeOf(axes)), axes, v, scope);
  }

  Shape shapeOf(const std::vector<int>& axes) const {
    Shape s;
    for (int a : axes) {
      auto d = static_cast<size_t>(a);
      s.push_back(a < 0 ? 1 : d < outer_.size() ? outer_[d] : reduce_[d - outer_.size()]);
    }
    return s;
  }

  Scalar leaf() {
    DType t = computeDType();
    if (coin(0.1)) return Scalar::constant(uniform(-3, 3) * (t == DType::I64 ? 1.0 : 0.5), t);
    if (dims_ > 0 && coin(0.1)) return cast(Scalar::index(uniform(0, static_cast<int>(dims_) - 1)), t);
    return leaves_[static_cast<size_t>(uniform(0, static_cast<int>(leaves_.size()) - 1))];
  }

  Scalar expr(int depth) {
    if (depth == 0 || coin(0.2)) return leaf();
    bool isInt = family_ == Family::Int;
    switch (uniform(0, 3)) {
      case 0: {
        Scalar x = expr(depth - 1);
        if (isInt) return coin(0.5) ? -x : abs(x);
        return pick<std::function<Scalar()>>({[&] { return -x; }, [&] { return abs(x); }, [&] { return tanh(x); },
                                              [&] { return sqrt(abs(x)); }})();
      }
      case 1:
      case 2: {
        Scalar x = expr(depth - 1), y = expr(depth - 1);
        ScalarOp op = pick({ScalarOp::Add, ScalarOp::Sub, ScalarOp::Mul, ScalarOp::Max, ScalarOp::Min,
                            isInt ? ScalarOp::Div : ScalarOp::Add});
        return binary(op, x, y);
      }
      default: {
        ScalarOp cmp = pick({ScalarOp::Lt, ScalarOp::Le, ScalarOp::Eq, ScalarOp::Ne});
        return select(binary(cmp, expr(depth - 1), expr(depth - 1)), expr(depth - 1), expr(depth - 1));
      }
    }
  }

  Tolerance tolerance(const Kernel& k, bool global) const {
    if (family_ == Family::Int) return Tolerance::exact();
    double terms = static_cast<double>(1 + k.reducePoints()) * (global ? static_cast<double>(1 + k.outerPoints()) : 1.0);
    if (family_ == Family::Double) return {1e-12, 1e-12 * terms};
    return {1e-5, 2e-5 * terms};
  }

  std::mt19937_64 rng_;
  Family family_ = Family::Float;
  Shape outer_, reduce_;
  size_t dims_ = 0;
  std::vector<Scalar> leaves_;
};

TEST(CpuProperty, RandomKernelsMatchInterpreter) {
  RandomKernels gen(20240611);
  constexpr int kBatches = 4, kPerBatch = 50;
  int id = 0;
  for (int batch = 0; batch < kBatches; ++batch) {
    std::vector<Case> cases;
    std::vector<Kernel> kernels;
    for (int i = 0; i < kPerBatch; ++i) {
      cases.push_back(gen.next(id++));
      kernels.push_back(cases.back().kernel);
    }
    auto compiled = sharedJit().compile(kernels);
    ASSERT_TRUE(compiled) << compiled.error().message();
    for (size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      EXPECT_TRUE(compiledMatchesInterpreter(c.kernel, compiled->functions[i], c.tol, 1000 + i, c.spec));
    }
  }
}

}  // namespace
}  // namespace kfuse::testing
