// The Gloo backend (Debian's libgloo-dev, PyTorch's CPU backend): a full mesh of TCP pairs set
// up through the store, Gloo's ring all-reduce, all-gather, broadcast and barrier, and its
// unbound buffers for send/recv. Collectives run on the group's thread (QueuedGroup), tagged by
// their sequence number, so the ranks' n-th collectives meet; send/recv are posted at once from
// the caller, on slots of their own, so that isend/irecv pairs in either order complete.

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <cstring>

#include "backend/cpu/index_walk.h"  // dispatch_bytes: Gloo's templates use T for its size only
#include "distributed/backends.h"
#include "distributed/process_group.h"

namespace ox::distributed::detail {

namespace {

// Gloo's store interface over ours.
class StoreAdapter final : public gloo::rendezvous::Store {
 public:
  explicit StoreAdapter(StorePtr store) : store_(std::move(store)) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_->set(key, std::vector<uint8_t>(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    const std::vector<uint8_t> v = store_->get(key);
    return {v.begin(), v.end()};
  }
  void wait(const std::vector<std::string>& keys) override { store_->wait(keys); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& t) override {
    store_->wait(keys, t);
  }

 private:
  StorePtr store_;
};

// Point-to-point slots sit above every slot Gloo's collectives build from a 32-bit tag.
constexpr uint64_t kP2PSlot = uint64_t(1) << 56;

class GlooGroup final : public QueuedGroup {
 public:
  GlooGroup(const GroupSpec& spec)
      : QueuedGroup(spec.rank, spec.size, spec.global_ranks, spec.store, spec.timeout) {
    gloo::transport::tcp::attr attr;
    if (!spec.interface.empty())
      attr.iface = spec.interface;
    else
      attr.hostname = spec.hostname;
    try {
      device_ = gloo::transport::tcp::CreateDevice(attr);
      auto context = std::make_shared<gloo::rendezvous::Context>(rank_, size_);
      context->setTimeout(timeout_);
      StoreAdapter adapter(store_);
      context->connectFullMesh(adapter, device_);
      context_ = std::move(context);
    } catch (const Error& e) {
      OX_FAIL(Distributed, "init_process_group", "gloo rendezvous of rank ", rank_, " of ", size_,
              " failed: ", e.what());
    } catch (const std::exception& e) {
      OX_FAIL(Distributed, "init_process_group", "gloo could not connect rank ", rank_, " of ",
              size_, " to its peers: ", e.what());
    }
  }
  ~GlooGroup() override { shut_down(); }

  std::string backend() const override { return "gloo"; }

  WorkPtr all_reduce(Tensor& tensor, ReduceOp op) override {
    check_tensor("all_reduce", tensor, "tensor");
    check_reduce_op("all_reduce", tensor.dtype(), op);
    return enqueue("all_reduce", {tensor}, [this, tensor, op](uint64_t seq) {
      agree("all_reduce", seq, tensor, int(op));
      reduce_in_place(seq, bytes_of(tensor), tensor.dtype(), size_t(tensor.numel()), op);
    });
  }

  WorkPtr all_reduce_coalesced(std::vector<Tensor>& tensors, ReduceOp op) override {
    check_bucket("all_reduce_coalesced", tensors, op);
    return enqueue("all_reduce_coalesced", tensors, [this, tensors, op](uint64_t seq) {
      int64_t total = 0;
      for (const Tensor& t : tensors) total += t.numel();
      const DType dtype = tensors[0].dtype();
      agree("all_reduce_coalesced", seq, Tensor(), int(op), total, dtype);
      const size_t width = dtype_size(dtype);
      std::vector<uint8_t> flat(size_t(total) * width);
      size_t at = 0;
      for (const Tensor& t : tensors) {
        if (t.numel()) std::memcpy(flat.data() + at, bytes_of(t), t.nbytes());
        at += t.nbytes();
      }
      reduce_in_place(seq, flat.data(), dtype, size_t(total), op);
      at = 0;
      for (const Tensor& t : tensors) {
        if (t.numel()) std::memcpy(bytes_of(t), flat.data() + at, t.nbytes());
        at += t.nbytes();
      }
    });
  }

  WorkPtr broadcast(Tensor& tensor, int src) override {
    check_tensor("broadcast", tensor, "tensor");
    check_rank("broadcast", src, "src", false);
    return enqueue("broadcast", {tensor}, [this, tensor, src](uint64_t seq) {
      agree("broadcast", seq, tensor, src);
      if (tensor.numel() == 0 || size_ == 1) return;
      gloo::BroadcastOptions opts(context_);
      cpu::index_walk::dispatch_bytes(tensor.element_size(), [&]<class W>() {
        opts.setOutput(reinterpret_cast<W*>(bytes_of(tensor)), size_t(tensor.numel()));
      });
      opts.setRoot(src);
      opts.setTag(uint32_t(seq));
      opts.setTimeout(timeout_);
      gloo::broadcast(opts);
    });
  }

