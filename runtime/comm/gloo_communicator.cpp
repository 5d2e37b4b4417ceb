// The Gloo communicator: a full mesh of TCP pairs, rendezvous through a file
// or Redis store. Gloo reports failures as exceptions; none leaves this file.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/redis_store.h>
#include <gloo/transport/tcp/device.h>

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "ir/support/strings.h"
#include "runtime/comm/communicator.h"

namespace kfuse {
namespace {

// Every exchange's wait for its peers, as the configuration says.
using Millis = std::chrono::milliseconds;

template <typename Fn>
Status guarded(const std::string& what, Fn&& fn) {
  try {
    fn();
    return Status::ok();
  } catch (const std::exception& e) {
    return Error(str(what, " failed: ", e.what()));
  }
}

// This process as its peers name it: "HOST PID".
std::string identity() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return str(host, " ", getpid());
}

// Whether process `pid` has ended: gone, or a zombie its parent has not
// reaped yet.
bool ended(pid_t pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream stat(str("/proc/", pid, "/stat"));
  std::string line;
  std::getline(stat, line);
  size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

// After a failed exchange: which peers on this host have ended; others
// cannot be checked from here. A peer's connection may break just before
// its process is gone, so this looks again for a moment.
std::string whoEnded(const std::vector<std::string>& peers, int self) {
  const std::string mine = identity();
  const std::string host = mine.substr(0, mine.rfind(' '));
  std::vector<std::string> gone;
  bool remote = false;
  for (int look = 0; look < 10 && gone.empty(); ++look) {
    if (look > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (size_t r = 0; r < peers.size(); ++r) {
      if (static_cast<int>(r) == self) continue;
      size_t space = peers[r].rfind(' ');
      if (space == std::string::npos || peers[r].substr(0, space) != host) {
        remote = true;
        continue;
      }
      auto pid = static_cast<pid_t>(std::atol(peers[r].c_str() + space + 1));
      if (pid > 0 && ended(pid)) gone.push_back(str("rank ", r, " (pid ", pid, ")"));
    }
  }
  if (!gone.empty()) return str(join(gone), gone.size() == 1 ? " has" : " have", " ended");
  return remote ? "no rank on this host has ended: one stalls, or one on another host ended"
                : "no rank has ended: one stalls";
}

class GlooCommunicator : public Communicator {
 public:
  GlooCommunicator(std::shared_ptr<gloo::Context> ctx, Millis timeout, std::vector<std::string> peers)
      : ctx_(std::move(ctx)), timeout_(timeout), peers_(std::move(peers)) {}
  int rank() const override { return ctx_->rank; }
  int size() const override { return ctx_->size; }

  Status allReduceMean(std::span<const CommBuffer> buffers) override {
    return named(guarded(str("rank ", rank(), ": all_reduce (another rank ended or stalls)"), [&] {
      reduce<float>(buffers, DType::F32);
      reduce<double>(buffers, DType::F64);
    }));
  }

  Expected<std::vector<std::string>> allGather(std::string_view bytes) override {
    std::vector<char> out(bytes.size() * static_cast<size_t>(size()));
    KF_RETURN_IF_ERROR(named(guarded(str("rank ", rank(), ": all_gather (another rank ended or stalls)"), [&] {
      gloo::AllgatherOptions opts(ctx_);
      opts.setInput(const_cast<char*>(bytes.data()), bytes.size());
      opts.setOutput(out.data(), out.size());
      opts.setTimeout(timeout_);
      gloo::allgather(opts);
    })));
    std::vector<std::string> each;
    for (int r = 0; r < size(); ++r)
      each.emplace_back(out.data() + static_cast<size_t>(r) * bytes.size(), bytes.size());
    return each;
  }

  Status broadcast(void* data, size_t bytes, int root) override {
    return named(guarded(str("rank ", rank(), ": broadcast (another rank ended or stalls)"), [&] {
      gloo::BroadcastOptions opts(ctx_);
      opts.setOutput(static_cast<char*>(data), bytes);
      opts.setRoot(root);
      opts.setTimeout(timeout_);
      gloo::broadcast(opts);
    }));
  }

 private:
  // A failed exchange's message, with the peers that ended.
  Status named(Status s) const {
    if (s) return s;
    return Error(str(s.error().message(), "; ", whoEnded(peers_, rank())));
  }

  // The buffers of one dtype as one exchange: summed (Gloo's ring gives
  // every rank the same sum), then scaled by 1 / size. Several buffers go
  // through one staging copy, as DDP's buckets do.
  template <typename T>
  void reduce(std::span<const CommBuffer> buffers, DType dt) {
    std::vector<const CommBuffer*> mine;
    size_t total = 0;
    for (const CommBuffer& b : buffers)
      if (b.dtype == dt && b.elements > 0) {
        mine.push_back(&b);
        total += static_cast<size_t>(b.elements);
      }
    if (mine.empty()) return;
    T* data = static_cast<T*>(mine[0]->data);
    std::vector<T>& staging = staging_<T>();
    if (mine.size() > 1) {
      staging.resize(total);
      size_t at = 0;
      for (const CommBuffer* b : mine) {
        std::memcpy(staging.data() + at, b->data, static_cast<size_t>(b->elements) * sizeof(T));
        at += static_cast<size_t>(b->elements);
      }
      data = staging.data();
    }
    gloo::AllreduceOptions opts(ctx_);
    opts.setOutput(data, total);
    opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<T>));
    opts.setTimeout(timeout_);
    gloo::allreduce(opts);
    const T scale = T(1) / static_cast<T>(size());
    for (size_t i = 0; i < total; ++i) data[i] *= scale;
    if (mine.size() > 1) {
      size_t at = 0;
      for (const CommBuffer* b : mine) {
        std::memcpy(b->data, staging.data() + at, static_cast<size_t>(b->elements) * sizeof(T));
        at += static_cast<size_t>(b->elements);
      }
    }
  }

  template <typename T>
  std::vector<T>& staging_() {
    if constexpr (std::is_same_v<T, float>)
      return staging32_;
    else
      return staging64_;
  }

  std::shared_ptr<gloo::Context> ctx_;
  Millis timeout_;
  std::vector<std::string> peers_;  // per rank: "HOST PID"
  std::vector<float> staging32_;
  std::vector<double> staging64_;
};

Expected<std::unique_ptr<gloo::rendezvous::Store>> openStore(const std::string& spec) {
  if (spec.rfind("file:", 0) == 0) {
    std::string dir = spec.substr(5);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec || !std::filesystem::is_directory(dir))
      return Error(str("store ", spec, ": cannot use directory ", dir, (ec ? ": " + ec.message() : std::string())));
    return std::unique_ptr<gloo::rendezvous::Store>(new gloo::rendezvous::FileStore(dir));
  }
  if (spec.rfind("redis:", 0) == 0) {
    std::string rest = spec.substr(6);
    size_t colon = rest.rfind(':');
    int port = 0;
    if (colon == std::string::npos ||
        std::from_chars(rest.data() + colon + 1, rest.data() + rest.size(), port).ec != std::errc() || port <= 0)
      return Error(str("store ", spec, ": expected redis:HOST:PORT"));
    std::unique_ptr<gloo::rendezvous::Store> store;
    KF_RETURN_IF_ERROR(guarded(str("connecting to ", spec), [&] {
      store.reset(new gloo::rendezvous::RedisStore(rest.substr(0, colon), port));
    }));
    return store;
  }
  return Error(str("store '", spec, "': expected file:DIR or redis:HOST:PORT"));
}

}  // namespace

