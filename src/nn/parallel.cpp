// DistributedDataParallel and its Reducer: gradient buckets all-reduced as they fill during
// backward (post-accumulate-grad hooks start them; an end-of-backward callback waits for them
// and writes the averages back).

#include "oxmera/nn/parallel.h"

#include <algorithm>
#include <unordered_set>

#include "autograd/record.h"
#include "oxmera/autograd.h"
#include "oxmera/ops.h"

namespace ox::nn::parallel {

namespace dist = ox::distributed;

namespace {

// A per-dtype flat copy of `tensors` broadcast from rank 0, then copied back into each.
void broadcast_from_rank0(const std::vector<Tensor>& tensors, const dist::ProcessGroupPtr& group) {
  if (group->size() == 1) return;
  NoGradGuard no_grad;
  for (const DType dt : kAllDTypes) {
    std::vector<Tensor> same;
    for (const Tensor& t : tensors)
      if (t.defined() && t.dtype() == dt && t.numel() > 0) same.push_back(t);
    if (same.empty()) continue;
    std::vector<Tensor> flat_parts;
    for (const Tensor& t : same) flat_parts.push_back(t.reshape({-1}));
    Tensor flat = ox::cat(flat_parts).contiguous();
    group->broadcast(flat, 0)->wait();
    int64_t at = 0;
    for (Tensor t : same) {
      t.copy_(flat.narrow(0, at, t.numel()).reshape(t.shape()));
      at += t.numel();
    }
  }
}

}  // namespace

class Reducer {
 public:
  Reducer(std::vector<Tensor> params, dist::ProcessGroupPtr group, double cap_mb)
      : params_(std::move(params)), group_(std::move(group)) {
    OX_CHECK(cap_mb > 0, Value, "DistributedDataParallel", "bucket_cap_mb must be > 0, got ",
             cap_mb);
    // Reverse parameter order; a new bucket at a dtype or device change or when full. The
    // first bucket is capped at 1 MiB, as PyTorch's, so that communication starts early.
    const int64_t cap = int64_t(cap_mb * 1024 * 1024), first_cap = std::min<int64_t>(cap, 1 << 20);
    where_.resize(params_.size());
    for (int64_t i = int64_t(params_.size()) - 1; i >= 0; --i) {
      const Tensor& p = params_[size_t(i)];
      const int64_t bytes = int64_t(p.nbytes());
      const bool fits = !buckets_.empty() && buckets_.back().dtype == p.dtype() &&
                        buckets_.back().device == p.device() &&
                        buckets_.back().bytes + bytes <= (buckets_.size() == 1 ? first_cap : cap);
      if (!fits) buckets_.push_back(Bucket{.dtype = p.dtype(), .device = p.device()});
      Bucket& b = buckets_.back();
      where_[size_t(i)] = {int64_t(buckets_.size()) - 1, b.numel};
      b.params.push_back(i);
      b.numel += p.numel();
      b.bytes += bytes;
    }
    for (Bucket& b : buckets_)
      b.flat = ox::zeros({b.numel}, {.dtype = b.dtype, .device = b.device});
    for (size_t i = 0; i < params_.size(); ++i) {
      accumulators_.push_back(autograd::gradient_edge(params_[i]).node);
      handles_.push_back(params_[i].register_post_accumulate_grad_hook(
          [this, i](const Tensor&) { on_ready(int64_t(i)); }));
    }
    ready_.assign(params_.size(), false);
    unused_.assign(params_.size(), false);
  }

  ~Reducer() {
    for (size_t i = 0; i < params_.size(); ++i) params_[i].remove_hook(handles_[i]);
    for (Bucket& b : buckets_)  // nothing may still write into a bucket we free
      if (b.work) try {
          b.work->wait();
        } catch (const Error&) {
        }
  }

  bool sync = true;

