#pragma once
// Part of oxmera/compat/torch.h (docs/COMPAT.md): torch::nn::functional (namespace F in
// LibTorch programs) with LibTorch's FuncOptions classes, and torch::nn::init.

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "oxmera/compat/torch/nn_options.h"

namespace torch::nn {

namespace functional {

// ---- Options only the functions take ------------------------------------------------------------
struct DropoutFuncOptions {
  TORCH_ARG(double, p) = 0.5;
  TORCH_ARG(bool, training) = true;
  TORCH_ARG(bool, inplace) = false;  // accepted; computed out of place
};
using Dropout2dFuncOptions = DropoutFuncOptions;

struct SoftmaxFuncOptions {
  SoftmaxFuncOptions(int64_t dim) : dim_(dim) {}  // NOLINT: `F::softmax(x, 1)`
  TORCH_ARG(int64_t, dim);
  TORCH_ARG(std::optional<torch::Dtype>, dtype) = std::nullopt;
};
using LogSoftmaxFuncOptions = SoftmaxFuncOptions;

template <size_t D>
struct ConvFuncOptions {
  TORCH_ARG(torch::Tensor, bias) = Tensor();
  TORCH_ARG(ExpandingArray<D>, stride) = 1;
  TORCH_ARG(ConvPadding<D>, padding) = 0;
  TORCH_ARG(ExpandingArray<D>, dilation) = 1;
  TORCH_ARG(int64_t, groups) = 1;
};
using Conv1dFuncOptions = ConvFuncOptions<1>;
using Conv2dFuncOptions = ConvFuncOptions<2>;

template <size_t D>
struct ConvTransposeFuncOptions {
  TORCH_ARG(torch::Tensor, bias) = Tensor();
  TORCH_ARG(ExpandingArray<D>, stride) = 1;
  TORCH_ARG(ExpandingArray<D>, padding) = 0;
  TORCH_ARG(ExpandingArray<D>, output_padding) = 0;
  TORCH_ARG(int64_t, groups) = 1;
  TORCH_ARG(ExpandingArray<D>, dilation) = 1;
};
using ConvTranspose2dFuncOptions = ConvTransposeFuncOptions<2>;

struct EmbeddingFuncOptions {
  TORCH_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  TORCH_ARG(std::optional<double>, max_norm) = std::nullopt;
  TORCH_ARG(double, norm_type) = 2.;
  TORCH_ARG(bool, scale_grad_by_freq) = false;  // must stay false
  TORCH_ARG(bool, sparse) = false;              // must stay false
};

struct BatchNormFuncOptions {
  TORCH_ARG(Tensor, weight) = Tensor();
  TORCH_ARG(Tensor, bias) = Tensor();
  TORCH_ARG(bool, training) = false;
  TORCH_ARG(std::optional<double>, momentum) = 0.1;
  TORCH_ARG(double, eps) = 1e-5;
};
struct LayerNormFuncOptions {
  LayerNormFuncOptions(std::vector<int64_t> normalized_shape)  // NOLINT
      : normalized_shape_(std::move(normalized_shape)) {}
  TORCH_ARG(std::vector<int64_t>, normalized_shape);
  TORCH_ARG(Tensor, weight) = {};
  TORCH_ARG(Tensor, bias) = {};
  TORCH_ARG(double, eps) = 1e-5;
};
struct GroupNormFuncOptions {
  GroupNormFuncOptions(int64_t num_groups) : num_groups_(num_groups) {}  // NOLINT
  TORCH_ARG(int64_t, num_groups);
  TORCH_ARG(Tensor, weight) = {};
  TORCH_ARG(Tensor, bias) = {};
  TORCH_ARG(double, eps) = 1e-5;
};

struct PadFuncOptions {
  using mode_t = std::variant<enumtype::kConstant, enumtype::kReflect, enumtype::kReplicate,
                              enumtype::kCircular>;
  PadFuncOptions(std::vector<int64_t> pad) : pad_(std::move(pad)) {}  // NOLINT
  TORCH_ARG(std::vector<int64_t>, pad);
  TORCH_ARG(mode_t, mode) = torch::kConstant;
  TORCH_ARG(double, value) = 0;
};

struct InterpolateFuncOptions {
  using mode_t = std::variant<enumtype::kNearest, enumtype::kLinear, enumtype::kBilinear,
                              enumtype::kBicubic, enumtype::kTrilinear, enumtype::kNearestExact>;
  TORCH_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  TORCH_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  TORCH_ARG(mode_t, mode) = torch::kNearest;
  TORCH_ARG(std::optional<bool>, align_corners) = std::nullopt;
  TORCH_ARG(std::optional<bool>, recompute_scale_factor) = std::nullopt;
  TORCH_ARG(bool, antialias) = false;
};
struct InstanceNormFuncOptions {
  TORCH_ARG(Tensor, running_mean) = {};
  TORCH_ARG(Tensor, running_var) = {};
  TORCH_ARG(Tensor, weight) = {};
  TORCH_ARG(Tensor, bias) = {};
  TORCH_ARG(bool, use_input_stats) = true;
  TORCH_ARG(double, momentum) = 0.1;
  TORCH_ARG(double, eps) = 1e-5;
};
using PixelShuffleFuncOptions = PixelShuffleOptions;
using PixelUnshuffleFuncOptions = PixelUnshuffleOptions;

struct NormalizeFuncOptions {
  TORCH_ARG(double, p) = 2.0;
  TORCH_ARG(int64_t, dim) = 1;
  TORCH_ARG(double, eps) = 1e-12;
};

using ReLUFuncOptions = ReLUOptions;
using LeakyReLUFuncOptions = LeakyReLUOptions;
using ELUFuncOptions = ELUOptions;
using GELUFuncOptions = GELUOptions;
using SoftplusFuncOptions = SoftplusOptions;
using MaxPool2dFuncOptions = MaxPool2dOptions;
using AvgPool2dFuncOptions = AvgPool2dOptions;
using AdaptiveAvgPool2dFuncOptions = AdaptiveAvgPool2dOptions;
using FlattenFuncOptions = FlattenOptions;
using MSELossFuncOptions = MSELossOptions;
using L1LossFuncOptions = L1LossOptions;
using SmoothL1LossFuncOptions = SmoothL1LossOptions;
using KLDivFuncOptions = KLDivLossOptions;
using BinaryCrossEntropyFuncOptions = BCELossOptions;
using BinaryCrossEntropyWithLogitsFuncOptions = BCEWithLogitsLossOptions;
using NLLLossFuncOptions = NLLLossOptions;
using CrossEntropyFuncOptions = CrossEntropyLossOptions;

// ---- Activations, softmax, dropout --------------------------------------------------------------
inline Tensor relu(const Tensor& x, const ReLUFuncOptions& = {}) { return ox::relu(x); }
inline Tensor leaky_relu(const Tensor& x, const LeakyReLUFuncOptions& o = {}) {
  return ox::leaky_relu(x, o.negative_slope());
}
inline Tensor elu(const Tensor& x, const ELUFuncOptions& o = {}) { return ox::elu(x, o.alpha()); }
inline Tensor gelu(const Tensor& x, const GELUFuncOptions& o = {}) {
  return ox::gelu(x, o.approximate());
}
inline Tensor softplus(const Tensor& x, const SoftplusFuncOptions& o = {}) {
  return ox::softplus(x, o.beta(), o.threshold());
}
using ox::logsigmoid;
using ox::mish;
using ox::silu;
inline Tensor softmax(const Tensor& x, const SoftmaxFuncOptions& o) {
  return ox::softmax(x, o.dim(), o.dtype());
}
inline Tensor log_softmax(const Tensor& x, const LogSoftmaxFuncOptions& o) {
  return ox::log_softmax(x, o.dim(), o.dtype());
}
inline Tensor dropout(const Tensor& x, const DropoutFuncOptions& o = {}) {
  return ox::dropout(x, o.p(), o.training());
}
inline Tensor dropout2d(const Tensor& x, const Dropout2dFuncOptions& o = {}) {
  return ox::nn::functional::dropout2d(x, o.p(), o.training());
}

// ---- Layers as functions ------------------------------------------------------------------------
inline Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {}) {
  return ox::nn::functional::linear(x, weight, bias);
}
inline Tensor conv1d(const Tensor& x, const Tensor& weight, const Conv1dFuncOptions& o = {}) {
  const ExpandingArray<1>* a = o.padding().amounts();
  return ox::conv1d(
      x, weight, o.bias(),
      {.stride = o.stride()[0],
       .padding = a ? ox::Conv1dPadding((*a)[0]) : ox::Conv1dPadding(o.padding().mode()),
       .dilation = o.dilation()[0],
       .groups = o.groups()});
}
inline Tensor conv2d(const Tensor& x, const Tensor& weight, const Conv2dFuncOptions& o = {}) {
  const ExpandingArray<2>* a = o.padding().amounts();
  return ox::conv2d(
      x, weight, o.bias(),
      {.stride = detail::pair(o.stride()),
       .padding = a ? ox::Conv2dPadding((*a)[0], (*a)[1]) : ox::Conv2dPadding(o.padding().mode()),
       .dilation = detail::pair(o.dilation()),
       .groups = o.groups()});
}
inline Tensor conv_transpose2d(const Tensor& x, const Tensor& weight,
                               const ConvTranspose2dFuncOptions& o = {}) {
  return ox::conv_transpose2d(x, weight, o.bias(),
                              {.stride = detail::pair(o.stride()),
                               .padding = detail::pair(o.padding()),
                               .output_padding = detail::pair(o.output_padding()),
                               .groups = o.groups(),
                               .dilation = detail::pair(o.dilation())});
}
inline Tensor max_pool2d(const Tensor& x, const MaxPool2dFuncOptions& o) {
  return ox::max_pool2d(x, detail::pair(o.kernel_size()),
                        {.stride = ox::OptionalIntPair(o.stride()[0], o.stride()[1]),
                         .padding = detail::pair(o.padding()),
                         .dilation = detail::pair(o.dilation()),
                         .ceil_mode = o.ceil_mode()});
}
inline Tensor avg_pool2d(const Tensor& x, const AvgPool2dFuncOptions& o) {
  return ox::avg_pool2d(x, detail::pair(o.kernel_size()),
                        {.stride = ox::OptionalIntPair(o.stride()[0], o.stride()[1]),
                         .padding = detail::pair(o.padding()),
                         .ceil_mode = o.ceil_mode(),
                         .count_include_pad = o.count_include_pad(),
                         .divisor_override = o.divisor_override()});
}
inline Tensor adaptive_avg_pool2d(const Tensor& x, const AdaptiveAvgPool2dFuncOptions& o) {
  return ox::adaptive_avg_pool2d(x, detail::pair(o.output_size()));
}
inline Tensor embedding(const Tensor& input, const Tensor& weight,
                        const EmbeddingFuncOptions& o = {}) {
  OX_CHECK(!o.scale_grad_by_freq() && !o.sparse(), Value, "torch::nn::functional::embedding",
           "scale_grad_by_freq and sparse are not supported by oxmera");
  return ox::nn::functional::embedding(
      input, weight,
      {.padding_idx = o.padding_idx(), .max_norm = o.max_norm(), .norm_type = o.norm_type()});
}
inline Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                         const BatchNormFuncOptions& o = {}) {
  OX_CHECK(o.momentum().has_value(), Value, "torch::nn::functional::batch_norm",
           "momentum must be set (a cumulative average needs the module)");
  return ox::nn::functional::batch_norm(input, running_mean, running_var, o.weight(), o.bias(),
                                        o.training(), *o.momentum(), o.eps());
}
inline Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& o) {
  return ox::layer_norm(input, o.normalized_shape(), o.weight(), o.bias(), o.eps());
}
inline Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& o) {
  return ox::nn::functional::group_norm(input, o.num_groups(), o.weight(), o.bias(), o.eps());
}
inline Tensor flatten(const Tensor& x, const FlattenFuncOptions& o = {}) {
  return x.flatten(o.start_dim(), o.end_dim());
}

