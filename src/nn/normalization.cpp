#include "oxmera/nn/normalization.h"

#include <ostream>

#include "nn/batch_norm.h"
#include "oxmera/autograd.h"
#include "oxmera/nn/functional.h"
#include "oxmera/nn/init.h"

namespace ox::nn {

namespace {
const char* flag(bool b) { return b ? "true" : "false"; }
}  // namespace

LayerNormImpl::LayerNormImpl(Shape shape, const LayerNormOptions& options)
    : Module("LayerNorm"), normalized_shape(std::move(shape)), options(options) {
  if (options.elementwise_affine) {
    weight = register_parameter("weight", empty(normalized_shape));
    if (options.bias) bias = register_parameter("bias", empty(normalized_shape));
  }
  reset_parameters();
}

void LayerNormImpl::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
  if (bias.defined()) init::zeros_(bias);
}

Tensor LayerNormImpl::forward(const Tensor& input) const {
  if (weight.defined()) check_input_dtype("LayerNorm", input, weight);
  return layer_norm(input, normalized_shape, weight, bias, options.eps);
}

void LayerNormImpl::pretty_print(std::ostream& os) const {
  os << "LayerNorm(" << normalized_shape << ", eps=" << options.eps
     << ", elementwise_affine=" << flag(options.elementwise_affine) << ")";
}

RMSNormImpl::RMSNormImpl(Shape shape, const RMSNormOptions& options)
    : Module("RMSNorm"), normalized_shape(std::move(shape)), options(options) {
  if (options.elementwise_affine) weight = register_parameter("weight", empty(normalized_shape));
  reset_parameters();
}

void RMSNormImpl::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
}

Tensor RMSNormImpl::forward(const Tensor& input) const {
  if (weight.defined()) check_input_dtype("RMSNorm", input, weight);
  return rms_norm(input, normalized_shape, weight, options.eps);
}

void RMSNormImpl::pretty_print(std::ostream& os) const {
  os << "RMSNorm(" << normalized_shape << ", eps=";
  if (options.eps)
    os << *options.eps;
  else
    os << "None";
  os << ", elementwise_affine=" << flag(options.elementwise_affine) << ")";
}

GroupNormImpl::GroupNormImpl(int64_t groups, int64_t channels, const GroupNormOptions& options)
    : Module("GroupNorm"), num_groups(groups), num_channels(channels), options(options) {
  OX_CHECK(groups > 0 && channels % groups == 0, Value, "GroupNorm", "num_channels ", channels,
           " must be divisible by num_groups ", groups);
  if (options.affine) {
    weight = register_parameter("weight", empty({channels}));
    bias = register_parameter("bias", empty({channels}));
  }
  reset_parameters();
}

void GroupNormImpl::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
  if (bias.defined()) init::zeros_(bias);
}

Tensor GroupNormImpl::forward(const Tensor& input) const {
  if (weight.defined()) check_input_dtype("GroupNorm", input, weight);
  OX_CHECK(input.dim() >= 2 && input.size(1) == num_channels, Shape, "GroupNorm",
           "expected input [N, ", num_channels, ", ...], got ", input.shape());
  return functional::group_norm(input, num_groups, weight, bias, options.eps);
}

void GroupNormImpl::pretty_print(std::ostream& os) const {
  os << "GroupNorm(" << num_groups << ", " << num_channels << ", eps=" << options.eps
     << ", affine=" << flag(options.affine) << ")";
}

NormBase::NormBase(const char* type_name, int64_t features, bool affine, bool track)
    : Module(type_name), num_features(features) {
  OX_CHECK(features > 0, Value, type_name, "num_features must be positive, got ", features);
  if (affine) {
    weight = register_parameter("weight", empty({features}));
    bias = register_parameter("bias", empty({features}));
  }
  if (track) {
    running_mean = register_buffer("running_mean", zeros({features}));
    running_var = register_buffer("running_var", ones({features}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, {.dtype = kI64}));
  }
  reset_parameters();
}

