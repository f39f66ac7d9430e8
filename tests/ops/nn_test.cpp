// Softmax, layer/RMS norm, cross-entropy and dropout against f64 loops written here.

#include <cmath>
#include <vector>

#include "test_util.h"

namespace {

using oxtest::kind_of;

// Row-major values of a [rows, n] problem with a known pattern, and a tensor holding them.
std::vector<double> pattern(int64_t count, double scale = 1.0, double shift = 0.0) {
  std::vector<double> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) v[i] = shift + scale * std::sin(0.37 * double(i) + 0.1);
  return v;
}

ox::Tensor as_tensor(const std::vector<double>& v, const ox::Shape& shape, ox::DType dt) {
  return ox::tensor(v, shape).to(dt);
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double atol,
                  double rtol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
      continue;
    }
    EXPECT_NEAR(got[i], want[i], atol + rtol * std::fabs(want[i])) << "at " << i;
  }
}

std::vector<double> ref_softmax(const std::vector<double>& x, int64_t n, bool log) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / n; ++r) {
    double m = -INFINITY, s = 0;
    for (int64_t i = 0; i < n; ++i) m = std::max(m, x[r * n + i]);
    for (int64_t i = 0; i < n; ++i) s += std::exp(x[r * n + i] - m);
    for (int64_t i = 0; i < n; ++i)
      y[r * n + i] = log ? x[r * n + i] - m - std::log(s) : std::exp(x[r * n + i] - m) / s;
  }
  return y;
}

TEST(Softmax, MatchesF64RowsForEachDTypeAndLayout) {
  const int64_t rows = 37, n = 23;
  const auto x = pattern(rows * n, 5.0);
  for (bool log : {false, true}) {
    const auto want = ref_softmax(x, n, log);
    for (ox::DType dt : {ox::kF32, ox::kF64}) {
      const ox::Tensor t = as_tensor(x, {rows, n}, dt);
      const ox::Tensor y = log ? ox::log_softmax(t, -1) : ox::softmax(t, 1);
      EXPECT_EQ(y.dtype(), dt);
      const double tol = dt == ox::kF64 ? 1e-12 : 2e-6;
      expect_close(y.to_vector<double>(), want, tol, tol);
      // Along dim 0 of the transposed tensor: the same rows, read through strides.
      const ox::Tensor tt = as_tensor(x, {rows, n}, dt).t();
      const ox::Tensor yt = log ? ox::log_softmax(tt, 0) : ox::softmax(tt, 0);
      expect_close(yt.t().contiguous().to_vector<double>(), want, tol, tol);
    }
  }
}

TEST(Softmax, HalfTypesComputeInF32) {
  const auto x = pattern(4 * 812, 3.0);
  const auto want = ref_softmax(x, 812, false);
  const ox::Tensor y = ox::softmax(as_tensor(x, {4, 812}, ox::kBF16), -1);
  EXPECT_EQ(y.dtype(), ox::kBF16);
  expect_close(y.to_vector<double>(), want, 1e-4, 1.6e-2);
}

TEST(Softmax, StableForHugeValuesAndNaNForAllMinusInfRows) {
  const double inf = INFINITY;
  const ox::Tensor x =
      ox::tensor(std::vector<double>{1e300, 1e300, -inf, -inf, -inf, -inf}, {2, 3});
  const auto y = ox::softmax(x, 1).to_vector<double>();
  EXPECT_DOUBLE_EQ(y[0], 0.5);
  EXPECT_DOUBLE_EQ(y[1], 0.5);
  EXPECT_EQ(y[2], 0.0);
  for (int i = 3; i < 6; ++i) EXPECT_TRUE(std::isnan(y[i]));
  const auto ly = ox::log_softmax(x, 1).to_vector<double>();
  EXPECT_DOUBLE_EQ(ly[0], -std::log(2.0));
  EXPECT_EQ(ly[2], -inf);
}

