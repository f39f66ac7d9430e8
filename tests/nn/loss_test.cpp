// The losses of oxmera/nn/loss.h against plain f64 loops written here (each formula spelled out
// from torch.nn.functional's definition), in f32 and f64, for every reduction; layouts,
// broadcasting, empty inputs, gradients, the module forms and bad inputs.

#include <gtest/gtest.h>
#include <oxmera/nn/loss.h>
#include <oxmera/oxmera.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

namespace F = ox::nn::functional;
using ox::Tensor;
using oxtest::kind_of;
using Vec = std::vector<double>;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const char* const kReductions[] = {"none", "mean", "sum"};
const ox::DType kFloatTypes[] = {ox::kF32, ox::kF64};

Vec values_of(const Tensor& t) { return t.to(ox::kF64).contiguous().to_vector<double>(); }

// Values in [lo, hi), fixed by salt, as a tensor of dtype dt.
Tensor uniform(const oxtest::ShapeV& shape, ox::DType dt, uint64_t salt, double lo, double hi) {
  return oxtest::contiguous_from(shape, dt,
                                 [&](int64_t i) { return oxtest::uniform_at(i, salt, lo, hi); });
}

// The reduction of per-element losses: mean of none is NaN, sum of none is 0.
Vec reduce_ref(const Vec& per, const std::string& reduction) {
  if (reduction == "none") return per;
  double total = 0;
  for (double v : per) total += v;
  if (reduction == "sum") return {total};
  return {total / static_cast<double>(per.size())};
}

void expect_close(const Tensor& actual, const Vec& expected, ox::DType dt,
                  const std::string& what) {
  const double atol = dt == ox::kF32 ? 1.3e-6 : 1e-7;
  const double rtol = dt == ox::kF32 ? 1e-5 : 1e-7;
  EXPECT_EQ(actual.dtype(), dt) << what;
  const Vec got = values_of(actual);
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " [" << i << "]";
      continue;
    }
    EXPECT_LE(std::abs(got[i] - expected[i]), atol + rtol * std::abs(expected[i]))
        << what << " [" << i << "]: " << got[i] << " vs " << expected[i];
  }
}

// ---- Elementwise losses of (input, target) -------------------------------------------------

struct PairCase {
  std::string name;
  std::function<Tensor(const Tensor&, const Tensor&, std::string_view)> loss;
  std::function<double(double, double)> reference;  // one element's loss
  double input_lo, input_hi, target_lo, target_hi;
};

double softplus_ref(double x) { return std::max(-x, 0.0) + std::log1p(std::exp(-std::abs(x))); }

std::vector<PairCase> pair_cases() {
  const double pi = std::numbers::pi;
  return {
      {"mse", [](auto& x, auto& y, auto r) { return F::mse_loss(x, y, {.reduction = r}); },
       [](double x, double y) { return (x - y) * (x - y); }, -2, 2, -2, 2},
      {"l1", [](auto& x, auto& y, auto r) { return F::l1_loss(x, y, {.reduction = r}); },
       [](double x, double y) { return std::abs(x - y); }, -2, 2, -2, 2},
      {"smooth_l1",
       [](auto& x, auto& y, auto r) {
         return F::smooth_l1_loss(x, y, {.reduction = r, .beta = 0.5});
       },
       [](double x, double y) {
         const double d = std::abs(x - y);
         return d < 0.5 ? 0.5 * d * d / 0.5 : d - 0.25;
       },
       -1, 1, -1, 1},
      {"smooth_l1_beta0",
       [](auto& x, auto& y, auto r) {
         return F::smooth_l1_loss(x, y, {.reduction = r, .beta = 0.0});
       },
       [](double x, double y) { return std::abs(x - y); }, -1, 1, -1, 1},
      {"huber",
       [](auto& x, auto& y, auto r) { return F::huber_loss(x, y, {.reduction = r, .delta = 0.7}); },
       [](double x, double y) {
         const double d = std::abs(x - y);
         return d < 0.7 ? 0.5 * d * d : 0.7 * (d - 0.35);
       },
       -1.5, 1.5, -1.5, 1.5},
      {"poisson_log",
       [](auto& x, auto& y, auto r) { return F::poisson_nll_loss(x, y, {.reduction = r}); },
       [](double x, double y) { return std::exp(x) - y * x; }, -1, 1, 0, 4},
      {"poisson_rate_full",
       [](auto& x, auto& y, auto r) {
         return F::poisson_nll_loss(
             x, y, {.log_input = false, .full = true, .eps = 1e-3, .reduction = r});
       },
       [pi](double x, double y) {
         double loss = x - y * std::log(x + 1e-3);
         if (y > 1) loss += y * std::log(y) - y + 0.5 * std::log(2 * pi * y);
         return loss;
       },
       0.1, 3, 0, 4},
      {"kl_div", [](auto& x, auto& y, auto r) { return F::kl_div(x, y, {.reduction = r}); },
       [](double x, double y) { return y == 0 ? 0.0 : y * (std::log(y) - x); }, -3, 0, 0, 1},
      {"kl_div_log_target",
       [](auto& x, auto& y, auto r) {
         return F::kl_div(x, y, {.reduction = r, .log_target = true});
       },
       [](double x, double y) { return std::exp(y) * (y - x); }, -3, 0, -3, 0},
      {"bce_with_logits",
       [](auto& x, auto& y, auto r) {
         return F::binary_cross_entropy_with_logits(x, y, {.reduction = r});
       },
       [](double x, double y) { return (1 - y) * x + softplus_ref(x); }, -60, 60, 0, 1},
  };
}