// pad: LibTorch's amounts (last dim first), modes kConstant, kReflect, kReplicate, kCircular.
inline Tensor interpolate(const Tensor& x, const InterpolateFuncOptions& o = {}) {
  return ox::nn::functional::interpolate(
      x, {.size = o.size().value_or(std::vector<int64_t>{}),
          .scale_factor = o.scale_factor().value_or(std::vector<double>{}),
          .mode = std::string(detail::tag_name(o.mode())),
          .align_corners = o.align_corners(),
          .recompute_scale_factor = o.recompute_scale_factor(),
          .antialias = o.antialias()});
}
inline Tensor instance_norm(const Tensor& x, const InstanceNormFuncOptions& o = {}) {
  return ox::nn::functional::instance_norm(x, o.running_mean(), o.running_var(), o.weight(),
                                           o.bias(), o.use_input_stats(), o.momentum(), o.eps());
}
inline Tensor pixel_shuffle(const Tensor& x, const PixelShuffleFuncOptions& o) {
  return ox::nn::functional::pixel_shuffle(x, o.upscale_factor());
}
inline Tensor pixel_unshuffle(const Tensor& x, const PixelUnshuffleFuncOptions& o) {
  return ox::nn::functional::pixel_unshuffle(x, o.downscale_factor());
}