TEST(Softmax, BackwardMatchesClosedForm) {
  const int64_t rows = 5, n = 7;
  const auto x = pattern(rows * n, 2.0), g = pattern(rows * n, 1.0, 0.3);
  for (bool log : {false, true}) {
    const ox::Tensor xt = ox::tensor(x, {rows, n});
    const ox::Tensor y = log ? ox::log_softmax(xt, 1) : ox::softmax(xt, 1);
    const ox::Tensor gi = log ? ox::log_softmax_backward(ox::tensor(g, {rows, n}), y, 1)
                              : ox::softmax_backward(ox::tensor(g, {rows, n}), y, 1);
    const auto p = ref_softmax(x, n, false);
    std::vector<double> want(x.size());
    for (int64_t r = 0; r < rows; ++r) {
      double dot = 0, gsum = 0;
      for (int64_t i = 0; i < n; ++i) dot += g[r * n + i] * p[r * n + i], gsum += g[r * n + i];
      for (int64_t i = 0; i < n; ++i)
        want[r * n + i] =
            log ? g[r * n + i] - p[r * n + i] * gsum : p[r * n + i] * (g[r * n + i] - dot);
    }
    expect_close(gi.to_vector<double>(), want, 1e-12, 1e-10);
  }
}

TEST(Softmax, RefusesIntegersUnlessGivenADType) {
  EXPECT_EQ(kind_of([] { ox::softmax(ox::arange(4), 0); }), ox::ErrorKind::DType);
  const auto y = ox::softmax(ox::arange(2), 0, ox::kF64).to_vector<double>();
  EXPECT_NEAR(y[1], std::exp(1.0) / (1 + std::exp(1.0)), 1e-15);
  EXPECT_EQ(kind_of([] { ox::softmax(ox::zeros({2, 3}), 2); }), ox::ErrorKind::Index);
  EXPECT_EQ(ox::softmax(ox::zeros({0, 3}), 1).numel(), 0);
}

struct NormRef {
  std::vector<double> out, mean, rstd;
};

NormRef ref_norm(const std::vector<double>& x, int64_t n, const std::vector<double>& w,
                 const std::vector<double>& b, double eps, bool rms) {
  NormRef r;
  for (size_t row = 0; row < x.size() / n; ++row) {
    double mu = 0, var = 0;
    if (!rms) {
      for (int64_t i = 0; i < n; ++i) mu += x[row * n + i];
      mu /= double(n);
    }
    for (int64_t i = 0; i < n; ++i) var += (x[row * n + i] - mu) * (x[row * n + i] - mu);
    const double inv = 1 / std::sqrt(var / double(n) + eps);
    r.mean.push_back(mu);
    r.rstd.push_back(inv);
    for (int64_t i = 0; i < n; ++i)
      r.out.push_back((x[row * n + i] - mu) * inv * (w.empty() ? 1 : w[i]) +
                      (b.empty() ? 0 : b[i]));
  }
  return r;
}

TEST(LayerNorm, MatchesF64WithAndWithoutAffine) {
  const int64_t rows = 6, n = 4 * 5;
  const auto x = pattern(rows * n, 3.0, 1.0), w = pattern(n, 0.5, 1.0), b = pattern(n, 0.2);
  for (ox::DType dt : {ox::kF32, ox::kF64}) {
    const double tol = dt == ox::kF64 ? 1e-12 : 1e-5;
    const ox::Tensor xt = as_tensor(x, {rows, 4, 5}, dt);
    const NormRef want = ref_norm(x, n, w, b, 1e-5, false);
    const ox::NormResult got =
        ox::layer_norm_forward(xt, {4, 5}, as_tensor(w, {4, 5}, dt), as_tensor(b, {4, 5}, dt));
    expect_close(got.out.to_vector<double>(), want.out, tol, tol);
    expect_close(got.mean.to_vector<double>(), want.mean, tol, tol);
    expect_close(got.rstd.to_vector<double>(), want.rstd, tol, tol);
    EXPECT_EQ(got.mean.shape(), (ox::Shape{rows, 1, 1}));
    const NormRef plain = ref_norm(x, n, {}, {}, 1e-5, false);
    expect_close(ox::layer_norm(xt, {4, 5}).to_vector<double>(), plain.out, tol, tol);
  }
}

