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

#include <algorithm>
#include <cstring>
#include <memory>

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

// Slots of our own use prefixes (the top byte) that none of Gloo's collectives build
// (gloo/types.h takes 0x01-0x08).
constexpr uint64_t kP2PSlot = uint64_t(0x80) << 56;
constexpr uint64_t kReduceScatterSlot = uint64_t(0x81) << 56;
// The ring's unit of pipelining, as Gloo's all-reduce: one segment is reduced while the next
// is on the wire.
constexpr size_t kSegmentBytes = size_t(1) << 20;

class GlooGroup final : public QueuedGroup {
 public:
  GlooGroup(const GroupSpec& spec)
      : QueuedGroup(spec.rank, spec.size, spec.global_ranks, spec.store, spec.timeout) {
    gloo::transport::tcp::attr attr;
    if (!spec.interface.empty())
      attr.iface = spec.interface;
    else
      attr.hostname = spec.hostname;
    // Gloo's loop thread, started here, inherits the blocked SIGPIPE.
    const SigpipeBlocked quiet_pipes;
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
      std::vector<const uint8_t*> chunks;
      for (const Tensor& t : inputs) chunks.push_back(bytes_of(t));
      ring_reduce_scatter(seq, chunks, output, op);
    });
  }

  WorkPtr reduce_scatter_tensor(Tensor& output, const Tensor& input, ReduceOp op) override {
    check_whole_and_part("reduce_scatter_tensor", input, output);
    check_reduce_op("reduce_scatter_tensor", output.dtype(), op);
    return enqueue("reduce_scatter_tensor", {output, input},
                   [this, output, input, op](uint64_t seq) {
                     agree("reduce_scatter_tensor", seq, input, int(op));
                     std::vector<const uint8_t*> chunks;
                     for (int r = 0; r < size_; ++r)
                       chunks.push_back(bytes_of(input) + size_t(r) * output.nbytes());
                     ring_reduce_scatter(seq, chunks, output, op);
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

  void ring_reduce_scatter(uint64_t seq, const std::vector<const uint8_t*>& chunks,
                           const Tensor& output, ReduceOp op);

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

// Ring reduce-scatter on Gloo's transport (its new-style API has no reduce-scatter): in step s
// rank r sends chunk r-1-s, reduced in the step before, to rank r+1 and receives chunk r-2-s
// from rank r-1, so after size-1 steps chunk r holds every rank's contribution and each byte
// crossed each link once (all-reducing the whole buffer would move twice as much). Segments
// are forwarded as soon as they are reduced, and received into two alternating scratch slots.
// Intermediate sums go to a scratch copy (the inputs are the caller's); the last into output.
void GlooGroup::ring_reduce_scatter(uint64_t seq, const std::vector<const uint8_t*>& chunks,
                                    const Tensor& output, ReduceOp op) {
  const size_t chunk_bytes = output.nbytes(), width = output.element_size();
  const size_t n = size_t(output.numel());
  uint8_t* out = n ? bytes_of(output) : nullptr;
  if (n == 0) return;
  if (size_ == 1) {
    if (chunks[0] != out) std::memcpy(out, chunks[0], chunk_bytes);
    if (op == ReduceOp::Avg) finish_avg(output.dtype(), out, n, 1);
    return;
  }
  const ReduceFn reduce = reduce_fn(output.dtype(), op);
  const size_t segment = std::max(width, kSegmentBytes / width * width);
  const size_t segments = (chunk_bytes + segment - 1) / segment;
  const int next = (rank_ + 1) % size_, prev = (rank_ + size_ - 1) % size_;
  const auto chunk_of = [&](int s, int shift) {
    return ((rank_ - shift - s) % size_ + size_) % size_;
  };
  const uint64_t slot = kReduceScatterSlot | (seq & 0xffffffffffffu);

  std::unique_ptr<uint8_t[]> partial(new uint8_t[chunk_bytes * size_t(size_)]);
  std::unique_ptr<uint8_t[]> slots(new uint8_t[2 * segment]);
  auto partial_buffer = context_->createUnboundBuffer(partial.get(), chunk_bytes * size_t(size_));
  auto slot_buffer = context_->createUnboundBuffer(slots.get(), 2 * segment);
  // Step 0 sends this rank's own contribution to chunk r-1, straight from the input.
  const int first = chunk_of(0, 1);
  auto input_buffer =
      context_->createUnboundBuffer(const_cast<uint8_t*>(chunks[size_t(first)]), chunk_bytes);
  const auto length_of = [&](size_t j) { return std::min(segment, chunk_bytes - j * segment); };
  for (size_t j = 0; j < segments; ++j) input_buffer->send(next, slot, j * segment, length_of(j));

  // Receives are numbered k = s * segments + j; k + 2 is posted once k's slot is consumed.
  const size_t receives = size_t(size_ - 1) * segments;
  const auto post_receive = [&](size_t k) {
    if (k < receives) slot_buffer->recv(prev, slot, (k & 1) * segment, length_of(k % segments));
  };
  post_receive(0);
  post_receive(1);
  size_t forwarded = 0;
  for (size_t k = 0; k < receives; ++k) {
    const int s = int(k / segments);
    const size_t j = k % segments, offset = j * segment, length = length_of(j);
    const int chunk = chunk_of(s, 2);
    const bool last = s == size_ - 2;  // chunk == rank_: the result
    uint8_t* dst = last ? out + offset : partial.get() + size_t(chunk) * chunk_bytes + offset;
    OX_CHECK(slot_buffer->waitRecv(timeout_), Distributed, "reduce_scatter", name(),
             ": receive from rank ", prev, " was aborted");
    reduce(dst, chunks[size_t(chunk)] + offset, slots.get() + (k & 1) * segment, length / width);
    post_receive(k + 2);
    if (!last) {
      partial_buffer->send(next, slot, size_t(chunk) * chunk_bytes + offset, length);
      ++forwarded;
    }
  }
  // Sends are posted on two buffers; each wait consumes one completion of that buffer.
  for (size_t i = 0; i < segments; ++i)
    OX_CHECK(input_buffer->waitSend(timeout_), Distributed, "reduce_scatter", name(),
             ": send to rank ", next, " was aborted");
  for (size_t i = 0; i < forwarded; ++i)
    OX_CHECK(partial_buffer->waitSend(timeout_), Distributed, "reduce_scatter", name(),
             ": send to rank ", next, " was aborted");
  if (op == ReduceOp::Avg) finish_avg(output.dtype(), out, n, size_);
}

WorkPtr GlooGroup::point_to_point(const Tensor& tensor, int peer, int tag, bool sending) {
  OX_CHECK(tag >= 0, Value, sending ? "send" : "recv", "tag must be >= 0, got ", tag);
  // A zero-byte buffer still carries the message, so the peers stay matched.
  static uint8_t empty = 0;
  void* data = tensor.numel() ? bytes_of(tensor) : &empty;
  auto buffer = context_->createUnboundBuffer(data, tensor.nbytes());
  const uint64_t slot = kP2PSlot | uint64_t(uint32_t(tag));
  const SigpipeBlocked quiet_pipes;  // posting may write on the caller's thread
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