void NormBase::reset_running_stats() {
  if (!running_mean.defined()) return;
  NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

void NormBase::reset_parameters() {
  reset_running_stats();
  if (weight.defined()) init::ones_(weight);
  if (bias.defined()) init::zeros_(bias);
}

BatchNormImpl::BatchNormImpl(const char* type_name, int64_t low, int64_t high, int64_t features,
                             const BatchNormOptions& options)
    : NormBase(type_name, features, options.affine, options.track_running_stats),
      options(options),
      input_dims_low_(low),
      input_dims_high_(high) {}

Tensor BatchNormImpl::forward(const Tensor& input) {
  OX_CHECK(input.dim() >= input_dims_low_ && input.dim() <= input_dims_high_, Shape, type_name(),
           "expected a ", input_dims_low_,
           input_dims_low_ == input_dims_high_ ? "" : " or " + std::to_string(input_dims_high_),
           "-d input, got ", input.shape());
  OX_CHECK(input.size(1) == num_features, Shape, type_name(), "expected ", num_features,
           " channels, got input ", input.shape());
  if (weight.defined()) check_input_dtype(type_name().c_str(), input, weight);
  // Batch statistics in training, and always without running statistics (PyTorch).
  const bool use_batch_stats = is_training() || !options.track_running_stats;
  const bool update = is_training() && options.track_running_stats;
  const Tensor mean = update || !use_batch_stats ? running_mean : Tensor();
  const Tensor var = update || !use_batch_stats ? running_var : Tensor();
  Tensor out;
  if (update && !options.momentum) {
    // Without a momentum the running statistics are the average of every batch seen.
    Tensor factor;
    {
      NoGradGuard no_grad;
      factor = reciprocal(num_batches_tracked.to(kF64) + 1);
    }
    out = detail::batch_norm(input, mean, var, weight, bias, use_batch_stats, factor, options.eps);
  } else {
    out = functional::batch_norm(input, mean, var, weight, bias, use_batch_stats,
                                 options.momentum.value_or(0.0), options.eps);
  }
  if (update) {  // counted only once the batch was taken
    NoGradGuard no_grad;
    num_batches_tracked.add_(1);
  }
  return out;
}

void BatchNormImpl::pretty_print(std::ostream& os) const {
  os << type_name() << "(" << num_features << ", eps=" << options.eps << ", momentum=";
  if (options.momentum)
    os << *options.momentum;
  else
    os << "None";
  os << ", affine=" << flag(options.affine)
     << ", track_running_stats=" << flag(options.track_running_stats) << ")";
}

InstanceNormImpl::InstanceNormImpl(const char* type_name, int64_t spatial_dims, int64_t features,
                                   const InstanceNormOptions& options)
    : NormBase(type_name, features, options.affine, options.track_running_stats),
      options(options),
      spatial_dims_(spatial_dims) {}

Tensor InstanceNormImpl::forward(const Tensor& input) {
  const int64_t batched = spatial_dims_ + 2;
  OX_CHECK(input.dim() == batched || input.dim() == batched - 1, Shape, type_name(), "expected a ",
           batched - 1, "-d (unbatched) or ", batched, "-d input, got ", input.shape());
  if (input.dim() == batched - 1) return forward(input.unsqueeze(0)).squeeze(0);
  // Without weights or statistics the channel count is free, as PyTorch (which only warns).
  OX_CHECK(input.size(1) == num_features || (!options.affine && !options.track_running_stats),
           Shape, type_name(), "expected ", num_features, " channels, got input ", input.shape());
  if (weight.defined()) check_input_dtype(type_name().c_str(), input, weight);
  const bool use_input_stats = is_training() || !options.track_running_stats;
  Tensor out = functional::instance_norm(input, running_mean, running_var, weight, bias,
                                         use_input_stats, options.momentum, options.eps);
  if (use_input_stats && options.track_running_stats) {
    NoGradGuard no_grad;
    num_batches_tracked.add_(1);
  }
  return out;
}

void InstanceNormImpl::pretty_print(std::ostream& os) const {
  os << type_name() << "(" << num_features << ", eps=" << options.eps
     << ", momentum=" << options.momentum << ", affine=" << (options.affine ? "True" : "False")
     << ", track_running_stats=" << (options.track_running_stats ? "True" : "False") << ")";
}

}  // namespace ox::nn
