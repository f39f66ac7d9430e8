// ox::linalg vector_norm, matrix_norm, matrix_rank, matrix_power, cross and diag_embed (and
// ox::norm's "nuc") against closed forms, matrices of known spectrum (linalg_test_util.h) and
// f64 loops written here; every ord, keepdim, batched and non-contiguous inputs, empty
// extents, refused dtypes and the error kinds.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "linalg/linalg_test_util.h"
#include "test_util.h"

namespace {

using linalg_test::Mat;
using linalg_test::Vec;
using ox::Tensor;
using oxtest::kind_of;
using oxtest::ShapeV;

constexpr double kInf = std::numeric_limits<double>::infinity();

// docs/TESTING.md's default closeness for the dtype.
void expect_close(const Vec& got, const Vec& want, ox::DType dt, const std::string& what,
                  double scale = 1.0) {
  const double atol = (dt == ox::kF32 ? 1.3e-6 : 1e-7) * scale;
  const double rtol = dt == ox::kF32 ? 1e-5 : 1e-7;
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << what << " at " << i;
    } else {
      EXPECT_LE(std::fabs(got[i] - want[i]), atol + rtol * std::fabs(want[i]))
          << what << " at " << i << ": got " << got[i] << ", want " << want[i];
    }
  }
}

// |got - want| <= atol + rtol |want| with an explicit atol (the SVD-based results).
void expect_near(const Vec& got, const Vec& want, double atol, double rtol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_LE(std::fabs(got[i] - want[i]), atol + rtol * std::fabs(want[i]))
        << what << " at " << i << ": got " << got[i] << ", want " << want[i];
}

Vec values_of(const Tensor& t) { return t.to(ox::kF64).contiguous().to_vector<double>(); }

Tensor filled(const ShapeV& shape, ox::DType dt, uint64_t salt, double lo = -2, double hi = 2) {
  return oxtest::contiguous_from(shape, dt,
                                 [&](int64_t i) { return oxtest::uniform_at(i, salt, lo, hi); });
}

// ---- An f64 reduction over a set of dims, by plain loops ------------------------------------

int64_t flat_index(const ShapeV& shape, const std::vector<int64_t>& idx) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + idx[d];
  return f;
}

// The vector norm of the elements of `v` (row-major, of `shape`) grouped by the dims not in
// `reduced`; one value per group, groups in row-major order of the kept dims.
Vec norm_ref(const Vec& v, const ShapeV& shape, const std::vector<bool>& reduced, double ord) {
  ShapeV kept;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!reduced[d]) kept.push_back(shape[d]);
  const int64_t groups = oxtest::product(kept);
  std::vector<Vec> members(static_cast<size_t>(groups));
  oxtest::for_each_index(shape, [&](const std::vector<int64_t>& idx) {
    std::vector<int64_t> k;
    for (size_t d = 0; d < shape.size(); ++d)
      if (!reduced[d]) k.push_back(idx[d]);
    members[static_cast<size_t>(flat_index(kept, k))].push_back(v[flat_index(shape, idx)]);
  });
  Vec out;
  for (const Vec& m : members) {
    double acc = ord == kInf ? 0 : ord == -kInf ? kInf : 0;
    for (double x : m) {
      const double a = std::fabs(x);
      if (ord == kInf)
        acc = std::max(acc, a);
      else if (ord == -kInf)
        acc = std::min(acc, a);
      else if (ord == 0)
        acc += a != 0;
      else
        acc += std::pow(a, ord);
    }
    if (std::isfinite(ord) && ord != 0) acc = std::pow(acc, 1.0 / ord);
    out.push_back(acc);
  }
  return out;
}

std::vector<bool> mask_of(size_t nd, const std::vector<int64_t>& dims) {
  std::vector<bool> m(nd, dims.size() == 0);
  for (int64_t d : dims) m[static_cast<size_t>(d < 0 ? d + int64_t(nd) : d)] = true;
  return m;
}

ShapeV kept_shape(const ShapeV& shape, const std::vector<bool>& reduced, bool keepdim) {
  ShapeV out;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!reduced[d])
      out.push_back(shape[d]);
    else if (keepdim)
      out.push_back(1);
  return out;
}

const double kOrds[] = {2, 1, kInf, -kInf, 0, 3, 0.5, -1.5};

// ---- vector_norm ---------------------------------------------------------------------------

TEST(LinalgVectorNorm, ClosedForms) {
  const Tensor x = ox::tensor({0.0, 3.0, -4.0}, {.dtype = ox::kF64});
  auto at = [&](double ord) { return ox::linalg::vector_norm(x, ord).item<double>(); };
  EXPECT_DOUBLE_EQ(at(2), 5.0);
  EXPECT_DOUBLE_EQ(at(1), 7.0);
  EXPECT_DOUBLE_EQ(at(kInf), 4.0);
  EXPECT_DOUBLE_EQ(at(-kInf), 0.0);
  EXPECT_DOUBLE_EQ(at(0), 2.0);
  EXPECT_NEAR(at(3), std::cbrt(91.0), 1e-14);
  EXPECT_NEAR(at(0.5), std::pow(std::sqrt(3.0) + 2.0, 2), 1e-13);
  // A negative p over a zero: |0|^p is inf, so the norm is 0, as PyTorch.
  EXPECT_DOUBLE_EQ(at(-1), 0.0);
  const Tensor y = ox::tensor({3.0f, -4.0f});
  EXPECT_NEAR(ox::linalg::vector_norm(y, -1).item<float>(), 12.0f / 7.0f, 1e-6f);
  EXPECT_FLOAT_EQ(ox::linalg::vector_norm(y, -kInf).item<float>(), 3.0f);
  EXPECT_EQ(ox::linalg::vector_norm(y).dtype(), ox::kF32);
  EXPECT_EQ(ox::linalg::vector_norm(ox::scalar_tensor(-2.5, {.dtype = ox::kF64})).item<double>(),
            2.5);
}

