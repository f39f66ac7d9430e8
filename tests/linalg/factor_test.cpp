// Forward tests of ox::linalg's factorizations (cholesky, cholesky_ex, lu_factor, lu_factor_ex,
// lu, qr, eigh, eigvalsh, svd, svdvals) on inputs of known spectrum (linalg_test_util.h) and on
// closed forms: reconstruction by f64 loops, triangularity, orthonormality, ordering, layouts,
// thread counts, empty shapes and typed errors. No expected value comes from the code under test.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "linalg/linalg_test_util.h"
#include "test_util.h"

namespace {

using namespace linalg_test;  // NOLINT(google-build-using-namespace): test helpers
namespace la = ox::linalg;
using ox::Tensor;
using Kind = linalg_test::Kind;

const ox::DType kDTypes[] = {ox::kF32, ox::kF64};
const int64_t kSizes[] = {1, 3, 17, 64};
const ShapeV kBatches[] = {{}, {4}, {2, 3}};
struct Dims2 {
  int64_t m, n;
};
// Square, then tall and wide.
const Dims2 kShapes[] = {{1, 1}, {3, 3},  {17, 17}, {64, 64}, {5, 3},
                         {3, 5}, {17, 9}, {9, 17},  {64, 20}, {20, 64}};
constexpr double kCond = 10;

ShapeV batch_of(const Tensor& t) {
  ShapeV s = t.shape().vec();
  s.resize(s.size() - 2);
  return s;
}

// Each matrix with the triangle that must not be read (strictly upper when `keep_lower`) set
// to `value`.
Tensor with_other_triangle(const Tensor& a, bool keep_lower, double value) {
  std::vector<Mat> ms = mats(a);
  for (Mat& m : ms)
    for (int64_t i = 0; i < m.rows; ++i)
      for (int64_t j = 0; j < m.cols; ++j)
        if (keep_lower ? j > i : j < i) m(i, j) = value;
  return to_tensor(ms, batch_of(a), a.dtype());
}

// Largest |entry| where a lower (upper) triangular matrix must hold zeros.
double off_triangle(const Mat& m, bool lower) {
  double worst = 0;
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t j = 0; j < m.cols; ++j)
      if (lower ? j > i : i > j) worst = std::max(worst, std::fabs(m(i, j)));
  return worst;
}

Mat times_diag(const Mat& a, const Mat& diag_row, int64_t k) {  // a[:, :k] diag(row)
  Mat r(a.rows, k);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < k; ++j) r(i, j) = a(i, j) * diag_row(0, j);
  return r;
}

void expect_orthonormal_columns(const Mat& q, ox::DType dt, const std::string& what) {
  EXPECT_LE(max_diff(mul(transpose(q), q), identity(q.cols)), backward_tol(dt, q.rows, 1.0))
      << what;
}

std::vector<int64_t> ints(const Tensor& t) { return t.to_vector<int64_t>(); }

// ---- Reconstruction on inputs of known spectrum -------------------------------------------

TEST(LinalgCholesky, ReconstructsFromOneTriangle) {
  uint64_t seed = 100;
  for (ox::DType dt : kDTypes)
    for (int64_t n : kSizes)
      for (const ShapeV& batch : kBatches)
        for (bool upper : {false, true}) {
          SCOPED_TRACE(ctx(dt, batch, n, n) + (upper ? " upper" : " lower"));
          const Spectral s = spectral(batch, n, n, dt, ++seed, kCond, Kind::Spd);
          // 1e3 in the triangle that must not be read: a read of it breaks positive definiteness
          // or the reconstruction.
          const Tensor in = with_other_triangle(s.a, /*keep_lower=*/!upper, 1e3);
          const Tensor f = la::cholesky(in, upper);
          ASSERT_EQ(f.shape().vec(), with(batch, {n, n}));
          ASSERT_EQ(f.dtype(), dt);
          const std::vector<Mat> as = mats(s.a), fs = mats(f);
          for (size_t b = 0; b < fs.size(); ++b) {
            EXPECT_EQ(off_triangle(fs[b], /*lower=*/!upper), 0.0) << "matrix " << b;
            for (int64_t i = 0; i < n; ++i) EXPECT_GT(fs[b](i, i), 0.0) << "matrix " << b;
            const Mat recon = upper ? mul(transpose(fs[b]), fs[b]) : mul(fs[b], transpose(fs[b]));
            EXPECT_LE(max_diff(recon, as[b]), backward_tol(dt, n, norm1(as[b]))) << "matrix " << b;
          }
          const la::ResultWithInfo ex = la::cholesky_ex(in, upper);
          EXPECT_TRUE(same_bits(ex.result, f));
          EXPECT_EQ(ex.info.dtype(), ox::kI32);
          EXPECT_EQ(ex.info.shape().vec(), batch);
          for (int64_t info : ints(ex.info)) EXPECT_EQ(info, 0);
        }
}