TEST(LossElementwise, EachReductionAndDtypeMatchesLoop) {
  for (const PairCase& c : pair_cases()) {
    for (ox::DType dt : kFloatTypes) {
      const Tensor x = uniform({3, 4}, dt, 11, c.input_lo, c.input_hi);
      Tensor y = uniform({3, 4}, dt, 12, c.target_lo, c.target_hi);
      if (c.name == "kl_div") y.index_put_({0, 1}, 0.0);  // xlogy(0, 0) = 0
      const Vec xv = values_of(x), yv = values_of(y);     // as rounded to dt
      Vec per;
      for (size_t i = 0; i < xv.size(); ++i) per.push_back(c.reference(xv[i], yv[i]));
      for (const char* r : kReductions) {
        const Tensor out = c.loss(x, y, r);
        if (std::string(r) == "none") {
          EXPECT_EQ(oxtest::shape_of(out), (oxtest::ShapeV{3, 4})) << c.name;
        } else {
          EXPECT_EQ(out.dim(), 0) << c.name;
        }
        expect_close(out, reduce_ref(per, r), dt, c.name + " " + ox::detail::concat(dt) + " " + r);
      }
    }
  }
}

TEST(LossElementwise, TransposedAndBroadcastInputsMatchContiguous) {
  for (const PairCase& c : pair_cases()) {
    if (c.name == "bce_with_logits") continue;  // needs equal shapes, as PyTorch
    for (ox::DType dt : kFloatTypes) {
      const Tensor base = uniform({4, 3}, dt, 21, c.input_lo, c.input_hi);
      const Tensor x = base.t();  // [3, 4], strided
      const Tensor row = uniform({4}, dt, 22, c.target_lo, c.target_hi);
      const Vec xv = values_of(x), rv = values_of(row);
      Vec per;
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 4; ++j)
          per.push_back(
              c.reference(xv[static_cast<size_t>(i * 4 + j)], rv[static_cast<size_t>(j)]));
      expect_close(c.loss(x, row, "none"), per, dt, c.name + " broadcast none");
      expect_close(c.loss(x, row.expand({3, 4}), "sum"), reduce_ref(per, "sum"), dt,
                   c.name + " expanded sum");
    }
  }
}

TEST(LossElementwise, EmptyInputsGiveNaNMeanAndZeroSum) {
  for (const PairCase& c : pair_cases()) {
    const Tensor x = ox::zeros({0, 3}, ox::kF32), y = ox::zeros({0, 3}, ox::kF32);
    EXPECT_EQ(oxtest::shape_of(c.loss(x, y, "none")), (oxtest::ShapeV{0, 3})) << c.name;
    EXPECT_TRUE(std::isnan(c.loss(x, y, "mean").item<float>())) << c.name;
    EXPECT_EQ(c.loss(x, y, "sum").item<float>(), 0.0f) << c.name;
  }
}

TEST(LossElementwise, KlDivBatchmeanDividesByTheFirstDim) {
  const Tensor x = uniform({3, 4}, ox::kF64, 31, -3, 0), y = uniform({3, 4}, ox::kF64, 32, 0, 1);
  const Vec xv = values_of(x), yv = values_of(y);
  double total = 0;
  for (size_t i = 0; i < xv.size(); ++i) total += yv[i] * (std::log(yv[i]) - xv[i]);
  expect_close(F::kl_div(x, y, {.reduction = "batchmean"}), {total / 3}, ox::kF64, "batchmean");
}

TEST(LossElementwise, BceWithLogitsWeightAndPosWeight) {
  for (ox::DType dt : kFloatTypes) {
    const Tensor x = uniform({3, 4}, dt, 41, -4, 4), y = uniform({3, 4}, dt, 42, 0, 1);
    const Tensor w = uniform({3, 1}, dt, 43, 0.5, 2), pw = uniform({4}, dt, 44, 0.5, 3);
    const Vec xv = values_of(x), yv = values_of(y), wv = values_of(w), pv = values_of(pw);
    Vec per;
    for (size_t i = 0; i < 12; ++i) {
      const double lw = 1 + (pv[i % 4] - 1) * yv[i];
      per.push_back(wv[i / 4] * ((1 - yv[i]) * xv[i] + lw * softplus_ref(xv[i])));
    }
    for (const char* r : kReductions)
      expect_close(F::binary_cross_entropy_with_logits(
                       x, y, {.weight = w, .reduction = r, .pos_weight = pw}),
                   reduce_ref(per, r), dt, std::string("bce_with_logits weighted ") + r);
  }
}

TEST(LossElementwise, BinaryCrossEntropyClampsTheLog) {
  for (ox::DType dt : kFloatTypes) {
    Tensor x = uniform({3, 4}, dt, 51, 0.01, 0.99);
    x.index_put_({0, 0}, 0.0);  // log(0) clamped to -100
    x.index_put_({0, 1}, 1.0);
    const Tensor y = uniform({3, 4}, dt, 52, 0, 1), w = uniform({4}, dt, 53, 0.5, 2);
    const Vec xv = values_of(x), yv = values_of(y), wv = values_of(w);
    Vec per, weighted;
    for (size_t i = 0; i < 12; ++i) {
      const double lp = std::max(std::log(xv[i]), -100.0),
                   lq = std::max(std::log(1 - xv[i]), -100.0);
      per.push_back(-(yv[i] * lp + (1 - yv[i]) * lq));
      weighted.push_back(per.back() * wv[i % 4]);
    }
    for (const char* r : kReductions) {
      expect_close(F::binary_cross_entropy(x, y, {.reduction = r}), reduce_ref(per, r), dt,
                   std::string("bce ") + r);
      expect_close(F::binary_cross_entropy(x, y, {.weight = w, .reduction = r}),
                   reduce_ref(weighted, r), dt, std::string("bce weighted ") + r);
    }
  }
  // -100 exactly where x = 0 and target = 1.
  EXPECT_DOUBLE_EQ(F::binary_cross_entropy(ox::tensor({0.0}, {.dtype = ox::kF64}),
                                           ox::tensor({1.0}, {.dtype = ox::kF64}))
                       .item<double>(),
                   100.0);
}

// ---- Class losses ----------------------------------------------------------------------------