TEST(LinalgVectorNorm, EveryOrdOverDimsAgainstLoops) {
  const ShapeV shape = {2, 3, 4};
  for (ox::DType dt : {ox::kF32, ox::kF64}) {
    const Tensor x = filled(shape, dt, 11);
    const Vec v = values_of(x);
    const std::vector<std::vector<int64_t>> dim_sets = {{}, {1}, {0, 2}, {-1}, {2, 0, 1}};
    for (const std::vector<int64_t>& dims : dim_sets) {
      const std::vector<bool> m = mask_of(shape.size(), dims);
      for (double ord : kOrds)
        for (bool keepdim : {false, true}) {
          const std::string what = "ord " + std::to_string(ord) + " dims " +
                                   oxtest::shape_str(dims) + (keepdim ? " keepdim" : "");
          const Tensor r = ox::linalg::vector_norm(x, ord, ox::Dims(dims), keepdim);
          EXPECT_EQ(r.dtype(), dt) << what;
          EXPECT_EQ(r.shape().vec(), kept_shape(shape, m, keepdim)) << what;
          expect_close(values_of(r), norm_ref(v, shape, m, ord), dt, what);
        }
    }
  }
}

TEST(LinalgVectorNorm, NonContiguousInputsGiveTheContiguousResults) {
  const Tensor base = filled({5, 6}, ox::kF64, 3);
  const std::vector<std::pair<std::string, Tensor>> inputs = {
      {"transposed", base.t()},
      {"narrowed", base.narrow(1, 1, 4)},
      {"strided", base.slice(0, 0, 5, 2)},
      {"flipped", base.flip({0, 1})},
      {"expanded", base.select(0, 2).unsqueeze(0).expand({3, 6})}};
  for (const auto& [name, x] : inputs) {
    const Tensor c = x.contiguous();
    const ShapeV shape = c.shape().vec();
    for (double ord : kOrds)
      for (int64_t dim : {0, 1}) {
        const std::vector<bool> m = mask_of(2, {dim});
        expect_close(values_of(ox::linalg::vector_norm(x, ord, dim)),
                     norm_ref(values_of(c), shape, m, ord), ox::kF64,
                     name + " ord " + std::to_string(ord));
      }
  }
}

TEST(LinalgVectorNorm, EmptyExtents) {
  const Tensor e = ox::zeros({0}, ox::kF32);
  for (double ord : {2.0, 1.0, 0.0, 3.0}) {
    const Tensor r = ox::linalg::vector_norm(e, ord);
    EXPECT_EQ(r.dim(), 0);
    EXPECT_EQ(r.item<float>(), 0.0f) << ord;
  }
  for (double ord : {kInf, -kInf, -1.0})
    EXPECT_EQ(kind_of([&] { ox::linalg::vector_norm(e, ord); }), ox::ErrorKind::Empty) << ord;
  const Tensor m = ox::zeros({0, 3}, ox::kF64);
  // inf over a non-empty dim of an empty tensor is fine: nothing to reduce into.
  EXPECT_EQ(ox::linalg::vector_norm(m, kInf, 1).shape().vec(), ShapeV({0}));
  EXPECT_EQ(kind_of([&] { ox::linalg::vector_norm(m, kInf, 0); }), ox::ErrorKind::Empty);
  EXPECT_EQ(kind_of([&] { ox::linalg::vector_norm(m, -2.0); }), ox::ErrorKind::Empty);
  const Tensor z = ox::linalg::vector_norm(m, 2, 0, /*keepdim=*/true);
  EXPECT_EQ(z.shape().vec(), ShapeV({1, 3}));
  EXPECT_EQ(values_of(z), Vec({0, 0, 0}));
}

TEST(LinalgVectorNorm, RefusesIntegersAndBadDims) {
  for (ox::DType dt : {ox::kI64, ox::kI32, ox::kBool, ox::kU8}) {
    const Tensor x = ox::ones({3}, dt);
    EXPECT_EQ(kind_of([&] { ox::linalg::vector_norm(x); }), ox::ErrorKind::DType) << dt;
  }
  const Tensor x = ox::ones({2, 3}, ox::kF32);
  EXPECT_EQ(kind_of([&] { ox::linalg::vector_norm(x, 2, 2); }), ox::ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { ox::linalg::vector_norm(x, 2, -3); }), ox::ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { ox::linalg::vector_norm(x, 2, {1, -1}); }), ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::linalg::vector_norm(x, std::nan("")); }), ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::linalg::vector_norm(Tensor()); }), ox::ErrorKind::Value);
  const ox::Error e = oxtest::caught([&] { ox::linalg::vector_norm(ox::ones({2}, ox::kI64)); });
  EXPECT_TRUE(oxtest::contains(e, "[linalg.vector_norm]")) << e.what();
}

// ---- matrix_norm ---------------------------------------------------------------------------

// The norms of one f64 matrix by loops (ord 1/-1: column sums, inf/-inf: row sums).
double matrix_norm_ref(const Mat& a, double ord) {
  const bool cols = std::fabs(ord) == 1;
  const int64_t outer = cols ? a.cols : a.rows, inner = cols ? a.rows : a.cols;
  double best = ord > 0 ? 0 : kInf;
  for (int64_t o = 0; o < outer; ++o) {
    double s = 0;
    for (int64_t i = 0; i < inner; ++i) s += std::fabs(cols ? a(i, o) : a(o, i));
    best = ord > 0 ? std::max(best, s) : std::min(best, s);
  }
  return best;
}
double fro_ref(const Mat& a) {
  double s = 0;
  for (double x : a.v) s += x * x;
  return std::sqrt(s);
}

TEST(LinalgMatrixNorm, ClosedForms) {
  // AᵀA = [[10, 10], [10, 20]]: σ² = 15 ± 5√5, σ1 σ2 = |det A| = 10, so nuc = √50.
  for (ox::DType dt : {ox::kF32, ox::kF64}) {
    const Tensor a = ox::tensor({{1.0, -2.0}, {3.0, 4.0}}, {.dtype = dt});
    auto num = [&](double ord) { return ox::linalg::matrix_norm(a, ord).item<double>(); };
    auto str = [&](const char* ord) { return ox::linalg::matrix_norm(a, ord).item<double>(); };
    const double tol = dt == ox::kF32 ? 2e-6 : 1e-14;
    EXPECT_NEAR(str("fro"), std::sqrt(30.0), tol * 6);
    EXPECT_NEAR(ox::linalg::matrix_norm(a).item<double>(), std::sqrt(30.0), tol * 6);
    EXPECT_EQ(num(1), 6.0);
    EXPECT_EQ(num(-1), 4.0);
    EXPECT_EQ(num(kInf), 7.0);
    EXPECT_EQ(num(-kInf), 3.0);
    EXPECT_NEAR(num(2), std::sqrt(15 + 5 * std::sqrt(5.0)), tol * 5);
    EXPECT_NEAR(num(-2), std::sqrt(15 - 5 * std::sqrt(5.0)), tol * 5);
    EXPECT_NEAR(str("nuc"), std::sqrt(50.0), tol * 8);
    EXPECT_EQ(ox::linalg::matrix_norm(a, 2).dtype(), dt);
  }
}

