// torch::nn::functional (F) and the loss modules with LibTorch's FuncOptions and reductions,
// checked against closed forms and plain loops.

#include <gtest/gtest.h>

#include <oxmera/compat/torch.h>

#include <cmath>
#include <vector>

#include "test_util.h"

namespace {

namespace F = torch::nn::functional;
using oxtest::shape_of;
using V = std::vector<int64_t>;

TEST(CompatNnFunctional, ActivationsAndSoftmax) {
  auto x = torch::tensor({-3.0f, -1.0f, 0.5f, 2.0f});
  EXPECT_TRUE(torch::equal(F::relu(x), torch::tensor({0.f, 0.f, 0.5f, 2.f})));
  EXPECT_TRUE(torch::allclose(F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.2)),
                              torch::tensor({-0.6f, -0.2f, 0.5f, 2.f})));
  EXPECT_NEAR(F::elu(x, F::ELUFuncOptions().alpha(0.5))[0].item<float>(), 0.5 * std::expm1(-3.0),
              1e-6);
  EXPECT_NEAR(F::gelu(x)[3].item<float>(), 2.0 * 0.5 * (1 + std::erf(2.0 / std::sqrt(2.0))), 1e-6);
  EXPECT_NEAR(F::softplus(x, F::SoftplusFuncOptions().beta(1))[1].item<float>(),
              std::log1p(std::exp(-1.0)), 1e-6);
  auto m = torch::tensor({{1.0f, 2.0f, 3.0f}, {0.0f, 0.0f, 0.0f}});
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_NEAR(F::softmax(m, F::SoftmaxFuncOptions(1))[0][2].item<float>(), std::exp(3.0) / z, 1e-6);
  EXPECT_NEAR(F::log_softmax(m, F::LogSoftmaxFuncOptions(1))[0][0].item<float>(), 1.0 - std::log(z),
              1e-6);
  EXPECT_TRUE(
      torch::allclose(F::log_softmax(m, 1), F::log_softmax(m, F::LogSoftmaxFuncOptions(1))));
  auto d = F::log_softmax(m, F::LogSoftmaxFuncOptions(1).dtype(torch::kDouble));
  EXPECT_EQ(d.dtype(), torch::kDouble);
}

TEST(CompatNnFunctional, DropoutOptionsAndTraining) {
  auto x = torch::ones({2000});
  EXPECT_TRUE(torch::equal(F::dropout(x, F::DropoutFuncOptions().p(0.5).training(false)), x));
  auto y = F::dropout(x, F::DropoutFuncOptions().p(0.5).training(true));
  const double kept = (y > 0).sum().item<double>();
  EXPECT_NEAR(kept / 2000, 0.5, 0.06);
  EXPECT_NEAR(y.max().item<float>(), 2.0, 1e-6);
  auto planes = F::dropout2d(torch::ones({8, 8, 2, 2}), F::Dropout2dFuncOptions().p(0.5));
  auto flat = planes.reshape({64, 4});
  EXPECT_TRUE(torch::equal(flat.amin({1}), flat.amax({1})));
}