  WorkPtr all_gather(std::vector<Tensor>& outputs, const Tensor& input) override {
    check_tensor("all_gather", input, "input");
    check_list("all_gather", outputs, input, "output");
    std::vector<Tensor> keep = outputs;
    keep.push_back(input);
    return enqueue("all_gather", keep, [this, outputs, input](uint64_t seq) {
      agree("all_gather", seq, input, 0);
      std::vector<uint8_t> flat(input.nbytes() * size_t(size_));
      gather(seq, input, flat.data());
      for (int r = 0; r < size_; ++r)
        if (input.numel())
          std::memcpy(bytes_of(outputs[size_t(r)]), flat.data() + size_t(r) * input.nbytes(),
                      input.nbytes());
    });
  }

  WorkPtr all_gather_into_tensor(Tensor& output, const Tensor& input) override {
    check_whole_and_part("all_gather_into_tensor", output, input);
    return enqueue("all_gather_into_tensor", {output, input}, [this, output, input](uint64_t seq) {
      agree("all_gather_into_tensor", seq, input, 0);
      gather(seq, input, bytes_of(output));
    });
  }

  WorkPtr reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op) override {
    check_tensor("reduce_scatter", output, "output");
    check_reduce_op("reduce_scatter", output.dtype(), op);
    check_list("reduce_scatter", inputs, output, "input");
    std::vector<Tensor> keep = inputs;
    keep.push_back(output);
    return enqueue("reduce_scatter", keep, [this, output, inputs, op](uint64_t seq) {
      agree("reduce_scatter", seq, output, int(op));
      std::vector<uint8_t> flat(output.nbytes() * size_t(size_));
      for (int r = 0; r < size_; ++r)
        if (output.numel())
          std::memcpy(flat.data() + size_t(r) * output.nbytes(), bytes_of(inputs[size_t(r)]),
                      output.nbytes());
      scatter_reduced(seq, flat, output, op);
    });
  }

  WorkPtr reduce_scatter_tensor(Tensor& output, const Tensor& input, ReduceOp op) override {
    check_whole_and_part("reduce_scatter_tensor", input, output);
    check_reduce_op("reduce_scatter_tensor", output.dtype(), op);
    return enqueue("reduce_scatter_tensor", {output, input},
                   [this, output, input, op](uint64_t seq) {
                     agree("reduce_scatter_tensor", seq, input, int(op));
                     const uint8_t* in = bytes_of(input);
                     std::vector<uint8_t> flat(in, in + input.nbytes());
                     scatter_reduced(seq, flat, output, op);
                   });
  }

  WorkPtr barrier() override {
    return enqueue("barrier", {}, [this](uint64_t seq) {
      agree("barrier", seq, Tensor(), 0);
      if (size_ == 1) return;
      gloo::BarrierOptions opts(context_);
      opts.setTag(uint32_t(seq));
      opts.setTimeout(timeout_);
      gloo::barrier(opts);
    });
  }

  WorkPtr send(const Tensor& tensor, int dst, int tag) override {
    check_tensor("send", tensor, "tensor");
    check_rank("send", dst, "dst", true);
    return point_to_point(tensor, dst, tag, true);
  }

  WorkPtr recv(Tensor& tensor, int src, int tag) override {
    check_tensor("recv", tensor, "tensor");
    check_rank("recv", src, "src", true);
    return point_to_point(tensor, src, tag, false);
  }

 private:
  // The debug check: every rank's signature of this collective must equal rank 0's.
  void agree(const char* op, uint64_t seq, const Tensor& t, int root, int64_t numel = -1,
             DType dtype = kF32) {
    if (size_ == 1 || !debug_checks_enabled()) return;
    Signature mine = signature_of(seq, op, t, root);
    if (numel >= 0) {
      mine.numel = numel;
      mine.dtype = int32_t(dtype);
    }
    std::vector<Signature> all(static_cast<size_t>(size_));
    gloo::AllgatherOptions opts(context_);
    opts.setInput(reinterpret_cast<uint8_t*>(&mine), sizeof mine);
    opts.setOutput(reinterpret_cast<uint8_t*>(all.data()), sizeof mine * all.size());
    opts.setTag(uint32_t(seq) | 0x80000000u);
    opts.setTimeout(timeout_);
    gloo::allgather(opts);
    compare_signatures(op, all, name());
  }