  // After a forward: which parameters its outputs cannot reach (find_unused_parameters).
  void find_unused(const std::vector<Tensor>& outputs) {
    std::unordered_set<const autograd::Node*> seen;
    std::vector<autograd::Node*> stack;
    for (const Tensor& out : outputs)
      if (out.defined() && out.requires_grad())
        if (auto node = autograd::gradient_edge(out).node; node && seen.insert(node.get()).second)
          stack.push_back(node.get());
    while (!stack.empty()) {
      autograd::Node* n = stack.back();
      stack.pop_back();
      for (const autograd::Edge& e : n->next_edges())
        if (e.node && seen.insert(e.node.get()).second) stack.push_back(e.node.get());
    }
    for (size_t i = 0; i < params_.size(); ++i) unused_[i] = !seen.count(accumulators_[i].get());
  }

  std::vector<BucketInfo> info() const {
    std::vector<BucketInfo> out;
    for (const Bucket& b : buckets_)
      out.push_back(
          {.parameters = b.params, .bytes = b.bytes, .ready_at_launch = b.ready_at_launch});
    return out;
  }

 private:
  struct Bucket {
    DType dtype;
    Device device;
    std::vector<int64_t> params{};
    int64_t numel = 0, bytes = 0;
    Tensor flat{};
    int64_t pending = 0;
    dist::WorkPtr work{};
    int64_t ready_at_launch = -1;
  };

  void on_ready(int64_t i) {
    if (!sync) return;
    if (!in_backward_) start_backward();
    mark_ready(i);
  }

  void start_backward() {
    in_backward_ = true;
    ready_count_ = 0;
    next_launch_ = 0;
    std::fill(ready_.begin(), ready_.end(), false);
    for (Bucket& b : buckets_) {
      b.pending = int64_t(b.params.size());
      b.work.reset();
      b.ready_at_launch = -1;
    }
    autograd::queue_callback([this] { finish_backward(); });
    // Gradients that will never come count as ready (zeros) from the start.
    for (size_t j = 0; j < params_.size(); ++j)
      if (unused_[j]) mark_ready(int64_t(j));
  }

  void mark_ready(int64_t i) {
    if (ready_[size_t(i)]) return;
    ready_[size_t(i)] = true;
    ++ready_count_;
    const auto [bi, offset] = where_[size_t(i)];
    Bucket& b = buckets_[size_t(bi)];
    const Tensor& p = params_[size_t(i)];
    {
      NoGradGuard no_grad;
      Tensor slot = b.flat.narrow(0, offset, p.numel());
      const Tensor g = p.grad();
      if (g.defined())
        slot.copy_(g.reshape({-1}));
      else
        slot.zero_();
    }
    if (--b.pending == 0) launch_ready_buckets();
  }

  // Buckets start in index order on every rank, so the ranks' collectives line up even where
  // their gradients became ready in another order.
  void launch_ready_buckets() {
    while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
      Bucket& b = buckets_[next_launch_++];
      b.ready_at_launch = ready_count_;
      b.work = group_->all_reduce(b.flat, dist::ReduceOp::Sum);
    }
  }

  void finish_backward() {
    in_backward_ = false;
    std::string missing;
    for (size_t i = 0; i < params_.size(); ++i)
      if (!ready_[i])
        missing +=
            ox::detail::concat(missing.empty() ? "" : ", ", i, " (shape ", params_[i].shape(), ")");
    for (Bucket& b : buckets_)
      if (b.work) b.work->wait();
    OX_CHECK(missing.empty(), Value, "DistributedDataParallel", "parameters ", missing,
             " got no gradient in this backward, so their buckets could not be reduced; pass "
             "find_unused_parameters = true if the forward does not use every parameter");
    NoGradGuard no_grad;
    const double world = group_->size();
    for (Bucket& b : buckets_) {
      b.flat.div_(world);
      for (const int64_t i : b.params) {
        Tensor& p = params_[size_t(i)];
        const Tensor avg = b.flat.narrow(0, where_[size_t(i)].second, p.numel()).reshape(p.shape());
        Tensor& grad = p.mutable_grad();
        if (grad.defined())
          grad.copy_(avg);
        else
          grad = avg.clone();
      }
    }
  }