TEST(LinalgLu, PermutationTimesUnitLowerTimesUpper) {
  uint64_t seed = 200;
  for (ox::DType dt : kDTypes)
    for (const auto [m, n] : kShapes)
      for (const ShapeV& batch : kBatches) {
        SCOPED_TRACE(ctx(dt, batch, m, n));
        const int64_t k = std::min(m, n);
        const Spectral s = spectral(batch, m, n, dt, ++seed, kCond, Kind::General);
        const la::LuResult r = la::lu(s.a);
        const la::LuFactorResult f = la::lu_factor(s.a);
        ASSERT_EQ(r.P.shape().vec(), with(batch, {m, m}));
        ASSERT_EQ(r.L.shape().vec(), with(batch, {m, k}));
        ASSERT_EQ(r.U.shape().vec(), with(batch, {k, n}));
        ASSERT_EQ(f.LU.shape().vec(), with(batch, {m, n}));
        ASSERT_EQ(f.pivots.shape().vec(), with(batch, {k}));
        EXPECT_EQ(f.pivots.dtype(), ox::kI32);
        const std::vector<Mat> as = mats(s.a), ps = mats(r.P), ls = mats(r.L), us = mats(r.U),
                               lus = mats(f.LU), pivs = rows_of(f.pivots);
        const int64_t big = std::max(m, n);
        for (size_t b = 0; b < as.size(); ++b) {
          SCOPED_TRACE("matrix " + std::to_string(b));
          for (int64_t i = 0; i < m; ++i) {  // a permutation: one 1 in each row and column
            double row = 0, col = 0;
            for (int64_t j = 0; j < m; ++j) {
              EXPECT_TRUE(ps[b](i, j) == 0 || ps[b](i, j) == 1);
              row += ps[b](i, j);
              col += ps[b](j, i);
            }
            EXPECT_EQ(row, 1);
            EXPECT_EQ(col, 1);
          }
          EXPECT_EQ(off_triangle(ls[b], /*lower=*/true), 0.0);
          for (int64_t i = 0; i < k; ++i) EXPECT_EQ(ls[b](i, i), 1.0);
          EXPECT_LE(max_abs(ls[b]), 1.0);  // partial pivoting: |l| <= 1
          EXPECT_EQ(off_triangle(us[b], /*lower=*/false), 0.0);
          EXPECT_LE(max_diff(mul(mul(ps[b], ls[b]), us[b]), as[b]),
                    backward_tol(dt, big, norm1(as[b])));

          // The packed form: row i of L U is row perm[i] of A, perm from LAPACK's interchanges.
          std::vector<int64_t> perm(static_cast<size_t>(m));
          for (int64_t i = 0; i < m; ++i) perm[i] = i;
          for (int64_t i = 0; i < k; ++i) {
            const auto p = static_cast<int64_t>(pivs[b](0, i));
            ASSERT_GE(p, i + 1);
            ASSERT_LE(p, m);
            std::swap(perm[i], perm[p - 1]);
          }
          Mat lower(m, k), upper_part(k, n), permuted(m, n);
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              if (j < k) lower(i, j) = i == j ? 1.0 : (i > j ? lus[b](i, j) : 0.0);
              if (i < k && j >= i) upper_part(i, j) = lus[b](i, j);
              permuted(i, j) = as[b](perm[i], j);
            }
          EXPECT_LE(max_diff(mul(lower, upper_part), permuted),
                    backward_tol(dt, big, norm1(as[b])));
          for (int64_t i = 0; i < m; ++i) EXPECT_EQ(ps[b](perm[i], i), 1.0) << "P vs pivots";
        }
        const la::LuFactorExResult ex = la::lu_factor_ex(s.a);
        EXPECT_TRUE(same_bits(ex.LU, f.LU));
        EXPECT_TRUE(same_bits(ex.pivots, f.pivots));
        EXPECT_EQ(ex.info.shape().vec(), batch);
        for (int64_t info : ints(ex.info)) EXPECT_EQ(info, 0);
      }
}

// Both sides >= 256 take the blocked LU (64-column panels, GEMM trailing updates): the
// factors still satisfy P A = L U, and a zero pivot found in a later panel is reported at its
// position in the whole matrix.
TEST(LinalgLu, BlockedFactorizationOfLargeMatrices) {
  const Dims2 shapes[] = {{300, 300}, {320, 270}, {270, 330}};
  uint64_t seed = 900;
  for (ox::DType dt : kDTypes)
    for (const auto [m, n] : shapes) {
      SCOPED_TRACE(ctx(dt, {}, m, n));
      const Spectral s = spectral({}, m, n, dt, ++seed, kCond, Kind::General);
      const la::LuResult r = la::lu(s.a);
      const Mat a = mats(s.a)[0], p = mats(r.P)[0], l = mats(r.L)[0], u = mats(r.U)[0];
      EXPECT_EQ(off_triangle(l, /*lower=*/true), 0.0);
      EXPECT_EQ(off_triangle(u, /*lower=*/false), 0.0);
      EXPECT_LE(max_abs(l), 1.0);
      EXPECT_LE(max_diff(mul(mul(p, l), u), a), backward_tol(dt, std::max(m, n), norm1(a)));
    }
  for (ox::DType dt : kDTypes) {
    // Column 280 of zeros: every update leaves it zero, so pivot 281 is exactly 0.
    Mat a = random_mats(1, 300, 300, 990)[0];
    for (int64_t i = 0; i < 300; ++i) a(i, 280) = 0;
    const la::LuFactorExResult ex = la::lu_factor_ex(to_tensor(a, dt));
    EXPECT_EQ(ints(ex.info), (std::vector<int64_t>{281}));
    const ox::Error e = oxtest::caught([&] {
      la::solve(to_tensor(a, dt), ox::ones({300, 1}, {.dtype = dt}));
    });
    // solve factors Aᵀ, whose zero row surfaces at the last pivot.
    EXPECT_TRUE(oxtest::contains(e, "singular")) << e.what();
  }
}