// log_softmax of row r (C entries at stride `step` from `start`) of v.
Vec log_softmax_ref(const Vec& v, size_t start, size_t step, size_t classes) {
  double m = -std::numeric_limits<double>::infinity();
  for (size_t c = 0; c < classes; ++c) m = std::max(m, v[start + c * step]);
  double s = 0;
  for (size_t c = 0; c < classes; ++c) s += std::exp(v[start + c * step] - m);
  Vec out;
  for (size_t c = 0; c < classes; ++c) out.push_back(v[start + c * step] - m - std::log(s));
  return out;
}

TEST(LossClass, NllLossWithWeightAndIgnoreIndex) {
  // [N=2, C=3, d=2]; target [2, 2], one ignored (ignore_index 1 here counts as a class too).
  for (ox::DType dt : kFloatTypes) {
    const Tensor x = uniform({2, 3, 2}, dt, 61, -3, 0);
    const Tensor w = ox::tensor({0.5, 2.0, 1.5}, {.dtype = ox::kF64}).to(dt);
    for (ox::DType tdt : {ox::kI64, ox::kI32}) {
      const Tensor t = ox::tensor(std::vector<int64_t>{2, -100, 0, 1}, {2, 2}).to(tdt);
      const Vec xv = values_of(x), wv{0.5, 2.0, 1.5};
      const int64_t tv[4] = {2, -100, 0, 1};
      Vec per, per_w;
      double weight_sum = 0;
      for (int64_t n = 0; n < 2; ++n)
        for (int64_t d = 0; d < 2; ++d) {
          const int64_t c = tv[n * 2 + d];
          if (c == -100) {
            per.push_back(0), per_w.push_back(0);
            continue;
          }
          const double v = xv[static_cast<size_t>(n * 6 + c * 2 + d)];
          per.push_back(-v);
          per_w.push_back(-v * wv[static_cast<size_t>(c)]);
          weight_sum += wv[static_cast<size_t>(c)];
        }
      expect_close(F::nll_loss(x, t, {.reduction = "none"}), per, dt, "nll none");
      expect_close(F::nll_loss(x, t, {.reduction = "sum"}), reduce_ref(per, "sum"), dt, "nll sum");
      expect_close(F::nll_loss(x, t), {reduce_ref(per, "sum")[0] / 3}, dt, "nll mean");
      expect_close(F::nll_loss(x, t, {.weight = w, .reduction = "none"}), per_w, dt, "nll w none");
      expect_close(F::nll_loss(x, t, {.weight = w}), {reduce_ref(per_w, "sum")[0] / weight_sum}, dt,
                   "nll w mean");
      // The fused cross_entropy agrees with nll_loss of log_softmax (the loop above on logits).
      Vec ce;
      double ce_weights = 0;
      for (int64_t n = 0; n < 2; ++n)
        for (int64_t d = 0; d < 2; ++d) {
          const int64_t c = tv[n * 2 + d];
          if (c == -100) continue;
          const Vec ls = log_softmax_ref(xv, static_cast<size_t>(n * 6 + d), 2, 3);
          ce.push_back(-ls[static_cast<size_t>(c)] * wv[static_cast<size_t>(c)]);
          ce_weights += wv[static_cast<size_t>(c)];
        }
      expect_close(F::cross_entropy(x, t, {.weight = w, .reduction = "sum"}), reduce_ref(ce, "sum"),
                   dt, "ce sum");
      expect_close(F::cross_entropy(x, t, {.weight = w}), {reduce_ref(ce, "sum")[0] / ce_weights},
                   dt, "ce mean");
    }
  }
}

TEST(LossClass, NllLossEdgeCases) {
  const Tensor x = uniform({2, 3}, ox::kF64, 62, -3, 0);
  // All ignored: 0 / 0.
  const Tensor ignored = ox::tensor(std::vector<int64_t>{-100, -100});
  EXPECT_TRUE(std::isnan(F::nll_loss(x, ignored).item<double>()));
  EXPECT_EQ(F::nll_loss(x, ignored, {.reduction = "sum"}).item<double>(), 0.0);
  // Unbatched [C] with a 0-d target.
  const Tensor row = ox::tensor({-0.5, -1.5, -2.5}, {.dtype = ox::kF64});
  EXPECT_DOUBLE_EQ(F::nll_loss(row, ox::scalar_tensor(2, {.dtype = ox::kI64})).item<double>(), 2.5);
  // Empty batch.
  EXPECT_TRUE(std::isnan(
      F::nll_loss(ox::zeros({0, 3}, ox::kF64), ox::zeros({0}, ox::kI64)).item<double>()));
  // Strided inputs give what their contiguous copies give.
  const Tensor xt = uniform({3, 2}, ox::kF64, 63, -3, 0).t();
  const Tensor targets = ox::tensor(std::vector<int64_t>{2, 0});
  EXPECT_EQ(oxtest::bytes_of(F::nll_loss(xt, targets, {.reduction = "none"})),
            oxtest::bytes_of(F::nll_loss(xt.contiguous(), targets, {.reduction = "none"})));
  const Tensor probs = ox::softmax(uniform({3, 2}, ox::kF64, 64, -1, 1), 0).t();
  EXPECT_EQ(oxtest::bytes_of(F::cross_entropy(xt, probs, {.reduction = "none"})),
            oxtest::bytes_of(
                F::cross_entropy(xt.contiguous(), probs.contiguous(), {.reduction = "none"})));
  // Out of range.
  const ox::Error e = oxtest::caught([&] {
    F::nll_loss(x, ox::tensor(std::vector<int64_t>{0, 3}));
  });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Index);
  EXPECT_TRUE(oxtest::contains(e, "[nll_loss]")) << e.what();
  EXPECT_EQ(kind_of([&] {
              F::nll_loss(x, ox::tensor(std::vector<int64_t>{0, -1}));
            }),
            ox::ErrorKind::Index);
}