TEST(LayerNorm, KeepsVarianceOfRowsWithLargeMean) {
  // Mean 1e6, spread 1e-3: f32 sums would lose the variance entirely.
  std::vector<double> x;
  for (int i = 0; i < 1000; ++i) x.push_back(1e6 + 1e-3 * ((i % 7) - 3));
  const NormRef want = ref_norm(x, 1000, {}, {}, 1e-12, false);
  const ox::Tensor got = ox::layer_norm(ox::tensor(x, {1, 1000}), {1000}, {}, {}, 1e-12);
  expect_close(got.to_vector<double>(), want.out, 1e-9, 1e-9);
}

TEST(RmsNorm, MatchesF64AndDefaultsEpsToMachineEpsilon) {
  const int64_t rows = 3, n = 23;
  const auto x = pattern(rows * n, 2.0, 0.5), w = pattern(n, 0.3, 1.0);
  const NormRef want = ref_norm(x, n, w, {}, 1.1920928955078125e-07, true);
  const ox::Tensor got =
      ox::rms_norm(as_tensor(x, {rows, n}, ox::kF32), {n}, as_tensor(w, {n}, ox::kF32));
  expect_close(got.to_vector<double>(), want.out, 1e-5, 1e-5);
  EXPECT_FALSE(ox::rms_norm_forward(ox::tensor(x, {rows, n}), {n}).mean.defined());
}

// The backward kernels against central differences of the f64 reference.
TEST(LayerNorm, BackwardMatchesFiniteDifferences) {
  const int64_t rows = 3, n = 5;
  const auto x = pattern(rows * n, 1.5, 0.2), w = pattern(n, 0.4, 1.0), b = pattern(n, 0.1);
  const auto g = pattern(rows * n, 1.0, -0.2);
  for (bool rms : {false, true}) {
    const auto loss = [&](const std::vector<double>& xv, const std::vector<double>& wv,
                          const std::vector<double>& bv) {
      const auto y = ref_norm(xv, n, wv, rms ? std::vector<double>{} : bv, 1e-5, rms).out;
      double s = 0;
      for (size_t i = 0; i < y.size(); ++i) s += y[i] * g[i];
      return s;
    };
    const auto numeric = [&](int which, size_t i) {
      const double h = 1e-6;
      std::vector<double> xv = x, wv = w, bv = b;
      std::vector<double>& t = which == 0 ? xv : which == 1 ? wv : bv;
      t[i] += h;
      const double up = loss(xv, wv, bv);
      t[i] -= 2 * h;
      return (up - loss(xv, wv, bv)) / (2 * h);
    };
    const ox::Tensor xt = ox::tensor(x, {rows, n}), wt = ox::tensor(w, {n});
    ox::NormGrads grads;
    if (rms) {
      const auto fwd = ox::rms_norm_forward(xt, {n}, wt, 1e-5);
      grads = ox::rms_norm_backward(ox::tensor(g, {rows, n}), xt, {n}, fwd.rstd, wt, true);
    } else {
      const auto fwd = ox::layer_norm_forward(xt, {n}, wt, ox::tensor(b, {n}), 1e-5);
      grads = ox::layer_norm_backward(ox::tensor(g, {rows, n}), xt, {n}, fwd.mean, fwd.rstd, wt,
                                      true, true);
    }
    const auto gx = grads.input.to_vector<double>(), gw = grads.weight.to_vector<double>();
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(gx[i], numeric(0, i), 1e-6) << i;
    for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(gw[i], numeric(1, i), 1e-6) << i;
    if (!rms) {
      const auto gb = grads.bias.to_vector<double>();
      for (size_t i = 0; i < b.size(); ++i) EXPECT_NEAR(gb[i], numeric(2, i), 1e-6) << i;
    }
  }
}

TEST(LayerNorm, RefusesBadArguments) {
  const ox::Tensor x = ox::zeros({2, 3});
  EXPECT_EQ(kind_of([&] { ox::layer_norm(x, {2}); }), ox::ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::layer_norm(x, {3}, ox::ones({4})); }), ox::ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::layer_norm(x, {3}, ox::ones({3}, ox::kF64)); }),
            ox::ErrorKind::DType);
  EXPECT_EQ(kind_of([] {
              ox::layer_norm(ox::zeros({2, 3}, ox::kI32), {3});
            }),
            ox::ErrorKind::DType);
}

