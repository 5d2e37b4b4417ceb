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

#include <charconv>
#include <cstring>
#include <filesystem>

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

class GlooCommunicator : public Communicator {
 public:
  GlooCommunicator(std::shared_ptr<gloo::Context> ctx, Millis timeout) : ctx_(std::move(ctx)), timeout_(timeout) {}
  int rank() const override { return ctx_->rank; }
  int size() const override { return ctx_->size; }

  Status allReduceMean(std::span<const CommBuffer> buffers) override {
    return guarded(str("rank ", rank(), ": all_reduce (another rank ended or stalls)"), [&] {
      reduce<float>(buffers, DType::F32);
      reduce<double>(buffers, DType::F64);
    });
  }

  Expected<std::vector<std::string>> allGather(std::string_view bytes) override {
    std::vector<char> out(bytes.size() * static_cast<size_t>(size()));
    KF_RETURN_IF_ERROR(guarded(str("rank ", rank(), ": all_gather (another rank ended or stalls)"), [&] {
      gloo::AllgatherOptions opts(ctx_);
      opts.setInput(const_cast<char*>(bytes.data()), bytes.size());
      opts.setOutput(out.data(), out.size());
      opts.setTimeout(timeout_);
      gloo::allgather(opts);
    }));
    std::vector<std::string> each;
    for (int r = 0; r < size(); ++r)
      each.emplace_back(out.data() + static_cast<size_t>(r) * bytes.size(), bytes.size());
    return each;
  }

  Status broadcast(void* data, size_t bytes, int root) override {
    return guarded(str("rank ", rank(), ": broadcast (another rank ended or stalls)"), [&] {
      gloo::BroadcastOptions opts(ctx_);
      opts.setOutput(static_cast<char*>(data), bytes);
      opts.setRoot(root);
      opts.setTimeout(timeout_);
      gloo::broadcast(opts);
    });
  }

 private:
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
  KF_RETURN_IF_ERROR(guarded(str("rank ", c.rank, ": connecting to the other ", c.size - 1, " ranks through ", c.store), [&] {
    gloo::transport::tcp::attr attr;
    attr.hostname = c.hostname;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::PrefixStore prefixed(c.prefix, *store);
    ctx = std::make_shared<gloo::rendezvous::Context>(c.rank, c.size);
    ctx->setTimeout(timeout);
    ctx->connectFullMesh(prefixed, device);
  }));
  return std::shared_ptr<Communicator>(new GlooCommunicator(std::move(ctx), timeout));
}

}  // namespace kfuse
