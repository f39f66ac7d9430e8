#pragma once
// Part of oxmera/compat/torch.h (docs/COMPAT.md): LibTorch's options classes for torch::nn,
// with LibTorch's positional constructors and chainable setter/getter pairs
// (`Conv2dOptions(1, 10, 5).stride(2).padding(1)`; `opts.stride()` reads it), the TORCH_ARG
// macro that declares them, ExpandingArray, and the enum tags (torch::kSame, torch::kTanh, ...).

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "oxmera/compat/torch/core.h"

// TORCH_ARG(T, name): a private `name_` field, a getter `name()` and a chainable setter
// `name(value)`, as LibTorch's. The field's default goes after the macro: `TORCH_ARG(int, k) = 1;`.
#ifndef TORCH_ARG
#define TORCH_ARG(T, name)                                       \
 public:                                                         \
  auto name(const T& new_##name)->decltype(*this) { /* NOLINT */ \
    this->name##_ = new_##name;                                  \
    return *this;                                                \
  }                                                              \
  auto name(T&& new_##name)->decltype(*this) { /* NOLINT */      \
    this->name##_ = std::move(new_##name);                       \
    return *this;                                                \
  }                                                              \
  const T& name() const noexcept { return this->name##_; }       \
  T& name() noexcept { return this->name##_; }                   \
                                                                 \
 private:                                                        \
  T name##_ /* NOLINT */
#endif

namespace torch {

// The tags LibTorch spells as torch::kSame, torch::kTanh, ... (core.h has kNone, kMean, kSum and
// kBatchMean).
namespace enumtype {
#define OX_COMPAT_ENUM(Name, text)                            \
  struct Name {                                               \
    static constexpr std::string_view name() { return text; } \
  }
OX_COMPAT_ENUM(kValid, "valid");
OX_COMPAT_ENUM(kSame, "same");
OX_COMPAT_ENUM(kZeros, "zeros");
OX_COMPAT_ENUM(kReflect, "reflect");
OX_COMPAT_ENUM(kReplicate, "replicate");
OX_COMPAT_ENUM(kCircular, "circular");
OX_COMPAT_ENUM(kConstant, "constant");
OX_COMPAT_ENUM(kTanh, "tanh");
OX_COMPAT_ENUM(kReLU, "relu");
OX_COMPAT_ENUM(kLinear, "linear");
OX_COMPAT_ENUM(kSigmoid, "sigmoid");
OX_COMPAT_ENUM(kLeakyReLU, "leaky_relu");
OX_COMPAT_ENUM(kFanIn, "fan_in");
OX_COMPAT_ENUM(kFanOut, "fan_out");
OX_COMPAT_ENUM(kNearest, "nearest");
OX_COMPAT_ENUM(kNearestExact, "nearest-exact");
OX_COMPAT_ENUM(kBilinear, "bilinear");
OX_COMPAT_ENUM(kBicubic, "bicubic");
OX_COMPAT_ENUM(kTrilinear, "trilinear");
#undef OX_COMPAT_ENUM
}  // namespace enumtype
inline constexpr enumtype::kValid kValid{};
inline constexpr enumtype::kSame kSame{};
inline constexpr enumtype::kZeros kZeros{};
inline constexpr enumtype::kReflect kReflect{};
inline constexpr enumtype::kReplicate kReplicate{};
inline constexpr enumtype::kCircular kCircular{};
inline constexpr enumtype::kConstant kConstant{};
inline constexpr enumtype::kTanh kTanh{};
inline constexpr enumtype::kReLU kReLU{};
inline constexpr enumtype::kLinear kLinear{};
inline constexpr enumtype::kSigmoid kSigmoid{};
inline constexpr enumtype::kLeakyReLU kLeakyReLU{};
inline constexpr enumtype::kFanIn kFanIn{};
inline constexpr enumtype::kFanOut kFanOut{};
inline constexpr enumtype::kNearest kNearest{};
inline constexpr enumtype::kNearestExact kNearestExact{};
inline constexpr enumtype::kBilinear kBilinear{};
inline constexpr enumtype::kBicubic kBicubic{};
inline constexpr enumtype::kTrilinear kTrilinear{};

// LibTorch's ExpandingArray<D>: D integers given as one (repeated), a braced list or a vector.
template <size_t D, class T = int64_t>
class ExpandingArray {
 public:
  ExpandingArray(T value) { values_.fill(value); }  // NOLINT: `.stride(2)`
  ExpandingArray(std::initializer_list<T> list) {   // NOLINT: `.stride({2, 1})`
    OX_CHECK(list.size() == D || list.size() == 1, Value, "torch::ExpandingArray", "expected ", D,
             " values (or one), got ", list.size());
    if (list.size() == 1)
      values_.fill(*list.begin());
    else
      std::copy(list.begin(), list.end(), values_.begin());
  }
  ExpandingArray(const std::vector<T>& values) {  // NOLINT
    OX_CHECK(values.size() == D || values.size() == 1, Value, "torch::ExpandingArray", "expected ",
             D, " values (or one), got ", values.size());
    if (values.size() == 1)
      values_.fill(values[0]);
    else
      std::copy(values.begin(), values.end(), values_.begin());
  }
  ExpandingArray(const std::array<T, D>& values) : values_(values) {}  // NOLINT

  T& operator[](size_t i) { return values_[i]; }
  const T& operator[](size_t i) const { return values_[i]; }
  size_t size() const { return D; }
  std::array<T, D>* operator->() { return &values_; }
  const std::array<T, D>* operator->() const { return &values_; }
  std::array<T, D>& operator*() { return values_; }
  const std::array<T, D>& operator*() const { return values_; }
  operator std::vector<T>() const { return {values_.begin(), values_.end()}; }  // NOLINT
  bool operator==(const ExpandingArray&) const = default;

 private:
  std::array<T, D> values_{};
};

namespace nn {

namespace detail {
inline ox::IntPair pair(const ExpandingArray<2>& a) { return {a[0], a[1]}; }
template <class... Tags>
std::string_view tag_name(const std::variant<Tags...>& tag) {
  return std::visit([](const auto& t) -> std::string_view { return t.name(); }, tag);
}
}  // namespace detail

// A convolution's padding: numbers (`.padding(1)`, `.padding({1, 2})`) or torch::kSame /
// torch::kValid, as LibTorch's padding_t.
template <size_t D>
class ConvPadding {
 public:
  ConvPadding(int64_t value) : value_(ExpandingArray<D>(value)) {}                       // NOLINT
  ConvPadding(std::initializer_list<int64_t> list) : value_(ExpandingArray<D>(list)) {}  // NOLINT
  ConvPadding(const ExpandingArray<D>& value) : value_(value) {}                         // NOLINT
  ConvPadding(enumtype::kSame tag) : value_(tag) {}                                      // NOLINT
  ConvPadding(enumtype::kValid tag) : value_(tag) {}                                     // NOLINT
  const std::variant<ExpandingArray<D>, enumtype::kValid, enumtype::kSame>& value() const {
    return value_;
  }
  // The explicit amounts, or nullptr for kSame / kValid.
  const ExpandingArray<D>* amounts() const { return std::get_if<ExpandingArray<D>>(&value_); }
  std::string_view mode() const {
    return std::holds_alternative<enumtype::kSame>(value_) ? "same" : "valid";
  }

 private:
  std::variant<ExpandingArray<D>, enumtype::kValid, enumtype::kSame> value_;
};

using padding_mode_t =
    std::variant<enumtype::kZeros, enumtype::kReflect, enumtype::kReplicate, enumtype::kCircular>;
using reduction_t = std::variant<enumtype::kNone, enumtype::kMean, enumtype::kSum>;
using kldiv_reduction_t =
    std::variant<enumtype::kNone, enumtype::kBatchMean, enumtype::kSum, enumtype::kMean>;
using nonlinearity_t = std::variant<enumtype::kTanh, enumtype::kReLU>;

namespace detail {
inline std::string_view reduction(const reduction_t& r) {
  return std::holds_alternative<enumtype::kNone>(r)  ? "none"
         : std::holds_alternative<enumtype::kSum>(r) ? "sum"
                                                     : "mean";
}
inline std::string_view reduction(const kldiv_reduction_t& r) {
  return std::holds_alternative<enumtype::kNone>(r)        ? "none"
         : std::holds_alternative<enumtype::kSum>(r)       ? "sum"
         : std::holds_alternative<enumtype::kBatchMean>(r) ? "batchmean"
                                                           : "mean";
}
}  // namespace detail

// ---- Layers -------------------------------------------------------------------------------------
struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  TORCH_ARG(int64_t, in_features);
  TORCH_ARG(int64_t, out_features);
  TORCH_ARG(bool, bias) = true;
};

// The fields every convolution's options begin with: (in, out, kernel) positionally, then stride.
#define OX_COMPAT_CONV_HEAD(Name)                                                            \
  Name(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)             \
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {} \
  TORCH_ARG(int64_t, in_channels);                                                           \
  TORCH_ARG(int64_t, out_channels);                                                          \
  TORCH_ARG(ExpandingArray<D>, kernel_size);                                                 \
  TORCH_ARG(ExpandingArray<D>, stride) = 1

template <size_t D>
struct ConvOptions {
  OX_COMPAT_CONV_HEAD(ConvOptions);
  TORCH_ARG(ConvPadding<D>, padding) = 0;
  TORCH_ARG(ExpandingArray<D>, dilation) = 1;
  TORCH_ARG(int64_t, groups) = 1;
  TORCH_ARG(bool, bias) = true;
  TORCH_ARG(padding_mode_t, padding_mode) = torch::kZeros;
};
using Conv1dOptions = ConvOptions<1>;
using Conv2dOptions = ConvOptions<2>;

template <size_t D>
struct ConvTransposeOptions {
  OX_COMPAT_CONV_HEAD(ConvTransposeOptions);
  TORCH_ARG(ExpandingArray<D>, padding) = 0;
  TORCH_ARG(ExpandingArray<D>, output_padding) = 0;
  TORCH_ARG(int64_t, groups) = 1;
  TORCH_ARG(bool, bias) = true;
  TORCH_ARG(ExpandingArray<D>, dilation) = 1;
  TORCH_ARG(padding_mode_t, padding_mode) = torch::kZeros;  // only kZeros, as LibTorch
};
using ConvTranspose2dOptions = ConvTransposeOptions<2>;
#undef OX_COMPAT_CONV_HEAD

struct BatchNormOptions {
  BatchNormOptions(int64_t num_features) : num_features_(num_features) {}  // NOLINT
  TORCH_ARG(int64_t, num_features);
  TORCH_ARG(double, eps) = 1e-5;
  TORCH_ARG(std::optional<double>, momentum) = 0.1;
  TORCH_ARG(bool, affine) = true;
  TORCH_ARG(bool, track_running_stats) = true;
};
using BatchNorm1dOptions = BatchNormOptions;
using BatchNorm2dOptions = BatchNormOptions;

struct LayerNormOptions {
  LayerNormOptions(std::vector<int64_t> normalized_shape)  // NOLINT
      : normalized_shape_(std::move(normalized_shape)) {}
  TORCH_ARG(std::vector<int64_t>, normalized_shape);
  TORCH_ARG(double, eps) = 1e-5;
  TORCH_ARG(bool, elementwise_affine) = true;
};

struct GroupNormOptions {
  GroupNormOptions(int64_t num_groups, int64_t num_channels)
      : num_groups_(num_groups), num_channels_(num_channels) {}
  TORCH_ARG(int64_t, num_groups);
  TORCH_ARG(int64_t, num_channels);
  TORCH_ARG(double, eps) = 1e-5;
  TORCH_ARG(bool, affine) = true;
};
struct InstanceNormOptions {
  InstanceNormOptions(int64_t num_features) : num_features_(num_features) {}  // NOLINT
  TORCH_ARG(int64_t, num_features);
  TORCH_ARG(double, eps) = 1e-5;
  TORCH_ARG(double, momentum) = 0.1;
  TORCH_ARG(bool, affine) = false;
  TORCH_ARG(bool, track_running_stats) = false;
};
using InstanceNorm1dOptions = InstanceNormOptions;
using InstanceNorm2dOptions = InstanceNormOptions;
using InstanceNorm3dOptions = InstanceNormOptions;

struct DropoutOptions {
  DropoutOptions(double p = 0.5) : p_(p) {}  // NOLINT
  TORCH_ARG(double, p);
  TORCH_ARG(bool, inplace) = false;  // accepted; the result is the same, computed out of place
};
using Dropout2dOptions = DropoutOptions;

struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  TORCH_ARG(int64_t, num_embeddings);
  TORCH_ARG(int64_t, embedding_dim);
  TORCH_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  TORCH_ARG(std::optional<double>, max_norm) = std::nullopt;
  TORCH_ARG(double, norm_type) = 2.;
  TORCH_ARG(bool, scale_grad_by_freq) = false;  // must stay false: oxmera has no such scaling
  TORCH_ARG(bool, sparse) = false;              // must stay false: no sparse gradients
  TORCH_ARG(torch::Tensor, _weight) = Tensor();
};

template <size_t D>
struct MaxPoolOptions {
  MaxPoolOptions(ExpandingArray<D> kernel_size)  // NOLINT
      : kernel_size_(kernel_size), stride_(kernel_size) {}
  TORCH_ARG(ExpandingArray<D>, kernel_size);
  TORCH_ARG(ExpandingArray<D>, stride);
  TORCH_ARG(ExpandingArray<D>, padding) = 0;
  TORCH_ARG(ExpandingArray<D>, dilation) = 1;
  TORCH_ARG(bool, ceil_mode) = false;
};
using MaxPool2dOptions = MaxPoolOptions<2>;

template <size_t D>
struct AvgPoolOptions {
  AvgPoolOptions(ExpandingArray<D> kernel_size)  // NOLINT
      : kernel_size_(kernel_size), stride_(kernel_size) {}
  TORCH_ARG(ExpandingArray<D>, kernel_size);
  TORCH_ARG(ExpandingArray<D>, stride);
  TORCH_ARG(ExpandingArray<D>, padding) = 0;
  TORCH_ARG(bool, ceil_mode) = false;
  TORCH_ARG(bool, count_include_pad) = true;
  TORCH_ARG(std::optional<int64_t>, divisor_override) = std::nullopt;
};
using AvgPool2dOptions = AvgPoolOptions<2>;

template <class output_size_t>
struct AdaptiveAvgPoolOptions {
  AdaptiveAvgPoolOptions(output_size_t output_size) : output_size_(output_size) {}  // NOLINT
  TORCH_ARG(output_size_t, output_size);
};
using AdaptiveAvgPool2dOptions = AdaptiveAvgPoolOptions<ExpandingArray<2>>;

struct LeakyReLUOptions {
  TORCH_ARG(double, negative_slope) = 1e-2;
  TORCH_ARG(bool, inplace) = false;
};
struct ELUOptions {
  TORCH_ARG(double, alpha) = 1.0;
  TORCH_ARG(bool, inplace) = false;
};
struct GELUOptions {
  TORCH_ARG(std::string, approximate) = "none";
};
struct SoftplusOptions {
  TORCH_ARG(double, beta) = 1.0;
  TORCH_ARG(double, threshold) = 20.0;
};
struct ReLUOptions {
  ReLUOptions(bool inplace = false) : inplace_(inplace) {}  // NOLINT
  TORCH_ARG(bool, inplace);
};
struct SoftmaxOptions {
  SoftmaxOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  TORCH_ARG(int64_t, dim);
};
using LogSoftmaxOptions = SoftmaxOptions;
struct FlattenOptions {
  TORCH_ARG(int64_t, start_dim) = 1;
  TORCH_ARG(int64_t, end_dim) = -1;
};

// ---- Vision layers (oxmera's interpolate has no "area" mode: torch::kArea is not provided) -----
struct UpsampleOptions {
  using mode_t = std::variant<enumtype::kNearest, enumtype::kLinear, enumtype::kBilinear,
                              enumtype::kBicubic, enumtype::kTrilinear>;
  TORCH_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  TORCH_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  TORCH_ARG(mode_t, mode) = torch::kNearest;
  TORCH_ARG(std::optional<bool>, align_corners) = std::nullopt;
};
struct PixelShuffleOptions {
  PixelShuffleOptions(int64_t upscale_factor) : upscale_factor_(upscale_factor) {}  // NOLINT
  TORCH_ARG(int64_t, upscale_factor);
};
struct PixelUnshuffleOptions {
  PixelUnshuffleOptions(int64_t downscale_factor)  // NOLINT
      : downscale_factor_(downscale_factor) {}
  TORCH_ARG(int64_t, downscale_factor);
};

// ---- Recurrent layers ---------------------------------------------------------------------------
#define OX_COMPAT_RNN_COMMON(Name)                            \
  Name(int64_t input_size, int64_t hidden_size)               \
      : input_size_(input_size), hidden_size_(hidden_size) {} \
  TORCH_ARG(int64_t, input_size);                             \
  TORCH_ARG(int64_t, hidden_size);                            \
  TORCH_ARG(int64_t, num_layers) = 1;                         \
  TORCH_ARG(bool, bias) = true;                               \
  TORCH_ARG(bool, batch_first) = false;                       \
  TORCH_ARG(double, dropout) = 0.0;                           \
  TORCH_ARG(bool, bidirectional) = false

struct RNNOptions {
  OX_COMPAT_RNN_COMMON(RNNOptions);
  TORCH_ARG(nonlinearity_t, nonlinearity) = torch::kTanh;
};
struct LSTMOptions {
  OX_COMPAT_RNN_COMMON(LSTMOptions);
  TORCH_ARG(int64_t, proj_size) = 0;
};
struct GRUOptions {
  OX_COMPAT_RNN_COMMON(GRUOptions);
};
#undef OX_COMPAT_RNN_COMMON

#define OX_COMPAT_CELL_COMMON(Name)                           \
  Name(int64_t input_size, int64_t hidden_size)               \
      : input_size_(input_size), hidden_size_(hidden_size) {} \
  TORCH_ARG(int64_t, input_size);                             \
  TORCH_ARG(int64_t, hidden_size);                            \
  TORCH_ARG(bool, bias) = true

struct RNNCellOptions {
  OX_COMPAT_CELL_COMMON(RNNCellOptions);
  TORCH_ARG(nonlinearity_t, nonlinearity) = torch::kTanh;
};
struct LSTMCellOptions {
  OX_COMPAT_CELL_COMMON(LSTMCellOptions);
};
struct GRUCellOptions {
  OX_COMPAT_CELL_COMMON(GRUCellOptions);
};
#undef OX_COMPAT_CELL_COMMON

// ---- Losses: reduction takes torch::kNone / kMean / kSum (KLDiv also kBatchMean) ----------------
#define OX_COMPAT_REDUCTION_CTORS(Name)      \
  Name() = default;                          \
  Name(enumtype::kNone r) : reduction_(r) {} \
  Name(enumtype::kMean r) : reduction_(r) {} \
  Name(enumtype::kSum r) : reduction_(r) {}

struct MSELossOptions {
  OX_COMPAT_REDUCTION_CTORS(MSELossOptions)
  TORCH_ARG(reduction_t, reduction) = torch::kMean;
};
struct L1LossOptions {
  OX_COMPAT_REDUCTION_CTORS(L1LossOptions)
  TORCH_ARG(reduction_t, reduction) = torch::kMean;
};
struct SmoothL1LossOptions {
  OX_COMPAT_REDUCTION_CTORS(SmoothL1LossOptions)
  TORCH_ARG(reduction_t, reduction) = torch::kMean;
  TORCH_ARG(double, beta) = 1.0;
};
struct KLDivLossOptions {
  OX_COMPAT_REDUCTION_CTORS(KLDivLossOptions)
  KLDivLossOptions(enumtype::kBatchMean r) : reduction_(r) {}
  TORCH_ARG(kldiv_reduction_t, reduction) = torch::kMean;
  TORCH_ARG(bool, log_target) = false;
};
#undef OX_COMPAT_REDUCTION_CTORS
struct BCELossOptions {
  TORCH_ARG(Tensor, weight) = {};
  TORCH_ARG(reduction_t, reduction) = torch::kMean;
};
struct BCEWithLogitsLossOptions {
  TORCH_ARG(Tensor, weight) = {};
  TORCH_ARG(reduction_t, reduction) = torch::kMean;
  TORCH_ARG(Tensor, pos_weight) = {};
};
struct NLLLossOptions {
  TORCH_ARG(Tensor, weight) = {};
  TORCH_ARG(int64_t, ignore_index) = -100;
  TORCH_ARG(reduction_t, reduction) = torch::kMean;
};
struct CrossEntropyLossOptions {
  TORCH_ARG(Tensor, weight) = {};
  TORCH_ARG(int64_t, ignore_index) = -100;
  TORCH_ARG(reduction_t, reduction) = torch::kMean;
  TORCH_ARG(double, label_smoothing) = 0.0;
};

}  // namespace nn
}  // namespace torch
