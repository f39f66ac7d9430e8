// The "nccl" process group: collectives on CUDA tensors through NCCL, loaded at run time like the
// other CUDA libraries (libnccl.so.2, or the file OXMERA_NCCL_LIBRARY names); <nccl.h> gives the
// types only. Each collective is queued on the calling thread's current stream of the tensor's
// device, so it is ordered with the kernels around it as any other op is; Work::wait() blocks
// until it has run, and raises a Distributed error (after aborting the communicator) when NCCL
// reports a failure or the group's timeout passes first. A communicator is made per device on
// its first collective, rank 0's unique id passed through the group's store.

#include "distributed/backends.h"

#if __has_include(<nccl.h>)
#include <dlfcn.h>
#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "backend/cuda/launch.h"
#include "backend/cuda/libraries.h"
#include "distributed/process_group.h"
#include "oxmera/cuda.h"
#include "oxmera/ops.h"
#include "tensor/tensor_impl.h"

namespace ox::distributed::detail {

namespace {

#define OXMERA_NCCL_FUNCTIONS(X) \
  X(ncclGetVersion)              \
  X(ncclGetErrorString)          \
  X(ncclGetUniqueId)             \
  X(ncclCommInitRank)            \
  X(ncclCommDestroy)             \
  X(ncclCommAbort)               \
  X(ncclCommGetAsyncError)       \
  X(ncclGroupStart)              \
  X(ncclGroupEnd)                \
  X(ncclAllReduce)               \
  X(ncclBroadcast)               \
  X(ncclAllGather)               \
  X(ncclReduceScatter)           \
  X(ncclSend)                    \
  X(ncclRecv)

struct Nccl {
  std::string reason;  // why it cannot be used ("" when it can)
  std::string soname;  // what loaded
  int version = 0;     // 22809 for 2.28.9
#define OXMERA_NCCL_MEMBER(name) decltype(&::name) name = nullptr;
  OXMERA_NCCL_FUNCTIONS(OXMERA_NCCL_MEMBER)
#undef OXMERA_NCCL_MEMBER
};

Nccl load_nccl(const char* file) {
  Nccl n;
  const cuda::detail::Library lib = cuda::detail::dlopen_first("nccl", {file});
  if (!lib.handle) {
    n.reason = "NCCL could not be loaded (" + lib.reason + ")";
    return n;
  }
  n.soname = lib.soname;
#define OXMERA_NCCL_LOOKUP(name)                                          \
  n.name = reinterpret_cast<decltype(&::name)>(dlsym(lib.handle, #name)); \
  if (!n.name && n.reason.empty()) n.reason = lib.soname + " has no " #name;
  OXMERA_NCCL_FUNCTIONS(OXMERA_NCCL_LOOKUP)
#undef OXMERA_NCCL_LOOKUP
  if (n.reason.empty() && n.ncclGetVersion(&n.version) != ncclSuccess)
    n.reason = lib.soname + ": ncclGetVersion failed";
  return n;
}

// The process's NCCL, loaded once: OXMERA_NCCL_LIBRARY when set, else libnccl.so.2.
const Nccl& nccl() {
  static const Nccl loaded = [] {
    const char* named = std::getenv("OXMERA_NCCL_LIBRARY");
    return load_nccl(named && *named ? named : "libnccl.so.2");
  }();
  return loaded;
}

std::string nccl_error(ncclResult_t r) {
  const char* text = nccl().ncclGetErrorString ? nccl().ncclGetErrorString(r) : nullptr;
  return text ? text : "NCCL error " + std::to_string(static_cast<int>(r));
}

ncclDataType_t nccl_dtype(const char* op, DType dtype) {
  switch (dtype) {
    case kF32:
      return ncclFloat32;
    case kF64:
      return ncclFloat64;
    case kF16:
      return ncclFloat16;
    case kBF16:
      return ncclBfloat16;
    case kI64:
      return ncclInt64;
    case kI32:
      return ncclInt32;
    case kI8:
      return ncclInt8;
    case kU8:
    case kBool:
      return ncclUint8;
    default:
      break;
  }
  OX_FAIL(DType, op, "the nccl backend has no ", dtype, " (NCCL has no 16-bit integers)");
}

// bool reduces as "any" (Sum, Max) or "all" (Product, Min) on its 0/1 bytes.
ncclRedOp_t nccl_op(ReduceOp op, DType dtype) {
  const bool flag = dtype == kBool;
  switch (op) {
    case ReduceOp::Sum:
      return flag ? ncclMax : ncclSum;
    case ReduceOp::Avg:
      return ncclAvg;
    case ReduceOp::Product:
      return flag ? ncclMin : ncclProd;
    case ReduceOp::Min:
      return ncclMin;
    case ReduceOp::Max:
      return ncclMax;
  }
  return ncclSum;
}

void* device_bytes(const Tensor& t) { return t.impl()->array().data; }

class NcclGroup;

// A collective queued on a stream: done when the event recorded after it has passed.
class NcclWork final : public Work {
 public:
  NcclWork(std::shared_ptr<NcclGroup> group, const char* op, uint64_t sequence, cuda::Event done,
           std::vector<Tensor> keep)
      : group_(std::move(group)),
        op_(op),
        sequence_(sequence),
        done_(std::move(done)),
        keep_(std::move(keep)) {}
  void wait() override;
  bool is_completed() const override { return done_.query(); }

 private:
  std::shared_ptr<NcclGroup> group_;
  const char* op_;
  uint64_t sequence_;
  cuda::Event done_;
  std::vector<Tensor> keep_;
};

class NcclGroup final : public GroupBase, public std::enable_shared_from_this<NcclGroup> {
 public:
  explicit NcclGroup(const GroupSpec& spec)
      : GroupBase(spec.rank, spec.size, spec.global_ranks, spec.store, spec.timeout) {}
  ~NcclGroup() override {
    for (auto& [device, comm] : comms_) {
      if (broken_) continue;  // aborted already
      try {
        cuda::detail::enter(device);
        nccl().ncclCommDestroy(comm);
      } catch (const std::exception&) {
      }
    }
  }
  std::string backend() const override { return "nccl"; }

  WorkPtr all_reduce(Tensor& tensor, ReduceOp op) override {
    check_bucket("all_reduce", {tensor}, op);
    return run("all_reduce", {tensor}, [&](ncclComm_t comm, cudaStream_t stream) {
      return nccl().ncclAllReduce(device_bytes(tensor), device_bytes(tensor),
                                  size_t(tensor.numel()), nccl_dtype("all_reduce", tensor.dtype()),
                                  nccl_op(op, tensor.dtype()), comm, stream);
    });
  }
  WorkPtr all_reduce_coalesced(std::vector<Tensor>& tensors, ReduceOp op) override {
    check_bucket("all_reduce_coalesced", tensors, op);
    return run("all_reduce_coalesced", tensors, [&](ncclComm_t comm, cudaStream_t stream) {
      ncclResult_t r = nccl().ncclGroupStart();
      for (const Tensor& t : tensors)
        if (r == ncclSuccess)
          r = nccl().ncclAllReduce(device_bytes(t), device_bytes(t), size_t(t.numel()),
                                   nccl_dtype("all_reduce_coalesced", t.dtype()),
                                   nccl_op(op, t.dtype()), comm, stream);
      const ncclResult_t end = nccl().ncclGroupEnd();
      return r == ncclSuccess ? end : r;
    });
  }
  WorkPtr broadcast(Tensor& tensor, int src) override {
    check_tensor("broadcast", tensor, "the tensor");
    check_rank("broadcast", src, "src", false);
    return run("broadcast", {tensor}, [&](ncclComm_t comm, cudaStream_t stream) {
      return nccl().ncclBroadcast(device_bytes(tensor), device_bytes(tensor),
                                  size_t(tensor.numel()), nccl_dtype("broadcast", tensor.dtype()),
                                  src, comm, stream);
    });
  }
  WorkPtr all_gather(std::vector<Tensor>& outputs, const Tensor& input) override {
    check_tensor("all_gather", input, "the input");
    check_list("all_gather", outputs, input, "output");
    // Gathered into one buffer, then copied into each output on the same stream.
    Tensor whole =
        empty({input.numel() * size_}, {.dtype = input.dtype(), .device = input.device()});
    std::vector<Tensor> keep = {input, whole};
    WorkPtr work = run("all_gather", keep, [&](ncclComm_t comm, cudaStream_t stream) {
      return nccl().ncclAllGather(device_bytes(input), device_bytes(whole), size_t(input.numel()),
                                  nccl_dtype("all_gather", input.dtype()), comm, stream);
    });
    for (int r = 0; r < size_; ++r)
      outputs[size_t(r)].copy_(
          whole.narrow(0, r * input.numel(), input.numel()).view(outputs[size_t(r)].shape()));
    return work;
  }
  WorkPtr all_gather_into_tensor(Tensor& output, const Tensor& input) override {
    check_whole_and_part("all_gather_into_tensor", output, input);
    return run("all_gather_into_tensor", {output, input},
               [&](ncclComm_t comm, cudaStream_t stream) {
                 return nccl().ncclAllGather(device_bytes(input), device_bytes(output),
                                             size_t(input.numel()),
                                             nccl_dtype("all_gather", input.dtype()), comm, stream);
               });
  }
  WorkPtr reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op) override {
    check_tensor("reduce_scatter", output, "the output");
    check_list("reduce_scatter", inputs, output, "input");
    check_reduce_op("reduce_scatter", output.dtype(), op);
    Tensor whole = cat(inputs).reshape({-1});
    return reduce_scatter_from("reduce_scatter", output, whole, op);
  }
  WorkPtr reduce_scatter_tensor(Tensor& output, const Tensor& input, ReduceOp op) override {
    check_whole_and_part("reduce_scatter_tensor", input, output);
    check_reduce_op("reduce_scatter_tensor", output.dtype(), op);
    return reduce_scatter_from("reduce_scatter_tensor", output, input, op);
  }
  WorkPtr barrier() override {
    // A one-byte all-reduce on this rank's device, waited for: NCCL has no barrier.
    const int device =
        comms_.empty() ? rank_ % std::max(1, cuda::device_count()) : comms_.begin()->first;
    Tensor token = zeros({1}, {.dtype = kU8, .device = Device::cuda(device)});
    WorkPtr work = all_reduce(token, ReduceOp::Sum);
    work->wait();
    return work;
  }
  WorkPtr send(const Tensor& tensor, int dst, int /*tag: NCCL has none*/) override {
    check_tensor("send", tensor, "the tensor");
    check_rank("send", dst, "dst", true);
    return run("send", {tensor}, [&](ncclComm_t comm, cudaStream_t stream) {
      return nccl().ncclSend(device_bytes(tensor), size_t(tensor.numel()),
                             nccl_dtype("send", tensor.dtype()), dst, comm, stream);
    });
  }
  WorkPtr recv(Tensor& tensor, int src, int /*tag*/) override {
    check_tensor("recv", tensor, "the tensor");
    check_rank("recv", src, "src", true);
    return run("recv", {tensor}, [&](ncclComm_t comm, cudaStream_t stream) {
      return nccl().ncclRecv(device_bytes(tensor), size_t(tensor.numel()),
                             nccl_dtype("recv", tensor.dtype()), src, comm, stream);
    });
  }

  // Waits for the work's event, watching NCCL's asynchronous errors and the timeout.
  void wait_for(const char* op, uint64_t sequence, const cuda::Event& done, ncclComm_t comm) {
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    auto pause = std::chrono::microseconds(20);
    while (!done.query()) {
      ncclResult_t async = ncclSuccess;
      nccl().ncclCommGetAsyncError(comm, &async);
      if (async != ncclSuccess && async != ncclInProgress)
        fail(op, sequence, "NCCL reported " + nccl_error(async));
      if (std::chrono::steady_clock::now() > deadline)
        fail(op, sequence,
             "it did not complete within the timeout of " + std::to_string(timeout_.count()) +
                 " ms (the communicator was aborted)");
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
  }

  ncclComm_t comm_of(int device) {
    std::lock_guard lock(mutex_);
    return comms_.at(device);
  }

 protected:
  void check_tensor(const char* op, const Tensor& t, const char* what) const override {
    OX_CHECK(t.defined(), Value, op, what, " is undefined");
    OX_CHECK(t.device().is_cuda(), Device, op, "the nccl backend takes CUDA tensors, but ", what,
             " is on ", t.device(), " (use the gloo backend)");
    OX_CHECK(t.is_contiguous(), Value, op, what, " (shape ", t.shape(), ", strides ", t.strides(),
             ") must be contiguous");
    nccl_dtype(op, t.dtype());
  }

 private:
  using Launch = std::function<ncclResult_t(ncclComm_t, cudaStream_t)>;

  WorkPtr reduce_scatter_from(const char* op, Tensor& output, const Tensor& whole, ReduceOp r) {
    return run(op, {output, whole}, [&](ncclComm_t comm, cudaStream_t stream) {
      return nccl().ncclReduceScatter(device_bytes(whole), device_bytes(output),
                                      size_t(output.numel()), nccl_dtype(op, output.dtype()),
                                      nccl_op(r, output.dtype()), comm, stream);
    });
  }

  // Queues launch(comm, stream) on the current stream of the tensors' device.
  WorkPtr run(const char* op, std::vector<Tensor> tensors, const Launch& launch) {
    uint64_t sequence;
    {
      std::lock_guard lock(mutex_);
      if (broken_) throw *broken_;
      sequence = next_sequence_++;
    }
    const int device = tensors[0].device().index();
    for (const Tensor& t : tensors)
      OX_CHECK(t.device() == tensors[0].device(), Device, op, "tensors on ", tensors[0].device(),
               " and ", t.device(), ": one device per collective");
    const ncclComm_t comm = communicator(op, sequence, device);
    const cuda::detail::DeviceContext on = cuda::detail::enter(device);
    const ncclResult_t r = launch(comm, reinterpret_cast<cudaStream_t>(on.stream));
    if (r != ncclSuccess && r != ncclInProgress)
      fail(op, sequence, "NCCL returned " + nccl_error(r));
    cuda::Event done;
    done.record(cuda::current_stream(device));
    return std::make_shared<NcclWork>(shared_from_this(), op, sequence, std::move(done),
                                      std::move(tensors));
  }

  // The device's communicator, made on its first collective (a collective of its own: every
  // rank reaches it at the same collective).
  ncclComm_t communicator(const char* op, uint64_t sequence, int device) {
    std::lock_guard lock(mutex_);
    if (const auto it = comms_.find(device); it != comms_.end()) return it->second;
    const std::string key = "nccl_id/" + std::to_string(comms_.size());
    ncclUniqueId id{};
    try {
      if (rank_ == 0) {
        const ncclResult_t r = nccl().ncclGetUniqueId(&id);
        OX_CHECK(r == ncclSuccess, Distributed, op, "ncclGetUniqueId: ", nccl_error(r));
        const auto* bytes = reinterpret_cast<const uint8_t*>(&id);
        store_->set(key, std::vector<uint8_t>(bytes, bytes + sizeof id));
      } else {
        const std::vector<uint8_t> bytes = store_->get(key);
        OX_CHECK(bytes.size() == sizeof id, Distributed, op, "rank 0's NCCL id has ", bytes.size(),
                 " bytes, expected ", sizeof id);
        std::memcpy(&id, bytes.data(), sizeof id);
      }
    } catch (const Error& e) {
      throw describe_failure(op, sequence, e.what());
    }
    cuda::detail::enter(device);
    ncclComm_t comm = nullptr;
    const ncclResult_t r = nccl().ncclCommInitRank(&comm, size_, id, rank_);
    OX_CHECK(r == ncclSuccess, Distributed, op, "[", name(), "] ncclCommInitRank on cuda:", device,
             ": ", nccl_error(r));
    comms_.emplace(device, comm);
    return comm;
  }

  [[noreturn]] void fail(const char* op, uint64_t sequence, const std::string& cause) {
    Error e = describe_failure(op, sequence, cause);
    std::lock_guard lock(mutex_);
    if (!broken_) {
      broken_ = e;
      for (auto& [device, comm] : comms_) nccl().ncclCommAbort(comm);
    }
    throw e;
  }

  std::mutex mutex_;
  std::map<int, ncclComm_t> comms_;
  uint64_t next_sequence_ = 0;
  std::optional<Error> broken_;
};

void NcclWork::wait() {
  const int device = done_.device();
  group_->wait_for(op_, sequence_, done_, device >= 0 ? group_->comm_of(device) : nullptr);
  keep_.clear();
}

}  // namespace

std::string nccl_unavailable_reason() {
  if (!cuda::is_available()) return "CUDA is not available: " + cuda::unavailable_reason();
  return nccl().reason;
}

std::string describe_nccl_library(const std::string& file) {
  const Nccl n = file.empty() ? nccl() : load_nccl(file.c_str());
  if (!n.reason.empty()) return n.reason;
  return "NCCL " + std::to_string(n.version / 10000) + "." + std::to_string(n.version / 100 % 100) +
         "." + std::to_string(n.version % 100) + " (" + n.soname + ")";
}

ProcessGroupPtr make_nccl_group(const GroupSpec& spec) {
  const std::string why = nccl_unavailable_reason();
  OX_CHECK(why.empty(), Backend, "init_process_group", "the nccl backend is not available: ", why);
  return std::make_shared<NcclGroup>(spec);
}

}  // namespace ox::distributed::detail

#else  // a CUDA toolkit without <nccl.h>

namespace ox::distributed::detail {
std::string nccl_unavailable_reason() {
  return "this library was built without <nccl.h> (the CUDA toolkit found had no NCCL)";
}
std::string describe_nccl_library(const std::string&) { return nccl_unavailable_reason(); }
ProcessGroupPtr make_nccl_group(const GroupSpec&) {
  OX_FAIL(Backend, "init_process_group",
          "the nccl backend is not available: ", nccl_unavailable_reason());
}
}  // namespace ox::distributed::detail

#endif