TEST(LayerNorm, BitwiseSameAtOneAndTwoThreads) {
  const auto x = pattern(1029 * 91, 3.0);
  const ox::Tensor xt = ox::tensor(x, {1029, 91}).to(ox::kF32), w = ox::ones({91});
  ox::set_num_threads(1);
  const auto a = ox::layer_norm_forward(xt, {91}, w, w);
  const auto ga = ox::layer_norm_backward(a.out, xt, {91}, a.mean, a.rstd, w, true, true);
  ox::set_num_threads(2);
  const auto b = ox::layer_norm_forward(xt, {91}, w, w);
  const auto gb = ox::layer_norm_backward(b.out, xt, {91}, b.mean, b.rstd, w, true, true);
  EXPECT_EQ(a.out.to_vector<float>(), b.out.to_vector<float>());
  EXPECT_EQ(ga.weight.to_vector<float>(), gb.weight.to_vector<float>());
  EXPECT_EQ(ga.input.to_vector<float>(), gb.input.to_vector<float>());
}

// f64 reference cross-entropy of one row.
double ref_row_loss(const double* x, int64_t c, int64_t t, const std::vector<double>& w,
                    double eps) {
  double m = -INFINITY, s = 0;
  for (int64_t i = 0; i < c; ++i) m = std::max(m, x[i]);
  for (int64_t i = 0; i < c; ++i) s += std::exp(x[i] - m);
  const double lse = m + std::log(s);
  const auto wc = [&](int64_t i) { return w.empty() ? 1.0 : w[i]; };
  double l = (1 - eps) * wc(t) * (lse - x[t]);
  for (int64_t i = 0; i < c; ++i) l += eps / double(c) * wc(i) * (lse - x[i]);
  return l;
}

TEST(CrossEntropy, MatchesF64WithWeightsIgnoreIndexAndSmoothing) {
  const int64_t n = 9, c = 4;
  const auto x = pattern(n * c, 2.0);
  const std::vector<int64_t> t = {0, 3, -100, 1, 2, 2, -100, 3, 0};
  const std::vector<double> w = {0.5, 2.0, 1.0, 1.5};
  for (double eps : {0.0, 0.1}) {
    for (bool weighted : {false, true}) {
      double total = 0, weights = 0;
      std::vector<double> rows;
      for (int64_t r = 0; r < n; ++r) {
        if (t[r] == -100) {
          rows.push_back(0);
          continue;
        }
        const double l =
            ref_row_loss(&x[r * c], c, t[r], weighted ? w : std::vector<double>{}, eps);
        rows.push_back(l);
        total += l;
        weights += weighted ? w[t[r]] : 1.0;
      }
      ox::CrossEntropyOptions o{.label_smoothing = eps};
      if (weighted) o.weight = ox::tensor(w);
      const ox::Tensor logits = ox::tensor(x, {n, c}), target = ox::tensor(t);
      EXPECT_NEAR(ox::cross_entropy(logits, target, o).item<double>(), total / weights, 1e-12);
      o.reduction = "sum";
      EXPECT_NEAR(ox::cross_entropy(logits, target, o).item<double>(), total, 1e-12);
      o.reduction = "none";
      expect_close(ox::cross_entropy(logits, target, o).to_vector<double>(), rows, 1e-12, 1e-12);
    }
  }
}

TEST(CrossEntropy, SpatialAndUnbatchedShapes) {
  // [N=2, C=3, L=4] logits: class dim 1.
  const auto x = pattern(2 * 3 * 4, 1.7);
  const std::vector<int64_t> t = {0, 1, 2, 1, 2, 2, 0, 1};
  double total = 0;
  for (int64_t nb = 0; nb < 2; ++nb)
    for (int64_t l = 0; l < 4; ++l) {
      double row[3];
      for (int64_t k = 0; k < 3; ++k) row[k] = x[(nb * 3 + k) * 4 + l];
      total += ref_row_loss(row, 3, t[nb * 4 + l], {}, 0.0);
    }
  EXPECT_NEAR(ox::cross_entropy(ox::tensor(x, {2, 3, 4}), ox::tensor(t, {2, 4})).item<double>(),
              total / 8, 1e-12);
  const std::vector<double> one = {0.2, -1.0, 3.0};
  EXPECT_NEAR(ox::cross_entropy(ox::tensor(one), ox::scalar_tensor(2)).item<double>(),
              ref_row_loss(one.data(), 3, 2, {}, 0.0), 1e-12);
}