TEST(LinalgQr, OrthonormalTimesUpperInEveryMode) {
  uint64_t seed = 300;
  for (ox::DType dt : kDTypes)
    for (const auto [m, n] : kShapes)
      for (const ShapeV& batch : kBatches)
        for (const char* mode : {"reduced", "complete", "r"}) {
          SCOPED_TRACE(ctx(dt, batch, m, n) + " mode " + mode);
          const int64_t k = std::min(m, n);
          const bool complete = std::string(mode) == "complete";
          const Spectral s = spectral(batch, m, n, dt, ++seed, kCond, Kind::General);
          const la::QrResult r = la::qr(s.a, mode);
          const int64_t rrows = complete ? m : k;
          ASSERT_EQ(r.R.shape().vec(), with(batch, {rrows, n}));
          const std::vector<Mat> as = mats(s.a), rs = mats(r.R);
          const int64_t big = std::max(m, n);
          if (std::string(mode) == "r") {
            EXPECT_FALSE(r.Q.defined());
            for (size_t b = 0; b < as.size(); ++b) {  // Rᵀ R = Aᵀ A for any Q
              EXPECT_EQ(off_triangle(rs[b], /*lower=*/false), 0.0);
              const double na = norm1(as[b]);
              EXPECT_LE(max_diff(mul(transpose(rs[b]), rs[b]), mul(transpose(as[b]), as[b])),
                        backward_tol(dt, big, na * na))
                  << "matrix " << b;
            }
            continue;
          }
          ASSERT_EQ(r.Q.shape().vec(), with(batch, {m, rrows}));
          const std::vector<Mat> qs = mats(r.Q);
          for (size_t b = 0; b < as.size(); ++b) {
            SCOPED_TRACE("matrix " + std::to_string(b));
            EXPECT_EQ(off_triangle(rs[b], /*lower=*/false), 0.0);
            expect_orthonormal_columns(qs[b], dt, "QᵀQ");
            EXPECT_LE(max_diff(mul(qs[b], rs[b]), as[b]), backward_tol(dt, big, norm1(as[b])));
          }
        }
}

// eigh of a symmetric matrix of known spectrum, scaled by `scale`: ascending eigenvalues within
// Weyl's bound, orthonormal vectors, A = Q diag(w) Qᵀ.
void check_eigh(ox::DType dt, const ShapeV& batch, int64_t n, const char* uplo, uint64_t seed,
                double scale = 1) {
  SCOPED_TRACE(ctx(dt, batch, n, n) + " UPLO " + uplo + " scale " + std::to_string(scale));
  const Spectral s = spectral(batch, n, n, dt, seed, kCond, Kind::Symmetric);
  const Tensor a = scale == 1 ? s.a : s.a * scale;
  const la::EighResult r = la::eigh(a, uplo);
  const Tensor values_only = la::eigvalsh(a, uplo);
  ASSERT_EQ(r.eigenvalues.shape().vec(), with(batch, {n}));
  ASSERT_EQ(r.eigenvectors.shape().vec(), with(batch, {n, n}));
  ASSERT_EQ(values_only.shape().vec(), with(batch, {n}));
  const std::vector<Mat> as = mats(a), ws = rows_of(r.eigenvalues), qs = mats(r.eigenvectors),
                         vs = rows_of(values_only);
  for (size_t b = 0; b < as.size(); ++b) {
    SCOPED_TRACE("matrix " + std::to_string(b));
    Mat want(1, n);
    Vec sorted = s.d[b];
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < n; ++i) want(0, i) = sorted[size_t(i)] * scale;
    // Weyl: rounding A moves each eigenvalue by at most ||ΔA||₂.
    const double tol = backward_tol(dt, n, max_abs(want));
    for (int64_t i = 0; i + 1 < n; ++i) EXPECT_LE(ws[b](0, i), ws[b](0, i + 1));
    EXPECT_LE(max_diff(ws[b], want), tol);
    EXPECT_LE(max_diff(vs[b], want), tol) << "eigvalsh";
    expect_orthonormal_columns(qs[b], dt, "QᵀQ");
    const Mat recon = mul(times_diag(qs[b], ws[b], n), transpose(qs[b]));
    EXPECT_LE(max_diff(recon, as[b]), backward_tol(dt, n, norm1(as[b])));
  }
}

TEST(LinalgEigh, AscendingEigenvaluesAndOrthonormalVectors) {
  uint64_t seed = 400;
  for (ox::DType dt : kDTypes)
    for (int64_t n : kSizes)
      for (const ShapeV& batch : kBatches)
        for (const char* uplo : {"L", "U"}) check_eigh(dt, batch, n, uplo, ++seed);
}