TEST(LossClass, CrossEntropyProbabilityTargets) {
  for (ox::DType dt : kFloatTypes) {
    // [N=2, C=3, d=2]: class dim 1.
    const Tensor x = uniform({2, 3, 2}, dt, 71, -2, 2);
    const Tensor p = ox::softmax(uniform({2, 3, 2}, dt, 72, -1, 1), 1);  // rows sum to 1
    const Tensor w = ox::tensor({0.5, 2.0, 1.5}, {.dtype = ox::kF64}).to(dt);
    const Vec xv = values_of(x), pv = values_of(p), wv{0.5, 2.0, 1.5};
    for (double ls : {0.0, 0.2}) {
      for (bool weighted : {false, true}) {
        Vec per;
        for (size_t n = 0; n < 2; ++n)
          for (size_t d = 0; d < 2; ++d) {
            const Vec logp = log_softmax_ref(xv, n * 6 + d, 2, 3);
            double loss = 0;
            for (size_t c = 0; c < 3; ++c) {
              const double target = pv[n * 6 + c * 2 + d] * (1 - ls) + ls / 3;
              loss -= logp[c] * target * (weighted ? wv[c] : 1.0);
            }
            per.push_back(loss);
          }
        for (const char* r : kReductions) {
          ox::CrossEntropyOptions options{.reduction = r, .label_smoothing = ls};
          if (weighted) options.weight = w;
          expect_close(F::cross_entropy(x, p, options), reduce_ref(per, r), dt,
                       ox::detail::concat("ce probs ls=", ls, " w=", weighted, " ", r));
        }
      }
    }
  }
  // Unbatched [C].
  const Tensor x = ox::tensor({1.0, 2.0, 0.5}, {.dtype = ox::kF64}),
               p = ox::tensor({0.2, 0.5, 0.3}, {.dtype = ox::kF64});
  const Vec logp = log_softmax_ref({1.0, 2.0, 0.5}, 0, 1, 3);
  expect_close(F::cross_entropy(x, p), {-(0.2 * logp[0] + 0.5 * logp[1] + 0.3 * logp[2])}, ox::kF64,
               "ce probs unbatched");
}

// ---- Losses of three tensors -----------------------------------------------------------------

TEST(LossTriple, CosineEmbedding) {
  for (ox::DType dt : kFloatTypes) {
    const Tensor a = uniform({3, 5}, dt, 81, -1, 1), b = uniform({3, 5}, dt, 82, -1, 1);
    const Tensor y = ox::tensor(std::vector<int64_t>{1, -1, -1});
    const Vec av = values_of(a), bv = values_of(b);
    Vec per;
    for (size_t n = 0; n < 3; ++n) {
      double dot = 0, na = 1e-12, nb = 1e-12;
      for (size_t k = 0; k < 5; ++k) {
        dot += av[n * 5 + k] * bv[n * 5 + k];
        na += av[n * 5 + k] * av[n * 5 + k];
        nb += bv[n * 5 + k] * bv[n * 5 + k];
      }
      const double cos = dot / std::sqrt(na * nb);
      per.push_back(n == 0 ? 1 - cos : std::max(0.0, cos - (-0.3)));
    }
    for (const char* r : kReductions)
      expect_close(F::cosine_embedding_loss(a, b, y, {.margin = -0.3, .reduction = r}),
                   reduce_ref(per, r), dt, std::string("cosine ") + r);
    // Floating ±1 targets, transposed inputs.
    const Tensor at = a.t().contiguous().t(),
                 yf = ox::tensor({1.0, -1.0, -1.0}, {.dtype = ox::kF64}).to(dt);
    expect_close(F::cosine_embedding_loss(at, b, yf, {.margin = -0.3, .reduction = "none"}), per,
                 dt, "cosine strided");
    // Unbatched [D] with a 0-d target.
    expect_close(F::cosine_embedding_loss(a.select(0, 0), b.select(0, 0),
                                          ox::scalar_tensor(1, {.dtype = ox::kI64})),
                 {per[0]}, dt, "cosine unbatched");
  }
}

TEST(LossTriple, MarginRanking) {
  for (ox::DType dt : kFloatTypes) {
    const Tensor a = uniform({6}, dt, 91, -1, 1), b = uniform({6}, dt, 92, -1, 1);
    const Tensor y = ox::tensor({1.0, -1.0, 1.0, -1.0, 1.0, -1.0}, {.dtype = ox::kF64}).to(dt);
    const Vec av = values_of(a), bv = values_of(b), yv = values_of(y);
    Vec per;
    for (size_t i = 0; i < 6; ++i) per.push_back(std::max(0.0, -yv[i] * (av[i] - bv[i]) + 0.3));
    for (const char* r : kReductions)
      expect_close(F::margin_ranking_loss(a, b, y, {.margin = 0.3, .reduction = r}),
                   reduce_ref(per, r), dt, std::string("margin ranking ") + r);
  }
}

TEST(LossTriple, TripletMargin) {
  for (ox::DType dt : kFloatTypes) {
    const Tensor a = uniform({3, 4}, dt, 101, -1, 1), p = uniform({3, 4}, dt, 102, -1, 1),
                 n = uniform({3, 4}, dt, 103, -1, 1);
    const Vec av = values_of(a), pv = values_of(p), nv = values_of(n);
    for (double norm_p : {2.0, 1.0}) {
      for (bool swap : {false, true}) {
        const auto dist = [&](const Vec& x, const Vec& y, size_t row) {
          double s = 0;
          for (size_t k = 0; k < 4; ++k)
            s += std::pow(std::abs(x[row * 4 + k] - y[row * 4 + k] + 1e-6), norm_p);
          return std::pow(s, 1 / norm_p);
        };
        Vec per;
        for (size_t i = 0; i < 3; ++i) {
          double dn = dist(av, nv, i);
          if (swap) dn = std::min(dn, dist(pv, nv, i));
          per.push_back(std::max(0.0, 0.5 + dist(av, pv, i) - dn));
        }
        for (const char* r : kReductions)
          expect_close(F::triplet_margin_loss(
                           a, p, n, {.margin = 0.5, .p = norm_p, .swap = swap, .reduction = r}),
                       reduce_ref(per, r), dt,
                       ox::detail::concat("triplet p=", norm_p, " ", swap, " ", r));
      }
    }
  }
}

