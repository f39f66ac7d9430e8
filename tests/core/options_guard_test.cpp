// No silent positional options: every oxmera options aggregate constructed positionally either
// means what LibTorch's constructor means or does not compile (core/options.h). C++20 would
// otherwise accept `Conv2dOptions(1, 10, 5)` as stride 1, padding 10, dilation 5.

#include <gtest/gtest.h>

#include <oxmera/oxmera.h>

namespace {

template <class T, class... Args>
constexpr bool positional = requires {
  T(std::declval<Args>()...);
};
template <class T, class... Args>
constexpr bool braced = requires {
  T{std::declval<Args>()...};
};

// Neither T(1), T(1, 2), T(1, 2, 3) nor their braced forms compile; T() and T{} do.
template <class T>
constexpr bool named_only() {
  return !positional<T, int> && !positional<T, int, int> && !positional<T, int, int, int> &&
         !positional<T, double> && !positional<T, bool> && !braced<T, int> &&
         !braced<T, int, int> && !braced<T, double> && !braced<T, bool> &&
         std::is_default_constructible_v<T>;
}
// LibTorch's one-argument constructor (lr, batch_size, dtype) and nothing longer.
template <class T, class First>
constexpr bool leading_only() {
  return positional<T, First> && !positional<T, First, int> && !positional<T, First, double> &&
         !positional<T, First, bool> && !braced<T, First, int> && !braced<T, First, double>;
}

using namespace ox;
static_assert(named_only<nn::Conv1dOptions>());
static_assert(named_only<nn::Conv2dOptions>());
static_assert(named_only<nn::ConvTranspose2dOptions>());
static_assert(named_only<nn::SoftplusOptions>());
static_assert(named_only<nn::functional::EmbeddingOptions>());
static_assert(named_only<nn::functional::AttentionOptions>());
static_assert(named_only<nn::LayerNormOptions>());
static_assert(named_only<nn::RMSNormOptions>());
static_assert(named_only<nn::GroupNormOptions>());
static_assert(named_only<nn::BatchNormOptions>());
static_assert(named_only<nn::MultiheadAttentionOptions>());
static_assert(named_only<nn::MHAForwardOptions>());
static_assert(named_only<nn::MSELossOptions>());
static_assert(named_only<nn::L1LossOptions>());
static_assert(named_only<nn::SmoothL1LossOptions>());
static_assert(named_only<nn::HuberLossOptions>());
static_assert(named_only<nn::NLLLossOptions>());
static_assert(named_only<nn::BCELossOptions>());
static_assert(named_only<nn::BCEWithLogitsLossOptions>());
static_assert(named_only<nn::KLDivLossOptions>());
static_assert(named_only<nn::CosineEmbeddingLossOptions>());
static_assert(named_only<nn::MarginRankingLossOptions>());
static_assert(named_only<nn::TripletMarginLossOptions>());
static_assert(named_only<nn::PoissonNLLLossOptions>());
static_assert(named_only<nn::GaussianNLLLossOptions>());
static_assert(named_only<nn::TransformerEncoderLayerOptions>());
static_assert(named_only<nn::LinearOptions>());
static_assert(named_only<nn::RNNCellOptions>());
static_assert(named_only<nn::LSTMCellOptions>());
static_assert(named_only<nn::GRUCellOptions>());
static_assert(named_only<nn::RNNOptions>());
static_assert(named_only<nn::LSTMOptions>());
static_assert(named_only<nn::GRUOptions>());
static_assert(named_only<nn::FlattenOptions>());
static_assert(named_only<ToOptions>());
static_assert(named_only<CrossEntropyOptions>());
static_assert(named_only<Conv1dOptions>());
static_assert(named_only<Conv2dOptions>());
static_assert(named_only<ConvTranspose2dOptions>());
static_assert(named_only<MaxPool2dOptions>());
static_assert(named_only<AvgPool2dOptions>());
static_assert(named_only<autograd::GradcheckOptions>());
static_assert(named_only<optim::LinearLROptions>());
static_assert(named_only<optim::OneCycleLROptions>());
static_assert(named_only<optim::WarmupCosineLROptions>());
static_assert(named_only<optim::ReduceLROnPlateauOptions>());

static_assert(leading_only<optim::SGDOptions, double>());
static_assert(leading_only<optim::AdamOptions, double>());
static_assert(leading_only<optim::AdamWOptions, double>());
static_assert(leading_only<optim::RAdamOptions, double>());
static_assert(leading_only<optim::NAdamOptions, double>());
static_assert(leading_only<optim::AdamaxOptions, double>());
static_assert(leading_only<optim::RMSpropOptions, double>());
static_assert(leading_only<optim::AdagradOptions, double>());
static_assert(leading_only<optim::LionOptions, double>());
static_assert(leading_only<data::DataLoaderOptions, int64_t>());
static_assert(leading_only<TensorOptions, DType>());

TEST(OptionsGuard, LeadingPositionalArgumentsMeanWhatLibTorchsConstructorsMean) {
  EXPECT_EQ(optim::SGDOptions(0.25).lr, 0.25);
  EXPECT_EQ(optim::SGDOptions(0.25).momentum, 0.0);
  EXPECT_EQ(optim::AdamOptions(0.5).lr, 0.5);
  EXPECT_EQ(data::DataLoaderOptions(7).batch_size, 7);
  EXPECT_FALSE(data::DataLoaderOptions(7).shuffle);
  EXPECT_EQ(TensorOptions(kF64).dtype, kF64);
  EXPECT_FALSE(TensorOptions(kF64).device.has_value());
}

TEST(OptionsGuard, DesignatedInitializersStillNameAnyField) {
  const nn::Conv2dOptions conv{.stride = 2, .padding = 1, .bias = false};
  EXPECT_EQ(conv.stride.h, 2);
  EXPECT_EQ(conv.stride.w, 2);
  EXPECT_EQ(conv.groups, 1);
  EXPECT_FALSE(conv.bias);
  const optim::SGDOptions sgd{.lr = 0.1, .momentum = 0.9, .nesterov = true};
  EXPECT_EQ(sgd.momentum, 0.9);
  EXPECT_TRUE(sgd.nesterov);
  const TensorOptions t{.device = Device::cpu(), .requires_grad = true};
  EXPECT_FALSE(t.dtype.has_value());
  EXPECT_TRUE(t.requires_grad);
}

}  // namespace
