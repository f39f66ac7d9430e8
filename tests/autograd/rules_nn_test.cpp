// vjp rules of the nn ops (normalization, convolution, pooling, cross-entropy, dropout) against
// central differences (ox::autograd::gradcheck, f64) on contiguous and strided inputs,
// gradgradcheck where the rule must differentiate twice, and hand-derived gradients for the
// special cases (pooling ties, ignore_index, label smoothing, dropout's mask).

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "autograd/grad_check.h"
#include "test_util.h"

namespace {

using ox::Tensor;
using Inputs = std::vector<Tensor>;
using Fn = std::function<Tensor(const Inputs&)>;
using ox_test::leaf;
using ox_test::sliced_leaf;
using ox_test::transposed_leaf;
using ox_test::values;

using ox_test::expect_gradcheck;

void expect_near_values(const Tensor& got, const std::vector<double>& want, double tol,
                        const std::string& what) {
  const std::vector<double> g = got.to(ox::kF64).contiguous().to_vector<double>();
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], tol) << what << " at " << i;
}

// The first-order gradients (fused kernels) equal the create_graph ones (public-op formulas).
void expect_same_grads(const std::string& what, const Fn& fn, const Inputs& inputs) {
  const Tensor out = fn(inputs);
  const Tensor cot = values(out.shape(), -1, 1, 99);
  const auto plain = ox::autograd::grad({out}, inputs, {cot}, true, false);
  const auto graphed = ox::autograd::grad({fn(inputs)}, inputs, {cot}, true, true);
  ASSERT_EQ(plain.size(), graphed.size());
  for (size_t i = 0; i < plain.size(); ++i)
    expect_near_values(plain[i], graphed[i].detach().contiguous().to_vector<double>(), 1e-10,
                       what + " input " + std::to_string(i));
}

// ---- Normalization ---------------------------------------------------------------------------

TEST(AutogradRulesNn, LayerNorm) {
  const Tensor base = values({3, 4}, -2, 2, 1);
  const Tensor w = leaf(values({4}, 0.5, 1.5, 2)), b = leaf(values({4}, -1, 1, 3));
  const std::vector<std::pair<std::string, Tensor>> xs = {{"contiguous", leaf(base)},
                                                          {"transposed", transposed_leaf(base)},
                                                          {"sliced", sliced_leaf(base)}};
  for (const auto& [layout, x] : xs) {
    expect_gradcheck(
        "layer_norm " + layout, [](const Inputs& in) { return ox::layer_norm(in[0], {4}); }, {x},
        true);
    expect_gradcheck(
        "layer_norm affine " + layout,
        [](const Inputs& in) { return ox::layer_norm(in[0], {4}, in[1], in[2], 1e-3); }, {x, w, b},
        true);
    expect_gradcheck("layer_norm weight only " + layout,
                     [](const Inputs& in) { return ox::layer_norm(in[0], {4}, in[1]); }, {x, w});
    expect_gradcheck("layer_norm bias only " + layout,
                     [](const Inputs& in) { return ox::layer_norm(in[0], {4}, Tensor(), in[1]); },
                     {x, b});
  }
  // Two normalized dims, and a weight broadcast from a row.
  const Tensor x3 = leaf(values({2, 3, 4}, -2, 2, 4));
  const Tensor w2 = leaf(values({3, 4}, 0.5, 1.5, 5)), b2 = leaf(values({3, 4}, -1, 1, 6));
  expect_gradcheck(
      "layer_norm over [3, 4]",
      [](const Inputs& in) {
        return ox::layer_norm(in[0], {3, 4}, in[1], in[2]);
      },
      {x3, w2, b2}, true);
  const Tensor row = leaf(values({1, 4}, 0.5, 1.5, 7));
  expect_gradcheck("layer_norm expanded weight",
                   [](const Inputs& in) {
                     return ox::layer_norm(in[0], {3, 4}, in[1].expand({3, 4}));
                   },
                   {x3, row});
  expect_same_grads("layer_norm",
                    [](const Inputs& in) { return ox::layer_norm(in[0], {4}, in[1], in[2]); },
                    {xs[0].second, w, b});
}