TEST(LossTriple, GaussianNll) {
  const double half_log_2pi = 0.5 * std::log(2 * std::numbers::pi);
  for (ox::DType dt : kFloatTypes) {
    const Tensor x = uniform({3, 2}, dt, 111, -1, 1), y = uniform({3, 2}, dt, 112, -1, 1);
    Tensor v = uniform({3, 2}, dt, 113, 0.2, 2);
    v.index_put_({1, 1}, 0.0);  // clamped to eps
    const Vec xv = values_of(x), yv = values_of(y), vv = values_of(v);
    const double eps = 1e-3;
    for (bool full : {false, true}) {
      Vec per;
      for (size_t i = 0; i < 6; ++i) {
        const double var = std::max(vv[i], eps);
        per.push_back(0.5 * (std::log(var) + (xv[i] - yv[i]) * (xv[i] - yv[i]) / var) +
                      (full ? half_log_2pi : 0.0));
      }
      for (const char* r : kReductions)
        expect_close(F::gaussian_nll_loss(x, y, v, {.full = full, .eps = eps, .reduction = r}),
                     reduce_ref(per, r), dt, ox::detail::concat("gaussian full=", full, " ", r));
    }
    // var [3] (homoscedastic: one per row) and [3, 1] give the same.
    const Tensor row_var = uniform({3}, dt, 114, 0.2, 2);
    const Vec rv = values_of(row_var);
    Vec per;
    for (size_t i = 0; i < 6; ++i)
      per.push_back(0.5 * (std::log(rv[i / 2]) + (xv[i] - yv[i]) * (xv[i] - yv[i]) / rv[i / 2]));
    expect_close(F::gaussian_nll_loss(x, y, row_var, {.reduction = "none"}), per, dt,
                 "gaussian var [N]");
    expect_close(F::gaussian_nll_loss(x, y, row_var.unsqueeze(1), {.reduction = "none"}), per, dt,
                 "gaussian var [N, 1]");
  }
}

// ---- Gradients -------------------------------------------------------------------------------

void expect_gradcheck(const std::string& what, const ox::autograd::DifferentiableFn& fn,
                      const std::vector<Tensor>& inputs) {
  const auto result = ox::autograd::gradcheck(fn, inputs);
  EXPECT_TRUE(result.ok) << what << ": " << result.report;
}

TEST(LossGrad, EveryLossPassesGradcheck) {
  const auto f64 = [](const oxtest::ShapeV& s, uint64_t salt, double lo, double hi) {
    return uniform(s, ox::kF64, salt, lo, hi).requires_grad_();
  };
  for (const char* r : {"mean", "none"}) {
    const std::string rs = r;
    for (const PairCase& c : pair_cases()) {
      const Tensor x = f64({2, 3}, 201, c.input_lo, c.input_hi);
      Tensor y = f64({2, 3}, 202, c.target_lo, c.target_hi);
      if (c.name == "bce_with_logits") x.detach().mul_(0.1);  // keep the logits moderate
      expect_gradcheck(c.name + " " + rs,
                       [&](const std::vector<Tensor>& in) {
                         return std::vector<Tensor>{c.loss(in[0], in[1], r)};
                       },
                       {x, y});
    }
    const Tensor probs = f64({2, 3}, 203, 0.1, 0.9), target = f64({2, 3}, 204, 0, 1);
    const Tensor weight = uniform({3}, ox::kF64, 205, 0.5, 2);
    expect_gradcheck("bce " + rs,
                     [&](const std::vector<Tensor>& in) {
                       return std::vector<Tensor>{F::binary_cross_entropy(
                           in[0], in[1], {.weight = weight, .reduction = r})};
                     },
                     {probs, target});
    const Tensor logits = f64({2, 3}, 206, -1, 1), pos_weight = f64({3}, 207, 0.5, 2);
    expect_gradcheck("bce_with_logits pos_weight " + rs,
                     [&](const std::vector<Tensor>& in) {
                       return std::vector<Tensor>{F::binary_cross_entropy_with_logits(
                           in[0], in[1], {.weight = weight, .reduction = r, .pos_weight = in[2]})};
                     },
                     {logits, target, pos_weight});
    const Tensor classes = ox::tensor(std::vector<int64_t>{2, 0});
    expect_gradcheck("nll " + rs,
                     [&](const std::vector<Tensor>& in) {
                       return std::vector<Tensor>{
                           F::nll_loss(in[0], classes, {.weight = in[1], .reduction = r})};
                     },
                     {logits, f64({3}, 208, 0.5, 2)});
    const Tensor soft = ox::softmax(uniform({2, 3}, ox::kF64, 209, -1, 1), 1).requires_grad_();
    expect_gradcheck(
        "cross_entropy probs " + rs,
        [&](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{F::cross_entropy(
              in[0], in[1], {.weight = weight, .reduction = r, .label_smoothing = 0.1})};
        },
        {logits, soft});
    expect_gradcheck(
        "cross_entropy classes " + rs,
        [&](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{F::cross_entropy(in[0], classes, {.reduction = r})};
        },
        {logits});
    const Tensor a = f64({3, 4}, 210, -1, 1), b = f64({3, 4}, 211, -1, 1),
                 n = f64({3, 4}, 212, -1, 1);
    const Tensor signs = ox::tensor(std::vector<int64_t>{1, -1, -1});
    expect_gradcheck("cosine " + rs,
                     [&](const std::vector<Tensor>& in) {
                       return std::vector<Tensor>{F::cosine_embedding_loss(
                           in[0], in[1], signs, {.margin = -0.5, .reduction = r})};
                     },
                     {a, b});
    const Tensor ranks = ox::tensor({1.0, -1.0, 1.0, -1.0}, {.dtype = ox::kF64});
    expect_gradcheck(
        "margin ranking " + rs,
        [&](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{
              F::margin_ranking_loss(in[0], in[1], ranks, {.margin = 2.5, .reduction = r})};
        },
        {a.select(0, 0).detach().requires_grad_(), b.select(0, 0).detach().requires_grad_()});
    expect_gradcheck("triplet " + rs,
                     [&](const std::vector<Tensor>& in) {
                       return std::vector<Tensor>{F::triplet_margin_loss(
                           in[0], in[1], in[2], {.margin = 5.0, .swap = true, .reduction = r})};
                     },
                     {a, b, n});
    const Tensor var = f64({3, 4}, 213, 0.5, 2);
    expect_gradcheck("gaussian " + rs,
                     [&](const std::vector<Tensor>& in) {
                       return std::vector<Tensor>{F::gaussian_nll_loss(
                           in[0], in[1], in[2], {.full = true, .reduction = r})};
                     },
                     {a, b, var});
  }
}

