#pragma once
// Part of oxmera/compat/torch.h (docs/COMPAT.md): torch::nn's layers. Each
// torch::nn::XImpl derives from oxmera's ox::nn::XImpl (the same parameters, forward and state
// dict) and adds LibTorch's constructors from the options class of nn_options.h and its
// `options` member; torch::nn::X is its holder (`torch::nn::Conv2d conv{nullptr}`,
// `Conv2d(Conv2dOptions(1, 10, 5).stride(2))`, `Linear(784, 64)`, `conv(x)`, `conv->weight`).

#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

#include "oxmera/compat/torch/nn_options.h"

namespace torch::nn {

using ox::nn::AnyModule;
using ox::nn::Module;
using ox::nn::ModuleDict;
using ox::nn::ModuleDictImpl;
using ox::nn::ModuleHolder;
using ox::nn::ModuleList;
using ox::nn::ModuleListImpl;
using ox::nn::Sequential;
using ox::nn::SequentialImpl;

// Layers whose LibTorch constructor takes nothing or what oxmera's takes.
using ox::nn::Identity;
using ox::nn::IdentityImpl;
using ox::nn::Mish;
using ox::nn::MishImpl;
using ox::nn::Sigmoid;
using ox::nn::SigmoidImpl;
using ox::nn::SiLU;
using ox::nn::SiLUImpl;
using ox::nn::Tanh;
using ox::nn::TanhImpl;

// ---- Linear, Flatten ----------------------------------------------------------------------------
class LinearImpl : public ox::nn::LinearImpl {
 public:
  using Options = LinearOptions;
  LinearImpl(int64_t in_features, int64_t out_features)
      : LinearImpl(LinearOptions(in_features, out_features)) {}
  explicit LinearImpl(const LinearOptions& options_)
      : ox::nn::LinearImpl(options_.in_features(), options_.out_features(),
                           {.bias = options_.bias()}),
        options(options_) {}
  LinearOptions options;
};
TORCH_MODULE(Linear);

class FlattenImpl : public ox::nn::FlattenImpl {
 public:
  using Options = FlattenOptions;
  explicit FlattenImpl(const FlattenOptions& options_ = {})
      : ox::nn::FlattenImpl({.start_dim = options_.start_dim(), .end_dim = options_.end_dim()}),
        options(options_) {}
  FlattenOptions options;
};
TORCH_MODULE(Flatten);

class UpsampleImpl : public ox::nn::UpsampleImpl {
 public:
  using Options = UpsampleOptions;
  explicit UpsampleImpl(const UpsampleOptions& options_ = {})
      : ox::nn::UpsampleImpl(
            {.size = options_.size().value_or(std::vector<int64_t>{}),
             .scale_factor = options_.scale_factor().value_or(std::vector<double>{}),
             .mode = std::string(detail::tag_name(options_.mode())),
             .align_corners = options_.align_corners()}),
        options(options_) {}
  UpsampleOptions options;
};
TORCH_MODULE(Upsample);

class PixelShuffleImpl : public ox::nn::PixelShuffleImpl {
 public:
  using Options = PixelShuffleOptions;
  explicit PixelShuffleImpl(const PixelShuffleOptions& options_)
      : ox::nn::PixelShuffleImpl(options_.upscale_factor()), options(options_) {}
  PixelShuffleOptions options;
};
TORCH_MODULE(PixelShuffle);

class PixelUnshuffleImpl : public ox::nn::PixelUnshuffleImpl {
 public:
  using Options = PixelUnshuffleOptions;
  explicit PixelUnshuffleImpl(const PixelUnshuffleOptions& options_)
      : ox::nn::PixelUnshuffleImpl(options_.downscale_factor()), options(options_) {}
  PixelUnshuffleOptions options;
};
TORCH_MODULE(PixelUnshuffle);

// ---- Convolutions -------------------------------------------------------------------------------
namespace detail {
// Pads the last D dims of x by `amounts` on both sides in a padding mode other than zeros
// (what LibTorch's padding_mode does before a convolution without padding).
template <size_t D>
Tensor pad_for_conv(const Tensor& x, const ExpandingArray<D>& amounts, std::string_view mode) {
  if (mode == "circular") {  // oxmera's pad has no circular mode: wrap by concatenation
    Tensor out = x;
    for (size_t i = 0; i < D; ++i) {
      const int64_t dim = x.dim() - static_cast<int64_t>(D) + static_cast<int64_t>(i);
      const int64_t p = amounts[i], n = out.size(dim);
      OX_CHECK(p <= n, Value, "torch::nn::Conv", "circular padding ", p, " exceeds the size ", n);
      if (p > 0) out = ox::cat({out.narrow(dim, n - p, p), out, out.narrow(dim, 0, p)}, dim);
    }
    return out;
  }
  ox::Dims pads;
  for (size_t i = D; i-- > 0;) {
    pads.push_back(amounts[i]);
    pads.push_back(amounts[i]);
  }
  return ox::pad(x, pads, mode);
}
template <size_t D>
bool zeros_mode(const ConvOptions<D>& o) {
  return std::holds_alternative<enumtype::kZeros>(o.padding_mode());
}
template <size_t D>
const ExpandingArray<D>& mode_padding(const ConvOptions<D>& o) {
  const ExpandingArray<D>* amounts = o.padding().amounts();
  OX_CHECK(amounts != nullptr, Value, "torch::nn::Conv",
           "padding_mode other than kZeros needs explicit padding amounts, not kSame/kValid");
  return *amounts;
}
inline ox::nn::Conv2dOptions ox_conv(const Conv2dOptions& o) {
  ox::Conv2dPadding padding = 0;  // other padding modes: padded in forward
  if (const ExpandingArray<2>* a = o.padding().amounts(); zeros_mode(o) && a != nullptr)
    padding = ox::Conv2dPadding((*a)[0], (*a)[1]);
  else if (zeros_mode(o))
    padding = o.padding().mode();
  return {.stride = pair(o.stride()),
          .padding = padding,
          .dilation = pair(o.dilation()),
          .groups = o.groups(),
          .bias = o.bias()};
}
inline ox::nn::Conv1dOptions ox_conv(const Conv1dOptions& o) {
  ox::Conv1dPadding padding = 0;
  if (const ExpandingArray<1>* a = o.padding().amounts(); zeros_mode(o) && a != nullptr)
    padding = (*a)[0];
  else if (zeros_mode(o))
    padding = o.padding().mode();
  return {.stride = o.stride()[0],
          .padding = padding,
          .dilation = o.dilation()[0],
          .groups = o.groups(),
          .bias = o.bias()};
}
}  // namespace detail

class Conv1dImpl : public ox::nn::Conv1dImpl {
 public:
  using Options = Conv1dOptions;
  Conv1dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<1> kernel_size)
      : Conv1dImpl(Conv1dOptions(in_channels, out_channels, kernel_size)) {}
  explicit Conv1dImpl(const Conv1dOptions& options_)
      : ox::nn::Conv1dImpl(options_.in_channels(), options_.out_channels(),
                           options_.kernel_size()[0], detail::ox_conv(options_)),
        options(options_) {}
  Tensor forward(const Tensor& input) const {
    if (detail::zeros_mode(options)) return ox::nn::Conv1dImpl::forward(input);
    return ox::nn::Conv1dImpl::forward(detail::pad_for_conv(
        input, detail::mode_padding(options), detail::tag_name(options.padding_mode())));
  }
  Conv1dOptions options;
};
TORCH_MODULE(Conv1d);