// From order 128 the kernel runs syevd's steps itself, the back transformation by chunks of 64
// columns (160 = 64 + 64 + 32), and scales a matrix outside syevd's safe range as syevd does.
TEST(LinalgEigh, LargeOrdersTakeTheSplitBackTransformation) {
  uint64_t seed = 480;
  for (ox::DType dt : kDTypes)
    for (const ShapeV& batch : {ShapeV{}, ShapeV{2}})
      for (const char* uplo : {"L", "U"}) check_eigh(dt, batch, 160, uplo, ++seed);
  check_eigh(ox::kF64, {}, 130, "L", 490, 1e-200);  // below rmin = sqrt(safmin / eps) ~ 1e-146
  check_eigh(ox::kF64, {}, 130, "U", 491, 1e200);   // above rmax ~ 7e145
  check_eigh(ox::kF32, {}, 130, "L", 492, 1e-20);   // f32: rmin ~ 4e-16
  check_eigh(ox::kF32, {}, 130, "U", 493, 1e18);    // rmax ~ 2e15
}

// The divide-and-conquer merge deflates: every eigenvalue repeated (most of the rank-one
// problem deflates), three distinct values, and a multiple of the identity (the tridiagonal form
// is already diagonal, nothing is left to merge).
TEST(LinalgEigh, RepeatedEigenvaluesDeflateInTheMerge) {
  const int64_t n = 144;
  const Mat u = spectral({}, n, n, ox::kF64, 470, kCond, Kind::Symmetric).u[0];
  const std::vector<std::function<double(int64_t)>> spectra = {
      [](int64_t i) { return double(i % 72) / 8 - 4; },
      [](int64_t i) { return i % 3 == 0   ? -1.5
                             : i % 3 == 1 ? 0.25
                                          : 2.0; },
      [](int64_t) { return 3.0; }};
  for (ox::DType dt : kDTypes)
    for (size_t which = 0; which < spectra.size(); ++which) {
      SCOPED_TRACE(ctx(dt, {}, n, n) + " spectrum " + std::to_string(which));
      Mat lambda(1, n);
      for (int64_t i = 0; i < n; ++i) lambda(0, i) = spectra[which](i);
      const Mat exact = which == 2 ? times_diag(identity(n), lambda, n)
                                   : mul(times_diag(u, lambda, n), transpose(u));
      const Tensor a = to_tensor(exact, dt);
      const la::EighResult r = la::eigh(a, "L");
      const Mat w = mats(r.eigenvalues.unsqueeze(0))[0], q = mats(r.eigenvectors)[0];
      Mat want = lambda;
      std::sort(want.v.begin(), want.v.end());
      EXPECT_LE(max_diff(w, want), backward_tol(dt, n, 4.0));
      expect_orthonormal_columns(q, dt, "QᵀQ");
      const Mat recon = mul(times_diag(q, w, n), transpose(q));
      EXPECT_LE(max_diff(recon, mats(a)[0]), backward_tol(dt, n, norm1(mats(a)[0])));
    }
}

TEST(LinalgEigh, ReadsOnlyTheNamedTriangle) {
  // An asymmetry of 1e-10 (under the refusal threshold sqrt(eps) max|A| ~ 1.5e-8 max|A|) in the
  // strict upper triangle: "L" answers as for the lower triangle mirrored, "U" as for the upper.
  const Spectral s = spectral({3}, 6, 6, ox::kF64, 450, kCond, Kind::Symmetric);
  std::vector<Mat> from_lower = mats(s.a), mixed = from_lower, from_upper = from_lower;
  for (size_t b = 0; b < mixed.size(); ++b)
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t j = i + 1; j < 6; ++j) {
        mixed[b](i, j) += 1e-10;
        from_upper[b](i, j) = from_upper[b](j, i) = mixed[b](i, j);
      }
  const Tensor a_mixed = to_tensor(mixed, {3}, ox::kF64);
  for (const char* uplo : {"L", "U"}) {
    SCOPED_TRACE(uplo);
    const bool lower = std::string(uplo) == "L";
    const Tensor ref = to_tensor(lower ? from_lower : from_upper, {3}, ox::kF64);
    const la::EighResult got = la::eigh(a_mixed, uplo), want = la::eigh(ref, uplo);
    EXPECT_TRUE(same_bits(got.eigenvalues, want.eigenvalues));
    EXPECT_TRUE(same_bits(got.eigenvectors, want.eigenvectors));
  }
  EXPECT_FALSE(same_bits(la::eigvalsh(a_mixed, "L"), la::eigvalsh(a_mixed, "U")));
}

