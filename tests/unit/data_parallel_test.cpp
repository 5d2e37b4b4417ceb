// Data-parallel training steps (passes/data_parallel.cpp, the plan's
// collective steps, runtime/comm/): ranks as threads of this process, each
// with its own Gloo communicator over loopback, against one Trainer on the
// whole batch.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <thread>

#include "codegen/backend.h"
#include "codegen/trainer.h"
#include "exec/io/plan_io.h"
#include "exec/plan.h"
#include "ir/parser.h"
#include "runtime/comm/communicator.h"
#include "tests/unit/test_util.h"

namespace kfuse {
namespace {

// An MLP 4-16-3 for `batch` samples; the same weights for every batch size.
std::unique_ptr<Module> mlp(int64_t batch) {
  auto dense = [](int64_t n, double scale, int seed) {
    std::string s;
    for (int64_t i = 0; i < n; ++i) s += str(i ? ", " : "", scale * std::sin(1.7 * static_cast<double>(i + seed)));
    return s;
  };
  std::string text = str(R"(module @mlp {
  param @fc1.weight : f32[16,4] = dense<f32[16,4]>[)", dense(64, 0.5, 1), R"(]
  param @fc1.bias : f32[16] = dense<f32[16]>[)", dense(16, 0.1, 2), R"(]
  param @fc2.weight : f32[3,16] = dense<f32[3,16]>[)", dense(48, 0.3, 3), R"(]
  param @fc2.bias : f32[3] = dense<f32[3]>[)", dense(3, 0.1, 4), R"(]
  func @forward(%x: f32[)", batch, R"(,4]) -> (f32[)", batch, R"(,3]) {
    %0 = matmul %x, @fc1.weight {transpose_b = true} : f32[)", batch, R"(,16]
    %1 = add %0, @fc1.bias : f32[)", batch, R"(,16]
    %2 = relu %1 : f32[)", batch, R"(,16]
    %3 = matmul %2, @fc2.weight {transpose_b = true} : f32[)", batch, R"(,3]
    %4 = add %3, @fc2.bias : f32[)", batch, R"(,3]
    return %4
  }
})");
  auto m = parseModule(text, "mlp.kir");
  EXPECT_TRUE(m) << (m ? "" : m.error().message());
  return std::move(*m);
}

constexpr int64_t kBatch = 12;

// Sample rows [first, first + count) of step `step`'s batch, and labels.
Tensor inputs(int step, int64_t first, int64_t count) {
  Tensor x(TensorType(DType::F32, {count, 4}));
  for (int64_t i = 0; i < count * 4; ++i) x.set(i, std::cos(0.37 * static_cast<double>(first * 4 + i) + step));
  return x;
}

Tensor labels(int step, int64_t first, int64_t count) {
  Tensor y(TensorType(DType::I64, {count}));
  for (int64_t i = 0; i < count; ++i) y.as<int64_t>()[i] = (first + i + step) % 3;
  return y;
}

TrainerOptions options() {
  TrainerOptions o;
  o.target = "cpu";
  o.training.optimizer.kind = OptimizerKind::SGD;
  o.training.optimizer.momentum = 0.9;
  return o;
}

std::map<std::string, Tensor> parameters(Trainer& t) {
  std::map<std::string, Tensor> out;
  for (const auto& p : t.module().params())
    if (p->data) out.emplace(p->name, *p->data);
  return out;
}

struct RankResult {
  std::string error;
  std::vector<double> losses;
  std::map<std::string, Tensor> params;
  size_t collectiveSteps = 0;
};

// `ranks` threads train `steps` steps, each on its slice of every batch;
// rank r's model has batch `sliceOf(r)`.
std::vector<RankResult> trainRanks(int ranks, int steps, const std::string& store, double bucketMiB = 25,
                                   std::function<int64_t(int)> sliceOf = {}, TrainerOptions base = options()) {
  std::vector<RankResult> out(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      RankResult& res = out[static_cast<size_t>(r)];
      auto comm = connectGloo({.rank = r, .size = ranks, .store = "file:" + store, .timeoutSeconds = 20});
      if (!comm) {
        res.error = comm.error().message();
        return;
      }
      const int64_t slice = sliceOf ? sliceOf(r) : kBatch / ranks;
      TrainerOptions o = base;
      o.execution.communicator = *comm;
      o.bucketMiB = bucketMiB;
      auto t = Trainer::create(mlp(slice), o);
      if (!t) {
        res.error = t.error().message();
        return;
      }
      for (const Step& s : (*t)->trainPlan()->steps) res.collectiveSteps += s.kind() == StepKind::Collective;
      for (int s = 0; s < steps; ++s) {
        auto loss = (*t)->step({inputs(s, r * slice, slice)}, labels(s, r * slice, slice), 0.05);
        if (!loss) {
          res.error = loss.error().message();
          return;
        }
        res.losses.push_back(*loss);
      }
      res.params = parameters(**t);
    });
  for (std::thread& t : threads) t.join();
  return out;
}

std::string freshStore(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / str("kfuse_dp_", name, "_", ::getpid());
  std::filesystem::remove_all(dir);
  return dir.string();
}