class Conv2dImpl : public ox::nn::Conv2dImpl {
 public:
  using Options = Conv2dOptions;
  Conv2dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size)
      : Conv2dImpl(Conv2dOptions(in_channels, out_channels, kernel_size)) {}
  explicit Conv2dImpl(const Conv2dOptions& options_)
      : ox::nn::Conv2dImpl(options_.in_channels(), options_.out_channels(),
                           detail::pair(options_.kernel_size()), detail::ox_conv(options_)),
        options(options_) {}
  Tensor forward(const Tensor& input) const {
    if (detail::zeros_mode(options)) return ox::nn::Conv2dImpl::forward(input);
    return ox::nn::Conv2dImpl::forward(detail::pad_for_conv(
        input, detail::mode_padding(options), detail::tag_name(options.padding_mode())));
  }
  Conv2dOptions options;
};
TORCH_MODULE(Conv2d);

class ConvTranspose2dImpl : public ox::nn::ConvTranspose2dImpl {
 public:
  using Options = ConvTranspose2dOptions;
  ConvTranspose2dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size)
      : ConvTranspose2dImpl(ConvTranspose2dOptions(in_channels, out_channels, kernel_size)) {}
  explicit ConvTranspose2dImpl(const ConvTranspose2dOptions& o)
      : ox::nn::ConvTranspose2dImpl(o.in_channels(), o.out_channels(),
                                    detail::pair(o.kernel_size()),
                                    {.stride = detail::pair(o.stride()),
                                     .padding = detail::pair(o.padding()),
                                     .output_padding = detail::pair(o.output_padding()),
                                     .groups = o.groups(),
                                     .bias = o.bias(),
                                     .dilation = detail::pair(o.dilation())}),
        options(o) {
    OX_CHECK(std::holds_alternative<enumtype::kZeros>(o.padding_mode()), Value,
             "torch::nn::ConvTranspose2d", "only padding_mode kZeros is supported (as LibTorch)");
  }
  ConvTranspose2dOptions options;
};
TORCH_MODULE(ConvTranspose2d);