Expected<std::shared_ptr<Communicator>> connectGloo(const CommConfig& c) {
  if (c.size < 1 || c.rank < 0 || c.rank >= c.size)
    return Error(str("rank ", c.rank, " is not in a world of ", c.size, " ranks"));
  if (c.timeoutSeconds <= 0) return Error(str("the communication timeout must be positive, got ", c.timeoutSeconds));
  KF_ASSIGN_OR_RETURN(std::unique_ptr<gloo::rendezvous::Store> store, openStore(c.store));
  const Millis timeout(int64_t{c.timeoutSeconds} * 1000);
  std::shared_ptr<gloo::rendezvous::Context> ctx;
  std::vector<std::string> peers;
  KF_RETURN_IF_ERROR(guarded(str("rank ", c.rank, ": connecting to the other ", c.size - 1, " ranks through ", c.store), [&] {
    gloo::transport::tcp::attr attr;
    attr.hostname = c.hostname;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::PrefixStore prefixed(c.prefix, *store);
    // Each rank's process, for naming the one that ends (every key is
    // there once the mesh is connected).
    std::string me = identity();
    prefixed.set(str("kfuse_rank_", c.rank), std::vector<char>(me.begin(), me.end()));
    ctx = std::make_shared<gloo::rendezvous::Context>(c.rank, c.size);
    ctx->setTimeout(timeout);
    ctx->connectFullMesh(prefixed, device);
    for (int r = 0; r < c.size; ++r) {
      std::vector<char> id = prefixed.get(str("kfuse_rank_", r));
      peers.emplace_back(id.begin(), id.end());
    }
  }));
  return std::shared_ptr<Communicator>(new GlooCommunicator(std::move(ctx), timeout, std::move(peers)));
}

}  // namespace kfuse
