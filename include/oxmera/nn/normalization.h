#pragma once
// LayerNorm, RMSNorm, GroupNorm, BatchNorm1d, BatchNorm2d, InstanceNorm1d/2d/3d. Affine
// weights start at 1, biases at 0, as PyTorch.

#include <optional>

#include "oxmera/nn/module.h"

namespace ox::nn {

struct LayerNormOptions {
  OX_NAMED_FIELDS_ONLY;
  double eps = 1e-5;
  bool elementwise_affine = true;
  bool bias = true;
};
class LayerNormImpl : public Module {
 public:
  using Options = LayerNormOptions;
  explicit LayerNormImpl(Shape normalized_shape, const LayerNormOptions& options = {});
  Tensor forward(const Tensor& input) const;
  void reset_parameters();
  void pretty_print(std::ostream& os) const override;

  Shape normalized_shape;
  LayerNormOptions options;
  Tensor weight, bias;
};
OX_MODULE(LayerNorm);

struct RMSNormOptions {
  OX_NAMED_FIELDS_ONLY;
  std::optional<double> eps = std::nullopt;  // the dtype's machine epsilon, as PyTorch
  bool elementwise_affine = true;
};
class RMSNormImpl : public Module {
 public:
  using Options = RMSNormOptions;
  explicit RMSNormImpl(Shape normalized_shape, const RMSNormOptions& options = {});
  Tensor forward(const Tensor& input) const;
  void reset_parameters();
  void pretty_print(std::ostream& os) const override;

  Shape normalized_shape;
  RMSNormOptions options;
  Tensor weight;
};
OX_MODULE(RMSNorm);

struct GroupNormOptions {
  OX_NAMED_FIELDS_ONLY;
  double eps = 1e-5;
  bool affine = true;
};
class GroupNormImpl : public Module {
 public:
  using Options = GroupNormOptions;
  GroupNormImpl(int64_t num_groups, int64_t num_channels, const GroupNormOptions& options = {});
  Tensor forward(const Tensor& input) const;
  void reset_parameters();
  void pretty_print(std::ostream& os) const override;

  int64_t num_groups, num_channels;
  GroupNormOptions options;
  Tensor weight, bias;
};
OX_MODULE(GroupNorm);

struct BatchNormOptions {
  OX_NAMED_FIELDS_ONLY;
  double eps = 1e-5;
  // The running statistics' update weight; nullopt: a cumulative average over the batches seen.
  std::optional<double> momentum = 0.1;
  bool affine = true;
  bool track_running_stats = true;
};
// What BatchNorm and InstanceNorm keep alike (PyTorch's _NormBase): weight and bias [C] when
// affine; when tracking, buffers running_mean (0), running_var (1) and num_batches_tracked (i64).
class NormBase : public Module {
 public:
  void reset_running_stats();
  void reset_parameters();

  int64_t num_features;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 protected:
  NormBase(const char* type_name, int64_t num_features, bool affine, bool track_running_stats);
};

// In eval mode the running statistics normalize; without them the batch statistics always do.
class BatchNormImpl : public NormBase {
 public:
  using Options = BatchNormOptions;
  BatchNormImpl(const char* type_name, int64_t input_dims_low, int64_t input_dims_high,
                int64_t num_features, const BatchNormOptions& options);
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;

  BatchNormOptions options;

 private:
  int64_t input_dims_low_, input_dims_high_;
};
// Input [N, C] or [N, C, L].
class BatchNorm1dImpl : public BatchNormImpl {
 public:
  using Options = BatchNormOptions;
  explicit BatchNorm1dImpl(int64_t num_features, const BatchNormOptions& options = {})
      : BatchNormImpl("BatchNorm1d", 2, 3, num_features, options) {}
};
OX_MODULE(BatchNorm1d);
// Input [N, C, H, W].
class BatchNorm2dImpl : public BatchNormImpl {
 public:
  using Options = BatchNormOptions;
  explicit BatchNorm2dImpl(int64_t num_features, const BatchNormOptions& options = {})
      : BatchNormImpl("BatchNorm2d", 4, 4, num_features, options) {}
};
OX_MODULE(BatchNorm2d);

struct InstanceNormOptions {
  OX_NAMED_FIELDS_ONLY;
  double eps = 1e-5;
  double momentum = 0.1;
  bool affine = false;
  bool track_running_stats = false;
};
// Each channel of each sample normalized over its spatial dims (functional::instance_norm).
// With track_running_stats, eval mode normalizes by the running statistics. Input [N, C, *] with
// `spatial_dims` spatial dims, or [C, *] unbatched.
class InstanceNormImpl : public NormBase {
 public:
  using Options = InstanceNormOptions;
  InstanceNormImpl(const char* type_name, int64_t spatial_dims, int64_t num_features,
                   const InstanceNormOptions& options);
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;

  InstanceNormOptions options;

 private:
  int64_t spatial_dims_;
};
#define OX_INSTANCE_NORM(Name, dims)                                                   \
  class Name##Impl : public InstanceNormImpl {                                         \
   public:                                                                             \
    explicit Name##Impl(int64_t num_features, const InstanceNormOptions& options = {}) \
        : InstanceNormImpl(#Name, dims, num_features, options) {}                      \
  };                                                                                   \
  OX_MODULE(Name)
OX_INSTANCE_NORM(InstanceNorm1d, 1);
OX_INSTANCE_NORM(InstanceNorm2d, 2);
OX_INSTANCE_NORM(InstanceNorm3d, 3);
#undef OX_INSTANCE_NORM

}  // namespace ox::nn