TEST(CompatNnFunctional, PoolingConvAndPad) {
  auto x = torch::arange(16, torch::kFloat).reshape({1, 1, 4, 4});
  EXPECT_TRUE(torch::equal(F::max_pool2d(x, F::MaxPool2dFuncOptions(2)),
                           torch::tensor({5.f, 7.f, 13.f, 15.f}).reshape({1, 1, 2, 2})));
  EXPECT_EQ(shape_of(F::max_pool2d(x, F::MaxPool2dFuncOptions(3).stride(1).padding(1))),
            (V{1, 1, 4, 4}));
  EXPECT_TRUE(
      torch::equal(F::avg_pool2d(x, F::AvgPool2dFuncOptions(4)), torch::full({1, 1, 1, 1}, 7.5)));
  EXPECT_TRUE(torch::equal(F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions({1, 2})),
                           torch::tensor({6.5f, 8.5f}).reshape({1, 1, 1, 2})));

  // conv2d with a 2x2 ones kernel, stride 2, bias 1: block sums plus 1.
  auto w = torch::ones({1, 1, 2, 2});
  auto y = F::conv2d(x, w, F::Conv2dFuncOptions().stride(2).bias(torch::ones({1})));
  EXPECT_TRUE(torch::equal(y, torch::tensor({11.f, 19.f, 43.f, 51.f}).reshape({1, 1, 2, 2})));
  auto same = F::conv2d(x, torch::ones({1, 1, 3, 3}), F::Conv2dFuncOptions().padding(torch::kSame));
  EXPECT_EQ(shape_of(same), (V{1, 1, 4, 4}));
  EXPECT_NEAR(same[0][0][0][0].item<float>(), 0 + 1 + 4 + 5, 1e-6);
  auto line = torch::arange(5, torch::kFloat).reshape({1, 1, 5});
  EXPECT_TRUE(
      torch::equal(F::conv1d(line, torch::ones({1, 1, 2}), F::Conv1dFuncOptions().padding(1)),
                   torch::tensor({0.f, 1.f, 3.f, 5.f, 7.f, 4.f}).reshape({1, 1, 6})));
  auto up = F::conv_transpose2d(torch::ones({1, 1, 2, 2}), torch::ones({1, 1, 2, 2}),
                                F::ConvTranspose2dFuncOptions().stride(2));
  EXPECT_TRUE(torch::equal(up, torch::ones({1, 1, 4, 4})));

  auto row = torch::tensor({1.f, 2.f, 3.f}).reshape({1, 1, 3});
  EXPECT_TRUE(torch::equal(F::pad(row, F::PadFuncOptions({1, 2}).value(9)),
                           torch::tensor({9.f, 1.f, 2.f, 3.f, 9.f, 9.f}).reshape({1, 1, 6})));
  EXPECT_TRUE(torch::equal(F::pad(row, F::PadFuncOptions({2, 1}).mode(torch::kReflect)),
                           torch::tensor({3.f, 2.f, 1.f, 2.f, 3.f, 2.f}).reshape({1, 1, 6})));
  EXPECT_TRUE(torch::equal(F::pad(row, F::PadFuncOptions({1, 1}).mode(torch::kReplicate)),
                           torch::tensor({1.f, 1.f, 2.f, 3.f, 3.f}).reshape({1, 1, 5})));
  EXPECT_TRUE(torch::equal(F::pad(row, F::PadFuncOptions({2, 1}).mode(torch::kCircular)),
                           torch::tensor({2.f, 3.f, 1.f, 2.f, 3.f, 1.f}).reshape({1, 1, 6})));
}

TEST(CompatNnFunctional, NormalizeEmbeddingAndNorms) {
  auto x = torch::tensor({{3.0f, 4.0f}, {0.0f, 0.0f}});
  auto n = F::normalize(x, F::NormalizeFuncOptions().p(2).dim(1));
  EXPECT_TRUE(torch::allclose(n, torch::tensor({{0.6f, 0.8f}, {0.0f, 0.0f}})));
  auto l1 = F::normalize(x, F::NormalizeFuncOptions().p(1).dim(1));
  EXPECT_NEAR(l1[0][0].item<float>(), 3.0 / 7, 1e-6);

  auto table = torch::arange(12, torch::kFloat).reshape({4, 3});
  auto e = F::embedding(torch::tensor({3, 0}), table, F::EmbeddingFuncOptions().padding_idx(0));
  EXPECT_TRUE(torch::equal(e, torch::tensor({{9.f, 10.f, 11.f}, {0.f, 1.f, 2.f}})));

  auto v = torch::randn({4, 6}) * 3 + 1;
  auto ln = F::layer_norm(v, F::LayerNormFuncOptions({6}).eps(1e-5));
  EXPECT_NEAR(ln[1].mean().item<float>(), 0.0, 1e-5);
  auto gn = F::group_norm(v.reshape({2, 4, 3}), F::GroupNormFuncOptions(2));
  EXPECT_NEAR(gn[0].narrow(0, 2, 2).mean().item<float>(), 0.0, 1e-5);
  auto mean = torch::zeros({6}), var = torch::ones({6});
  auto bn = F::batch_norm(v, mean, var, F::BatchNormFuncOptions().training(true).momentum(0.5));
  EXPECT_NEAR(bn.mean().item<float>(), 0.0, 1e-5);
  EXPECT_TRUE(torch::allclose(mean, v.mean({0}) * 0.5, 1e-5, 1e-6));  // updated in place
  auto lin = F::linear(torch::ones({1, 2}), torch::ones({3, 2}), torch::full({3}, 0.5));
  EXPECT_TRUE(torch::equal(lin, torch::full({1, 3}, 2.5)));
}