TEST(LinalgSvd, DescendingValuesAndOrthonormalFactors) {
  uint64_t seed = 500;
  for (ox::DType dt : kDTypes)
    for (const auto [m, n] : kShapes)
      for (const ShapeV& batch : kBatches)
        for (bool full : {true, false}) {
          SCOPED_TRACE(ctx(dt, batch, m, n) + (full ? " full" : " reduced"));
          const int64_t k = std::min(m, n), big = std::max(m, n);
          const Spectral s = spectral(batch, m, n, dt, ++seed, kCond, Kind::General);
          const la::SvdResult r = la::svd(s.a, full);
          const Tensor values_only = la::svdvals(s.a);
          ASSERT_EQ(r.U.shape().vec(), with(batch, {m, full ? m : k}));
          ASSERT_EQ(r.S.shape().vec(), with(batch, {k}));
          ASSERT_EQ(r.Vh.shape().vec(), with(batch, {full ? n : k, n}));
          ASSERT_EQ(values_only.shape().vec(), with(batch, {k}));
          const std::vector<Mat> as = mats(s.a), us = mats(r.U), ss = rows_of(r.S),
                                 vhs = mats(r.Vh), vs = rows_of(values_only);
          for (size_t b = 0; b < as.size(); ++b) {
            SCOPED_TRACE("matrix " + std::to_string(b));
            Mat want(1, k);
            for (int64_t j = 0; j < k; ++j) want(0, j) = std::fabs(s.d[b][j]);
            std::sort(want.v.rbegin(), want.v.rend());
            const double tol = backward_tol(dt, big, max_abs(want));
            for (int64_t i = 0; i + 1 < k; ++i) EXPECT_GE(ss[b](0, i), ss[b](0, i + 1));
            EXPECT_LE(max_diff(ss[b], want), tol);
            EXPECT_LE(max_diff(vs[b], want), tol) << "svdvals";
            expect_orthonormal_columns(us[b], dt, "UᵀU");
            expect_orthonormal_columns(transpose(vhs[b]), dt, "Vh Vhᵀ");
            const Mat recon = mul(times_diag(us[b], ss[b], k), block(vhs[b], k, n));
            EXPECT_LE(max_diff(recon, as[b]), backward_tol(dt, big, norm1(as[b])));
          }
        }
}

// ---- Closed forms -------------------------------------------------------------------------

TEST(LinalgFactorClosedForms, HandWorkedMatrices) {
  const double r2 = std::sqrt(2.0), h = 1 / std::sqrt(2.0);
  for (ox::DType dt : kDTypes) {
    SCOPED_TRACE(::testing::Message() << dt);
    auto t = [&](const Mat& m) { return to_tensor(m, dt); };
    // [[4,2],[2,3]] = L Lᵀ with l11 = 2, l21 = 2/2 = 1, l22 = sqrt(3 - 1).
    const Mat spd = mat({{4, 2}, {2, 3}});
    expect_close(mats(la::cholesky(t(spd)))[0], mat({{2, 0}, {1, r2}}), dt, "cholesky");
    expect_close(mats(la::cholesky(t(spd), true))[0], mat({{2, 1}, {0, r2}}), dt, "upper");
    EXPECT_EQ(max_diff(mats(la::cholesky(t(mat({{4, 0, 0}, {0, 9, 0}, {0, 0, 1}}))))[0],
                       mat({{2, 0, 0}, {0, 3, 0}, {0, 0, 1}})),
              0.0);
    // [[2,1],[1,2]]: eigenvalues 1, 3 with eigenvectors (1,-1)/√2, (1,1)/√2.
    const la::EighResult e = la::eigh(t(mat({{2, 1}, {1, 2}})));
    expect_close(rows_of(e.eigenvalues)[0], mat({{1, 3}}), dt, "eigh values");
    const Mat q = mats(e.eigenvectors)[0];
    expect_close(abs_of(q), mat({{h, h}, {h, h}}), dt, "eigh |vectors|");
    EXPECT_LT(q(0, 0) * q(1, 0), 0) << "the eigenvector of 1 is ±(1,-1)";
    EXPECT_GT(q(0, 1) * q(1, 1), 0) << "the eigenvector of 3 is ±(1,1)";
    // diag(3,-1,2): eigenvalues sorted, singular values |d| descending.
    const Tensor d3 = t(mat({{3, 0, 0}, {0, -1, 0}, {0, 0, 2}}));
    expect_close(rows_of(la::eigvalsh(d3))[0], mat({{-1, 2, 3}}), dt, "eigvalsh diag");
    expect_close(rows_of(la::svdvals(d3))[0], mat({{3, 2, 1}}), dt, "svdvals diag");
    // A rotation has both singular values 1.
    const double c = std::cos(0.3), sn = std::sin(0.3);
    const la::SvdResult rot = la::svd(t(mat({{c, -sn}, {sn, c}})));
    expect_close(rows_of(rot.S)[0], mat({{1, 1}}), dt, "rotation S");
    // [[1,2],[3,4]]: row 2 pivots (pivots [2, 2]), l = 1/3, u22 = 2 - 4/3.
    const la::LuFactorResult lu = la::lu_factor(t(mat({{1, 2}, {3, 4}})));
    EXPECT_EQ(ints(lu.pivots), (std::vector<int64_t>{2, 2}));
    expect_close(mats(lu.LU)[0], mat({{3, 4}, {1.0 / 3, 2 - 4.0 / 3}}), dt, "packed LU");
    // The identity factors into identities.
    const la::LuResult li = la::lu(ox::eye(3, std::nullopt, {.dtype = dt}));
    for (const Tensor& part : {li.P, li.L, li.U})
      EXPECT_EQ(max_diff(mats(part)[0], identity(3)), 0.0);
    // diag(2,-3) = Q R with Q = diag(±1): |R| = diag(2, 3).
    const la::QrResult qr = la::qr(t(mat({{2, 0}, {0, -3}})));
    expect_close(abs_of(mats(qr.R)[0]), mat({{2, 0}, {0, 3}}), dt, "qr |R|");
    expect_close(abs_of(mats(qr.Q)[0]), identity(2), dt, "qr |Q|");
  }
}