TEST(LinalgMatrixNorm, SumNormsBatchedAgainstLoops) {
  for (ox::DType dt : {ox::kF32, ox::kF64}) {
    const Tensor a = filled({2, 3, 4, 5}, dt, 21);
    const std::vector<Mat> ms = linalg_test::mats(a);
    for (double ord : {1.0, -1.0, kInf, -kInf})
      for (bool keepdim : {false, true}) {
        const Tensor r = ox::linalg::matrix_norm(a, ord, {-2, -1}, keepdim);
        EXPECT_EQ(r.shape().vec(), keepdim ? ShapeV({2, 3, 1, 1}) : ShapeV({2, 3}));
        Vec want;
        for (const Mat& m : ms) want.push_back(matrix_norm_ref(m, ord));
        expect_close(values_of(r), want, dt, "ord " + std::to_string(ord));
      }
    Vec fro;
    for (const Mat& m : ms) fro.push_back(fro_ref(m));
    expect_close(values_of(ox::linalg::matrix_norm(a, "fro")), fro, dt, "fro");
  }
}

// Dims other than the last two, in either order: (d0, d1) are the (row, column) dims.
TEST(LinalgMatrixNorm, DimsAnywhereAndKeepdim) {
  const Tensor x = filled({3, 4, 2}, ox::kF64, 5);  // matrices x[:, b, :] with dims (0, 2)
  const Vec v = values_of(x);
  for (bool swapped : {false, true})
    for (double ord : {1.0, -1.0, kInf, -kInf}) {
      Vec want;
      for (int64_t b = 0; b < 4; ++b) {
        Mat m(swapped ? 2 : 3, swapped ? 3 : 2);
        for (int64_t i = 0; i < 3; ++i)
          for (int64_t k = 0; k < 2; ++k) {
            const double e = v[static_cast<size_t>((i * 4 + b) * 2 + k)];
            if (swapped)
              m(k, i) = e;
            else
              m(i, k) = e;
          }
        want.push_back(matrix_norm_ref(m, ord));
      }
      const ox::Dims dims = swapped ? ox::Dims{2, 0} : ox::Dims{0, -1};
      const Tensor r = ox::linalg::matrix_norm(x, ord, dims);
      EXPECT_EQ(r.shape().vec(), ShapeV({4}));
      expect_close(values_of(r), want, ox::kF64, "ord " + std::to_string(ord));
      const Tensor k = ox::linalg::matrix_norm(x, ord, dims, /*keepdim=*/true);
      EXPECT_EQ(k.shape().vec(), ShapeV({1, 4, 1}));
      expect_close(values_of(k), want, ox::kF64, "keepdim ord " + std::to_string(ord));
    }
  EXPECT_EQ(ox::linalg::matrix_norm(x, "fro", {2, 0}, true).shape().vec(), ShapeV({1, 4, 1}));
}

TEST(LinalgMatrixNorm, SpectralNormsFromKnownSingularValues) {
  for (ox::DType dt : {ox::kF32, ox::kF64})
    for (auto [m, n] : {std::pair<int64_t, int64_t>{4, 3}, {3, 5}, {4, 4}}) {
      const auto s = linalg_test::spectral({2, 3}, m, n, dt, 7, 50.0, linalg_test::Kind::General);
      Vec two, minus_two, nuc, fro;
      double top = 0;
      for (const Vec& d : s.d) {
        double hi = 0, lo = kInf, sum = 0, sq = 0;
        for (double x : d) {
          hi = std::max(hi, std::fabs(x));
          lo = std::min(lo, std::fabs(x));
          sum += std::fabs(x);
          sq += x * x;
        }
        two.push_back(hi);
        minus_two.push_back(lo);
        nuc.push_back(sum);
        fro.push_back(std::sqrt(sq));
        top = std::max(top, hi);
      }
      const std::string what = linalg_test::ctx(dt, {2, 3}, m, n);
      // Singular values of the rounded matrix move by at most ||E||, bounded as LAPACK's tests
      // do (30 max(m, n) eps ||A||); k times that for their sum.
      const int64_t k = std::min(m, n);
      const double atol = 30.0 * double(std::max(m, n)) * linalg_test::eps_of(dt) * top, rtol = 0;
      expect_near(values_of(ox::linalg::matrix_norm(s.a, 2)), two, atol, rtol, what + " 2");
      expect_near(values_of(ox::linalg::matrix_norm(s.a, -2)), minus_two, atol, rtol, what + " -2");
      expect_near(values_of(ox::linalg::matrix_norm(s.a, "nuc")), nuc, k * atol, rtol,
                  what + " nuc");
      expect_near(values_of(ox::linalg::matrix_norm(s.a, "fro")), fro, k * atol, rtol,
                  what + " fro");
      // Other layouts, and the matrix dims moved to the front.
      for (const auto& l : linalg_test::layouts_of(s.a)) {
        expect_near(values_of(ox::linalg::matrix_norm(l.t, 2)), two, atol, rtol, what + l.name);
        expect_near(values_of(ox::linalg::matrix_norm(l.t, "nuc")), nuc, k * atol, rtol,
                    what + l.name);
      }
      const Tensor front = s.a.permute({2, 0, 3, 1});  // [m, 2, n, 3]
      const Tensor r = ox::linalg::matrix_norm(front, -2, {0, 2}, /*keepdim=*/true);
      EXPECT_EQ(r.shape().vec(), ShapeV({1, 2, 1, 3}));
      expect_near(values_of(r), minus_two, atol, rtol, what + " dims (0, 2)");
      expect_near(values_of(ox::linalg::matrix_norm(front, "nuc", {0, 2})), nuc, k * atol, rtol,
                  what + " nuc dims (0, 2)");
      // Swapping the dims transposes each matrix: the singular values stay.
      expect_near(values_of(ox::linalg::matrix_norm(front, 2, {2, 0})), two, atol, rtol,
                  what + " dims (2, 0)");
    }
}