// ---- Normalization, dropout, embedding ----------------------------------------------------------
namespace detail {
inline ox::nn::BatchNormOptions ox_batch_norm(const BatchNormOptions& o) {
  return {.eps = o.eps(),
          .momentum = o.momentum(),
          .affine = o.affine(),
          .track_running_stats = o.track_running_stats()};
}
}  // namespace detail
#define OX_COMPAT_BATCH_NORM(Name)                                                      \
  class Name##Impl : public ox::nn::Name##Impl {                                        \
   public:                                                                              \
    using Options = BatchNormOptions;                                                   \
    explicit Name##Impl(const BatchNormOptions& options_)                               \
        : ox::nn::Name##Impl(options_.num_features(), detail::ox_batch_norm(options_)), \
          options(options_) {}                                                          \
    BatchNormOptions options;                                                           \
  };                                                                                    \
  TORCH_MODULE(Name)
OX_COMPAT_BATCH_NORM(BatchNorm1d);
OX_COMPAT_BATCH_NORM(BatchNorm2d);
#undef OX_COMPAT_BATCH_NORM

class LayerNormImpl : public ox::nn::LayerNormImpl {
 public:
  using Options = LayerNormOptions;
  explicit LayerNormImpl(const LayerNormOptions& options_)
      : ox::nn::LayerNormImpl(
            options_.normalized_shape(),
            {.eps = options_.eps(), .elementwise_affine = options_.elementwise_affine()}),
        options(options_) {}
  LayerNormImpl(std::vector<int64_t> normalized_shape)  // NOLINT: LibTorch's form
      : LayerNormImpl(LayerNormOptions(std::move(normalized_shape))) {}
  LayerNormOptions options;
};
TORCH_MODULE(LayerNorm);

class GroupNormImpl : public ox::nn::GroupNormImpl {
 public:
  using Options = GroupNormOptions;
  GroupNormImpl(int64_t num_groups, int64_t num_channels)
      : GroupNormImpl(GroupNormOptions(num_groups, num_channels)) {}
  explicit GroupNormImpl(const GroupNormOptions& options_)
      : ox::nn::GroupNormImpl(options_.num_groups(), options_.num_channels(),
                              {.eps = options_.eps(), .affine = options_.affine()}),
        options(options_) {}
  GroupNormOptions options;
};
TORCH_MODULE(GroupNorm);

#define OX_COMPAT_INSTANCE_NORM(Name)                                                  \
  class Name##Impl : public ox::nn::Name##Impl {                                       \
   public:                                                                             \
    using Options = InstanceNormOptions;                                               \
    explicit Name##Impl(const InstanceNormOptions& options_)                           \
        : ox::nn::Name##Impl(options_.num_features(),                                  \
                             {.eps = options_.eps(),                                   \
                              .momentum = options_.momentum(),                         \
                              .affine = options_.affine(),                             \
                              .track_running_stats = options_.track_running_stats()}), \
          options(options_) {}                                                         \
    InstanceNormOptions options;                                                       \
  };                                                                                   \
  TORCH_MODULE(Name)