TEST(CompatNnFunctional, LossesWithReductions) {
  auto input = torch::tensor({1.0f, 2.0f, 4.0f});
  auto target = torch::tensor({1.5f, 2.0f, 1.0f});
  // Squared errors 0.25, 0, 9; absolute 0.5, 0, 3; smooth L1 (beta 1) 0.125, 0, 2.5.
  EXPECT_NEAR(F::mse_loss(input, target).item<float>(), 9.25 / 3, 1e-6);
  EXPECT_NEAR(F::mse_loss(input, target, F::MSELossFuncOptions(torch::kSum)).item<float>(), 9.25,
              1e-6);
  EXPECT_EQ(shape_of(F::mse_loss(input, target, F::MSELossFuncOptions().reduction(torch::kNone))),
            (V{3}));
  EXPECT_NEAR(F::l1_loss(input, target, F::L1LossFuncOptions(torch::kSum)).item<float>(), 3.5,
              1e-6);
  EXPECT_NEAR(F::smooth_l1_loss(input, target).item<float>(), 2.625 / 3, 1e-6);
  EXPECT_NEAR(F::smooth_l1_loss(input, target,
                                F::SmoothL1LossFuncOptions().beta(2.0).reduction(torch::kSum))
                  .item<float>(),
              0.0625 + 0 + 2.0, 1e-6);

  auto logits = torch::tensor({{2.0f, 0.0f, -1.0f}, {0.5f, 0.5f, 3.0f}});
  auto labels = torch::tensor({0, 2});
  double expected = 0;
  for (int i = 0; i < 2; ++i) {
    const auto row = logits[i].to_vector<float>();
    double lse = 0;
    for (float r : row) lse += std::exp(double(r));
    expected += std::log(lse) - row[i == 0 ? 0 : 2];
  }
  EXPECT_NEAR(F::cross_entropy(logits, labels).item<float>(), expected / 2, 1e-5);
  EXPECT_NEAR(F::cross_entropy(logits, labels, F::CrossEntropyFuncOptions().reduction(torch::kSum))
                  .item<float>(),
              expected, 1e-5);
  EXPECT_NEAR(F::nll_loss(F::log_softmax(logits, 1), labels).item<float>(), expected / 2, 1e-5);
  EXPECT_NEAR(
      F::nll_loss(F::log_softmax(logits, 1), labels, F::NLLLossFuncOptions().ignore_index(2))
          .item<float>(),
      std::log(std::exp(2.0) + 1 + std::exp(-1.0)) - 2.0, 1e-5);

  auto p = torch::tensor({0.8f, 0.3f});
  auto y = torch::tensor({1.0f, 0.0f});
  const double bce = -(std::log(0.8) + std::log(0.7)) / 2;
  EXPECT_NEAR(F::binary_cross_entropy(p, y).item<float>(), bce, 1e-6);
  auto logit = torch::log(p / (1 - p));
  EXPECT_NEAR(F::binary_cross_entropy_with_logits(logit, y).item<float>(), bce, 1e-5);
  EXPECT_NEAR(
      F::binary_cross_entropy_with_logits(
          logit, y, F::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(torch::full({2}, 2.0)))
          .item<float>(),
      -(2 * std::log(0.8) + std::log(0.7)) / 2, 1e-5);

  auto logq = torch::log(torch::tensor({{0.25f, 0.75f}, {0.5f, 0.5f}}));
  auto pt = torch::tensor({{0.5f, 0.5f}, {0.9f, 0.1f}});
  double kl = 0;
  const double pv[4] = {0.5, 0.5, 0.9, 0.1}, qv[4] = {0.25, 0.75, 0.5, 0.5};
  for (int i = 0; i < 4; ++i) kl += pv[i] * (std::log(pv[i]) - std::log(qv[i]));
  EXPECT_NEAR(F::kl_div(logq, pt, F::KLDivFuncOptions(torch::kBatchMean)).item<float>(), kl / 2,
              1e-6);
  EXPECT_NEAR(F::kl_div(logq, pt, F::KLDivFuncOptions().reduction(torch::kSum)).item<float>(), kl,
              1e-6);
}

TEST(CompatNnFunctional, LossModulesTakeTheirOptions) {
  auto input = torch::tensor({1.0f, 2.0f, 4.0f});
  auto target = torch::tensor({1.5f, 2.0f, 1.0f});
  torch::nn::MSELoss mse(torch::nn::MSELossOptions().reduction(torch::kSum));
  EXPECT_NEAR(mse(input, target).item<float>(), 9.25, 1e-6);
  EXPECT_TRUE(std::holds_alternative<torch::enumtype::kSum>(mse->options.reduction()));
  torch::nn::L1Loss l1;
  EXPECT_NEAR(l1(input, target).item<float>(), 3.5 / 3, 1e-6);
  torch::nn::SmoothL1Loss sl1(torch::nn::SmoothL1LossOptions().beta(2.0));
  EXPECT_NEAR(sl1(input, target).item<float>(), 2.0625 / 3, 1e-6);
  auto logits = torch::tensor({{2.0f, 0.0f}, {0.0f, 1.0f}});
  auto labels = torch::tensor({0, 1});
  torch::nn::CrossEntropyLoss ce(torch::nn::CrossEntropyLossOptions().label_smoothing(0.2));
  EXPECT_DOUBLE_EQ(ce->options.label_smoothing(), 0.2);
  // Smoothed target: 0.9 on the label, 0.1 on the other class.
  const double l0 = std::log(std::exp(2.0) + 1), l1v = std::log(1 + std::exp(1.0));
  const double smooth = (0.9 * (l0 - 2) + 0.1 * l0 + 0.9 * (l1v - 1) + 0.1 * l1v) / 2;
  EXPECT_NEAR(ce(logits, labels).item<float>(), smooth, 1e-5);
  torch::nn::NLLLoss nll(torch::nn::NLLLossOptions().weight(torch::tensor({1.0f, 3.0f})));
  auto logp = torch::log_softmax(logits, 1);
  const double weighted = (1 * -logp[0][0].item<float>() + 3 * -logp[1][1].item<float>()) / 4;
  EXPECT_NEAR(nll(logp, labels).item<float>(), weighted, 1e-5);
  torch::nn::BCELoss bce(torch::nn::BCELossOptions().reduction(torch::kNone));
  EXPECT_EQ(shape_of(bce(torch::tensor({0.5f, 0.5f}), torch::tensor({1.f, 0.f}))), (V{2}));
  torch::nn::BCEWithLogitsLoss bcel;
  EXPECT_NEAR(bcel(torch::zeros({3}), torch::ones({3})).item<float>(), std::log(2.0), 1e-6);
  torch::nn::KLDivLoss kld(
      torch::nn::KLDivLossOptions().reduction(torch::kBatchMean).log_target(true));
  EXPECT_NEAR(kld(torch::zeros({2, 2}), torch::zeros({2, 2})).item<float>(), 0.0, 1e-7);
}