TEST(LinalgMatrixNorm, EmptyMatrices) {
  const Tensor e = ox::zeros({2, 0, 3}, ox::kF64);
  EXPECT_EQ(values_of(ox::linalg::matrix_norm(e, "fro")), Vec({0, 0}));
  EXPECT_EQ(values_of(ox::linalg::matrix_norm(e, 1)), Vec({0, 0}));  // max of zero sums
  EXPECT_EQ(values_of(ox::linalg::matrix_norm(e, -1)), Vec({0, 0}));
  EXPECT_EQ(values_of(ox::linalg::matrix_norm(e, "nuc")), Vec({0, 0}));
  EXPECT_EQ(kind_of([&] { ox::linalg::matrix_norm(e, kInf); }), ox::ErrorKind::Empty);
  EXPECT_EQ(kind_of([&] { ox::linalg::matrix_norm(e, 2); }), ox::ErrorKind::Empty);
  EXPECT_EQ(kind_of([&] { ox::linalg::matrix_norm(e, -2); }), ox::ErrorKind::Empty);
  const Tensor t = ox::zeros({3, 0}, ox::kF32);
  EXPECT_EQ(values_of(ox::linalg::matrix_norm(t, kInf)), Vec({0}));
  EXPECT_EQ(kind_of([&] { ox::linalg::matrix_norm(t, 1); }), ox::ErrorKind::Empty);
  const Tensor batch = ox::zeros({0, 3, 3}, ox::kF32);
  EXPECT_EQ(ox::linalg::matrix_norm(batch, 2).shape().vec(), ShapeV({0}));
  EXPECT_EQ(ox::linalg::matrix_norm(batch, "nuc", {-2, -1}, true).shape().vec(), ShapeV({0, 1, 1}));
}

TEST(LinalgMatrixNorm, Refusals) {
  const Tensor a = ox::ones({2, 3}, ox::kF32);
  for (ox::DType dt : {ox::kI64, ox::kF16, ox::kBF16, ox::kBool}) {
    const Tensor x = ox::ones({2, 2}, dt);
    EXPECT_EQ(kind_of([&] { ox::linalg::matrix_norm(x); }), ox::ErrorKind::DType) << dt;
    EXPECT_EQ(kind_of([&] { ox::linalg::matrix_norm(x, 1); }), ox::ErrorKind::DType) << dt;
  }
  EXPECT_EQ(kind_of([&] { ox::linalg::matrix_norm(ox::ones({3}, ox::kF32)); }),
            ox::ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::linalg::matrix_norm(a, 3); }), ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::linalg::matrix_norm(a, 0); }), ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::linalg::matrix_norm(a, std::nan("")); }), ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::linalg::matrix_norm(a, "inf"); }), ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::linalg::matrix_norm(a, "fro", {0}); }), ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::linalg::matrix_norm(a, "fro", {0, 1, 1}); }), ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::linalg::matrix_norm(a, 1, {1, -1}); }), ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::linalg::matrix_norm(a, 1, {0, 2}); }), ox::ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { ox::linalg::matrix_norm(a, "nuc", {-3, 0}); }), ox::ErrorKind::Index);
  const ox::Error e = oxtest::caught([&] { ox::linalg::matrix_norm(a, 3); });
  EXPECT_TRUE(oxtest::contains(e, "[linalg.matrix_norm]")) << e.what();
}

// ---- ox::norm's nuclear norm ----------------------------------------------------------------

TEST(NormNuclear, ThroughMatrixNorm) {
  const Tensor a = ox::tensor({{1.0, -2.0}, {3.0, 4.0}}, {.dtype = ox::kF64});
  EXPECT_NEAR(ox::norm(a, "nuc").item<double>(), std::sqrt(50.0), 1e-13);
  EXPECT_NEAR(a.norm("nuc", {1, 0}).item<double>(), std::sqrt(50.0), 1e-13);
  const Tensor k = ox::norm(a, "nuc", {}, /*keepdim=*/true);
  EXPECT_EQ(k.shape().vec(), ShapeV({1, 1}));
  const auto s = linalg_test::spectral({3}, 2, 4, ox::kF64, 3, 10.0, linalg_test::Kind::General);
  const Tensor front = s.a.permute({1, 0, 2});  // [2, 3, 4]: matrices over dims (0, 2)
  Vec want;
  for (const Vec& d : s.d) want.push_back(std::fabs(d[0]) + std::fabs(d[1]));
  expect_near(values_of(ox::norm(front, "nuc", {0, 2})), want, 1e-12, 0, "dims (0, 2)");
  // No dims: a 2-d tensor only, as torch.norm.
  EXPECT_EQ(kind_of([&] { ox::norm(front, "nuc"); }), ox::ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::norm(ox::ones({3}), "nuc"); }), ox::ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::norm(front, "nuc", {0}); }), ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::norm(ox::ones({2, 2}, ox::kI64), "nuc"); }), ox::ErrorKind::DType);
}

// ---- matrix_rank ---------------------------------------------------------------------------

int64_t rank_of(const Tensor& a, std::optional<double> atol = std::nullopt,
                std::optional<double> rtol = std::nullopt, bool hermitian = false) {
  const Tensor r = ox::linalg::matrix_rank(a, atol, rtol, hermitian);
  EXPECT_EQ(r.dtype(), ox::kI64);
  return r.item<int64_t>();
}