OX_COMPAT_INSTANCE_NORM(InstanceNorm1d);
OX_COMPAT_INSTANCE_NORM(InstanceNorm2d);
OX_COMPAT_INSTANCE_NORM(InstanceNorm3d);
#undef OX_COMPAT_INSTANCE_NORM

#define OX_COMPAT_DROPOUT(Name)                                  \
  class Name##Impl : public ox::nn::Name##Impl {                 \
   public:                                                       \
    using Options = DropoutOptions;                              \
    explicit Name##Impl(const DropoutOptions& options_ = {})     \
        : ox::nn::Name##Impl(options_.p()), options(options_) {} \
    DropoutOptions options;                                      \
  };                                                             \
  TORCH_MODULE(Name)
OX_COMPAT_DROPOUT(Dropout);
OX_COMPAT_DROPOUT(Dropout2d);
#undef OX_COMPAT_DROPOUT

class EmbeddingImpl : public ox::nn::EmbeddingImpl {
 public:
  using Options = EmbeddingOptions;
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingImpl(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  explicit EmbeddingImpl(const EmbeddingOptions& o)
      : ox::nn::EmbeddingImpl(
            o.num_embeddings(), o.embedding_dim(),
            {.padding_idx = o.padding_idx(), .max_norm = o.max_norm(), .norm_type = o.norm_type()}),
        options(o) {
    OX_CHECK(!o.scale_grad_by_freq() && !o.sparse(), Value, "torch::nn::Embedding",
             "scale_grad_by_freq and sparse are not supported by oxmera");
    if (o._weight().defined()) {  // LibTorch's _weight: the initial table
      OX_CHECK(o._weight().shape() == weight.shape(), Value, "torch::nn::Embedding",
               "_weight has shape ", o._weight().shape(), ", expected ", weight.shape());
      ox::NoGradGuard guard;
      weight.copy_(o._weight());
    }
  }
  EmbeddingOptions options;
};
TORCH_MODULE(Embedding);

// ---- Pooling ------------------------------------------------------------------------------------
class MaxPool2dImpl : public ox::nn::MaxPool2dImpl {
 public:
  using Options = MaxPool2dOptions;
  explicit MaxPool2dImpl(const MaxPool2dOptions& o)
      : ox::nn::MaxPool2dImpl(detail::pair(o.kernel_size()),
                              {.stride = ox::OptionalIntPair(o.stride()[0], o.stride()[1]),
                               .padding = detail::pair(o.padding()),
                               .dilation = detail::pair(o.dilation()),
                               .ceil_mode = o.ceil_mode()}),
        options(o) {}
  MaxPool2dOptions options;
};
TORCH_MODULE(MaxPool2d);

class AvgPool2dImpl : public ox::nn::AvgPool2dImpl {
 public:
  using Options = AvgPool2dOptions;
  explicit AvgPool2dImpl(const AvgPool2dOptions& o)
      : ox::nn::AvgPool2dImpl(detail::pair(o.kernel_size()),
                              {.stride = ox::OptionalIntPair(o.stride()[0], o.stride()[1]),
                               .padding = detail::pair(o.padding()),
                               .ceil_mode = o.ceil_mode(),
                               .count_include_pad = o.count_include_pad(),
                               .divisor_override = o.divisor_override()}),
        options(o) {}
  AvgPool2dOptions options;
};
TORCH_MODULE(AvgPool2d);

class AdaptiveAvgPool2dImpl : public ox::nn::AdaptiveAvgPool2dImpl {
 public:
  using Options = AdaptiveAvgPool2dOptions;
  explicit AdaptiveAvgPool2dImpl(const AdaptiveAvgPool2dOptions& o)
      : ox::nn::AdaptiveAvgPool2dImpl(detail::pair(o.output_size())), options(o) {}
  AdaptiveAvgPool2dOptions options;
};
TORCH_MODULE(AdaptiveAvgPool2d);

// ---- Activations --------------------------------------------------------------------------------
class ReLUImpl : public ox::nn::ReLUImpl {
 public:
  using Options = ReLUOptions;
  explicit ReLUImpl(const ReLUOptions& options_ = {}) : options(options_) {}
  ReLUOptions options;
};
TORCH_MODULE(ReLU);

class LeakyReLUImpl : public ox::nn::LeakyReLUImpl {
 public:
  using Options = LeakyReLUOptions;
  explicit LeakyReLUImpl(const LeakyReLUOptions& options_ = {})
      : ox::nn::LeakyReLUImpl(options_.negative_slope()), options(options_) {}
  LeakyReLUOptions options;
};
TORCH_MODULE(LeakyReLU);

class ELUImpl : public ox::nn::ELUImpl {
 public:
  using Options = ELUOptions;
  explicit ELUImpl(const ELUOptions& options_ = {})
      : ox::nn::ELUImpl(options_.alpha()), options(options_) {}
  ELUOptions options;
};
TORCH_MODULE(ELU);

class GELUImpl : public ox::nn::GELUImpl {
 public:
  using Options = GELUOptions;
  explicit GELUImpl(const GELUOptions& options_ = {})
      : ox::nn::GELUImpl(options_.approximate()), options(options_) {}
  GELUOptions options;
};
TORCH_MODULE(GELU);

class SoftplusImpl : public ox::nn::SoftplusImpl {
 public:
  using Options = SoftplusOptions;
  explicit SoftplusImpl(const SoftplusOptions& options_ = {})
      : ox::nn::SoftplusImpl({.beta = options_.beta(), .threshold = options_.threshold()}),
        options(options_) {}
  SoftplusOptions options;
};
TORCH_MODULE(Softplus);

#define OX_COMPAT_SOFTMAX(Name)                                    \
  class Name##Impl : public ox::nn::Name##Impl {                   \
   public:                                                         \
    using Options = SoftmaxOptions;                                \
    explicit Name##Impl(const SoftmaxOptions& options_)            \
        : ox::nn::Name##Impl(options_.dim()), options(options_) {} \
    SoftmaxOptions options;                                        \
  };                                                               \
  TORCH_MODULE(Name)