TEST(AutogradRulesNn, RmsNorm) {
  const Tensor base = values({3, 4}, -2, 2, 11);
  const Tensor w = leaf(values({4}, 0.5, 1.5, 12));
  const std::vector<std::pair<std::string, Tensor>> xs = {{"contiguous", leaf(base)},
                                                          {"transposed", transposed_leaf(base)},
                                                          {"sliced", sliced_leaf(base)}};
  for (const auto& [layout, x] : xs) {
    expect_gradcheck(
        "rms_norm " + layout, [](const Inputs& in) { return ox::rms_norm(in[0], {4}); }, {x}, true);
    expect_gradcheck(
        "rms_norm weight " + layout,
        [](const Inputs& in) { return ox::rms_norm(in[0], {4}, in[1], 1e-3); }, {x, w}, true);
  }
  const Tensor x3 = leaf(values({2, 3, 4}, -2, 2, 13)), w2 = leaf(values({3, 4}, 0.5, 1.5, 14));
  expect_gradcheck("rms_norm over [3, 4]",
                   [](const Inputs& in) {
                     return ox::rms_norm(in[0], {3, 4}, in[1]);
                   },
                   {x3, w2});
  expect_same_grads("rms_norm", [](const Inputs& in) { return ox::rms_norm(in[0], {4}, in[1]); },
                    {xs[0].second, w});
}

// ---- Convolution -----------------------------------------------------------------------------

TEST(AutogradRulesNn, Conv2d) {
  struct Case {
    std::string name;
    ox::Shape x, w;
    ox::Conv2dOptions o;
    bool bias;
  };
  const std::vector<Case> cases = {
      {"pad 1", {2, 2, 4, 4}, {3, 2, 3, 3}, {.padding = 1}, true},
      {"stride, padding, dilation",
       {1, 2, 5, 6},
       {2, 2, 2, 3},
       {.stride = {2, 1}, .padding = {1, 0}, .dilation = {1, 2}},
       true},
      {"groups", {1, 4, 4, 4}, {4, 2, 3, 2}, {.stride = {1, 2}, .groups = 2}, true},
      {"depthwise", {1, 3, 4, 4}, {3, 1, 3, 3}, {.padding = 1, .groups = 3}, true},
      {"same, even kernel", {1, 2, 4, 5}, {2, 2, 2, 4}, {.padding = "same"}, false},
      {"same, dilated", {1, 1, 5, 5}, {2, 1, 3, 2}, {.padding = "same", .dilation = 2}, true},
      {"pointwise", {2, 3, 3, 3}, {2, 3, 1, 1}, {}, true},
      {"unbatched", {2, 4, 4}, {2, 2, 3, 3}, {.stride = 2, .padding = 1}, true},
  };
  uint64_t seed = 20;
  for (const Case& c : cases) {
    const Tensor xv = values(c.x, -1, 1, seed++);
    const Tensor w = leaf(values(c.w, -1, 1, seed++));
    const Tensor b = leaf(values({c.w[0]}, -1, 1, seed++));
    const ox::Conv2dOptions o = c.o;
    const Fn f = [o, bias = c.bias](const Inputs& in) {
      return ox::conv2d(in[0], in[1], bias ? in[2] : Tensor(), o);
    };
    const Inputs args = c.bias ? Inputs{leaf(xv), w, b} : Inputs{leaf(xv), w};
    expect_gradcheck("conv2d " + c.name, f, args);
    const Inputs strided = c.bias ? Inputs{transposed_leaf(xv), w, b} : Inputs{sliced_leaf(xv), w};
    expect_gradcheck("conv2d strided input " + c.name, f, strided);
  }
}

TEST(AutogradRulesNn, Conv2dSecondOrder) {
  const Tensor x = leaf(values({1, 2, 4, 4}, -1, 1, 40));
  const Tensor w = leaf(values({2, 2, 2, 3}, -1, 1, 41)), b = leaf(values({2}, -1, 1, 42));
  expect_gradcheck(
      "conv2d twice",
      [](const Inputs& in) {
        return ox::conv2d(in[0], in[1], in[2], {.stride = {2, 1}, .padding = {1, 0}});
      },
      {x, w, b}, true);
  const Tensor xg = leaf(values({1, 4, 3, 3}, -1, 1, 43)),
               wg = leaf(values({2, 2, 2, 2}, -1, 1, 44));
  expect_gradcheck(
      "conv2d groups, same, twice",
      [](const Inputs& in) {
        return ox::conv2d(in[0], in[1], Tensor(), {.padding = "same", .groups = 2});
      },
      {xg, wg}, true);
  // A loss with a curvature in x and w together: the rules' own rules are exercised.
  expect_gradcheck(
      "square of conv2d, twice",
      [](const Inputs& in) { return ox::square(ox::conv2d(in[0], in[1], {}, {.padding = 1})); },
      {x, leaf(values({1, 2, 3, 3}, -1, 1, 45))}, true);
}