TEST(LossGrad, BceGradientIsFiniteAtZeroAndOne) {
  // The clamped log's own gradient is 0 where its argument is 0, so only the other log counts:
  // d/dx -log(1 - x) = 1 at x = 0, d/dx -log(x) = -1 at x = 1, -t / x = -2 at x = 0.5.
  const Tensor x = ox::tensor({0.0, 1.0, 0.5}, {.dtype = ox::kF64}).requires_grad_();
  F::binary_cross_entropy(x, ox::tensor({0.0, 1.0, 1.0}, {.dtype = ox::kF64}), {.reduction = "sum"})
      .backward();
  const Vec g = values_of(x.grad());
  EXPECT_EQ(g[0], 1.0);
  EXPECT_EQ(g[1], -1.0);
  EXPECT_NEAR(g[2], -2.0, 1e-12);
  // Where the target weights the saturated side, the gradient is 0, not inf or NaN.
  const Tensor z = ox::tensor({0.0, 1.0}, {.dtype = ox::kF64}).requires_grad_();
  F::binary_cross_entropy(z, ox::tensor({1.0, 0.0}, {.dtype = ox::kF64}), {.reduction = "sum"})
      .backward();
  EXPECT_EQ(values_of(z.grad()), (Vec{0.0, 0.0}));
}

// ---- Modules ---------------------------------------------------------------------------------

std::string printed(const ox::nn::Module& m) {
  std::ostringstream os;
  m.pretty_print(os);
  return os.str();
}

TEST(LossModule, EqualsTheFunctionAndPrintsItsOptions) {
  const Tensor x = uniform({3, 4}, ox::kF32, 301, -1, 1), y = uniform({3, 4}, ox::kF32, 302, 0, 1);
  const auto same = [](const Tensor& a, const Tensor& b) {
    EXPECT_EQ(oxtest::bytes_of(a), oxtest::bytes_of(b));
  };
  ox::nn::MSELoss mse(ox::nn::MSELossOptions{.reduction = "sum"});
  same(mse(x, y), F::mse_loss(x, y, {.reduction = "sum"}));
  EXPECT_EQ(printed(*mse), "MSELoss(reduction=sum)");
  ox::nn::L1Loss l1;
  same(l1(x, y), F::l1_loss(x, y));
  EXPECT_EQ(printed(*l1), "L1Loss(reduction=mean)");
  ox::nn::SmoothL1Loss smooth(ox::nn::SmoothL1LossOptions{.beta = 0.5});
  same(smooth(x, y), F::smooth_l1_loss(x, y, {.beta = 0.5}));
  EXPECT_EQ(printed(*smooth), "SmoothL1Loss(reduction=mean, beta=0.5)");
  ox::nn::HuberLoss huber(ox::nn::HuberLossOptions{.reduction = "none", .delta = 2});
  same(huber(x, y), F::huber_loss(x, y, {.reduction = "none", .delta = 2}));
  EXPECT_EQ(printed(*huber), "HuberLoss(reduction=none, delta=2)");
  ox::nn::KLDivLoss kl(ox::nn::KLDivLossOptions{.reduction = "batchmean"});
  same(kl(x, y), F::kl_div(x, y, {.reduction = "batchmean"}));
  EXPECT_EQ(printed(*kl), "KLDivLoss(reduction=batchmean, log_target=false)");
  ox::nn::PoissonNLLLoss poisson(ox::nn::PoissonNLLLossOptions{.full = true});
  same(poisson(x, y), F::poisson_nll_loss(x, y, {.full = true}));
  EXPECT_EQ(printed(*poisson),
            "PoissonNLLLoss(log_input=true, full=true, eps=1e-08, reduction=mean)");
  ox::nn::GaussianNLLLoss gaussian;
  same(gaussian(x, y, ox::ones({3, 4})), F::gaussian_nll_loss(x, y, ox::ones({3, 4})));
  EXPECT_EQ(printed(*gaussian), "GaussianNLLLoss(full=false, eps=1e-06, reduction=mean)");

  const Tensor w = ox::tensor({1.0f, 2.0f, 0.5f, 1.0f});
  const Tensor classes = ox::tensor(std::vector<int64_t>{3, 0, 1});
  ox::nn::CrossEntropyLoss ce(ox::nn::CrossEntropyLossOptions{.weight = w, .label_smoothing = 0.1});
  same(ce(x, classes), F::cross_entropy(x, classes, {.weight = w, .label_smoothing = 0.1}));
  EXPECT_EQ(printed(*ce),
            "CrossEntropyLoss(reduction=mean, ignore_index=-100, label_smoothing=0.1, weight=[4])");
  EXPECT_EQ(ce->named_buffers().size(), 1u);
  ox::nn::NLLLoss nll(ox::nn::NLLLossOptions{.weight = w, .ignore_index = 0});
  same(nll(x, classes), F::nll_loss(x, classes, {.weight = w, .ignore_index = 0}));
  EXPECT_EQ(printed(*nll), "NLLLoss(reduction=mean, ignore_index=0, weight=[4])");
  ox::nn::BCELoss bce(ox::nn::BCELossOptions{.weight = w});
  same(bce(y, y), F::binary_cross_entropy(y, y, {.weight = w}));
  EXPECT_EQ(printed(*bce), "BCELoss(reduction=mean, weight=[4])");
  ox::nn::BCEWithLogitsLoss bcel(ox::nn::BCEWithLogitsLossOptions{.pos_weight = w});
  same(bcel(x, y), F::binary_cross_entropy_with_logits(x, y, {.pos_weight = w}));
  EXPECT_EQ(printed(*bcel), "BCEWithLogitsLoss(reduction=mean, pos_weight=[4])");
  ox::nn::BCEWithLogitsLoss plain;
  EXPECT_EQ(plain->state_dict().size(), 0u);  // undefined buffers stay out

  const Tensor signs = ox::tensor(std::vector<int64_t>{1, -1, 1});
  ox::nn::CosineEmbeddingLoss cosine(ox::nn::CosineEmbeddingLossOptions{.margin = 0.1});
  same(cosine(x, y, signs), F::cosine_embedding_loss(x, y, signs, {.margin = 0.1}));
  EXPECT_EQ(printed(*cosine), "CosineEmbeddingLoss(margin=0.1, reduction=mean)");
  ox::nn::MarginRankingLoss ranking(ox::nn::MarginRankingLossOptions{.margin = 0.2});
  const Tensor ranks = ox::tensor({1.0f, -1.0f, 1.0f, 1.0f});
  same(ranking(x.select(0, 0), y.select(0, 0), ranks),
       F::margin_ranking_loss(x.select(0, 0), y.select(0, 0), ranks, {.margin = 0.2}));
  EXPECT_EQ(printed(*ranking), "MarginRankingLoss(margin=0.2, reduction=mean)");
  ox::nn::TripletMarginLoss triplet(ox::nn::TripletMarginLossOptions{.swap = true});
  same(triplet(x, y, y.flip({0})), F::triplet_margin_loss(x, y, y.flip({0}), {.swap = true}));
  EXPECT_EQ(printed(*triplet),
            "TripletMarginLoss(margin=1, p=2, eps=1e-06, swap=true, reduction=mean)");
}