TEST(DataParallel, RanksMatchOneProcessOnTheWholeBatch) {
  auto one = Trainer::create(mlp(kBatch), options());
  ASSERT_TRUE(one) << one.error().message();
  std::vector<double> want;
  for (int s = 0; s < 8; ++s) {
    auto loss = (*one)->step({inputs(s, 0, kBatch)}, labels(s, 0, kBatch), 0.05);
    ASSERT_TRUE(loss);
    want.push_back(*loss);
  }
  auto wantParams = parameters(**one);
  for (int ranks : {2, 3, 4}) {
    auto got = trainRanks(ranks, 8, freshStore(str("match", ranks)));
    for (int r = 0; r < ranks; ++r) {
      const RankResult& g = got[static_cast<size_t>(r)];
      ASSERT_EQ(g.error, "") << "rank " << r << " of " << ranks;
      // Loss, gradients and the one bucket (a start and a wait each).
      EXPECT_EQ(g.collectiveSteps, 4u);
      for (size_t s = 0; s < want.size(); ++s) EXPECT_NEAR(g.losses[s], want[s], 1e-5 * std::abs(want[s])) << s;
      for (const auto& [name, t] : wantParams)
        EXPECT_EQ(test::compareTensors(g.params.at(name), t, 1e-6, 1e-5), "") << name << ", " << ranks << " ranks";
      // Every replica holds the same bits (weights and momentum).
      for (const auto& [name, t] : got[0].params) EXPECT_TRUE(g.params.at(name).identical(t)) << name << " rank " << r;
    }
  }
}

TEST(DataParallel, SmallBucketsGiveTheSameBits) {
  auto big = trainRanks(2, 4, freshStore("big"));
  // 100 bytes per bucket: each gradient a bucket of its own.
  auto small = trainRanks(2, 4, freshStore("small"), 100.0 / (1024 * 1024));
  ASSERT_EQ(big[0].error, "");
  ASSERT_EQ(small[0].error, "");
  EXPECT_EQ(small[0].collectiveSteps, 2u * (1 + 4));
  for (const auto& [name, t] : big[0].params) EXPECT_TRUE(small[1].params.at(name).identical(t)) << name;
}

TEST(DataParallel, RanksThatCompiledAnotherStepAreRefused) {
  // Rank 1's model takes another batch: both ranks stop at start-up.
  auto got = trainRanks(2, 1, freshStore("mismatch"), 25, [](int r) { return r == 0 ? int64_t{6} : int64_t{4}; });
  for (const RankResult& g : got) {
    EXPECT_NE(g.error.find("rank 1 compiled another training step than rank 0"), std::string::npos) << g.error;
    EXPECT_TRUE(g.losses.empty());
  }
}

// ZeRO-1: each rank holds half (a third) of the momentum or Adam moments and
// reaches plain data parallelism's weights; saving gathers the state whole.
TEST(DataParallel, ZeroOneMatchesPlainDataParallelism) {
  for (OptimizerKind kind : {OptimizerKind::SGD, OptimizerKind::Adam}) {
    TrainerOptions base = options();
    base.training.optimizer.kind = kind;
    for (int ranks : {2, 3}) {
      auto plain = trainRanks(ranks, 6, freshStore(str("plain", ranks)), 25, {}, base);
      TrainerOptions zero = base;
      zero.zeroRanks = ranks;
      auto got = trainRanks(ranks, 6, freshStore(str("zero", ranks)), 25, {}, zero);
      for (int r = 0; r < ranks; ++r) {
        const RankResult& g = got[static_cast<size_t>(r)];
        ASSERT_EQ(g.error, "") << ranks << " ranks, rank " << r;
        for (size_t s = 0; s < g.losses.size(); ++s)
          EXPECT_NEAR(g.losses[s], plain[0].losses[s], 1e-6 * std::abs(plain[0].losses[s]));
        for (const auto& [name, t] : plain[0].params) {
          if (name.find(".weight") == std::string::npos && name.find(".bias") == std::string::npos) continue;
          const Tensor& mine = g.params.at(name);
          if (mine.type() == t.type()) {  // a parameter: whole, and the same on every rank
            EXPECT_EQ(test::compareTensors(mine, t, 1e-6, 1e-5), "") << name;
            EXPECT_TRUE(mine.identical(got[0].params.at(name))) << name << " rank " << r;
            continue;
          }
          // Optimizer state: this rank's shard of the whole.
          const int64_t shard = (t.numElements() + ranks - 1) / ranks;
          ASSERT_EQ(mine.numElements(), shard) << name;
          for (int64_t i = 0; i < shard && r * shard + i < t.numElements(); ++i)
            EXPECT_NEAR(mine.at(i), t.at(r * shard + i), 1e-6 + 1e-5 * std::abs(t.at(r * shard + i))) << name << "[" << i << "]";
        }
      }
    }
  }
}

