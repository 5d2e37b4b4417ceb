// The NCCL communicator: buckets of device memory averaged on the runner's
// CUDA stream (ncclAvg), with a Gloo communicator beside it for what the
// host exchanges (the start-up plan check, rank 0's parameters) and for
// passing NCCL's unique id from rank 0 to the others. libnccl.so.2 (the
// CUDA toolkit's, or the one PyTorch's wheels ship) is opened on first use,
// so kfuse runs without it.
#include <dlfcn.h>
#include <nccl.h>

#include <mutex>

#include "ir/support/strings.h"
#include "runtime/comm/communicator.h"

namespace kfuse {
namespace {

struct NcclApi {
  ncclResult_t (*getUniqueId)(ncclUniqueId*);
  ncclResult_t (*commInitRank)(ncclComm_t*, int, ncclUniqueId, int);
  ncclResult_t (*commDestroy)(ncclComm_t);
  ncclResult_t (*allReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*groupStart)();
  ncclResult_t (*groupEnd)();
  const char* (*getErrorString)(ncclResult_t);
};

Expected<const NcclApi*> loadNccl() {
  static std::once_flag once;
  static Expected<NcclApi> api = Error("unloaded");
  std::call_once(once, [] {
    void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libnccl.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      api = Error(str("libnccl.so.2 cannot be loaded: ", e ? e : "not found"));
      return;
    }
    NcclApi a{};
    auto load = [&](auto& field, const char* name) {
      void* sym = dlsym(lib, name);
      if (sym) field = reinterpret_cast<std::remove_reference_t<decltype(field)>>(sym);
      return sym != nullptr;
    };
    if (!load(a.getUniqueId, "ncclGetUniqueId") || !load(a.commInitRank, "ncclCommInitRank") ||
        !load(a.commDestroy, "ncclCommDestroy") || !load(a.allReduce, "ncclAllReduce") ||
        !load(a.groupStart, "ncclGroupStart") || !load(a.groupEnd, "ncclGroupEnd") ||
        !load(a.getErrorString, "ncclGetErrorString")) {
      api = Error("libnccl.so.2 lacks a function kfuse needs (NCCL 2.10 or later has them)");
      return;
    }
    api = a;
  });
  if (!api) return api.error();
  return &*api;
}

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(const NcclApi* nccl, ncclComm_t comm, std::shared_ptr<Communicator> host)
      : nccl_(nccl), comm_(comm), host_(std::move(host)) {}
  ~NcclCommunicator() override { nccl_->commDestroy(comm_); }
  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  bool onDevice() const override { return true; }

  Status allReduceMeanOnStream(std::span<const CommBuffer> buffers, void* stream) override {
    KF_RETURN_IF_ERROR(check("ncclGroupStart", nccl_->groupStart()));
    Status first = Status::ok();
    for (const CommBuffer& b : buffers) {
      if (b.elements == 0) continue;
      ncclDataType_t t = b.dtype == DType::F64 ? ncclFloat64 : ncclFloat32;
      Status s = check("ncclAllReduce", nccl_->allReduce(b.data, b.data, static_cast<size_t>(b.elements), t, ncclAvg,
                                                         comm_, static_cast<cudaStream_t>(stream)));
      if (!s && first) first = s;
    }
    KF_RETURN_IF_ERROR(check("ncclGroupEnd", nccl_->groupEnd()));
    return first;
  }
  // Host memory goes through Gloo.
  Status allReduceMean(std::span<const CommBuffer> buffers) override { return host_->allReduceMean(buffers); }
  Expected<std::vector<std::string>> allGather(std::string_view bytes) override { return host_->allGather(bytes); }
  Status broadcast(void* data, size_t bytes, int root) override { return host_->broadcast(data, bytes, root); }

 private:
  Status check(const char* what, ncclResult_t r) const {
    if (r == ncclSuccess) return Status::ok();
    return Error(str("rank ", rank(), ": ", what, " failed: ", nccl_->getErrorString(r)));
  }
  const NcclApi* nccl_;
  ncclComm_t comm_;
  std::shared_ptr<Communicator> host_;
};

}  // namespace

Expected<std::shared_ptr<Communicator>> connectNccl(const CommConfig& c) {
  KF_ASSIGN_OR_RETURN(const NcclApi* nccl, loadNccl());
  KF_ASSIGN_OR_RETURN(std::shared_ptr<Communicator> host, connectGloo(c));
  ncclUniqueId id{};
  if (c.rank == 0)
    if (ncclResult_t r = nccl->getUniqueId(&id); r != ncclSuccess)
      return Error(str("rank 0: ncclGetUniqueId failed: ", nccl->getErrorString(r)));
  KF_RETURN_IF_ERROR(host->broadcast(&id, sizeof id, 0));
  ncclComm_t comm = nullptr;
  if (ncclResult_t r = nccl->commInitRank(&comm, c.size, id, c.rank); r != ncclSuccess)
    return Error(str("rank ", c.rank, ": ncclCommInitRank failed: ", nccl->getErrorString(r),
                     " (each rank needs a GPU: the cuda target uses device 0, so give each rank its own through "
                     "CUDA_VISIBLE_DEVICES)"));
  return std::shared_ptr<Communicator>(new NcclCommunicator(nccl, comm, std::move(host)));
}

}  // namespace kfuse
