// ox::nn::init: each initializer's distribution against its closed-form moments and bounds.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <functional>

#include "test_util.h"

namespace {

using namespace ox;
using oxtest::kind_of;

struct Moments {
  double mean, var, min, max;
};
Moments moments(const Tensor& t) {
  const std::vector<double> v = t.to_vector<double>();
  double sum = 0, sq = 0, lo = INFINITY, hi = -INFINITY;
  for (double x : v) {
    sum += x;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  const double mean = sum / double(v.size());
  for (double x : v) sq += (x - mean) * (x - mean);
  return {mean, sq / double(v.size()), lo, hi};
}

TEST(Init, FansAndGains) {
  const nn::init::Fans f = nn::init::calculate_fans(empty({8, 3, 5, 2}));
  EXPECT_EQ(f.fan_in, 30);
  EXPECT_EQ(f.fan_out, 80);
  EXPECT_EQ(kind_of([] { nn::init::calculate_fans(empty({4})); }), ErrorKind::Shape);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("relu"), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("tanh"), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("leaky_relu", 0.2), std::sqrt(2.0 / 1.04));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("conv2d"), 1.0);
  EXPECT_EQ(kind_of([] { nn::init::calculate_gain("swish"); }), ErrorKind::Value);
}

TEST(Init, UniformNormalConstant) {
  manual_seed(7);
  const Tensor t = empty({200, 300});
  Moments m = moments(nn::init::uniform_(t, -2, 4));
  EXPECT_GE(m.min, -2);
  EXPECT_LT(m.max, 4);
  EXPECT_NEAR(m.mean, 1, 0.02);
  EXPECT_NEAR(m.var, 36.0 / 12, 0.03);
  m = moments(nn::init::normal_(t, 1.5, 0.5));
  EXPECT_NEAR(m.mean, 1.5, 0.005);
  EXPECT_NEAR(m.var, 0.25, 0.005);
  EXPECT_EQ(moments(nn::init::constant_(t, 0.25)).min, 0.25);
  EXPECT_EQ(moments(nn::init::ones_(t)).max, 1.0);
  EXPECT_EQ(moments(nn::init::zeros_(t)).max, 0.0);
  EXPECT_EQ(nn::init::eye_(empty({2, 3})).to_vector<float>(),
            (std::vector<float>{1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(kind_of([] { nn::init::eye_(empty({2, 2, 2})); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([] { nn::init::uniform_(empty({2}, {.dtype = kI64})); }), ErrorKind::DType);
  // Parameters (leaves that require grad) are filled without recording.
  Tensor p = empty({3}).requires_grad_();
  nn::init::normal_(p);
  EXPECT_TRUE(p.is_leaf());
  // A generator makes the draw reproducible on its own.
  Generator g1(42), g2(42);
  EXPECT_EQ(nn::init::normal_(empty({5}), 0, 1, &g1).to_vector<float>(),
            nn::init::normal_(empty({5}), 0, 1, &g2).to_vector<float>());
}

TEST(Init, XavierAndKaiming) {
  manual_seed(8);
  const Tensor t = empty({300, 200});  // fan_in 200, fan_out 300
  Moments m = moments(nn::init::xavier_uniform_(t, 2.0));
  const double xb = 2.0 * std::sqrt(6.0 / 500);
  EXPECT_GE(m.min, -xb);
  EXPECT_LE(m.max, xb);
  EXPECT_NEAR(m.var, xb * xb / 3, 0.02 * xb * xb / 3);
  m = moments(nn::init::xavier_normal_(t));
  EXPECT_NEAR(m.var, 2.0 / 500, 0.02 * 2.0 / 500);
  m = moments(nn::init::kaiming_uniform_(t, 0, "fan_in", "relu"));
  const double kb = std::sqrt(3.0) * std::sqrt(2.0) / std::sqrt(200.0);
  EXPECT_GE(m.min, -kb);
  EXPECT_LE(m.max, kb);
  EXPECT_NEAR(m.var, 2.0 / 200, 0.02 * 2.0 / 200);
  m = moments(nn::init::kaiming_normal_(t, 0, "fan_out", "relu"));
  EXPECT_NEAR(m.var, 2.0 / 300, 0.02 * 2.0 / 300);
  EXPECT_EQ(kind_of([&] { nn::init::kaiming_normal_(t, 0, "fan_middle"); }), ErrorKind::Value);
}

TEST(Init, TruncNormalMatchesTheTruncatedMoments) {
  manual_seed(9);
  const Tensor t = empty({400, 250}, {.dtype = kF64});
  const double mean = 0.5, sd = 2.0, a = -1.0, b = 3.0;
  const Moments m = moments(nn::init::trunc_normal_(t, mean, sd, a, b));
  EXPECT_GE(m.min, a);
  EXPECT_LE(m.max, b);
  // Closed forms of the truncated normal: alpha, beta standardized bounds, Z = Φ(β) - Φ(α).
  const auto phi = [](double x) { return std::exp(-x * x / 2) / std::sqrt(2 * M_PI); };
  const auto Phi = [](double x) { return 0.5 * (1 + std::erf(x / std::sqrt(2.0))); };
  const double al = (a - mean) / sd, be = (b - mean) / sd, z = Phi(be) - Phi(al);
  const double want_mean = mean + sd * (phi(al) - phi(be)) / z;
  const double want_var =
      sd * sd * (1 + (al * phi(al) - be * phi(be)) / z - std::pow((phi(al) - phi(be)) / z, 2));
  EXPECT_NEAR(m.mean, want_mean, 0.01);
  EXPECT_NEAR(m.var, want_var, 0.01 * want_var);
}

TEST(Init, OrthogonalGivesOrthonormalRowsOrColumns) {
  manual_seed(10);
  for (const Shape& shape : {Shape{6, 4}, Shape{3, 8}, Shape{4, 2, 3}}) {
    const Tensor t = nn::init::orthogonal_(empty(shape, {.dtype = kF64}), 2.0);
    const Tensor q = t.reshape({shape[0], -1});
    const bool tall = q.size(0) >= q.size(1);
    const Tensor gram = tall ? matmul(q.t(), q) : matmul(q, q.t());
    const std::vector<double> g = gram.to_vector<double>();
    const int64_t n = gram.size(0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) EXPECT_NEAR(g[i * n + j], i == j ? 4.0 : 0.0, 1e-12);
  }
  EXPECT_EQ(kind_of([] { nn::init::orthogonal_(empty({3})); }), ErrorKind::Shape);
}

TEST(Init, SkipInitGuardLeavesTensorsAsTheyAreButStillChecks) {
  ox::Tensor t = ox::full({3, 4}, 7.0);
  {
    nn::init::SkipInitGuard skip;
    for (const auto& fill : std::vector<std::function<void()>>{
             [&] { nn::init::uniform_(t, -1, 1); }, [&] { nn::init::normal_(t); },
             [&] { nn::init::zeros_(t); }, [&] { nn::init::ones_(t); }, [&] { nn::init::eye_(t); },
             [&] { nn::init::kaiming_uniform_(t); }, [&] { nn::init::xavier_normal_(t); },
             [&] { nn::init::trunc_normal_(t); }, [&] { nn::init::orthogonal_(t); }}) {
      fill();
      EXPECT_TRUE(ox::equal(t, ox::full({3, 4}, 7.0)));
    }
    EXPECT_THROW(nn::init::uniform_(t, 1, -1), ox::Error);  // the checks still run
    EXPECT_THROW(nn::init::zeros_(ox::Tensor()), ox::Error);
    // A layer built meanwhile keeps whatever its fresh memory held: no random numbers drawn.
    const uint64_t offset = ox::default_generator().offset();
    ox::nn::Linear layer(16, 16);
    EXPECT_EQ(ox::default_generator().offset(), offset);
  }
  nn::init::uniform_(t, 2, 3);  // the guard is gone
  EXPECT_TRUE(ox::all(ox::ge(t, 2.0)).item<bool>());
}

}  // namespace
