// torch::nn's options classes through the compatibility header, written as LibTorch code: the
// positional constructors mean LibTorch's, setters chain, getters read, and the layer built from
// them has the right parameter shapes and behaviour (checked against closed forms).

#include <gtest/gtest.h>

#include <oxmera/compat/torch.h>

#include <cmath>
#include <vector>

#include "test_util.h"

namespace {

using oxtest::shape_of;
using V = std::vector<int64_t>;

// Output size of a convolution or pooling along one dim (PyTorch's formula).
int64_t out_size(int64_t n, int64_t k, int64_t s, int64_t p, int64_t d = 1) {
  return (n + 2 * p - d * (k - 1) - 1) / s + 1;
}

TEST(CompatNnOptions, LinearPositionalAndBias) {
  auto o = torch::nn::LinearOptions(784, 64).bias(false);
  EXPECT_EQ(o.in_features(), 784);
  EXPECT_EQ(o.out_features(), 64);
  EXPECT_FALSE(o.bias());
  torch::nn::Linear fc(o);
  EXPECT_EQ(shape_of(fc->weight), (V{64, 784}));
  EXPECT_FALSE(fc->bias.defined());
  EXPECT_FALSE(fc->options.bias());
  torch::nn::Linear fc2(3, 2);  // LibTorch's (in, out)
  EXPECT_EQ(shape_of(fc2->weight), (V{2, 3}));
  EXPECT_EQ(shape_of(fc2->bias), (V{2}));
  auto x = torch::randn({5, 3});
  auto expected = torch::matmul(x, fc2->weight.t()) + fc2->bias;
  EXPECT_TRUE(torch::allclose(fc2(x), expected));
  EXPECT_TRUE(torch::allclose(fc2->forward(x), expected));
}

TEST(CompatNnOptions, Conv2dPositionalMeansInOutKernel) {
  auto o = torch::nn::Conv2dOptions(1, 10, 5);
  EXPECT_EQ(o.in_channels(), 1);
  EXPECT_EQ(o.out_channels(), 10);
  EXPECT_EQ(o.kernel_size()[0], 5);
  EXPECT_EQ(o.kernel_size()[1], 5);
  EXPECT_EQ(o.stride()[0], 1);
  o.stride(2).padding(1).bias(false);
  EXPECT_EQ(o.stride()[1], 2);
  EXPECT_FALSE(o.bias());
  torch::nn::Conv2d conv{nullptr};
  EXPECT_EQ(conv.get(), nullptr);
  conv = torch::nn::Conv2d(o);
  EXPECT_EQ(shape_of(conv->weight), (V{10, 1, 5, 5}));
  EXPECT_FALSE(conv->bias.defined());
  EXPECT_EQ(conv->options.stride()[0], 2);
  auto y = conv(torch::randn({2, 1, 28, 27}));
  EXPECT_EQ(shape_of(y), (V{2, 10, out_size(28, 5, 2, 1), out_size(27, 5, 2, 1)}));
  // Rectangular kernel, dilation and groups.
  torch::nn::Conv2d c2(torch::nn::Conv2dOptions(4, 6, {3, 1}).dilation({2, 1}).groups(2));
  EXPECT_EQ(shape_of(c2->weight), (V{6, 2, 3, 1}));
  EXPECT_EQ(shape_of(c2(torch::randn({1, 4, 9, 9}))), (V{1, 6, out_size(9, 3, 1, 0, 2), 9}));
  torch::nn::Conv2d same(torch::nn::Conv2dOptions(2, 3, 3).padding(torch::kSame));
  EXPECT_EQ(shape_of(same(torch::randn({1, 2, 7, 6}))), (V{1, 3, 7, 6}));
  torch::nn::Conv2d c3(3, 8, 3);  // LibTorch's positional holder form
  EXPECT_EQ(shape_of(c3->weight), (V{8, 3, 3, 3}));
}

TEST(CompatNnOptions, Conv2dPaddingModesPadBeforeTheConvolution) {
  // Reflect padding of 1 with a 3x3 all-ones kernel: each output is the sum of the reflected
  // window; compare against padding by hand with F::pad and a convolution without padding.
  torch::nn::Conv2d conv(
      torch::nn::Conv2dOptions(1, 1, 3).padding(1).padding_mode(torch::kReflect).bias(false));
  torch::nn::init::ones_(conv->weight);
  auto x = torch::arange(12, torch::kFloat).reshape({1, 1, 3, 4});
  auto y = conv(x);
  EXPECT_EQ(shape_of(y), (V{1, 1, 3, 4}));
  namespace F = torch::nn::functional;
  auto padded = F::pad(x, F::PadFuncOptions({1, 1, 1, 1}).mode(torch::kReflect));
  // Top-left output: window rows {1,0,1} x cols {1,0,1} of x.
  const auto v = x.flatten().to_vector<float>();
  auto at = [&](int r, int c) { return double(v[r * 4 + c]); };
  double expected = 0;
  for (int r : {1, 0, 1})
    for (int c : {1, 0, 1}) expected += at(r, c);
  EXPECT_DOUBLE_EQ(y.flatten()[0].item<float>(), expected);
  EXPECT_TRUE(torch::allclose(y, F::conv2d(padded, conv->weight)));
  torch::nn::Conv2d circ(
      torch::nn::Conv2dOptions(1, 1, 3).padding(1).padding_mode(torch::kCircular).bias(false));
  torch::nn::init::ones_(circ->weight);
  // Circular: every window holds 3 rows x 3 of the 4 columns; the total equals 9 * mean when
  // summed over all outputs (each input element is counted 9 times).
  EXPECT_NEAR(circ(x).sum().item<float>(), 9 * x.sum().item<float>(), 1e-3);
}

TEST(CompatNnOptions, Conv1dAndConvTranspose2d) {
  torch::nn::Conv1d c1(torch::nn::Conv1dOptions(3, 5, 4).stride(2).padding(1));
  EXPECT_EQ(shape_of(c1->weight), (V{5, 3, 4}));
  EXPECT_EQ(shape_of(c1(torch::randn({2, 3, 17}))), (V{2, 5, out_size(17, 4, 2, 1)}));
  auto o = torch::nn::ConvTranspose2dOptions(8, 4, 4).stride(2).padding(1).output_padding(1);
  EXPECT_EQ(o.output_padding()[0], 1);
  torch::nn::ConvTranspose2d up(o);
  EXPECT_EQ(shape_of(up->weight), (V{8, 4, 4, 4}));  // [in, out / groups, kh, kw]
  // (n - 1) * s - 2p + d (k - 1) + output_padding + 1
  const int64_t h = (5 - 1) * 2 - 2 * 1 + (4 - 1) + 1 + 1;
  EXPECT_EQ(shape_of(up(torch::randn({1, 8, 5, 5}))), (V{1, 4, h, h}));
}

TEST(CompatNnOptions, NormsAndTheirStatistics) {
  auto bo = torch::nn::BatchNormOptions(4).eps(1e-3).momentum(0.5).affine(false);
  EXPECT_EQ(bo.num_features(), 4);
  EXPECT_DOUBLE_EQ(bo.eps(), 1e-3);
  EXPECT_DOUBLE_EQ(*bo.momentum(), 0.5);
  torch::nn::BatchNorm1d bn(bo);
  EXPECT_FALSE(bn->weight.defined());
  auto x = torch::randn({16, 4}) * 3 + 1;
  bn(x);
  // running_mean = 0.5 * 0 + 0.5 * batch mean.
  EXPECT_TRUE(torch::allclose(bn->running_mean, x.mean({0}) * 0.5, 1e-5, 1e-6));
  torch::nn::BatchNorm2d bn2(8);  // LibTorch's implicit BatchNormOptions(8)
  EXPECT_EQ(shape_of(bn2->weight), (V{8}));
  EXPECT_EQ(shape_of(bn2->running_var), (V{8}));
  bn2->eval();
  auto y = torch::randn({2, 8, 3, 3});
  EXPECT_TRUE(torch::allclose(bn2(y), y / std::sqrt(1 + 1e-5), 1e-5, 1e-6));

  torch::nn::LayerNorm ln(torch::nn::LayerNormOptions({3, 4}).eps(1e-6).elementwise_affine(false));
  EXPECT_EQ(ln->options.normalized_shape(), (V{3, 4}));
  EXPECT_FALSE(ln->weight.defined());
  auto z = ln(torch::randn({2, 3, 4}) * 5 + 2);
  EXPECT_NEAR(z[0].mean().item<float>(), 0.0, 1e-5);
  EXPECT_NEAR(z[0].var(std::vector<int64_t>{0, 1}, 0).item<float>(), 1.0, 1e-4);

  torch::nn::GroupNorm gn(torch::nn::GroupNormOptions(2, 6).eps(1e-5));
  EXPECT_EQ(gn->options.num_groups(), 2);
  EXPECT_EQ(shape_of(gn->weight), (V{6}));
  auto g = gn(torch::randn({2, 6, 5}) * 4);
  EXPECT_NEAR(g[0].narrow(0, 0, 3).mean().item<float>(), 0.0, 1e-5);
}

TEST(CompatNnOptions, DropoutFollowsTrainAndEval) {
  torch::nn::Dropout drop(torch::nn::DropoutOptions().p(0.25));
  EXPECT_DOUBLE_EQ(drop->options.p(), 0.25);
  auto x = torch::ones({1000});
  auto y = drop(x);
  const auto v = y.to_vector<float>();
  int zeros = 0;
  for (float e : v) {
    if (e == 0)
      ++zeros;
    else
      EXPECT_FLOAT_EQ(e, 1 / 0.75f);
  }
  EXPECT_GT(zeros, 150);
  EXPECT_LT(zeros, 350);
  drop->eval();
  EXPECT_TRUE(torch::equal(drop(x), x));
  torch::nn::Dropout2d d2(0.5);
  d2->train();
  auto planes = d2(torch::ones({4, 16, 3, 3}));
  // Whole channels are dropped: every 3x3 plane is all 0 or all 2.
  auto per_plane = planes.reshape({64, 9});
  EXPECT_TRUE(torch::equal(per_plane.amin({1}), per_plane.amax({1})));
}

TEST(CompatNnOptions, EmbeddingPaddingIdxAndPretrainedWeight) {
  auto o = torch::nn::EmbeddingOptions(10, 3).padding_idx(0);
  EXPECT_EQ(o.num_embeddings(), 10);
  EXPECT_EQ(*o.padding_idx(), 0);
  torch::nn::Embedding emb(o);
  EXPECT_EQ(shape_of(emb->weight), (V{10, 3}));
  EXPECT_TRUE(torch::equal(emb->weight[0], torch::zeros({3})));
  auto table = torch::arange(30, torch::kFloat).reshape({10, 3});
  torch::nn::Embedding fixed(torch::nn::EmbeddingOptions(10, 3)._weight(table));
  auto out = fixed(torch::tensor({2, 7}));
  EXPECT_TRUE(torch::equal(out, torch::tensor({{6.f, 7.f, 8.f}, {21.f, 22.f, 23.f}})));
}

TEST(CompatNnOptions, PoolingStrideDefaultsToTheKernel) {
  auto mo = torch::nn::MaxPool2dOptions(3);
  EXPECT_EQ(mo.stride()[0], 3);  // LibTorch: stride = kernel_size unless set
  mo.stride(2).padding(1);
  torch::nn::MaxPool2d mp(mo);
  EXPECT_EQ(shape_of(mp(torch::randn({1, 2, 11, 8}))),
            (V{1, 2, out_size(11, 3, 2, 1), out_size(8, 3, 2, 1)}));
  torch::nn::AvgPool2d ap(torch::nn::AvgPool2dOptions({2, 2}));
  auto x = torch::arange(16, torch::kFloat).reshape({1, 1, 4, 4});
  EXPECT_TRUE(torch::equal(ap(x), torch::tensor({2.5f, 4.5f, 10.5f, 12.5f}).reshape({1, 1, 2, 2})));
  torch::nn::AdaptiveAvgPool2d gap(torch::nn::AdaptiveAvgPool2dOptions(1));
  EXPECT_NEAR(gap(x).item<float>(), 7.5, 1e-6);
  torch::nn::AdaptiveAvgPool2d ap2(torch::nn::AdaptiveAvgPool2dOptions({2, 1}));
  EXPECT_EQ(shape_of(ap2(x)), (V{1, 1, 2, 1}));
}

TEST(CompatNnOptions, ActivationsMatchTheirFormulas) {
  auto x = torch::tensor({-2.0f, -0.5f, 0.0f, 1.5f});
  torch::nn::LeakyReLU lrelu(torch::nn::LeakyReLUOptions().negative_slope(0.2));
  EXPECT_DOUBLE_EQ(lrelu->options.negative_slope(), 0.2);
  EXPECT_TRUE(torch::allclose(lrelu(x), torch::tensor({-0.4f, -0.1f, 0.0f, 1.5f})));
  torch::nn::ELU elu(torch::nn::ELUOptions().alpha(2.0));
  EXPECT_NEAR(elu(x)[0].item<float>(), 2.0 * std::expm1(-2.0), 1e-6);
  torch::nn::GELU gelu(torch::nn::GELUOptions().approximate("tanh"));
  const double g =
      0.5 * 1.5 * (1 + std::tanh(std::sqrt(2 / M_PI) * (1.5 + 0.044715 * 1.5 * 1.5 * 1.5)));
  EXPECT_NEAR(gelu(x)[3].item<float>(), g, 1e-6);
  torch::nn::Softplus sp(torch::nn::SoftplusOptions().beta(2).threshold(10));
  EXPECT_NEAR(sp(x)[1].item<float>(), std::log1p(std::exp(-1.0)) / 2, 1e-6);
  torch::nn::ReLU relu;
  EXPECT_TRUE(torch::equal(relu(x), torch::tensor({0.f, 0.f, 0.f, 1.5f})));
  torch::nn::LogSoftmax ls(1);
  auto m = torch::randn({2, 5});
  EXPECT_TRUE(torch::allclose(ls(m).exp().sum(1), torch::ones({2})));
  torch::nn::Flatten flat(torch::nn::FlattenOptions().start_dim(1).end_dim(2));
  EXPECT_EQ(shape_of(flat(torch::zeros({2, 3, 4, 5}))), (V{2, 12, 5}));
}

TEST(CompatNnOptions, RecurrentOptionsAndShapes) {
  auto o = torch::nn::LSTMOptions(10, 20).num_layers(2).batch_first(true).bidirectional(true);
  EXPECT_EQ(o.input_size(), 10);
  EXPECT_EQ(o.hidden_size(), 20);
  EXPECT_EQ(o.num_layers(), 2);
  torch::nn::LSTM lstm(o);
  auto params = lstm->named_parameters();
  EXPECT_EQ(shape_of(params["weight_ih_l0"]), (V{80, 10}));
  EXPECT_EQ(shape_of(params["weight_hh_l0_reverse"]), (V{80, 20}));
  EXPECT_EQ(shape_of(params["weight_ih_l1"]), (V{80, 40}));
  auto [out, state] = lstm(torch::randn({3, 7, 10}));
  EXPECT_EQ(shape_of(out), (V{3, 7, 40}));
  EXPECT_EQ(shape_of(std::get<0>(state)), (V{4, 3, 20}));
  EXPECT_EQ(shape_of(std::get<1>(state)), (V{4, 3, 20}));

  // RNN with relu, one layer, one step: h = relu(W_ih x + b_ih + W_hh h0 + b_hh).
  torch::nn::RNN rnn(torch::nn::RNNOptions(3, 2).nonlinearity(torch::kReLU));
  EXPECT_TRUE(std::holds_alternative<torch::enumtype::kReLU>(rnn->options.nonlinearity()));
  auto rp = rnn->named_parameters();
  auto x = torch::randn({1, 1, 3});
  auto h0 = torch::randn({1, 1, 2});
  auto [y, hn] = rnn(x, h0);
  auto expected = torch::relu(torch::matmul(x[0], rp["weight_ih_l0"].t()) + rp["bias_ih_l0"] +
                              torch::matmul(h0[0], rp["weight_hh_l0"].t()) + rp["bias_hh_l0"]);
  EXPECT_TRUE(torch::allclose(y[0], expected, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(hn, y));

  torch::nn::GRU gru(torch::nn::GRUOptions(4, 6).num_layers(3));
  EXPECT_EQ(shape_of(std::get<1>(gru(torch::randn({5, 2, 4})))), (V{3, 2, 6}));
  torch::nn::LSTMCell cell(torch::nn::LSTMCellOptions(4, 5).bias(false));
  EXPECT_FALSE(cell->bias_ih.defined());
  EXPECT_EQ(shape_of(cell->weight_hh), (V{20, 5}));
  auto [h1, c1] = cell(torch::randn({2, 4}));
  EXPECT_EQ(shape_of(c1), (V{2, 5}));
  torch::nn::GRUCell gcell(4, 5);
  EXPECT_EQ(shape_of(gcell(torch::randn({2, 4}))), (V{2, 5}));
  torch::nn::RNNCell rcell(torch::nn::RNNCellOptions(4, 5).nonlinearity(torch::kTanh));
  EXPECT_LE(rcell(torch::randn({2, 4}) * 100).abs().max().item<float>(), 1.0f);
}

}  // namespace