TEST(CrossEntropy, BackwardMatchesFiniteDifferences) {
  const int64_t n = 3, c = 5;
  const auto x = pattern(2 * n * c, 1.3);  // [N=2, C=5, L=3] for the spatial path too
  const std::vector<int64_t> t = {4, 0, -100, 2, 2, 1};
  const std::vector<double> w = {1.0, 0.5, 2.0, 1.5, 0.7};
  ox::CrossEntropyOptions o{.weight = ox::tensor(w), .label_smoothing = 0.2};
  const ox::Tensor logits = ox::tensor(x, {2, c, n}), target = ox::tensor(t, {2, n});
  const auto loss_at = [&](const std::vector<double>& xv) {
    return ox::cross_entropy(ox::tensor(xv, {2, c, n}), target, o).item<double>();
  };
  const auto fwd = ox::cross_entropy_forward(logits, target, o);
  const auto grad = ox::cross_entropy_backward(ox::scalar_tensor(2.0, {.dtype = ox::kF64}), logits,
                                               target, fwd.total_weight, o)
                        .to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) {
    auto up = x, down = x;
    up[i] += 1e-6;
    down[i] -= 1e-6;
    EXPECT_NEAR(grad[i], 2.0 * (loss_at(up) - loss_at(down)) / 2e-6, 1e-6) << i;
  }
}

TEST(CrossEntropy, RefusesBadTargets) {
  const ox::Tensor logits = ox::zeros({2, 3});
  const ox::Error e = oxtest::caught([&] { ox::cross_entropy(logits, ox::tensor({0, 3})); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Index);
  EXPECT_TRUE(oxtest::contains(e, "target 3")) << e.what();
  EXPECT_EQ(kind_of([&] { ox::cross_entropy(logits, ox::tensor({0, -2})); }), ox::ErrorKind::Index);
  EXPECT_EQ(kind_of([&] {
              ox::cross_entropy(logits, ox::tensor({0.f, 1.f}));
            }),
            ox::ErrorKind::DType);
  EXPECT_EQ(kind_of([&] {
              ox::cross_entropy(logits, ox::tensor({0, 1, 2}));
            }),
            ox::ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] {
              ox::cross_entropy(logits, ox::tensor({0, 1}), {.reduction = "avg"});
            }),
            ox::ErrorKind::Value);
  // All targets ignored: the mean is 0/0, NaN as PyTorch.
  EXPECT_TRUE(std::isnan(ox::cross_entropy(logits, ox::tensor({-100, -100})).item<float>()));
}

TEST(Dropout, ScalesKeptElementsAndIsReproducible) {
  const ox::Tensor x = ox::ones({100000});
  ox::manual_seed(7);
  const auto a = ox::dropout_forward(x, 0.25);
  ox::manual_seed(7);
  const ox::Tensor b = ox::dropout(x, 0.25);
  const auto va = a.out.to_vector<float>(), vb = b.to_vector<float>();
  EXPECT_EQ(va, vb);
  int64_t kept = 0;
  for (float v : va) {
    EXPECT_TRUE(v == 0.f || std::fabs(v - 1.f / 0.75f) < 1e-6f) << v;
    kept += v != 0.f;
  }
  EXPECT_NEAR(double(kept) / 100000.0, 0.75, 0.01);
  EXPECT_TRUE(ox::dropout(x, 0.25, /*train=*/false).is_same_storage(x));
  EXPECT_EQ(ox::dropout(x, 1.0).to_vector<float>(), std::vector<float>(100000, 0.f));
  EXPECT_EQ(kind_of([&] { ox::dropout(x, 1.5); }), ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([] { ox::dropout(ox::ones({2}, ox::kI64), 0.5); }), ox::ErrorKind::DType);
}

}  // namespace