// ---- Errors -------------------------------------------------------------------------------

// Identity matrices [count, n, n] in f64 with one entry of matrix `b` changed.
Tensor identities_with(int64_t count, int64_t n, int64_t b, int64_t i, int64_t j, double value,
                       ox::DType dt = ox::kF64) {
  std::vector<Mat> ms(static_cast<size_t>(count), identity(n));
  ms[b](i, j) = value;
  return to_tensor(ms, {count}, dt);
}

TEST(LinalgCholesky, NotPositiveDefiniteNamesBatchAndMinor) {
  for (bool upper : {false, true}) {
    // Matrix 2 of 5 has a -1 as its third diagonal entry: its leading minor of order 3 fails.
    const Tensor a = identities_with(5, 4, 2, 2, 2, -1);
    const ox::Error e = oxtest::caught([&] { la::cholesky(a, upper); });
    EXPECT_EQ(e.kind(), ox::ErrorKind::Value) << e.what();
    EXPECT_TRUE(oxtest::contains(e, "batch element [2]")) << e.what();
    EXPECT_TRUE(oxtest::contains(e, "minor of order 3")) << e.what();
    EXPECT_EQ(ints(la::cholesky_ex(a, upper).info), (std::vector<int64_t>{0, 0, 3, 0, 0}));
  }
  // Batch dims [2, 3]: flat matrix 4 is element [1, 1] (row-major); its first minor fails.
  std::vector<Mat> grid(6, identity(2));
  grid[4](0, 0) = -1;
  const ox::Error e = oxtest::caught([&] { la::cholesky(to_tensor(grid, {2, 3}, ox::kF32)); });
  EXPECT_TRUE(oxtest::contains(e, "batch element [1, 1]")) << e.what();
  EXPECT_TRUE(oxtest::contains(e, "minor of order 1")) << e.what();
  // NaN in matrix 1 and Inf in matrix 4 give -1; a failing first minor in matrix 2 gives 1.
  std::vector<Mat> ms(5, identity(3));
  ms[1](1, 1) = std::numeric_limits<double>::quiet_NaN();
  ms[2](0, 0) = -2;
  ms[4](2, 2) = std::numeric_limits<double>::infinity();
  for (ox::DType dt : kDTypes)
    EXPECT_EQ(ints(la::cholesky_ex(to_tensor(ms, {5}, dt)).info),
              (std::vector<int64_t>{0, -1, 1, 0, -1}));
}

TEST(LinalgLu, SingularMatrixRefusedByLuFactor) {
  // [[1,2],[2,4]]: after the row swap, u22 = 2 - (1/2) 4 is exactly 0 (pivot 2).
  std::vector<Mat> ms(3, identity(2));
  ms[1] = mat({{1, 2}, {2, 4}});
  for (ox::DType dt : kDTypes) {
    const Tensor a = to_tensor(ms, {3}, dt);
    const ox::Error e = oxtest::caught([&] { la::lu_factor(a); });
    EXPECT_EQ(e.kind(), ox::ErrorKind::Value) << e.what();
    EXPECT_TRUE(oxtest::contains(e, "batch element [1]")) << e.what();
    EXPECT_TRUE(oxtest::contains(e, "pivot 2")) << e.what();
    const la::LuFactorExResult ex = la::lu_factor_ex(a);
    EXPECT_EQ(ints(ex.info), (std::vector<int64_t>{0, 2, 0}));
  }
}

TEST(LinalgLu, SingularMatrixStillFactors) {
  std::vector<Mat> ms(3, identity(2));
  ms[1] = mat({{1, 2}, {2, 4}});
  for (ox::DType dt : kDTypes) {
    SCOPED_TRACE(::testing::Message() << dt);
    const Tensor a = to_tensor(ms, {3}, dt);
    const la::LuResult r = la::lu(a);  // no refusal; still P L U = A with u22 = 0
    const Mat p = mats(r.P)[1], l = mats(r.L)[1], u = mats(r.U)[1];
    EXPECT_EQ(u(1, 1), 0.0);
    expect_close(mul(mul(p, l), u), ms[1], dt, "singular P L U");
  }
}

TEST(LinalgEigh, AsymmetricMatrixNamesBatch) {
  const Tensor a = identities_with(3, 3, 1, 0, 2, 0.5);  // a[1][0][2] = 0.5, a[1][2][0] = 0
  for (const char* uplo : {"L", "U"}) {
    const ox::Error e = oxtest::caught([&] { la::eigh(a, uplo); });
    EXPECT_EQ(e.kind(), ox::ErrorKind::Value) << e.what();
    EXPECT_TRUE(oxtest::contains(e, "batch element [1]")) << e.what();
    EXPECT_TRUE(oxtest::contains(e, "not symmetric")) << e.what();
    EXPECT_EQ(oxtest::kind_of([&] { la::eigvalsh(a, uplo); }), ox::ErrorKind::Value);
  }
}