inline Tensor pad(const Tensor& x, const PadFuncOptions& o) {
  const std::string_view mode = detail::tag_name(o.mode());
  if (mode != "circular") return ox::pad(x, o.pad(), mode, o.value());
  OX_CHECK(o.pad().size() % 2 == 0 && static_cast<int64_t>(o.pad().size()) <= 2 * x.dim(), Value,
           "torch::nn::functional::pad", "circular padding needs (before, after) pairs");
  Tensor out = x;
  for (size_t i = 0; i < o.pad().size() / 2; ++i) {
    const int64_t dim = x.dim() - 1 - static_cast<int64_t>(i);
    const int64_t before = o.pad()[2 * i], after = o.pad()[2 * i + 1], n = out.size(dim);
    OX_CHECK(before >= 0 && after >= 0 && before <= n && after <= n, Value,
             "torch::nn::functional::pad", "circular padding (", before, ", ", after,
             ") must lie in [0, ", n, "]");
    out = ox::cat({out.narrow(dim, n - before, before), out, out.narrow(dim, 0, after)}, dim);
  }
  return out;
}

// normalize: x / max(||x||_p over dim, eps).
inline Tensor normalize(const Tensor& x, const NormalizeFuncOptions& o = {}) {
  return x / ox::norm(x, o.p(), {o.dim()}, /*keepdim=*/true).clamp_min(o.eps()).expand_as(x);
}