TEST(LinalgMatrixRank, ClosedForms) {
  EXPECT_EQ(rank_of(ox::tensor({{1.0, 2.0}, {2.0, 4.0}}, {.dtype = ox::kF64})), 1);
  EXPECT_EQ(rank_of(ox::eye(3, std::nullopt, {.dtype = ox::kF32})), 3);
  EXPECT_EQ(rank_of(ox::zeros({3, 2}, ox::kF64)), 0);
  EXPECT_EQ(rank_of(ox::tensor({{1.0, 2.0, 3.0}, {2.0, 4.0, 6.0}}, {.dtype = ox::kF64})), 1);
  EXPECT_EQ(rank_of(ox::tensor({{1.0, 0.0, 3.0}, {2.0, 4.0, 6.0}}, {.dtype = ox::kF64}).t()), 2);
  // Hermitian: |eigenvalues| decide, negative ones count.
  const Tensor sym =
      ox::tensor({{-3.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, {0.0, 0.0, 1.0}}, {.dtype = ox::kF64});
  EXPECT_EQ(rank_of(sym, std::nullopt, std::nullopt, true), 2);
  EXPECT_EQ(rank_of(sym), 2);
}

// Defaults as PyTorch: rtol = max(m, n) eps unless atol > 0 is given (then 0); the rank counts
// the singular values strictly above max(atol, rtol * max(S)).
TEST(LinalgMatrixRank, Tolerances) {
  const Tensor d =
      ox::tensor({{1.0, 0.0, 0.0}, {0.0, 1e-3, 0.0}, {0.0, 0.0, 1e-14}}, {.dtype = ox::kF64});
  EXPECT_EQ(rank_of(d), 3);        // 1e-14 > 3 * 2^-52
  EXPECT_EQ(rank_of(d, 0.0), 3);   // atol 0 keeps the default rtol
  EXPECT_EQ(rank_of(d, 1e-5), 2);  // atol > 0: rtol 0
  EXPECT_EQ(rank_of(d, std::nullopt, 1e-2), 1);
  EXPECT_EQ(rank_of(d, 1e-5, 1e-2), 1);  // the larger of the two
  EXPECT_EQ(rank_of(d, 1e-2, 1e-5), 1);
  EXPECT_EQ(rank_of(d, 1e-3), 1);  // strictly above: 1e-3 is not
  EXPECT_EQ(rank_of(d, std::nullopt, std::nullopt, true), 3);
  EXPECT_EQ(rank_of(d, 1e-5, std::nullopt, true), 2);
  const Tensor tiny =
      ox::tensor({{1.0, 0.0, 0.0}, {0.0, 1e-16, 0.0}, {0.0, 0.0, 0.0}}, {.dtype = ox::kF64});
  EXPECT_EQ(rank_of(tiny), 1);  // 1e-16 < 3 * 2^-52
  // f32: eps 2^-23, so rtol = 2 * 2^-23 ≈ 2.4e-7 for 2 x 2.
  EXPECT_EQ(rank_of(ox::tensor({{1.0f, 0.0f}, {0.0f, 1e-6f}})), 2);
  EXPECT_EQ(rank_of(ox::tensor({{1.0f, 0.0f}, {0.0f, 1e-7f}})), 1);
  EXPECT_EQ(rank_of(ox::tensor({{1.0f, 0.0f}, {0.0f, 1e-7f}}), std::nullopt, 1e-8), 2);
}

TEST(LinalgMatrixRank, BatchedKnownRanks) {
  for (ox::DType dt : {ox::kF32, ox::kF64}) {
    for (auto [m, n] : {std::pair<int64_t, int64_t>{5, 3}, {3, 5}, {4, 4}}) {
      const auto full =
          linalg_test::spectral({2, 3}, m, n, dt, 9, 100.0, linalg_test::Kind::General);
      const auto low =
          linalg_test::spectral({2, 3}, m, n, dt, 9, 100.0, linalg_test::Kind::General, true);
      const int64_t k = std::min(m, n);
      const Tensor rf = ox::linalg::matrix_rank(full.a), rl = ox::linalg::matrix_rank(low.a);
      EXPECT_EQ(rf.shape().vec(), ShapeV({2, 3}));
      EXPECT_EQ(rf.dtype(), ox::kI64);
      EXPECT_EQ(rf.to_vector<int64_t>(), std::vector<int64_t>(6, k));
      EXPECT_EQ(rl.to_vector<int64_t>(), std::vector<int64_t>(6, k - 1));
      for (const auto& l : linalg_test::layouts_of(low.a))
        EXPECT_EQ(ox::linalg::matrix_rank(l.t).to_vector<int64_t>(), std::vector<int64_t>(6, k - 1))
            << l.name;
    }
    const auto sym =
        linalg_test::spectral({3}, 4, 4, dt, 4, 10.0, linalg_test::Kind::Symmetric, true);
    EXPECT_EQ(ox::linalg::matrix_rank(sym.a, std::nullopt, std::nullopt, true).to_vector<int64_t>(),
              std::vector<int64_t>(3, 3));
  }
}

TEST(LinalgMatrixRank, EmptyAndRefusals) {
  const Tensor e = ox::linalg::matrix_rank(ox::zeros({2, 0, 3}, ox::kF64));
  EXPECT_EQ(e.shape().vec(), ShapeV({2}));
  EXPECT_EQ(e.to_vector<int64_t>(), std::vector<int64_t>({0, 0}));
  EXPECT_EQ(ox::linalg::matrix_rank(ox::zeros({0, 3, 3}, ox::kF32)).shape().vec(), ShapeV({0}));
  EXPECT_EQ(kind_of([&] {
              ox::linalg::matrix_rank(ox::ones({2, 2}, ox::kI64));
            }),
            ox::ErrorKind::DType);
  EXPECT_EQ(kind_of([&] {
              ox::linalg::matrix_rank(ox::ones({2, 2}, ox::kF16));
            }),
            ox::ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { ox::linalg::matrix_rank(ox::ones({3}, ox::kF32)); }),
            ox::ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] {
              ox::linalg::matrix_rank(ox::ones({2, 3}, ox::kF32), std::nullopt, std::nullopt, true);
            }),
            ox::ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] {
              ox::linalg::matrix_rank(ox::ones({2, 2}), std::nan(""));
            }),
            ox::ErrorKind::Value);
}

// ---- matrix_power --------------------------------------------------------------------------

Mat power_ref(const Mat& a, int64_t n) {
  Mat r = linalg_test::identity(a.rows);
  for (int64_t i = 0; i < n; ++i) r = linalg_test::mul(r, a);
  return r;
}

TEST(LinalgMatrixPower, ClosedForms) {
  // [[1, 1], [0, 1]]^n = [[1, n], [0, 1]]; Fibonacci: [[1, 1], [1, 0]]^n = [[F(n+1), F(n)],
  // [F(n), F(n-1)]], exact in i64 and i32.
  const Tensor shear = ox::tensor({{1.0, 1.0}, {0.0, 1.0}}, {.dtype = ox::kF64});
  for (int64_t n = 0; n <= 9; ++n)
    EXPECT_EQ(values_of(ox::linalg::matrix_power(shear, n)), Vec({1, double(n), 0, 1})) << n;
  std::vector<int64_t> fib = {0, 1};
  while (fib.size() < 80) fib.push_back(fib[fib.size() - 1] + fib[fib.size() - 2]);
  const Tensor f = ox::tensor({{1, 1}, {1, 0}});
  for (int64_t n : {1, 2, 3, 4, 7, 10, 31, 64, 77}) {
    const Tensor r = ox::linalg::matrix_power(f, n);
    EXPECT_EQ(r.dtype(), ox::kI64);
    EXPECT_EQ(r.to_vector<int64_t>(),
              std::vector<int64_t>({fib[n + 1], fib[n], fib[n], fib[n - 1]}))
        << n;
  }
  const Tensor f32 = ox::tensor(std::vector<int32_t>{1, 1, 1, 0}, {2, 2});
  EXPECT_EQ(ox::linalg::matrix_power(f32, 20).to_vector<int32_t>(),
            std::vector<int32_t>({10946, 6765, 6765, 4181}));
  EXPECT_EQ(ox::linalg::matrix_power(f32, 0).to_vector<int32_t>(),
            std::vector<int32_t>({1, 0, 0, 1}));
}