using Unary = std::function<void(const Tensor&)>;
struct NamedFn {
  const char* name;
  Unary fn;
  bool square_only;
};
const std::vector<NamedFn>& factorizations() {
  static const std::vector<NamedFn> fns = {
      {"cholesky", [](const Tensor& a) { la::cholesky(a); }, true},
      {"cholesky_ex", [](const Tensor& a) { la::cholesky_ex(a); }, true},
      {"lu_factor", [](const Tensor& a) { la::lu_factor(a); }, false},
      {"lu_factor_ex", [](const Tensor& a) { la::lu_factor_ex(a); }, false},
      {"lu", [](const Tensor& a) { la::lu(a); }, false},
      {"qr", [](const Tensor& a) { la::qr(a); }, false},
      {"eigh", [](const Tensor& a) { la::eigh(a); }, true},
      {"eigvalsh", [](const Tensor& a) { la::eigvalsh(a); }, true},
      {"svd", [](const Tensor& a) { la::svd(a); }, false},
      {"svdvals", [](const Tensor& a) { la::svdvals(a); }, false},
  };
  return fns;
}

TEST(LinalgFactorErrors, BadShapesAndDTypes) {
  for (const NamedFn& f : factorizations()) {
    SCOPED_TRACE(f.name);
    if (f.square_only) {
      EXPECT_EQ(oxtest::kind_of([&] { f.fn(ox::zeros({3, 4}, ox::kF64)); }), ox::ErrorKind::Shape);
      EXPECT_EQ(oxtest::kind_of([&] {
                  f.fn(ox::zeros({2, 4, 3}, ox::kF32));
                }),
                ox::ErrorKind::Shape);
    }
    EXPECT_EQ(oxtest::kind_of([&] { f.fn(ox::ones({3}, ox::kF64)); }), ox::ErrorKind::Shape);
    EXPECT_EQ(oxtest::kind_of([&] { f.fn(ox::scalar_tensor(1.0, {.dtype = ox::kF64})); }),
              ox::ErrorKind::Shape);
    for (ox::DType bad : {ox::kI64, ox::kI32, ox::kF16, ox::kBF16})
      EXPECT_EQ(oxtest::kind_of([&] { f.fn(ox::eye(3, std::nullopt, {.dtype = bad})); }),
                ox::ErrorKind::DType)
          << bad;
  }
}

TEST(LinalgFactorErrors, UnknownModeOrUplo) {
  const Tensor a = ox::eye(3, std::nullopt, {.dtype = ox::kF64});
  EXPECT_EQ(oxtest::kind_of([&] { la::qr(a, "full"); }), ox::ErrorKind::Value);
  EXPECT_EQ(oxtest::kind_of([&] { la::eigh(a, "l"); }), ox::ErrorKind::Value);
  EXPECT_EQ(oxtest::kind_of([&] { la::eigvalsh(a, "X"); }), ox::ErrorKind::Value);
}