TEST(CompatNnFunctional, InterpolateUpsampleAndPixelShuffle) {
  // [1, 1, 1, 2] = {1, 3}: bilinear to width 3 with corners aligned gives {1, 2, 3}; nearest
  // doubles each element.
  auto x = torch::tensor({1.0f, 3.0f}).reshape({1, 1, 1, 2});
  auto y = F::interpolate(
      x, F::InterpolateFuncOptions().size(V{1, 3}).mode(torch::kBilinear).align_corners(true));
  EXPECT_TRUE(torch::allclose(y, torch::tensor({1.0f, 2.0f, 3.0f}).reshape({1, 1, 1, 3})));
  auto n = F::interpolate(
      x, F::InterpolateFuncOptions().scale_factor(std::vector<double>{2, 2}).mode(torch::kNearest));
  EXPECT_EQ(shape_of(n), (V{1, 1, 2, 4}));
  EXPECT_TRUE(torch::equal(n[0][0][1], torch::tensor({1.0f, 1.0f, 3.0f, 3.0f})));
  const auto bilinear_x2 = torch::nn::UpsampleOptions()
                               .scale_factor(std::vector<double>{2, 2})
                               .mode(torch::kBilinear)
                               .align_corners(false);
  torch::nn::Upsample up(bilinear_x2);
  EXPECT_TRUE(
      torch::equal(up->forward(x), F::interpolate(x, F::InterpolateFuncOptions()
                                                         .scale_factor(std::vector<double>{2, 2})
                                                         .mode(torch::kBilinear)
                                                         .align_corners(false))));
  torch::nn::PixelShuffle shuffle(torch::nn::PixelShuffleOptions(2));
  torch::nn::PixelUnshuffle unshuffle(torch::nn::PixelUnshuffleOptions(2));
  auto z = torch::arange(16, torch::kFloat32).reshape({1, 4, 2, 2});
  auto s = shuffle->forward(z);
  EXPECT_EQ(shape_of(s), (V{1, 1, 4, 4}));
  // out[0, 0, 2h + i, 2w + j] = z[0, 2i + j, h, w]: the first row interleaves z[0, 0:2, 0, :].
  EXPECT_TRUE(torch::equal(s[0][0][0], torch::tensor({0.0f, 4.0f, 1.0f, 5.0f})));
  EXPECT_TRUE(torch::equal(unshuffle->forward(s), z));
  EXPECT_TRUE(torch::equal(F::pixel_shuffle(z, F::PixelShuffleFuncOptions(2)), s));
  // InstanceNorm2d(2) on [1, 2, 1, 2] = {{1, 3}, {0, 4}}: each channel to {-1, 1} (up to eps).
  torch::nn::InstanceNorm2d norm(2);
  auto u = torch::tensor({1.0f, 3.0f, 0.0f, 4.0f}).reshape({1, 2, 1, 2});
  const auto want = torch::tensor({-1.0f, 1.0f, -1.0f, 1.0f}).reshape({1, 2, 1, 2});
  EXPECT_TRUE(torch::allclose(norm->forward(u), want, 1e-4, 1e-4));
  EXPECT_TRUE(torch::allclose(F::instance_norm(u), want, 1e-4, 1e-4));
  torch::nn::InstanceNorm2d affine(torch::nn::InstanceNorm2dOptions(2).affine(true));
  EXPECT_EQ(affine->parameters().size(), 2u);
}

}  // namespace