// Each product of k x k matrices errs by at most k eps |A||B| elementwise, so A^n by at most
// about n k eps (|A|^n).
TEST(LinalgMatrixPower, BatchedAgainstLoops) {
  for (ox::DType dt : {ox::kF32, ox::kF64}) {
    const Tensor a = filled({2, 2, 3, 3}, dt, 31, -0.8, 0.8);
    const Tensor t = a.transpose(-2, -1).contiguous().transpose(-2, -1);
    const std::vector<Mat> ms = linalg_test::mats(a);
    for (int64_t n : {0, 1, 2, 3, 4, 5, 6, 7, 8, 13}) {
      const Tensor r = ox::linalg::matrix_power(a, n);
      EXPECT_EQ(r.shape().vec(), ShapeV({2, 2, 3, 3}));
      EXPECT_EQ(r.dtype(), dt);
      const std::vector<Mat> got = linalg_test::mats(r),
                             got_t = linalg_test::mats(ox::linalg::matrix_power(t, n));
      for (size_t b = 0; b < ms.size(); ++b) {
        const Mat want = power_ref(ms[b], n), bound = power_ref(linalg_test::abs_of(ms[b]), n);
        for (size_t i = 0; i < want.v.size(); ++i) {
          const double tol = 2.0 * double(n) * 3.0 * linalg_test::eps_of(dt) * bound.v[i];
          EXPECT_LE(std::fabs(got[b].v[i] - want.v[i]), tol) << "n " << n << " matrix " << b;
          EXPECT_LE(std::fabs(got_t[b].v[i] - want.v[i]), tol) << "transposed n " << n;
        }
      }
    }
  }
}

TEST(LinalgMatrixPower, NegativePowersInvert) {
  // [[1, 1], [0, 1]]^-k = [[1, -k], [0, 1]]; diag(2, 4)^-3 = diag(1/8, 1/64).
  const Tensor shear = ox::tensor({{1.0, 1.0}, {0.0, 1.0}}, {.dtype = ox::kF64});
  for (int64_t k = 1; k <= 6; ++k)
    expect_close(values_of(ox::linalg::matrix_power(shear, -k)), Vec({1, -double(k), 0, 1}),
                 ox::kF64, "k " + std::to_string(k), 10);
  const Tensor d = ox::tensor({{2.0f, 0.0f}, {0.0f, 4.0f}});
  expect_close(values_of(ox::linalg::matrix_power(d, -3)), Vec({0.125, 0, 0, 1.0 / 64}), ox::kF32,
               "diag");
  // Against the loop: A^-n A^n = I.
  const auto s = linalg_test::spectral({3}, 4, 4, ox::kF64, 12, 4.0, linalg_test::Kind::General);
  for (int64_t n : {-1, -2, -5}) {
    const Tensor p = ox::linalg::matrix_power(s.a, n);
    const std::vector<Mat> inv = linalg_test::mats(p);
    for (size_t b = 0; b < inv.size(); ++b) {
      const Mat prod = linalg_test::mul(inv[b], power_ref(s.exact[b], -n));
      EXPECT_LE(linalg_test::max_diff(prod, linalg_test::identity(4)), 1e-10) << n << " " << b;
    }
  }
  EXPECT_EQ(kind_of([&] {
              ox::linalg::matrix_power(ox::zeros({2, 2}, ox::kF64), -2);
            }),
            ox::ErrorKind::Value);  // singular
}

TEST(LinalgMatrixPower, ZeroAndOne) {
  // n = 0 is the identity whatever A holds (NaN too), as PyTorch.
  const Tensor a = ox::tensor({{std::nan(""), 2.0}, {kInf, 4.0}}, {.dtype = ox::kF64});
  EXPECT_EQ(values_of(ox::linalg::matrix_power(a, 0)), Vec({1, 0, 0, 1}));
  const Tensor b = ox::tensor({true, false, true, true}).reshape({2, 2});
  const Tensor eye_b = ox::linalg::matrix_power(b, 0);
  EXPECT_EQ(eye_b.dtype(), ox::kBool);
  EXPECT_EQ(eye_b.to_vector<bool>(), std::vector<bool>({true, false, false, true}));
  // n = 1 is a copy, not a view.
  const Tensor c = ox::tensor({{1.0, 2.0}, {3.0, 4.0}}, {.dtype = ox::kF64});
  const Tensor one = ox::linalg::matrix_power(c.t(), 1);
  EXPECT_FALSE(one.is_same_storage(c));
  EXPECT_EQ(values_of(one), Vec({1, 3, 2, 4}));
  // In the graph either way: n = 0 gives A a zero gradient.
  const Tensor x = ox::tensor({{1.0, 2.0}, {3.0, 4.0}}, {.dtype = ox::kF64}).requires_grad_();
  ox::linalg::matrix_power(x, 0).sum().backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(values_of(x.grad()), Vec({0, 0, 0, 0}));
}

TEST(LinalgMatrixPower, EmptyAndRefusals) {
  EXPECT_EQ(ox::linalg::matrix_power(ox::zeros({0, 0}), 3).shape().vec(), ShapeV({0, 0}));
  EXPECT_EQ(ox::linalg::matrix_power(ox::zeros({0, 3, 3}), 5).shape().vec(), ShapeV({0, 3, 3}));
  EXPECT_EQ(ox::linalg::matrix_power(ox::zeros({2, 0, 0}), 0).shape().vec(), ShapeV({2, 0, 0}));
  EXPECT_EQ(kind_of([&] { ox::linalg::matrix_power(ox::ones({2, 3}), 2); }), ox::ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::linalg::matrix_power(ox::ones({2, 3}), 0); }), ox::ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::linalg::matrix_power(ox::ones({3}), 2); }), ox::ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] {
              ox::linalg::matrix_power(ox::ones({2, 2}, ox::kI64), -1);
            }),
            ox::ErrorKind::DType);
  EXPECT_EQ(kind_of([&] {
              ox::linalg::matrix_power(ox::ones({2, 2}, ox::kBool), 2);
            }),
            ox::ErrorKind::DType);
  const ox::Error e = oxtest::caught([&] { ox::linalg::matrix_power(ox::ones({2, 3}), 2); });
  EXPECT_TRUE(oxtest::contains(e, "[linalg.matrix_power]")) << e.what();
}