// On the cuda target's simulated device (whose memory is the host's, so
// Gloo reaches it): the same bits on every rank, and the cpu target's
// ranks' weights within rounding.
TEST(DataParallel, SimulatedCudaRanksMatchTheCpuRanks) {
  auto targets = availableTargets();
  if (std::find(targets.begin(), targets.end(), "cuda") == targets.end()) GTEST_SKIP() << "built without cuda";
  TrainerOptions sim = options();
  sim.target = "cuda";
  sim.execution.cudaSimulate = true;
  auto got = trainRanks(2, 3, freshStore("sim"), 25, {}, sim);
  auto want = trainRanks(2, 3, freshStore("simcpu"));
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(got[static_cast<size_t>(r)].error, "") << "rank " << r;
    EXPECT_EQ(got[static_cast<size_t>(r)].collectiveSteps, 4u);
    for (size_t s = 0; s < 3; ++s)
      EXPECT_NEAR(got[static_cast<size_t>(r)].losses[s], want[0].losses[s], 1e-5 * std::abs(want[0].losses[s]));
  }
  for (const auto& [name, t] : want[0].params) {
    EXPECT_TRUE(got[1].params.at(name).identical(got[0].params.at(name))) << name;
    EXPECT_EQ(test::compareTensors(got[0].params.at(name), t, 1e-6, 1e-5), "") << name;
  }
}

// A data-parallel step without a communicator runs as a world of one: the
// same losses as the plain step. Its plan survives a package's JSON.
TEST(DataParallel, WorldOfOneAndThePlanAsJson) {
  TrainerOptions dp = options();
  dp.dataParallel = true;
  auto a = Trainer::create(mlp(kBatch), dp);
  auto b = Trainer::create(mlp(kBatch), options());
  ASSERT_TRUE(a && b);
  for (int s = 0; s < 3; ++s) {
    auto la = (*a)->step({inputs(s, 0, kBatch)}, labels(s, 0, kBatch), 0.05);
    auto lb = (*b)->step({inputs(s, 0, kBatch)}, labels(s, 0, kBatch), 0.05);
    ASSERT_TRUE(la && lb);
    EXPECT_EQ(*la, *lb);
  }
  const Plan& plan = *(*a)->trainPlan();
  std::vector<std::pair<std::string, const Tensor*>> constants;
  std::string text = serializePlan(plan, constants);
  TensorMap map;
  for (const auto& [key, t] : constants) map.emplace(key, *t);
  auto parsed = parsePlan(text, map);
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(printPlan(*parsed), printPlan(plan));
  EXPECT_NE(printPlan(plan).find("all_reduce.wait bucket 1"), std::string::npos);
  // A collective this kfuse does not know is refused.
  std::string bad = text;
  const std::string op = "\"op\":\"all_reduce\"";
  size_t at = bad.find(op);
  ASSERT_NE(at, std::string::npos);
  bad.replace(at, op.size(), "\"op\":\"all_scatter\"");
  auto refused = parsePlan(bad, map);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("unknown collective 'all_scatter'"), std::string::npos)
      << refused.error().message();
}

TEST(DataParallel, ConnectingToNobodyTimesOut) {
  auto comm = connectGloo({.rank = 0, .size = 2, .store = "file:" + freshStore("alone"), .timeoutSeconds = 1});
  ASSERT_FALSE(comm);
  EXPECT_NE(comm.error().message().find("rank 0: connecting to the other 1 ranks"), std::string::npos)
      << comm.error().message();
}

// Without a GPU, connecting NCCL fails with NCCL's reason, after the host
// side (Gloo) has connected: nothing crashes, nothing hangs.
#if KFUSE_HAS_CUDA
TEST(DataParallel, NcclWithoutAGpuSaysWhy) {
  std::string store = freshStore("nccl");
  std::vector<std::string> errors(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.emplace_back([&, r] {
      auto comm = connectNccl({.rank = r, .size = 2, .store = "file:" + store, .timeoutSeconds = 20});
      errors[static_cast<size_t>(r)] = comm ? "" : comm.error().message();
    });
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < 2; ++r) {
    const std::string& e = errors[static_cast<size_t>(r)];
    if (e.empty()) GTEST_SKIP() << "this machine has GPUs: NCCL connected";
    // No library at all, or NCCL's own error at initialisation.
    EXPECT_TRUE(e.find("libnccl.so.2 cannot be loaded") != std::string::npos ||
                e.find(str("rank ", r, ": ncclCommInitRank failed: ")) != std::string::npos)
        << e;
  }
}
#endif

TEST(DataParallel, BadStoresAreNamed) {
  auto comm = connectGloo({.rank = 0, .size = 2, .store = "tcp://x", .timeoutSeconds = 1});
  ASSERT_FALSE(comm);
  EXPECT_NE(comm.error().message().find("expected file:DIR or redis:HOST:PORT"), std::string::npos);
  comm = connectGloo({.rank = 2, .size = 2, .store = "file:/tmp", .timeoutSeconds = 1});
  ASSERT_FALSE(comm);
  EXPECT_NE(comm.error().message().find("rank 2 is not in a world of 2 ranks"), std::string::npos);
}

}  // namespace
}  // namespace kfuse