OX_COMPAT_SOFTMAX(Softmax);
OX_COMPAT_SOFTMAX(LogSoftmax);
#undef OX_COMPAT_SOFTMAX

// ---- Recurrent layers ---------------------------------------------------------------------------
namespace detail {
inline std::string nonlinearity(const nonlinearity_t& n) { return std::string(tag_name(n)); }
}  // namespace detail

class RNNImpl : public ox::nn::RNNImpl {
 public:
  using Options = RNNOptions;
  RNNImpl(int64_t input_size, int64_t hidden_size) : RNNImpl(RNNOptions(input_size, hidden_size)) {}
  explicit RNNImpl(const RNNOptions& o)
      : ox::nn::RNNImpl(o.input_size(), o.hidden_size(),
                        {.num_layers = o.num_layers(),
                         .nonlinearity = detail::nonlinearity(o.nonlinearity()),
                         .bias = o.bias(),
                         .batch_first = o.batch_first(),
                         .dropout = o.dropout(),
                         .bidirectional = o.bidirectional()}),
        options(o) {}
  RNNOptions options;
};
TORCH_MODULE(RNN);

class LSTMImpl : public ox::nn::LSTMImpl {
 public:
  using Options = LSTMOptions;
  LSTMImpl(int64_t input_size, int64_t hidden_size)
      : LSTMImpl(LSTMOptions(input_size, hidden_size)) {}
  explicit LSTMImpl(const LSTMOptions& o)
      : ox::nn::LSTMImpl(o.input_size(), o.hidden_size(),
                         {.num_layers = o.num_layers(),
                          .bias = o.bias(),
                          .batch_first = o.batch_first(),
                          .dropout = o.dropout(),
                          .bidirectional = o.bidirectional(),
                          .proj_size = o.proj_size()}),
        options(o) {}
  LSTMOptions options;
};
TORCH_MODULE(LSTM);

class GRUImpl : public ox::nn::GRUImpl {
 public:
  using Options = GRUOptions;
  GRUImpl(int64_t input_size, int64_t hidden_size) : GRUImpl(GRUOptions(input_size, hidden_size)) {}
  explicit GRUImpl(const GRUOptions& o)
      : ox::nn::GRUImpl(o.input_size(), o.hidden_size(),
                        {.num_layers = o.num_layers(),
                         .bias = o.bias(),
                         .batch_first = o.batch_first(),
                         .dropout = o.dropout(),
                         .bidirectional = o.bidirectional()}),
        options(o) {}
  GRUOptions options;
};
TORCH_MODULE(GRU);