  void reduce_in_place(uint64_t seq, uint8_t* data, DType dtype, size_t n, ReduceOp op) {
    if (n == 0) return;
    if (size_ > 1) {
      gloo::AllreduceOptions opts(context_);
      cpu::index_walk::dispatch_bytes(
          dtype_size(dtype), [&]<class W>() { opts.setOutput(reinterpret_cast<W*>(data), n); });
      opts.setReduceFunction(reduce_fn(dtype, op));
      opts.setTag(uint32_t(seq));
      opts.setTimeout(timeout_);
      gloo::allreduce(opts);
    }
    if (op == ReduceOp::Avg) finish_avg(dtype, data, n, size_);
  }

  void gather(uint64_t seq, const Tensor& input, uint8_t* out) {
    if (input.numel() == 0) return;
    if (size_ == 1) {
      std::memcpy(out, bytes_of(input), input.nbytes());
      return;
    }
    gloo::AllgatherOptions opts(context_);
    cpu::index_walk::dispatch_bytes(input.element_size(), [&]<class W>() {
      opts.setInput(reinterpret_cast<W*>(bytes_of(input)), size_t(input.numel()));
      opts.setOutput(reinterpret_cast<W*>(out), size_t(input.numel()) * size_t(size_));
    });
    opts.setTag(uint32_t(seq));
    opts.setTimeout(timeout_);
    gloo::allgather(opts);
  }

  // All-reduces `flat` (size() chunks of output's size) and keeps this rank's chunk. Twice the
  // traffic of a ring reduce-scatter, which Gloo's new-style API lacks.
  void scatter_reduced(uint64_t seq, std::vector<uint8_t>& flat, const Tensor& output,
                       ReduceOp op) {
    reduce_in_place(seq, flat.data(), output.dtype(), size_t(output.numel()) * size_t(size_), op);
    if (output.numel())
      std::memcpy(bytes_of(output), flat.data() + size_t(rank_) * output.nbytes(), output.nbytes());
  }

  WorkPtr point_to_point(const Tensor& tensor, int peer, int tag, bool sending);

  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> context_;
};

// A send or recv posted on Gloo's unbound buffer; wait() waits for it.
class PointToPointWork final : public Work {
 public:
  PointToPointWork(std::unique_ptr<gloo::transport::UnboundBuffer> buffer, Tensor tensor,
                   bool sending, int peer, Milliseconds timeout, std::string group)
      : buffer_(std::move(buffer)),
        tensor_(std::move(tensor)),
        sending_(sending),
        peer_(peer),
        timeout_(timeout),
        group_(std::move(group)) {}
  void wait() override {
    if (done_) return;
    const char* op = sending_ ? "send" : "recv";
    try {
      const bool ok = sending_ ? buffer_->waitSend(timeout_) : buffer_->waitRecv(timeout_);
      OX_CHECK(ok, Distributed, op, group_, ": ", op, (sending_ ? " to" : " from"), " rank ", peer_,
               " was aborted");
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      OX_FAIL(Distributed, op, group_, ": ", op, (sending_ ? " to" : " from"), " rank ", peer_,
              " failed: ", e.what());
    }
    done_ = true;
  }
  bool is_completed() const override { return done_; }

 private:
  std::unique_ptr<gloo::transport::UnboundBuffer> buffer_;
  Tensor tensor_;
  bool sending_;
  int peer_;
  Milliseconds timeout_;
  std::string group_;
  bool done_ = false;
};

WorkPtr GlooGroup::point_to_point(const Tensor& tensor, int peer, int tag, bool sending) {
  OX_CHECK(tag >= 0, Value, sending ? "send" : "recv", "tag must be >= 0, got ", tag);
  // A zero-byte buffer still carries the message, so the peers stay matched.
  static uint8_t empty = 0;
  void* data = tensor.numel() ? bytes_of(tensor) : &empty;
  auto buffer = context_->createUnboundBuffer(data, tensor.nbytes());
  const uint64_t slot = kP2PSlot | uint64_t(uint32_t(tag));
  try {
    if (sending)
      buffer->send(peer, slot);
    else
      buffer->recv(peer, slot);
  } catch (const std::exception& e) {
    OX_FAIL(Distributed, sending ? "send" : "recv", name(), ": rank ", peer, ": ", e.what());
  }
  return std::make_shared<PointToPointWork>(std::move(buffer), tensor, sending, peer, timeout_,
                                            name());
}

}  // namespace

ProcessGroupPtr make_gloo_group(const GroupSpec& spec) { return std::make_shared<GlooGroup>(spec); }

}  // namespace ox::distributed::detail
