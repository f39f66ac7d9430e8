// Gradient clipping: the total norm, the scaled gradients, inf norms and non-finite norms.

#include <cmath>
#include <limits>

#include "optim_test_util.h"

using namespace oxtest;
using ox::nn::utils::clip_grad_norm_;
using ox::nn::utils::clip_grad_value_;

TEST(ClipGrad, TwoNormScalesEveryGradient) {
  ox::Tensor a = leaf({1.0, 2.0}), b = leaf({3.0}), c = leaf({7.0});
  set_grad(a, {3.0, 4.0});
  set_grad(b, {-12.0});  // total: sqrt(9 + 16 + 144) = 13; c has no gradient
  const ox::Tensor total = clip_grad_norm_({a, b, c}, 6.5);
  EXPECT_EQ(total.dim(), 0);
  EXPECT_NEAR(total.item<double>(), 13.0, 1e-12);
  const double coef = 6.5 / (13.0 + 1e-6);
  expect_close(a.grad().to_vector<double>(), {3 * coef, 4 * coef}, 1e-14, 1e-14, "a");
  expect_close(b.grad().to_vector<double>(), {-12 * coef}, 1e-14, 1e-14, "b");
  EXPECT_FALSE(c.grad().defined());
}

TEST(ClipGrad, BelowTheLimitNothingChanges) {
  ox::Tensor a = leaf({1.0, 2.0});
  set_grad(a, {0.3, -0.4});
  const ox::Tensor total = clip_grad_norm_({a}, 1.0);
  EXPECT_NEAR(total.item<double>(), 0.5, 1e-15);
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{0.3, -0.4}));
}

TEST(ClipGrad, InfAndOtherNorms) {
  ox::Tensor a = leaf({1.0, 2.0}), b = leaf({3.0});
  set_grad(a, {3.0, -4.0});
  set_grad(b, {-2.0});
  const double inf = std::numeric_limits<double>::infinity();
  const ox::Tensor total = clip_grad_norm_({a, b}, 2.0, inf);
  EXPECT_EQ(total.item<double>(), 4.0);
  const double coef = 2.0 / (4.0 + 1e-6);
  expect_close(a.grad().to_vector<double>(), {3 * coef, -4 * coef}, 1e-14, 1e-14, "inf a");
  expect_close(b.grad().to_vector<double>(), {-2 * coef}, 1e-14, 1e-14, "inf b");

  set_grad(a, {3.0, -4.0});
  set_grad(b, {-2.0});
  const ox::Tensor one = clip_grad_norm_({a, b}, 100.0, 1.0);
  EXPECT_NEAR(one.item<double>(), 9.0, 1e-14);
}

TEST(ClipGrad, NonFiniteNorm) {
  ox::Tensor a = leaf({1.0, 2.0});
  set_grad(a, {std::numeric_limits<double>::infinity(), 1.0});
  const ox::Error e = caught([&] { clip_grad_norm_({a}, 1.0, 2.0, /*error_if_nonfinite=*/true); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Value);
  EXPECT_TRUE(contains(e, "clip_grad_norm_")) << e.what();
  EXPECT_EQ(a.grad().to_vector<double>()[1], 1.0);  // untouched when it throws
  set_grad(a, {std::nan(""), 1.0});
  EXPECT_EQ(kind_of([&] { clip_grad_norm_({a}, 1.0, 2.0, true); }), ox::ErrorKind::Value);
  const ox::Tensor total = clip_grad_norm_({a}, 1.0);  // no check: NaN comes back
  EXPECT_TRUE(std::isnan(total.item<double>()));
}

TEST(ClipGrad, F32AndNoGradients) {
  ox::Tensor a = leaf({1.0, 2.0}, ox::kF32);
  set_grad(a, {6.0, 8.0});
  const ox::Tensor total = clip_grad_norm_({a}, 5.0);
  EXPECT_EQ(total.dtype(), ox::kF32);
  EXPECT_NEAR(total.item<double>(), 10.0, 1e-5);
  expect_close(a.grad().to_vector<double>(), {3.0, 4.0}, 1.3e-6, 1e-5, "f32");
  ox::Tensor b = leaf({1.0});
  EXPECT_EQ(clip_grad_norm_({b}, 1.0).item<double>(), 0.0);
}

TEST(ClipGrad, Value) {
  ox::Tensor a = leaf({1.0, 2.0, 3.0});
  set_grad(a, {-5.0, 0.25, 2.0});
  clip_grad_value_({a}, 1.0);
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{-1.0, 0.25, 1.0}));
}