TEST(AutogradRulesNn, Conv2dGradientOps) {
  const ox::Conv2dOptions o{.stride = 2, .padding = {1, 0}, .dilation = {1, 2}};
  const ox::Shape xs{2, 2, 5, 6}, ws{3, 2, 2, 2};
  const Tensor x = leaf(values(xs, -1, 1, 50)), w = leaf(values(ws, -1, 1, 51));
  const Tensor go_shape_probe = ox::conv2d(x.detach(), w.detach(), {}, o);
  const Tensor go = leaf(values(go_shape_probe.shape(), -1, 1, 52));
  expect_gradcheck(
      "conv2d_input_grad",
      [&](const Inputs& in) { return ox::conv2d_input_grad(xs, in[0], in[1], o); }, {w, go}, true);
  expect_gradcheck(
      "conv2d_weight_grad",
      [&](const Inputs& in) { return ox::conv2d_weight_grad(in[0], ws, in[1], o); }, {x, go}, true);
  expect_gradcheck("conv2d_weight_grad strided",
                   [&](const Inputs& in) { return ox::conv2d_weight_grad(in[0], ws, in[1], o); },
                   {sliced_leaf(x), transposed_leaf(go)});
}

TEST(AutogradRulesNn, Conv1d) {
  const Tensor x = values({2, 2, 7}, -1, 1, 60);
  const Tensor w = leaf(values({3, 2, 3}, -1, 1, 61)), b = leaf(values({3}, -1, 1, 62));
  const Fn strided = [](const Inputs& in) {
    return ox::conv1d(in[0], in[1], in[2], {.stride = 2, .padding = 1, .dilation = 2});
  };
  expect_gradcheck("conv1d", strided, {leaf(x), w, b});
  expect_gradcheck("conv1d sliced input", strided, {sliced_leaf(x), w, b});
  expect_gradcheck(
      "conv1d same",
      [](const Inputs& in) { return ox::conv1d(in[0], in[1], {}, {.padding = "same"}); },
      {transposed_leaf(values({2, 2, 5}, -1, 1, 63)), leaf(values({2, 2, 4}, -1, 1, 64))});
  const Tensor wg = leaf(values({4, 1, 2}, -1, 1, 65));
  expect_gradcheck("conv1d groups, unbatched",
                   [](const Inputs& in) { return ox::conv1d(in[0], in[1], {}, {.groups = 2}); },
                   {leaf(values({2, 5}, -1, 1, 66)), wg});
  expect_gradcheck("conv1d twice", strided, {leaf(x), w, b}, true);
}

TEST(AutogradRulesNn, ConvTranspose2d) {
  const Tensor x = values({1, 2, 3, 3}, -1, 1, 70);
  const Tensor w = leaf(values({2, 3, 3, 2}, -1, 1, 71)), b = leaf(values({3}, -1, 1, 72));
  const Fn f = [](const Inputs& in) {
    return ox::conv_transpose2d(in[0], in[1], in[2],
                                {.stride = 2, .padding = {1, 0}, .output_padding = {1, 0}});
  };
  expect_gradcheck("conv_transpose2d", f, {leaf(x), w, b}, true);
  expect_gradcheck("conv_transpose2d transposed input", f, {transposed_leaf(x), w, b});
  expect_gradcheck(
      "conv_transpose2d groups, dilation, unbatched",
      [](const Inputs& in) {
        return ox::conv_transpose2d(in[0], in[1], {}, {.groups = 2, .dilation = {2, 1}});
      },
      {leaf(values({4, 2, 3}, -1, 1, 73)), leaf(values({4, 1, 2, 2}, -1, 1, 74))});
}