// ---- Losses -------------------------------------------------------------------------------------
inline Tensor mse_loss(const Tensor& input, const Tensor& target,
                       const MSELossFuncOptions& o = {}) {
  return ox::nn::functional::mse_loss(input, target,
                                      {.reduction = detail::reduction(o.reduction())});
}
inline Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& o = {}) {
  return ox::nn::functional::l1_loss(input, target,
                                     {.reduction = detail::reduction(o.reduction())});
}
inline Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                             const SmoothL1LossFuncOptions& o = {}) {
  return ox::nn::functional::smooth_l1_loss(
      input, target, {.reduction = detail::reduction(o.reduction()), .beta = o.beta()});
}
inline Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& o = {}) {
  return ox::nn::functional::kl_div(
      input, target, {.reduction = detail::reduction(o.reduction()), .log_target = o.log_target()});
}
inline Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                                   const BinaryCrossEntropyFuncOptions& o = {}) {
  return ox::nn::functional::binary_cross_entropy(
      input, target, {.weight = o.weight(), .reduction = detail::reduction(o.reduction())});
}
inline Tensor binary_cross_entropy_with_logits(
    const Tensor& input, const Tensor& target,
    const BinaryCrossEntropyWithLogitsFuncOptions& o = {}) {
  return ox::nn::functional::binary_cross_entropy_with_logits(
      input, target,
      {.weight = o.weight(),
       .reduction = detail::reduction(o.reduction()),
       .pos_weight = o.pos_weight()});
}
inline Tensor nll_loss(const Tensor& input, const Tensor& target,
                       const NLLLossFuncOptions& o = {}) {
  return ox::nn::functional::nll_loss(input, target,
                                      {.weight = o.weight(),
                                       .ignore_index = o.ignore_index(),
                                       .reduction = detail::reduction(o.reduction())});
}
inline Tensor cross_entropy(const Tensor& input, const Tensor& target,
                            const CrossEntropyFuncOptions& o = {}) {
  return ox::nn::functional::cross_entropy(input, target,
                                           {.weight = o.weight(),
                                            .ignore_index = o.ignore_index(),
                                            .reduction = detail::reduction(o.reduction()),
                                            .label_smoothing = o.label_smoothing()});
}

}  // namespace functional