// ---- cross ---------------------------------------------------------------------------------

Vec cross3(const Vec& a, const Vec& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}

TEST(LinalgCross, ClosedForms) {
  const Tensor ex = ox::tensor({1.0, 0.0, 0.0}, {.dtype = ox::kF64}),
               ey = ox::tensor({0.0, 1.0, 0.0}, {.dtype = ox::kF64});
  EXPECT_EQ(values_of(ox::linalg::cross(ex, ey)), Vec({0, 0, 1}));
  EXPECT_EQ(values_of(ox::linalg::cross(ey, ex)), Vec({0, 0, -1}));
  const Tensor a = ox::tensor({1, 2, 3}), b = ox::tensor({4, 5, 6});
  const Tensor r = ox::linalg::cross(a, b);
  EXPECT_EQ(r.dtype(), ox::kI64);
  EXPECT_EQ(r.to_vector<int64_t>(), std::vector<int64_t>({-3, 6, -3}));
}

// out[..., :, ...] along dim over a broadcast batch, by loops.
TEST(LinalgCross, AlongAnyDimBroadcastAgainstLoops) {
  struct Case {
    ShapeV sa, sb, out;
    int64_t dim;
  };
  const std::vector<Case> cases = {{{4, 3}, {4, 3}, {4, 3}, -1},
                                   {{3, 5}, {3, 5}, {3, 5}, 0},
                                   {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}, 1},
                                   {{2, 1, 3}, {1, 4, 3}, {2, 4, 3}, 2},
                                   {{1, 3, 2}, {5, 3, 1}, {5, 3, 2}, -2}};
  for (ox::DType dt : {ox::kF32, ox::kF64})
    for (const Case& c : cases) {
      const Tensor a = filled(c.sa, dt, 41), b = filled(c.sb, dt, 43);
      const Vec va = values_of(a), vb = values_of(b);
      const int64_t d = c.dim < 0 ? c.dim + int64_t(c.out.size()) : c.dim;
      Vec want(static_cast<size_t>(oxtest::product(c.out)));
      ShapeV rows = c.out;
      rows[static_cast<size_t>(d)] = 1;
      oxtest::for_each_index(rows, [&](const std::vector<int64_t>& idx) {
        Vec x(3), y(3);
        auto at = [&](const ShapeV& s, const Vec& v, int64_t k) {
          std::vector<int64_t> i = idx;
          for (size_t q = 0; q < i.size(); ++q) i[q] = s[q] == 1 ? 0 : i[q];
          i[static_cast<size_t>(d)] = k;
          return v[static_cast<size_t>(flat_index(s, i))];
        };
        for (int64_t k = 0; k < 3; ++k) {
          x[k] = at(c.sa, va, k);
          y[k] = at(c.sb, vb, k);
        }
        const Vec z = cross3(x, y);
        for (int64_t k = 0; k < 3; ++k) {
          std::vector<int64_t> i = idx;
          i[static_cast<size_t>(d)] = k;
          want[static_cast<size_t>(flat_index(c.out, i))] = z[k];
        }
      });
      const Tensor r = ox::linalg::cross(a, b, c.dim);
      EXPECT_EQ(r.shape().vec(), c.out);
      expect_close(values_of(r), want, dt,
                   oxtest::shape_str(c.sa) + " x " + oxtest::shape_str(c.sb));
      // Non-contiguous operands: the same logical values.
      const Tensor at = a.flip({0}).contiguous().flip({0}),
                   bt = b.transpose(0, -1).contiguous().transpose(0, -1);
      expect_close(values_of(ox::linalg::cross(at, bt, c.dim)), want, dt, "non-contiguous");
    }
}

TEST(LinalgCross, EmptyAndRefusals) {
  EXPECT_EQ(ox::linalg::cross(ox::zeros({0, 3}), ox::zeros({0, 3})).shape().vec(), ShapeV({0, 3}));
  EXPECT_EQ(ox::linalg::cross(ox::zeros({2, 0, 3}), ox::zeros({1, 1, 3})).shape().vec(),
            ShapeV({2, 0, 3}));
  const Tensor a = ox::ones({4, 3});
  EXPECT_EQ(kind_of([&] {
              ox::linalg::cross(ox::ones({4, 2}), ox::ones({4, 2}));
            }),
            ox::ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::linalg::cross(a, ox::ones({4, 4})); }), ox::ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::linalg::cross(a, a, 0); }), ox::ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::linalg::cross(a, ox::ones({3})); }), ox::ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::linalg::cross(a, ox::ones({2, 3})); }), ox::ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::linalg::cross(a, a, 2); }), ox::ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { ox::linalg::cross(a, a, -3); }), ox::ErrorKind::Index);
  const Tensor b = ox::ones({3}, ox::kBool);
  EXPECT_EQ(kind_of([&] { ox::linalg::cross(b, b); }), ox::ErrorKind::DType);
  const ox::Error e = oxtest::caught([&] { ox::linalg::cross(a, a, 0); });
  EXPECT_TRUE(oxtest::contains(e, "[linalg.cross]")) << e.what();
}

// ---- diag_embed ----------------------------------------------------------------------------

TEST(LinalgDiagEmbed, ClosedForms) {
  const Tensor x = ox::tensor({1.0, 2.0}, {.dtype = ox::kF64});
  EXPECT_EQ(values_of(ox::linalg::diag_embed(x)), Vec({1, 0, 0, 2}));
  const Tensor up = ox::linalg::diag_embed(x, 1);
  EXPECT_EQ(up.shape().vec(), ShapeV({3, 3}));
  EXPECT_EQ(values_of(up), Vec({0, 1, 0, 0, 0, 2, 0, 0, 0}));
  EXPECT_EQ(values_of(ox::linalg::diag_embed(x, -1)), Vec({0, 0, 0, 1, 0, 0, 0, 2, 0}));
  // inf stays on its diagonal: nothing off it becomes NaN.
  const Tensor inf = ox::linalg::diag_embed(ox::tensor({kInf, -kInf}));
  EXPECT_EQ(values_of(inf), Vec({kInf, 0, 0, -kInf}));
  const Tensor i = ox::linalg::diag_embed(ox::tensor({5, 6}), 0, 0, 1);
  EXPECT_EQ(i.dtype(), ox::kI64);
  EXPECT_EQ(i.to_vector<int64_t>(), std::vector<int64_t>({5, 0, 0, 6}));
  const Tensor bools = ox::linalg::diag_embed(ox::tensor({true, true}));
  EXPECT_EQ(bools.dtype(), ox::kBool);
  EXPECT_EQ(bools.to_vector<bool>(), std::vector<bool>({true, false, false, true}));
}

