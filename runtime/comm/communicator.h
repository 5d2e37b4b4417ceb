// The ranks of a data-parallel run and what they exchange. kfuse never
// moves the bytes itself: a Communicator wraps an existing engine (Gloo on
// CPUs, runtime/comm/gloo_communicator.h). A runner's collective steps
// (exec/plan.h's CollectiveSpec) and the Trainer's start-up checks go
// through this interface only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/dtype.h"
#include "ir/support/expected.h"

namespace kfuse {

// A tensor's memory as a collective sees it.
struct CommBuffer {
  void* data = nullptr;
  int64_t elements = 0;
  DType dtype = DType::F32;  // f32 or f64
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Replaces each buffer by its mean over the ranks, element by element.
  // Every rank passes buffers of the same sizes in the same order, and gets
  // the same bits back. One call is one exchange (a bucket).
  virtual Status allReduceMean(std::span<const CommBuffer> buffers) = 0;
  // Whether the buffers are device memory and the exchange is enqueued on
  // a CUDA stream (NCCL), rather than host memory exchanged at once (Gloo).
  virtual bool onDevice() const { return false; }
  // onDevice(): allReduceMean's exchange, of device buffers, enqueued on
  // `stream` (a CUstream) in order with the launches around it.
  virtual Status allReduceMeanOnStream(std::span<const CommBuffer> buffers, void* stream) {
    return Error("this communicator exchanges host memory only");
  }
  // Every rank's `bytes` (the same length on every rank), in rank order.
  virtual Expected<std::vector<std::string>> allGather(std::string_view bytes) = 0;
  // Rank `root`'s `bytes` bytes at `data` into every rank's `data`.
  virtual Status broadcast(void* data, size_t bytes, int root) = 0;

  // ZeRO-1: the whole tensor of `wholeBytes` at `whole` from every rank's
  // shard of `shardBytes` (this rank's at `shard`), in rank order, the
  // padding past the end dropped.
  Status allGatherWhole(const void* shard, size_t shardBytes, void* whole, size_t wholeBytes) {
    KF_ASSIGN_OR_RETURN(std::vector<std::string> parts,
                        allGather(std::string_view(static_cast<const char*>(shard), shardBytes)));
    size_t at = 0;
    for (const std::string& part : parts) {
      size_t n = std::min(part.size(), wholeBytes - at);
      std::memcpy(static_cast<char*>(whole) + at, part.data(), n);
      at += n;
    }
    return Status::ok();
  }
};

// Where the ranks of a run find each other, and how long they wait.
struct CommConfig {
  int rank = 0;
  int size = 1;
  // The rendezvous store: "file:DIR" (a directory every rank can reach: the
  // same machine, or a shared file system) or "redis:HOST:PORT".
  std::string store;
  // Keys of this run in the store, so that runs sharing a store stay apart.
  std::string prefix = "kfuse";
  // The address this rank listens on for its peers: a host name or IP of
  // the network to use ("127.0.0.1" on one machine; "" this host's name).
  std::string hostname = "127.0.0.1";
  // Connecting, and every exchange, fail after this long without progress
  // (a rank that died or stalls).
  int timeoutSeconds = 60;
};

// Connects this rank to the others (every rank calls it with the same
// store, prefix and size); a full mesh of TCP pairs through Gloo.
Expected<std::shared_ptr<Communicator>> connectGloo(const CommConfig& config);

// The cuda target's (builds with CUDA): NCCL for device buckets, on the
// runner's stream (onDevice), beside a Gloo communicator connected as
// connectGloo, which carries NCCL's unique id and the host's exchanges.
// Each rank needs a GPU of its own (device 0 of what it sees).
Expected<std::shared_ptr<Communicator>> connectNccl(const CommConfig& config);

}  // namespace kfuse