// ---- Pooling ---------------------------------------------------------------------------------

TEST(AutogradRulesNn, MaxPool2d) {
  // Distinct values (a permutation of a grid), so no window has a tie within 2 * eps.
  ox::Generator gen(80);
  const Tensor perm = ox::randperm(2 * 2 * 5 * 6, {.dtype = ox::kI64}, &gen);
  const Tensor xv = (perm.to(ox::kF64) * 0.1).view({2, 2, 5, 6});
  const std::vector<std::pair<std::string, ox::MaxPool2dOptions>> opts = {
      {"kernel 2", {}},
      {"stride 1, padding 1", {.stride = 1, .padding = 1}},
      {"dilation, ceil", {.stride = {2, 1}, .dilation = {1, 2}, .ceil_mode = true}},
  };
  for (const auto& [name, o] : opts) {
    const Fn f = [o = o](const Inputs& in) { return ox::max_pool2d(in[0], {2, 3}, o); };
    expect_gradcheck("max_pool2d " + name, f, {leaf(xv)}, true);
    expect_gradcheck("max_pool2d transposed " + name, f, {transposed_leaf(xv)});
  }
  expect_gradcheck("max_pool2d unbatched sliced",
                   [](const Inputs& in) { return ox::max_pool2d(in[0], 2); },
                   {sliced_leaf(xv.select(0, 1))});
}

TEST(AutogradRulesNn, MaxPool2dTiesGoToTheRecordedIndex) {
  // All equal: each window's gradient goes to its first element (its recorded index);
  // overlapping windows (stride 1) add up there.
  const Tensor x = ox::zeros({1, 1, 3, 3}, ox::kF64).requires_grad_();
  const auto [out, idx] = ox::max_pool2d_with_indices(x, 2, {.stride = 1});
  out.sum().backward();
  expect_near_values(idx, {0, 1, 3, 4}, 0, "indices");
  expect_near_values(x.grad().reshape({-1}), {1, 1, 0, 1, 1, 0, 0, 0, 0}, 0, "tie gradient");
}

TEST(AutogradRulesNn, AvgPool2d) {
  const Tensor xv = values({2, 2, 5, 6}, -1, 1, 90);
  const std::vector<std::pair<std::string, ox::AvgPool2dOptions>> opts = {
      {"kernel", {}},
      {"padding, exclude pad", {.stride = 2, .padding = 1, .count_include_pad = false}},
      {"ceil", {.stride = {2, 3}, .padding = {1, 0}, .ceil_mode = true}},
      {"divisor", {.stride = 1, .divisor_override = 5}},
  };
  for (const auto& [name, o] : opts) {
    const Fn f = [o = o](const Inputs& in) { return ox::avg_pool2d(in[0], {3, 2}, o); };
    expect_gradcheck("avg_pool2d " + name, f, {leaf(xv)}, true);
    expect_gradcheck("avg_pool2d transposed " + name, f, {transposed_leaf(xv)});
  }
  expect_gradcheck("avg_pool2d unbatched sliced",
                   [](const Inputs& in) { return ox::avg_pool2d(in[0], 2); },
                   {sliced_leaf(xv.select(0, 0))});
}

TEST(AutogradRulesNn, AdaptiveAvgPool2d) {
  const Tensor xv = values({2, 2, 5, 7}, -1, 1, 100);
  for (const ox::IntPair size : {ox::IntPair(3, 4), ox::IntPair(1, 1), ox::IntPair(5, 9)}) {
    const Fn f = [size](const Inputs& in) { return ox::adaptive_avg_pool2d(in[0], size); };
    const std::string name = std::to_string(size.h) + "x" + std::to_string(size.w);
    expect_gradcheck("adaptive_avg_pool2d " + name, f, {leaf(xv)}, true);
    expect_gradcheck("adaptive_avg_pool2d transposed " + name, f, {transposed_leaf(xv)});
  }
  expect_gradcheck("adaptive_avg_pool2d unbatched sliced",
                   [](const Inputs& in) {
                     return ox::adaptive_avg_pool2d(in[0], {2, 3});
                   },
                   {sliced_leaf(xv.select(0, 0))});
}

