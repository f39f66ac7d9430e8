#pragma once
// ox::nn::parallel::DistributedDataParallel, as torch.nn.parallel.DistributedDataParallel:
// every rank holds a replica of the model, trains on its own shard of each batch, and after
// backward every replica's gradients are the average over the ranks, so the optimizers take
// the same step everywhere.
//
//   ox::distributed::init_process_group({.backend = "gloo"});
//   Net model;
//   ox::nn::parallel::DistributedDataParallel ddp(model);   // rank 0's weights everywhere
//   ox::optim::SGD opt(ddp->parameters(), {.lr = 0.1});
//   auto loss = loss_fn(ddp->forward(x), y);
//   loss.backward();                                         // gradients averaged over ranks
//   opt.step();
//
// How: the gradients are packed into buckets (bucket_cap_mb each, the first 1 MiB, in reverse
// parameter order, the order backward tends to produce them), and a bucket's all-reduce starts
// on the process group's thread as soon as its last gradient has been accumulated, while
// backward goes on computing the rest. When backward ends, the averaged buckets are written
// back into each parameter's .grad().

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "oxmera/distributed.h"
#include "oxmera/nn/module.h"

namespace ox::nn::parallel {

struct DistributedDataParallelOptions {
  distributed::ProcessGroupPtr process_group{};  // null: the default group
  OX_NAMED_FIELDS_ONLY;
  double bucket_cap_mb = 25;
  // Broadcast rank 0's buffers (BatchNorm's running statistics) before every forward.
  bool broadcast_buffers = true;
  // Look for parameters the forward did not use (their gradients would never come, and
  // backward could not finish the buckets); without it, such a parameter raises after backward.
  bool find_unused_parameters = false;
};

// What one bucket did in the last synchronized backward.
struct BucketInfo {
  std::vector<int64_t> parameters;  // indices into parameters(), in bucket order
  int64_t bytes = 0;
  // How many parameters' gradients were ready when its all-reduce started: less than the total
  // means it started while backward was still running.
  int64_t ready_at_launch = -1;
};

class Reducer;

class DistributedDataParallelImpl : public Module {
 public:
  using Options = DistributedDataParallelOptions;
  // Any module with Tensor forward(const Tensor&) gets forward(x); any module at all, call().
  // Collective: every rank constructs it, with the same model structure.
  template <class Holder>
  requires requires(const Holder& h) { AnyModule(h.ptr()); }
  explicit DistributedDataParallelImpl(const Holder& module, Options options = {})
      : DistributedDataParallelImpl(AnyModule(module.ptr()), options) {}
  DistributedDataParallelImpl(AnyModule module, Options options = {});
  DistributedDataParallelImpl(ModulePtr module, Options options = {});
  ~DistributedDataParallelImpl() override;

  // The wrapped module's forward (a Value error for a module given as a bare ModulePtr).
  Tensor forward(const Tensor& x);
  // Runs fn (which calls the wrapped model) as a forward of this DDP: buffers broadcast first,
  // and with find_unused_parameters the graph of the returned tensors searched after.
  Tensor call(const std::function<Tensor()>& fn);
  std::vector<Tensor> call_many(const std::function<std::vector<Tensor>()>& fn);

  const ModulePtr& module() const { return module_; }
  const distributed::ProcessGroupPtr& process_group() const { return group_; }

  // While a NoSync lives, backward accumulates gradients locally without communicating
  // (gradient accumulation); the first backward after it averages the accumulated sums.
  class NoSync {
   public:
    explicit NoSync(DistributedDataParallelImpl& ddp);
    ~NoSync();
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    DistributedDataParallelImpl& ddp_;
    bool previous_;
  };
  NoSync no_sync() { return NoSync(*this); }

  std::vector<BucketInfo> buckets() const;

 private:
  ModulePtr module_;
  std::function<Tensor(const Tensor&)> forward_;
  distributed::ProcessGroupPtr group_;
  Options options_;
  std::unique_ptr<Reducer> reducer_;
};
OX_MODULE(DistributedDataParallel);

}  // namespace ox::nn::parallel
