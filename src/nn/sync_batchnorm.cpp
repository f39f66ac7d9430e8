// SyncBatchNorm: the batch statistics are all-reduced over the process group, and so are their
// gradients, through a differentiable all-reduce; the normalization itself is public ops, so
// autograd derives the rest of backward.

#include <limits>

#include "backend/kernel_check.h"
#include "ops/index_util.h"
#include "oxmera/autograd.h"
#include "oxmera/distributed.h"
#include "oxmera/nn/sync_batchnorm.h"
#include "oxmera/ops.h"

namespace ox::nn {

namespace {

// Every rank's x summed; its backward sums every rank's gradient, since the loss being
// differentiated is the sum of every rank's loss (each depends on the global sum).
Tensor all_reduce_sum(const Tensor& x, const distributed::ProcessGroupPtr& group) {
  auto reduce = [group](const Tensor& t) {
    Tensor out = t.contiguous().clone();
    group->all_reduce(out)->wait();
    return out;
  };
  return autograd::detail::apply_function(
      "SyncBatchNormAllReduce", {x}, {0}, 1,
      [&](autograd::AutogradContext*) -> std::vector<Tensor> { return {reduce(x)}; },
      [reduce](autograd::AutogradContext*, std::vector<Tensor> grads) -> std::vector<Tensor> {
        return {reduce(grads[0])};
      })[0];
}

}  // namespace

SyncBatchNormImpl::SyncBatchNormImpl(int64_t num_features, const SyncBatchNormOptions& options)
    : BatchNormImpl("SyncBatchNorm", 2, std::numeric_limits<int64_t>::max(), num_features,
                    {.eps = options.eps,
                     .momentum = options.momentum,
                     .affine = options.affine,
                     .track_running_stats = options.track_running_stats}),
      process_group(options.process_group) {}

Tensor SyncBatchNormImpl::forward(const Tensor& input) {
  OX_CHECK(input.dim() >= 2, Shape, "SyncBatchNorm", "expected an input [N, C, ...], got ",
           input.shape());
  distributed::ProcessGroupPtr group = process_group;
  if (!group && distributed::is_initialized()) group = distributed::default_group();
  if (!is_training() || !group || group->size() == 1) return BatchNormImpl::forward(input);

  OX_CHECK(input.size(1) == num_features, Shape, "SyncBatchNorm", "expected ", num_features,
           " channels, got input ", input.shape());
  OX_CHECK(input.is_floating_point(), DType, "SyncBatchNorm",
           "expected a floating-point input, got ", input.dtype());
  if (weight.defined()) check_input_dtype("SyncBatchNorm", input, weight);
  OX_CHECK(input.device() == Device::cpu() || group->backend() == "nccl", Device, "SyncBatchNorm",
           "a ", group->backend(), " group reduces CPU tensors, got an input on ", input.device());

  std::vector<int64_t> reduced = {0};
  std::vector<int64_t> per_channel(static_cast<size_t>(input.dim()), 1);
  per_channel[1] = num_features;
  for (int64_t d = 2; d < input.dim(); ++d) reduced.push_back(d);
  const Shape channel_shape(per_channel);

  // 16-bit inputs take their statistics in f32, as BatchNorm does.
  const Tensor x = dtype_size(input.dtype()) == 2 ? input.to(kF32) : input;
  // One all-reduce for every channel's sum and this rank's count (appended, without gradient),
  // in f64: the count stays exact past f32's 2^24.
  const Tensor local_count = full({1}, static_cast<double>(x.numel() / num_features),
                                  {.dtype = kF64, .device = x.device()});
  const Tensor sums = all_reduce_sum(cat({x.sum(reduced).to(kF64), local_count}), group);
  // The count stays on the device (a 1-element tensor): the host reads nothing back.
  const Tensor count = sums.narrow(0, num_features, 1);
  {
    static const CheckSite too_few =
        check_site("SyncBatchNorm",
                   "expected more than 1 value per channel across the ranks in training, got fewer",
                   ErrorKind::Value);
    NoGradGuard no_grad;
    ops::check_all_on_device(gt(count, 1), too_few);
  }
  const Tensor mean = (sums.narrow(0, 0, num_features) / count).to(x.dtype());
  const Tensor centered = x - mean.reshape(channel_shape);
  // Two passes (mean, then the squares about it), as one process computes the variance.
  const Tensor var =
      all_reduce_sum((centered * centered).sum(reduced), group) / count.to(x.dtype());
  Tensor out = centered * rsqrt(var + options.eps).reshape(channel_shape);
  if (weight.defined()) out = out * weight.reshape(channel_shape);
  if (bias.defined()) out = out + bias.reshape(channel_shape);

  if (options.track_running_stats) {
    NoGradGuard no_grad;
    const DType dt = running_mean.dtype();
    const auto update = [&](const auto& momentum) {  // a double, or a 0-d tensor of dt
      running_mean.mul_(1 - momentum).add_(mean.detach().to(dt) * momentum);
      running_var.mul_(1 - momentum)
          .add_(var.detach().to(dt) * (momentum * count / (count - 1)).to(dt));
    };
    if (options.momentum)
      update(*options.momentum);
    else  // the average of every batch seen: 1 / (batches + 1), without reading the count
      update(reciprocal(num_batches_tracked.to(kF64) + 1).to(dt));
    num_batches_tracked.add_(1);
  }
  return out.to(input.dtype());
}

}  // namespace ox::nn