TEST(AutogradRulesNn, PoolBackwardKernels) {
  const Tensor x = values({1, 2, 4, 5}, -1, 1, 110);
  const auto [out, idx] = ox::max_pool2d_with_indices(x, 2, {.stride = 1});
  const ox::Shape shape = x.shape();
  expect_gradcheck(
      "max_pool2d_backward",
      [&, idx = idx](const Inputs& in) { return ox::max_pool2d_backward(in[0], idx, shape); },
      {leaf(values(out.shape(), -1, 1, 111))}, true);
  const ox::AvgPool2dOptions ao{.stride = 2, .padding = 1, .count_include_pad = false};
  const Tensor pooled = ox::avg_pool2d(x, 3, ao);
  expect_gradcheck(
      "avg_pool2d_backward",
      [&](const Inputs& in) { return ox::avg_pool2d_backward(in[0], shape, 3, ao); },
      {leaf(values(pooled.shape(), -1, 1, 112))}, true);
  expect_gradcheck(
      "adaptive_avg_pool2d_backward",
      [&](const Inputs& in) { return ox::adaptive_avg_pool2d_backward(in[0], shape); },
      {leaf(values({1, 2, 3, 2}, -1, 1, 113))}, true);
}

// ---- Cross-entropy ---------------------------------------------------------------------------

TEST(AutogradRulesNn, CrossEntropy) {
  const Tensor logits = values({4, 5}, -2, 2, 120);
  const Tensor target = ox::tensor(std::vector<int64_t>{1, 4, 0, 4});
  const Tensor with_ignored = ox::tensor(std::vector<int64_t>{1, -100, 0, 4});
  const Tensor cw = values({5}, 0.5, 2, 121);
  struct Case {
    std::string name;
    Tensor target;
    ox::CrossEntropyOptions o;
    bool twice;
  };
  const std::vector<Case> cases = {
      {"mean", target, {}, true},
      {"sum", target, {.reduction = "sum"}, false},
      {"none", target, {.reduction = "none"}, true},
      {"weights, mean", target, {.weight = cw}, true},
      {"ignore_index, mean", with_ignored, {}, false},
      {"ignore_index 4, none", target, {.ignore_index = 4, .reduction = "none"}, false},
      {"smoothing", target, {.label_smoothing = 0.2}, true},
      {"everything",
       with_ignored,
       {.weight = cw, .reduction = "mean", .label_smoothing = 0.3},
       true},
      {"everything, sum",
       with_ignored,
       {.weight = cw, .reduction = "sum", .label_smoothing = 0.1},
       false},
  };
  for (const Case& c : cases) {
    const Fn f = [c](const Inputs& in) { return ox::cross_entropy(in[0], c.target, c.o); };
    expect_gradcheck("cross_entropy " + c.name, f, {leaf(logits)}, c.twice);
    expect_gradcheck("cross_entropy transposed " + c.name, f, {transposed_leaf(logits)});
    expect_same_grads("cross_entropy " + c.name, f, {leaf(logits)});
  }
  // [N, C, d1, d2] logits, a sliced layout, and unbatched [C].
  const Tensor spatial = values({2, 3, 2, 2}, -2, 2, 122);
  const Tensor st = ox::tensor(std::vector<int64_t>{0, 2, 1, 1, 2, 0, -100, 1}).view({2, 2, 2});
  const Fn fs = [st, cw3 = values({3}, 0.5, 2, 123)](const Inputs& in) {
    return ox::cross_entropy(in[0], st, {.weight = cw3, .label_smoothing = 0.1});
  };
  expect_gradcheck("cross_entropy [N, C, d1, d2]", fs, {leaf(spatial)}, true);
  expect_gradcheck("cross_entropy [N, C, d1, d2] sliced", fs, {sliced_leaf(spatial)});
  expect_same_grads("cross_entropy [N, C, d1, d2]", fs, {leaf(spatial)});
  const Tensor t0 = ox::tensor(std::vector<int64_t>{2}).reshape({});
  expect_gradcheck(
      "cross_entropy unbatched",
      [t0](const Inputs& in) { return ox::cross_entropy(in[0], t0, {.label_smoothing = 0.2}); },
      {leaf(values({5}, -2, 2, 124))}, true);
}