TEST(LossModule, WeightIsABufferThatFollowsTo) {
  ox::nn::NLLLoss nll(ox::nn::NLLLossOptions{.weight = ox::tensor({1.0f, 2.0f, 3.0f})});
  const auto buffers = nll->named_buffers();
  ASSERT_EQ(buffers.size(), 1u);
  nll->to(ox::kF64);
  EXPECT_EQ(nll->weight.dtype(), ox::kF64);
  const Tensor x = uniform({2, 3}, ox::kF64, 311, -2, 0);
  const Tensor t = ox::tensor(std::vector<int64_t>{2, 1});
  const Vec xv = values_of(x);
  expect_close(nll(x, t), {-(xv[2] * 3 + xv[4] * 2) / 5}, ox::kF64, "nll module f64");
}

// ---- Bad inputs ------------------------------------------------------------------------------

TEST(LossErrors, EachBadInputGetsItsKind) {
  using K = ox::ErrorKind;
  const Tensor x = ox::zeros({2, 3}), y = ox::zeros({2, 3}), ints = ox::zeros({2, 3}, ox::kI64);
  const Tensor classes = ox::tensor(std::vector<int64_t>{0, 1});

  for (const PairCase& c : pair_cases()) {
    SCOPED_TRACE(c.name);
    const ox::Error shape = oxtest::caught([&] { c.loss(x, ox::zeros({4}), "mean"); });
    EXPECT_EQ(shape.kind(), K::Shape);
    EXPECT_TRUE(oxtest::contains(shape, "[2, 3]") && oxtest::contains(shape, "[4]"))
        << shape.what();
    const ox::Error dtype = oxtest::caught([&] { c.loss(ints, y, "mean"); });
    EXPECT_EQ(dtype.kind(), K::DType);
    EXPECT_TRUE(oxtest::contains(dtype, "i64")) << dtype.what();
    EXPECT_EQ(kind_of([&] { c.loss(x, ints, "mean"); }), K::DType);
    EXPECT_EQ(kind_of([&] { c.loss(x, y, "average"); }), K::Value);
  }
  const ox::Error named = oxtest::caught([&] { F::mse_loss(x, y, {.reduction = "Mean"}); });
  EXPECT_EQ(std::string(named.what()).rfind("[mse_loss]", 0), 0u) << named.what();
  EXPECT_EQ(kind_of([&] { F::mse_loss(x, y, {.reduction = "batchmean"}); }), K::Value);

  // Class targets.
  EXPECT_EQ(kind_of([&] { F::nll_loss(x, ox::zeros({2})); }), K::DType);
  EXPECT_EQ(kind_of([&] { F::nll_loss(x, ox::zeros({2}, ox::kBool)); }), K::DType);
  EXPECT_EQ(kind_of([&] { F::cross_entropy(x, ox::zeros({2}, ox::kBool)); }), K::DType);
  EXPECT_EQ(kind_of([&] { F::cross_entropy(x, ox::zeros({2}, ox::kI16)); }), K::DType);
  EXPECT_EQ(kind_of([&] { F::nll_loss(x, ox::tensor(std::vector<int64_t>{0, 1, 2})); }), K::Shape);
  EXPECT_EQ(kind_of([&] { F::nll_loss(ints, classes); }), K::DType);
  EXPECT_EQ(kind_of([&] { F::nll_loss(x, classes, {.weight = ox::ones({4})}); }), K::Shape);
  EXPECT_EQ(kind_of([&] { F::nll_loss(x, classes, {.reduction = "avg"}); }), K::Value);
  EXPECT_EQ(kind_of([&] { F::cross_entropy(x, ox::zeros({2, 4})); }), K::Shape);
  EXPECT_EQ(kind_of([&] {
              F::cross_entropy(x, ox::zeros({2, 3}), {.weight = ox::ones({2})});
            }),
            K::Shape);
  EXPECT_EQ(kind_of([&] { F::cross_entropy(x, classes, {.reduction = "x"}); }), K::Value);
  EXPECT_EQ(kind_of([&] { F::cross_entropy(ints, classes); }), K::DType);

  // BCE.
  EXPECT_EQ(kind_of([&] { F::binary_cross_entropy(ox::full({2}, 1.5), ox::zeros({2})); }),
            K::Value);
  EXPECT_EQ(kind_of([&] { F::binary_cross_entropy(ox::full({2}, NAN), ox::zeros({2})); }),
            K::Value);
  EXPECT_EQ(kind_of([&] { F::binary_cross_entropy(x, ox::zeros({3})); }), K::Shape);
  EXPECT_EQ(kind_of([&] { F::binary_cross_entropy(x, y, {.weight = ox::ones({2})}); }), K::Shape);
  EXPECT_EQ(kind_of([&] { F::binary_cross_entropy_with_logits(x, ox::zeros({3})); }), K::Shape);
  EXPECT_EQ(
      kind_of([&] { F::binary_cross_entropy_with_logits(x, y, {.pos_weight = ox::ones({4})}); }),
      K::Shape);

  // Option values.
  EXPECT_EQ(kind_of([&] { F::smooth_l1_loss(x, y, {.beta = -1}); }), K::Value);
  EXPECT_EQ(kind_of([&] { F::huber_loss(x, y, {.delta = 0}); }), K::Value);
  EXPECT_EQ(kind_of([&] { F::triplet_margin_loss(x, y, y, {.p = 0}); }), K::Value);
  EXPECT_EQ(kind_of([&] { F::cross_entropy(x, classes, {.label_smoothing = 1.5}); }), K::Value);

  // Three-tensor losses.
  EXPECT_EQ(kind_of([&] { F::cosine_embedding_loss(x, ox::zeros({2, 4}), classes); }), K::Shape);
  EXPECT_EQ(kind_of([&] { F::cosine_embedding_loss(x, y, ox::zeros({3}, ox::kI64)); }), K::Shape);
  EXPECT_EQ(kind_of([&] { F::cosine_embedding_loss(x, y, ox::zeros({2}, ox::kBool)); }), K::DType);
  EXPECT_EQ(kind_of([&] { F::cosine_embedding_loss(ints, ints, classes); }), K::DType);
  EXPECT_EQ(kind_of([&] { F::margin_ranking_loss(x, y, ox::zeros({3})); }), K::Shape);
  EXPECT_EQ(kind_of([&] { F::margin_ranking_loss(x, ints, y); }), K::DType);
  EXPECT_EQ(kind_of([&] { F::triplet_margin_loss(x, y, ox::zeros({3})); }), K::Shape);
  EXPECT_EQ(kind_of([&] { F::triplet_margin_loss(x, ints, y); }), K::DType);
  EXPECT_EQ(kind_of([&] { F::gaussian_nll_loss(x, y, ox::ones({3})); }), K::Shape);
  EXPECT_EQ(kind_of([&] { F::gaussian_nll_loss(x, y, ox::ones({2, 2})); }), K::Shape);
  EXPECT_EQ(kind_of([&] { F::gaussian_nll_loss(x, y, ox::full({2, 3}, -1.0)); }), K::Value);
  EXPECT_EQ(kind_of([&] { F::gaussian_nll_loss(x, y, ox::ones({2, 3}, ox::kI64)); }), K::DType);

  // Modules check their options when built.
  EXPECT_EQ(kind_of([] { ox::nn::MSELoss(ox::nn::MSELossOptions{.reduction = "batchmean"}); }),
            K::Value);
  EXPECT_EQ(kind_of([] { ox::nn::SmoothL1Loss(ox::nn::SmoothL1LossOptions{.beta = -0.5}); }),
            K::Value);
}

}  // namespace