// out[idx] = x[batch(idx), i] where idx[dim2] - idx[dim1] == offset and i the smaller of the two
// (idx[dim1] for offset >= 0, idx[dim2] below), 0 elsewhere.
TEST(LinalgDiagEmbed, AnyDimsAndOffsetsAgainstLoops) {
  const ShapeV xs = {2, 3, 4};
  for (ox::DType dt : {ox::kF32, ox::kF64, ox::kI32}) {
    const Tensor x = oxtest::contiguous_from(xs, dt, [](int64_t i) { return double(i + 1); });
    const Vec vx = values_of(x);
    for (auto [dim1, dim2] :
         {std::pair<int64_t, int64_t>{-2, -1}, {-1, -2}, {0, 1}, {0, 3}, {3, 0}, {1, -1}, {2, 0}})
      for (int64_t offset : {0, 1, 2, -1, -3}) {
        const int64_t nd = 4, d1 = dim1 < 0 ? dim1 + nd : dim1, d2 = dim2 < 0 ? dim2 + nd : dim2;
        const int64_t side = 4 + std::abs(offset);
        ShapeV out;
        for (int64_t d = 0, b = 0; d < nd; ++d) out.push_back(d == d1 || d == d2 ? side : xs[b++]);
        Vec want(static_cast<size_t>(oxtest::product(out)), 0.0);
        oxtest::for_each_index(out, [&](const std::vector<int64_t>& idx) {
          const int64_t r = idx[d1], c = idx[d2];
          if (c - r != offset) return;
          std::vector<int64_t> xi;
          for (int64_t d = 0; d < nd; ++d)
            if (d != d1 && d != d2) xi.push_back(idx[d]);
          xi.push_back(offset >= 0 ? r : c);
          want[static_cast<size_t>(flat_index(out, idx))] = vx[flat_index(xs, xi)];
        });
        const Tensor r = ox::linalg::diag_embed(x, offset, dim1, dim2);
        const std::string what = "dims (" + std::to_string(dim1) + ", " + std::to_string(dim2) +
                                 ") offset " + std::to_string(offset);
        EXPECT_EQ(r.shape().vec(), out) << what;
        EXPECT_EQ(r.dtype(), dt) << what;
        EXPECT_TRUE(r.is_contiguous()) << what;
        EXPECT_EQ(values_of(r), want) << what;
        // A non-contiguous x gives the same.
        const Tensor t = x.transpose(0, 1).contiguous().transpose(0, 1);
        EXPECT_EQ(values_of(ox::linalg::diag_embed(t, offset, dim1, dim2)), want) << what;
      }
  }
}

TEST(LinalgDiagEmbed, EmptyAndRefusals) {
  EXPECT_EQ(ox::linalg::diag_embed(ox::zeros({2, 0})).shape().vec(), ShapeV({2, 0, 0}));
  const Tensor e = ox::linalg::diag_embed(ox::zeros({0}), 2);
  EXPECT_EQ(e.shape().vec(), ShapeV({2, 2}));
  EXPECT_EQ(values_of(e), Vec({0, 0, 0, 0}));
  EXPECT_EQ(ox::linalg::diag_embed(ox::zeros({0, 3}), -1).shape().vec(), ShapeV({0, 4, 4}));
  const Tensor x = ox::ones({2, 3});
  EXPECT_EQ(kind_of([&] { ox::linalg::diag_embed(ox::scalar_tensor(1.0)); }), ox::ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::linalg::diag_embed(x, 0, 1, 1); }), ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::linalg::diag_embed(x, 0, 0, -3); }), ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::linalg::diag_embed(x, 0, 3, 1); }), ox::ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { ox::linalg::diag_embed(x, 0, 0, -4); }), ox::ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { ox::linalg::diag_embed(Tensor()); }), ox::ErrorKind::Value);
  const ox::Error e2 = oxtest::caught([&] { ox::linalg::diag_embed(x, 0, 1, 1); });
  EXPECT_TRUE(oxtest::contains(e2, "[linalg.diag_embed]")) << e2.what();
}

// ---- Thread count ----------------------------------------------------------------------------

TEST(LinalgNormsThreads, BitwiseTheSameAtOneAndManyThreads) {
  const Tensor big = filled({1029, 917}, ox::kF32, 51);
  const Tensor batch = filled({16, 9, 7}, ox::kF64, 52);
  const Tensor square = filled({16, 6, 6}, ox::kF64, 53, -0.5, 0.5);
  auto run = [&] {
    return std::vector<Tensor>{ox::linalg::vector_norm(big, 2),
                               ox::linalg::vector_norm(big, 3, 1),
                               ox::linalg::matrix_norm(big, 1),
                               ox::linalg::matrix_norm(batch, "nuc"),
                               ox::linalg::matrix_norm(batch, 2),
                               ox::linalg::matrix_rank(batch),
                               ox::linalg::matrix_power(square, 11),
                               ox::linalg::cross(batch.narrow(-1, 0, 3), batch.narrow(-1, 3, 3)),
                               ox::linalg::diag_embed(batch, 1, 0, 2)};
  };
  std::vector<Tensor> one, many;
  {
    linalg_test::ThreadCount threads(1);
    one = run();
  }
  {
    linalg_test::ThreadCount threads(4);
    many = run();
  }
  for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(linalg_test::same_bits(one[i], many[i])) << i;
}

TEST(LinalgVectorNorm, HalfPrecisionInputs) {
  // Floating dtypes all work, as torch.linalg.vector_norm; the result keeps the dtype.
  for (ox::DType dt : {ox::kF16, ox::kBF16}) {
    const Tensor x = ox::tensor({3.0, -4.0}, {.dtype = ox::kF64}).to(dt);
    const Tensor r = ox::linalg::vector_norm(x);
    EXPECT_EQ(r.dtype(), dt);
    EXPECT_EQ(r.to(ox::kF64).item<double>(), 5.0);
  }
}

}  // namespace