TEST(AutogradRulesNn, CrossEntropyIgnoredRowsGetNoGradient) {
  const std::vector<double> z = {0.5, -1.0, 2.0, 0.0, 1.0, 1.5, -0.5, 0.25, -2.0, 0.75, 0.1, 0.3};
  const Tensor logits = ox::tensor(z).to(ox::kF64).view({3, 4}).requires_grad_();
  const Tensor target = ox::tensor(std::vector<int64_t>{1, 7, 3});
  ox::cross_entropy(logits, target, {.ignore_index = 7}).backward();
  // Mean over the two rows that count: (softmax - onehot) / 2 there, zero in the ignored row.
  std::vector<double> want(12, 0.0);
  for (int64_t r : {0, 2}) {
    double s = 0;
    for (int c = 0; c < 4; ++c) s += std::exp(z[size_t(r * 4 + c)]);
    const int64_t t = r == 0 ? 1 : 3;
    for (int c = 0; c < 4; ++c)
      want[size_t(r * 4 + c)] = (std::exp(z[size_t(r * 4 + c)]) / s - (c == t ? 1.0 : 0.0)) / 2;
  }
  expect_near_values(logits.grad().reshape({-1}), want, 1e-12, "ignore_index gradient");
}

TEST(AutogradRulesNn, CrossEntropyLabelSmoothingByHand) {
  // Equal logits over 4 classes: p = 1/4. With smoothing 0.2 the target distribution is
  // 0.8 * onehot + 0.05, so the loss is log 4 and the gradient p - q = (-0.6, 0.2, 0.2, 0.2).
  const Tensor logits = ox::zeros({1, 4}, ox::kF64).requires_grad_();
  const Tensor loss =
      ox::cross_entropy(logits, ox::tensor(std::vector<int64_t>{0}), {.label_smoothing = 0.2});
  EXPECT_NEAR(loss.item<double>(), std::log(4.0), 1e-12);
  loss.backward();
  expect_near_values(logits.grad().reshape({-1}), {-0.6, 0.2, 0.2, 0.2}, 1e-12, "smoothing");
  // With class weights w and sum reduction: d/dz_c = 0.8 w_t (p_c - [c == t]) + 0.05 (W p_c - w_c).
  const Tensor l2 = ox::zeros({1, 4}, ox::kF64).requires_grad_();
  const std::vector<double> w = {2, 1, 1, 4};
  ox::cross_entropy(
      l2, ox::tensor(std::vector<int64_t>{0}),
      {.weight = ox::tensor(w).to(ox::kF64), .reduction = "sum", .label_smoothing = 0.2})
      .backward();
  std::vector<double> want(4);
  for (int c = 0; c < 4; ++c)
    want[size_t(c)] = 0.8 * 2 * (0.25 - (c == 0 ? 1 : 0)) + 0.05 * (8 * 0.25 - w[size_t(c)]);
  expect_near_values(l2.grad().reshape({-1}), want, 1e-12, "weighted smoothing");
}

// ---- Dropout ---------------------------------------------------------------------------------

TEST(AutogradRulesNn, Dropout) {
  // A fresh generator per call: every evaluation draws the same mask.
  const Fn f = [](const Inputs& in) {
    ox::Generator gen(130);
    return ox::dropout(in[0], 0.4, true, &gen);
  };
  const Tensor xv = values({3, 4}, -1, 1, 131);
  expect_gradcheck("dropout", f, {leaf(xv)}, true);
  expect_gradcheck("dropout transposed", f, {transposed_leaf(xv)});
  // The gradient is the mask: 0 or 1 / (1 - p), the factor the output shows on ones.
  const Tensor x = ox::ones({50}, ox::kF64).requires_grad_();
  const Tensor out = f({x});
  out.sum().backward();
  const std::vector<double> mask = out.detach().to_vector<double>();
  for (double m : mask) EXPECT_TRUE(m == 0.0 || std::abs(m - 1 / 0.6) < 1e-12) << m;
  expect_near_values(x.grad(), mask, 0, "dropout gradient");
  // Not training: the identity, gradient ones.
  const Tensor y = ox::ones({5}, ox::kF64).requires_grad_();
  ox::dropout(y, 0.4, false).sum().backward();
  expect_near_values(y.grad(), std::vector<double>(5, 1.0), 0, "eval dropout gradient");
}

}  // namespace