// ---- torch::nn::init ----------------------------------------------------------------------------
namespace init {
using NonlinearityType = std::variant<enumtype::kLinear, enumtype::kSigmoid, enumtype::kTanh,
                                      enumtype::kReLU, enumtype::kLeakyReLU>;
using FanModeType = std::variant<enumtype::kFanIn, enumtype::kFanOut>;

inline Tensor uniform_(Tensor tensor, double low = 0, double high = 1) {
  return ox::nn::init::uniform_(tensor, low, high);
}
inline Tensor normal_(Tensor tensor, double mean = 0, double std = 1) {
  return ox::nn::init::normal_(tensor, mean, std);
}
inline Tensor constant_(Tensor tensor, Scalar value) {
  return ox::nn::init::constant_(tensor, value.to_double());
}
inline Tensor zeros_(Tensor tensor) { return ox::nn::init::zeros_(tensor); }
inline Tensor ones_(Tensor tensor) { return ox::nn::init::ones_(tensor); }
inline Tensor eye_(Tensor matrix) { return ox::nn::init::eye_(matrix); }
inline Tensor orthogonal_(Tensor tensor, double gain = 1.0) {
  return ox::nn::init::orthogonal_(tensor, gain);
}
inline Tensor xavier_uniform_(Tensor tensor, double gain = 1.0) {
  return ox::nn::init::xavier_uniform_(tensor, gain);
}
inline Tensor xavier_normal_(Tensor tensor, double gain = 1.0) {
  return ox::nn::init::xavier_normal_(tensor, gain);
}
inline Tensor kaiming_uniform_(Tensor tensor, double a = 0, FanModeType mode = torch::kFanIn,
                               NonlinearityType nonlinearity = torch::kLeakyReLU) {
  return ox::nn::init::kaiming_uniform_(tensor, a, detail::tag_name(mode),
                                        detail::tag_name(nonlinearity));
}
inline Tensor kaiming_normal_(Tensor tensor, double a = 0, FanModeType mode = torch::kFanIn,
                              NonlinearityType nonlinearity = torch::kLeakyReLU) {
  return ox::nn::init::kaiming_normal_(tensor, a, detail::tag_name(mode),
                                       detail::tag_name(nonlinearity));
}
inline double calculate_gain(NonlinearityType nonlinearity, double param = 0.01) {
  return ox::nn::init::calculate_gain(detail::tag_name(nonlinearity), param);
}
inline std::tuple<int64_t, int64_t> _calculate_fan_in_and_fan_out(const Tensor& tensor) {
  const ox::nn::init::Fans fans = ox::nn::init::calculate_fans(tensor);
  return {fans.fan_in, fans.fan_out};
}
}  // namespace init

}  // namespace torch::nn