TEST(LinalgFactorErrors, NanOrInfIsAValueError) {
  for (const NamedFn& f : factorizations()) {
    if (std::string(f.name).ends_with("_ex")) continue;  // they answer with info -1
    for (double bad :
         {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()})
      for (ox::DType dt : kDTypes) {
        SCOPED_TRACE(::testing::Message() << f.name << " " << bad << " " << dt);
        const ox::Error e = oxtest::caught([&] { f.fn(identities_with(3, 3, 1, 1, 1, bad, dt)); });
        EXPECT_EQ(e.kind(), ox::ErrorKind::Value) << e.what();
        EXPECT_TRUE(oxtest::contains(e, "batch element [1]")) << e.what();
        EXPECT_TRUE(oxtest::contains(e, "NaN or Inf")) << e.what();
      }
  }
  const Tensor nan_lu = identities_with(3, 3, 1, 0, 1, std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(ints(la::lu_factor_ex(nan_lu).info), (std::vector<int64_t>{0, -1, 0}));
}

// ---- Empty shapes -------------------------------------------------------------------------

TEST(LinalgFactorEmpty, ZeroBatchAndZeroSizeMatrices) {
  for (ox::DType dt : kDTypes)
    for (const ShapeV& shape : {ShapeV{0, 3, 3}, ShapeV{2, 0, 0}, ShapeV{0, 0}}) {
      SCOPED_TRACE(oxtest::shape_str(shape));
      const Tensor a = ox::zeros(ox::Shape(shape), dt);
      ShapeV batch = shape, vec = shape;
      batch.resize(shape.size() - 2);
      vec.pop_back();
      EXPECT_EQ(la::cholesky(a).shape().vec(), shape);
      EXPECT_EQ(la::cholesky_ex(a).info.shape().vec(), batch);
      EXPECT_EQ(la::eigh(a).eigenvalues.shape().vec(), vec);
      EXPECT_EQ(la::eigh(a).eigenvectors.shape().vec(), shape);
      EXPECT_EQ(la::svd(a).S.shape().vec(), vec);
      EXPECT_EQ(la::svd(a).U.shape().vec(), shape);
      EXPECT_EQ(la::qr(a).R.shape().vec(), shape);
      EXPECT_EQ(la::lu(a).P.shape().vec(), shape);
      EXPECT_EQ(la::lu_factor(a).pivots.shape().vec(), vec);
    }
  // Tall and wide with a zero side: complete Q and full U are still orthogonal.
  const la::QrResult q = la::qr(ox::zeros({4, 0}, ox::kF64), "complete");
  ASSERT_EQ(q.Q.shape().vec(), (ShapeV{4, 4}));
  EXPECT_EQ(q.R.shape().vec(), (ShapeV{4, 0}));
  expect_orthonormal_columns(mats(q.Q)[0], ox::kF64, "complete Q of 4x0");
  const la::SvdResult s = la::svd(ox::zeros({3, 0}, ox::kF64));
  ASSERT_EQ(s.U.shape().vec(), (ShapeV{3, 3}));
  EXPECT_EQ(s.S.shape().vec(), (ShapeV{0}));
  EXPECT_EQ(s.Vh.shape().vec(), (ShapeV{0, 0}));
  expect_orthonormal_columns(mats(s.U)[0], ox::kF64, "full U of 3x0");
  EXPECT_EQ(la::qr(ox::zeros({0, 5}, ox::kF32)).R.shape().vec(), (ShapeV{0, 5}));
}

// ---- Layouts and threads ------------------------------------------------------------------

using Outputs = std::function<std::vector<Tensor>(const Tensor&)>;
const std::vector<std::pair<const char*, Outputs>>& factor_outputs() {
  static const std::vector<std::pair<const char*, Outputs>> fns = {
      {"cholesky", [](const Tensor& a) { return std::vector<Tensor>{la::cholesky(a)}; }},
      {"cholesky upper",
       [](const Tensor& a) { return std::vector<Tensor>{la::cholesky(a, true)}; }},
      {"lu_factor",
       [](const Tensor& a) {
         const auto r = la::lu_factor(a);
         return std::vector<Tensor>{r.LU, r.pivots};
       }},
      {"lu",
       [](const Tensor& a) {
         const auto r = la::lu(a);
         return std::vector<Tensor>{r.P, r.L, r.U};
       }},
      {"qr",
       [](const Tensor& a) {
         const auto r = la::qr(a);
         return std::vector<Tensor>{r.Q, r.R};
       }},
      {"eigh",
       [](const Tensor& a) {
         const auto r = la::eigh(a);
         return std::vector<Tensor>{r.eigenvalues, r.eigenvectors};
       }},
      {"eigh U",
       [](const Tensor& a) {
         const auto r = la::eigh(a, "U");
         return std::vector<Tensor>{r.eigenvalues, r.eigenvectors};
       }},
      {"svd",
       [](const Tensor& a) {
         const auto r = la::svd(a);
         return std::vector<Tensor>{r.U, r.S, r.Vh};
       }},
  };
  return fns;
}

void expect_same_outputs(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(same_bits(got[i], want[i])) << "output " << i;
}

TEST(LinalgFactorLayouts, NonContiguousInputsMatchContiguous) {
  for (ox::DType dt : kDTypes) {
    // SPD, so every factorization takes it.
    const Tensor c = spectral({2}, 5, 5, dt, 600, kCond, Kind::Spd).a;
    const Tensor one = spectral({1}, 5, 5, dt, 601, kCond, Kind::Spd).a;
    const Tensor expanded = one.expand({3, 5, 5});  // stride 0 over the batch
    for (const auto& [name, fn] : factor_outputs()) {
      SCOPED_TRACE(::testing::Message() << name << " " << dt);
      const std::vector<Tensor> want = fn(c);
      for (const auto& layout : layouts_of(c)) {
        SCOPED_TRACE(layout.name);
        ASSERT_FALSE(layout.t.is_contiguous());
        expect_same_outputs(fn(layout.t), want);
      }
      SCOPED_TRACE("expanded");
      expect_same_outputs(fn(expanded), fn(expanded.contiguous()));
    }
  }
}

TEST(LinalgFactorThreads, BitwiseTheSameAtOneAndTwoThreads) {
  const Tensor a = spectral({16}, 40, 40, ox::kF64, 700, kCond, Kind::Spd).a;
  const Tensor af = a.to(ox::kF32);
  const Tensor big = spectral({3}, 150, 150, ox::kF64, 701, kCond, Kind::Symmetric).a;
  std::vector<Tensor> one, two;
  for (auto* out : {&one, &two}) {
    const ThreadCount threads(out == &one ? 1 : 2);
    *out = {la::cholesky(a), la::cholesky(af), la::eigh(a).eigenvectors, la::svd(af).U,
            la::eigh(big).eigenvectors, la::eigh(big.to(ox::kF32)).eigenvalues,
            // One matrix: the tridiagonal solver's merge runs on all threads.
            la::eigh(big.select(0, 1)).eigenvectors, la::eigh(big.select(0, 2)).eigenvalues,
            la::eigh(big.select(0, 0).to(ox::kF32)).eigenvectors};
  }
  for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(same_bits(one[i], two[i])) << "output " << i;
}

}  // namespace