  std::vector<Tensor> params_;
  dist::ProcessGroupPtr group_;
  std::vector<Bucket> buckets_;
  std::vector<std::pair<int64_t, int64_t>> where_;  // (bucket, offset) of each parameter
  std::vector<std::shared_ptr<autograd::Node>> accumulators_;
  std::vector<int64_t> handles_;
  std::vector<bool> ready_, unused_;
  bool in_backward_ = false;
  int64_t ready_count_ = 0;
  size_t next_launch_ = 0;
};

DistributedDataParallelImpl::DistributedDataParallelImpl(AnyModule module, Options options)
    : DistributedDataParallelImpl(module.ptr(), options) {
  forward_ = [module](const Tensor& x) { return module.forward(x); };
}

DistributedDataParallelImpl::DistributedDataParallelImpl(ModulePtr module, Options options)
    : Module("DistributedDataParallel"),
      module_(std::move(module)),
      group_(options.process_group ? options.process_group : dist::default_group()),
      options_(options) {
  OX_CHECK(module_ != nullptr, Value, "DistributedDataParallel", "null module");
  register_module("module", module_);
  std::vector<Tensor> trained;
  for (const Tensor& p : module_->parameters())
    if (p.requires_grad()) trained.push_back(p);
  // The same model on every rank: count and shapes agree, or nothing else will.
  // (A hash: unsigned, so that it wraps instead of overflowing.)
  uint64_t hash = trained.size();
  for (const Tensor& p : trained)
    for (const int64_t d : p.shape()) hash = hash * 1000003u + uint64_t(d) + 1;
  const auto fingerprint = int64_t(hash);
  // Where the group's backend reduces: the parameters' device for NCCL, the CPU otherwise.
  const Device on =
      group_->backend() == "nccl" && !trained.empty() ? trained[0].device() : Device::cpu();
  Tensor mine = ox::tensor(std::vector<int64_t>{fingerprint}, {1}).to(on);
  Tensor all = ox::zeros({group_->size()}, {.dtype = kI64, .device = on});
  group_->all_gather_into_tensor(all, mine)->wait();
  const std::vector<int64_t> prints = all.to_vector<int64_t>();
  for (size_t r = 0; r < prints.size(); ++r)
    OX_CHECK(prints[r] == fingerprint, Distributed, "DistributedDataParallel", "rank ", r,
             "'s model has other parameters (count or shapes) than rank ", group_->rank(), "'s");
  std::vector<Tensor> state = module_->parameters();
  for (const Tensor& b : module_->buffers()) state.push_back(b);
  broadcast_from_rank0(state, group_);
  reducer_ = std::make_unique<Reducer>(trained, group_, options.bucket_cap_mb);
}

DistributedDataParallelImpl::~DistributedDataParallelImpl() = default;

std::vector<Tensor> DistributedDataParallelImpl::call_many(
    const std::function<std::vector<Tensor>()>& fn) {
  if (options_.broadcast_buffers && module_->is_training())
    broadcast_from_rank0(module_->buffers(), group_);
  std::vector<Tensor> outputs = fn();
  if (options_.find_unused_parameters && reducer_->sync && is_grad_enabled())
    reducer_->find_unused(outputs);
  return outputs;
}

Tensor DistributedDataParallelImpl::call(const std::function<Tensor()>& fn) {
  return call_many([&] { return std::vector<Tensor>{fn()}; })[0];
}

Tensor DistributedDataParallelImpl::forward(const Tensor& x) {
  OX_CHECK(forward_ != nullptr, Value, "DistributedDataParallel",
           "the module was given as a ModulePtr, which has no forward to call: use call()");
  return call([&] { return forward_(x); });
}

std::vector<BucketInfo> DistributedDataParallelImpl::buckets() const { return reducer_->info(); }

DistributedDataParallelImpl::NoSync::NoSync(DistributedDataParallelImpl& ddp)
    : ddp_(ddp), previous_(ddp.reducer_->sync) {
  ddp.reducer_->sync = false;
}

DistributedDataParallelImpl::NoSync::~NoSync() { ddp_.reducer_->sync = previous_; }

}  // namespace ox::nn::parallel