namespace {

// A target of INT64_MIN (what a NaN class index becomes in i64, as on PyTorch/x86) or any other
// value outside [0, classes) is an Index error naming the value, for both losses.
TEST(LossTargets, OutOfRangeTargetsAreIndexErrorsNamingTheValue) {
  const Tensor logits = ox::zeros({2, 3});
  const Tensor nan_target =
      ox::tensor({0.0, std::numeric_limits<double>::quiet_NaN()}, {.dtype = ox::kF64}).to(ox::kI64);
  ASSERT_EQ(nan_target.to_vector<int64_t>()[1], std::numeric_limits<int64_t>::min());
  for (const Tensor& target :
       {nan_target, ox::tensor(std::vector<int64_t>{std::numeric_limits<int64_t>::max(), 0}),
        ox::tensor(std::vector<int64_t>{3, 0}), ox::tensor(std::vector<int64_t>{-1, 0})}) {
    const std::vector<int64_t> t = target.to_vector<int64_t>();
    const int64_t bad = t[0] != 0 ? t[0] : t[1];
    for (const auto& loss : std::vector<std::function<void()>>{
             [&] { F::cross_entropy(logits, target); },
             [&] { F::nll_loss(ox::log_softmax(logits, 1), target); },
             [&] { ox::cross_entropy(logits, target); },
         }) {
      const ox::Error e = oxtest::caught(loss);
      EXPECT_EQ(e.kind(), ox::ErrorKind::Index) << e.what();
      EXPECT_TRUE(oxtest::contains(e, std::to_string(bad))) << e.what();
    }
  }
}

}  // namespace