class RNNCellImpl : public ox::nn::RNNCellImpl {
 public:
  using Options = RNNCellOptions;
  RNNCellImpl(int64_t input_size, int64_t hidden_size)
      : RNNCellImpl(RNNCellOptions(input_size, hidden_size)) {}
  explicit RNNCellImpl(const RNNCellOptions& o)
      : ox::nn::RNNCellImpl(
            o.input_size(), o.hidden_size(),
            {.bias = o.bias(), .nonlinearity = detail::nonlinearity(o.nonlinearity())}),
        options(o) {}
  RNNCellOptions options;
};
TORCH_MODULE(RNNCell);

#define OX_COMPAT_CELL(Name)                                                                     \
  class Name##Impl : public ox::nn::Name##Impl {                                                 \
   public:                                                                                       \
    using Options = Name##Options;                                                               \
    Name##Impl(int64_t input_size, int64_t hidden_size)                                          \
        : Name##Impl(Name##Options(input_size, hidden_size)) {}                                  \
    explicit Name##Impl(const Name##Options& o)                                                  \
        : ox::nn::Name##Impl(o.input_size(), o.hidden_size(), {.bias = o.bias()}), options(o) {} \
    Name##Options options;                                                                       \
  };                                                                                             \
  TORCH_MODULE(Name)
OX_COMPAT_CELL(LSTMCell);
OX_COMPAT_CELL(GRUCell);
#undef OX_COMPAT_CELL

// ---- Losses -------------------------------------------------------------------------------------
#define OX_COMPAT_LOSS(Name, ...)                        \
  class Name##Impl : public ox::nn::Name##Impl {         \
   public:                                               \
    using Options = Name##Options;                       \
    explicit Name##Impl(const Name##Options& o = {})     \
        : ox::nn::Name##Impl(__VA_ARGS__), options(o) {} \
    Name##Options options;                               \
  };                                                     \
  TORCH_MODULE(Name)
OX_COMPAT_LOSS(MSELoss, {.reduction = detail::reduction(o.reduction())});
OX_COMPAT_LOSS(L1Loss, {.reduction = detail::reduction(o.reduction())});
OX_COMPAT_LOSS(SmoothL1Loss, {.reduction = detail::reduction(o.reduction()), .beta = o.beta()});
OX_COMPAT_LOSS(KLDivLoss,
               {.reduction = detail::reduction(o.reduction()), .log_target = o.log_target()});
OX_COMPAT_LOSS(BCELoss, {.weight = o.weight(), .reduction = detail::reduction(o.reduction())});
OX_COMPAT_LOSS(BCEWithLogitsLoss, {.weight = o.weight(),
                                   .reduction = detail::reduction(o.reduction()),
                                   .pos_weight = o.pos_weight()});
OX_COMPAT_LOSS(NLLLoss, {.weight = o.weight(),
                         .ignore_index = o.ignore_index(),
                         .reduction = detail::reduction(o.reduction())});
OX_COMPAT_LOSS(CrossEntropyLoss, {.weight = o.weight(),
                                  .ignore_index = o.ignore_index(),
                                  .reduction = detail::reduction(o.reduction()),
                                  .label_smoothing = o.label_smoothing()});
#undef OX_COMPAT_LOSS

// ---- Functional: a function as a module, extra arguments bound after the input -----------------
class FunctionalImpl : public ox::nn::FunctionalImpl {
 public:
  using Function = std::function<Tensor(Tensor)>;
  explicit FunctionalImpl(Function function)
      : ox::nn::FunctionalImpl([f = std::move(function)](const Tensor& x) { return f(x); }) {}
  // `Functional(torch::log_softmax, 1, torch::nullopt)`: calls log_softmax(x, 1, nullopt).
  template <class F, class First, class... Rest>
  FunctionalImpl(F function, First&& first, Rest&&... rest)
      : FunctionalImpl(Function(
            [function, args = std::make_tuple(std::forward<First>(first),
                                              std::forward<Rest>(rest)...)](const Tensor& x) {
              return std::apply([&](const auto&... a) { return Tensor(function(x, a...)); }, args);
            })) {}
};
TORCH_MODULE(Functional);

}  // namespace torch::nn
