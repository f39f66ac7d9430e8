// Forward tests of ox::linalg's solvers and determinants (solve, solve_ex, solve_triangular,
// cholesky_solve, lu_solve, inv, inv_ex, det, slogdet, logdet, lstsq, pinv) on inputs of known
// spectrum (linalg_test_util.h) and closed forms: residuals and solutions checked by f64 loops,
// broadcasting, layouts, thread counts, empty shapes and typed errors. No expected value comes
// from the code under test.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
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
constexpr double kCond = 10;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<int64_t> ints(const Tensor& t) { return t.to_vector<int64_t>(); }
Vec values(const Tensor& t) { return t.to(ox::kF64).contiguous().to_vector<double>(); }

// X with A X = B (left) or X A = B: checks the residual against ||A|| ||X|| (backward stable)
// and the solution against the true one (forward: grows with cond).
void expect_solves(const Mat& a, const Mat& x, const Mat& b, const Mat& x_true, bool left,
                   ox::DType dt, double cond, const std::string& what) {
  const Mat ax = left ? mul(a, x) : mul(x, a);
  EXPECT_LE(max_diff(ax, b), backward_tol(dt, a.rows, norm1(a) * max_abs(x))) << what;
  EXPECT_LE(max_diff(x, x_true), forward_tol(dt, a.rows, cond, max_abs(x_true))) << what;
}

// ---- General solves -----------------------------------------------------------------------

TEST(LinalgSolve, LeftAndRightReachTheTrueSolution) {
  uint64_t seed = 1000;
  for (ox::DType dt : kDTypes)
    for (int64_t n : kSizes)
      for (const ShapeV& batch : kBatches)
        for (bool left : {true, false})
          for (int64_t k : {1, 4}) {
            SCOPED_TRACE(ctx(dt, batch, n, n) + (left ? " left" : " right") + " k " +
                         std::to_string(k));
            const Spectral s = spectral(batch, n, n, dt, ++seed, kCond, Kind::General);
            const std::vector<Mat> as = mats(s.a);
            const int64_t count = static_cast<int64_t>(as.size());
            const std::vector<Mat> xs_true = random_mats(count, left ? n : k, left ? k : n, ++seed);
            std::vector<Mat> bs;
            for (int64_t b = 0; b < count; ++b)
              bs.push_back(left ? mul(as[b], xs_true[b]) : mul(xs_true[b], as[b]));
            const Tensor bt = to_tensor(bs, batch, dt);
            const Tensor x = la::solve(s.a, bt, left);
            ASSERT_EQ(x.shape().vec(), bt.shape().vec());
            ASSERT_EQ(x.dtype(), dt);
            const std::vector<Mat> xs = mats(x), brs = mats(bt);
            for (int64_t b = 0; b < count; ++b)
              expect_solves(as[b], xs[b], brs[b], xs_true[b], left, dt, s.cond,
                            "matrix " + std::to_string(b));
            const la::ResultWithInfo ex = la::solve_ex(s.a, bt, left);
            EXPECT_TRUE(same_bits(ex.result, x));
            EXPECT_EQ(ex.info.shape().vec(), batch);
            for (int64_t info : ints(ex.info)) EXPECT_EQ(info, 0);
          }
}

TEST(LinalgSolve, VectorRightHandSides) {
  for (ox::DType dt : kDTypes) {
    SCOPED_TRACE(::testing::Message() << dt);
    // A [5,5], b [5] -> x [5]; A [3,5,5], b [3,5] -> a batch of three vectors [3,5].
    for (const ShapeV& batch : {ShapeV{}, ShapeV{3}}) {
      const Spectral s = spectral(batch, 5, 5, dt, 1100 + batch.size(), kCond, Kind::General);
      const std::vector<Mat> as = mats(s.a);
      const std::vector<Mat> xs_true = random_mats(static_cast<int64_t>(as.size()), 5, 1, 1110);
      std::vector<Mat> bs;
      for (size_t b = 0; b < as.size(); ++b) bs.push_back(transpose(mul(as[b], xs_true[b])));
      const Tensor bt = to_tensor(bs, batch, dt).squeeze(-2);  // [..., 5]
      const Tensor x = la::solve(s.a, bt);
      ASSERT_EQ(x.shape().vec(), bt.shape().vec());
      const std::vector<Mat> xs = rows_of(x), brs = rows_of(bt);
      for (size_t b = 0; b < as.size(); ++b)
        expect_solves(as[b], transpose(xs[b]), transpose(brs[b]), xs_true[b], true, dt, s.cond,
                      "vector " + std::to_string(b));
    }
  }
}

TEST(LinalgSolve, TriangularFromOneTriangle) {
  uint64_t seed = 1200;
  for (ox::DType dt : kDTypes)
    for (int64_t n : kSizes)
      for (const ShapeV& batch : {ShapeV{}, ShapeV{2, 3}})
        for (bool upper : {true, false})
          for (bool left : {true, false})
            for (bool unit : {false, true}) {
              SCOPED_TRACE(ctx(dt, batch, n, n) + (upper ? " upper" : " lower") +
                           (left ? " left" : " right") + (unit ? " unitriangular" : ""));
              const int64_t count = oxtest::product(batch), k = 3;
              // The read triangle: diagonal in ±[1, 2], the rest Gaussian / n (moderate cond);
              // 1e3 in the other triangle and 5 on the diagonal when it is taken as 1.
              std::vector<Mat> given = random_mats(count, n, n, ++seed), effective = given;
              for (int64_t b = 0; b < count; ++b)
                for (int64_t i = 0; i < n; ++i)
                  for (int64_t j = 0; j < n; ++j) {
                    double& g = given[b](i, j);
                    double& e = effective[b](i, j);
                    if (i == j) {
                      g = unit ? 5.0 : (g < 0 ? -1.0 : 1.0) * (1.0 + std::fabs(g) / 4);
                      e = unit ? 1.0 : g;
                    } else if (upper ? j > i : j < i) {
                      g = e = g / static_cast<double>(n);
                    } else {
                      g = 1e3;
                      e = 0;
                    }
                  }
              const Tensor at = to_tensor(given, batch, dt);
              const Tensor bt =
                  to_tensor(random_mats(count, left ? n : k, left ? k : n, ++seed), batch, dt);
              const Tensor x = la::solve_triangular(at, bt, upper, left, unit);
              ASSERT_EQ(x.shape().vec(), bt.shape().vec());
              const std::vector<Mat> xs = mats(x), brs = mats(bt),
                                     es = mats(to_tensor(effective, batch, dt));
              for (int64_t b = 0; b < count; ++b) {
                // Triangular solves are componentwise backward stable: |T X - B| <= γ |T| |X|.
                const Mat r = left ? mul(es[b], xs[b]) : mul(xs[b], es[b]);
                const Mat bound =
                    left ? mul(abs_of(es[b]), abs_of(xs[b])) : mul(abs_of(xs[b]), abs_of(es[b]));
                for (size_t i = 0; i < r.v.size(); ++i)
                  ASSERT_LE(std::fabs(r.v[i] - brs[b].v[i]), backward_tol(dt, n, bound.v[i]))
                      << "matrix " << b << " element " << i;
              }
            }
}

// A zero on the triangle's diagonal is divided by, as PyTorch's trsm does, rather than leaving
// the right-hand side unsolved: forward substitution by hand gives the Inf and NaN.
TEST(LinalgSolve, TriangularWithAZeroPivotGivesInfAndNaN) {
  for (ox::DType dt : {ox::kF32, ox::kF64}) {
    // [[0, 0], [1, 1]] x = [1, 1]: x0 = 1 / 0 = inf, x1 = (1 - inf) / 1 = -inf.
    const Tensor a = to_tensor(mat({{0, 0}, {1, 1}}), dt);
    const Tensor b = to_tensor(mat({{1}, {1}}), dt);
    const Mat x = mats(la::solve_triangular(a, b, /*upper=*/false))[0];
    EXPECT_EQ(x(0, 0), INFINITY);
    EXPECT_EQ(x(1, 0), -INFINITY);
    // [[1, 0], [1, 0]] x = [1, 1]: x0 = 1, x1 = (1 - 1) / 0 = NaN; the same upper-triangular
    // system transposed and solved from the right agrees.
    const Tensor c = to_tensor(mat({{1, 0}, {1, 0}}), dt);
    EXPECT_TRUE(std::isnan(mats(la::solve_triangular(c, b, false))[0](1, 0)));
    const Mat right = mats(la::solve_triangular(c.transpose(-2, -1), b.transpose(-2, -1),
                                                /*upper=*/true, /*left=*/false))[0];
    EXPECT_EQ(right(0, 0), 1.0);
    EXPECT_TRUE(std::isnan(right(0, 1)));
  }
}

TEST(LinalgSolve, CholeskySolveFromAHandBuiltFactor) {
  uint64_t seed = 1300;
  for (ox::DType dt : kDTypes)
    for (int64_t n : kSizes)
      for (const ShapeV& batch : kBatches)
        for (bool upper : {false, true}) {
          SCOPED_TRACE(ctx(dt, batch, n, n) + (upper ? " upper" : " lower"));
          const int64_t count = oxtest::product(batch), k = 2;
          std::vector<Mat> ls = random_mats(count, n, n, ++seed);
          for (Mat& l : ls)  // lower, diagonal in [1, 1.5], off-diagonal Gaussian / n
            for (int64_t i = 0; i < n; ++i)
              for (int64_t j = 0; j < n; ++j)
                l(i, j) =
                    j > i ? 0.0 : (i == j ? 1.0 + std::fabs(l(i, j)) / 8 : l(i, j) / double(n));
          std::vector<Mat> factors;
          for (const Mat& l : ls) factors.push_back(upper ? transpose(l) : l);
          const Tensor ft = to_tensor(factors, batch, dt);
          const std::vector<Mat> fr = mats(ft);  // as rounded to dt
          std::vector<Mat> as;
          for (const Mat& f : fr) as.push_back(upper ? mul(transpose(f), f) : mul(f, transpose(f)));
          const Tensor bt = to_tensor(random_mats(count, n, k, ++seed), batch, dt);
          const Tensor x = la::cholesky_solve(bt, ft, upper);
          ASSERT_EQ(x.shape().vec(), bt.shape().vec());
          const std::vector<Mat> xs = mats(x), brs = mats(bt);
          for (int64_t b = 0; b < count; ++b)
            EXPECT_LE(max_diff(mul(as[b], xs[b]), brs[b]),
                      backward_tol(dt, n, norm1(as[b]) * max_abs(xs[b])))
                << "matrix " << b;
        }
}

TEST(LinalgSolve, LuSolveInEveryOrientation) {
  uint64_t seed = 1400;
  for (ox::DType dt : kDTypes)
    for (int64_t n : kSizes)
      for (const ShapeV& batch : kBatches)
        for (bool left : {true, false})
          for (bool adjoint : {false, true}) {
            SCOPED_TRACE(ctx(dt, batch, n, n) + (left ? " left" : " right") +
                         (adjoint ? " adjoint" : ""));
            const Spectral s = spectral(batch, n, n, dt, ++seed, kCond, Kind::General);
            const std::vector<Mat> as = mats(s.a);
            const int64_t count = static_cast<int64_t>(as.size()), k = 3;
            const std::vector<Mat> xs_true = random_mats(count, left ? n : k, left ? k : n, ++seed);
            std::vector<Mat> ops, bs;  // op(A) = A or Aᵀ
            for (int64_t b = 0; b < count; ++b) {
              ops.push_back(adjoint ? transpose(as[b]) : as[b]);
              bs.push_back(left ? mul(ops[b], xs_true[b]) : mul(xs_true[b], ops[b]));
            }
            const Tensor bt = to_tensor(bs, batch, dt);
            const la::LuFactorResult f = la::lu_factor(s.a);
            const Tensor x = la::lu_solve(f.LU, f.pivots, bt, left, adjoint);
            ASSERT_EQ(x.shape().vec(), bt.shape().vec());
            const std::vector<Mat> xs = mats(x), brs = mats(bt);
            for (int64_t b = 0; b < count; ++b)
              expect_solves(ops[b], xs[b], brs[b], xs_true[b], left, dt, s.cond,
                            "matrix " + std::to_string(b));
          }
}

TEST(LinalgSolve, BroadcastsBatchDims) {
  // A [3,1,n,n] with B [2,n,k] -> X [3,2,n,k]: X[i,j] solves A[i] X = B[j].
  const int64_t n = 4, k = 2;
  for (ox::DType dt : kDTypes) {
    SCOPED_TRACE(::testing::Message() << dt);
    const Spectral s = spectral({3, 1}, n, n, dt, 1500, kCond, Kind::Spd);
    const Tensor bt = to_tensor(random_mats(2, n, k, 1501), {2}, dt);
    const Tensor lower = la::cholesky(s.a);
    const la::LuFactorResult f = la::lu_factor(s.a);
    const std::vector<Mat> as = mats(s.a), ls = mats(lower), brs = mats(bt);
    struct Case {
      const char* name;
      Tensor x;
      std::vector<Mat> ops;  // the matrix each X[i, j] is solved against
    };
    const Case cases[] = {
        {"solve", la::solve(s.a, bt), as},
        {"solve_triangular", la::solve_triangular(lower, bt, /*upper=*/false), ls},
        {"cholesky_solve", la::cholesky_solve(bt, lower), as},
        {"lu_solve", la::lu_solve(f.LU, f.pivots, bt), as},
    };
    for (const Case& c : cases) {
      SCOPED_TRACE(c.name);
      ASSERT_EQ(c.x.shape().vec(), (ShapeV{3, 2, n, k}));
      const std::vector<Mat> xs = mats(c.x);
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 2; ++j) {
          const Mat& x = xs[i * 2 + j];
          EXPECT_LE(max_diff(mul(c.ops[i], x), brs[j]),
                    backward_tol(dt, n, norm1(c.ops[i]) * max_abs(x)))
              << "X[" << i << ", " << j << "]";
        }
    }
  }
}

// ---- Inverse and determinants -------------------------------------------------------------

TEST(LinalgInv, InverseTimesMatrixIsIdentity) {
  uint64_t seed = 1600;
  for (ox::DType dt : kDTypes)
    for (int64_t n : kSizes)
      for (const ShapeV& batch : kBatches) {
        SCOPED_TRACE(ctx(dt, batch, n, n));
        const Spectral s = spectral(batch, n, n, dt, ++seed, kCond, Kind::General);
        const Tensor inverse = la::inv(s.a);
        ASSERT_EQ(inverse.shape().vec(), s.a.shape().vec());
        const std::vector<Mat> as = mats(s.a), is = mats(inverse);
        for (size_t b = 0; b < as.size(); ++b) {
          const double tol = forward_tol(dt, n, s.cond, 1.0);
          EXPECT_LE(max_diff(mul(is[b], as[b]), identity(n)), tol) << "inv(A) A, matrix " << b;
          EXPECT_LE(max_diff(mul(as[b], is[b]), identity(n)), tol) << "A inv(A), matrix " << b;
        }
        const la::ResultWithInfo ex = la::inv_ex(s.a);
        EXPECT_TRUE(same_bits(ex.result, inverse));
        EXPECT_EQ(ex.info.shape().vec(), batch);
        for (int64_t info : ints(ex.info)) EXPECT_EQ(info, 0);
      }
}

TEST(LinalgDet, KnownDeterminantsWithBothSigns) {
  uint64_t seed = 1700;
  for (ox::DType dt : kDTypes)
    for (int64_t n : kSizes)
      for (const ShapeV& batch : kBatches) {
        SCOPED_TRACE(ctx(dt, batch, n, n));
        // det = ±(1 + b/8)^n: the spectrum's product, negative for odd b.
        const Spectral s = spectral(batch, n, n, dt, ++seed, kCond, Kind::General);
        const Tensor d = la::det(s.a), l = la::logdet(s.a);
        const la::SlogdetResult sl = la::slogdet(s.a);
        for (const Tensor& t : {d, l, sl.sign, sl.logabsdet}) ASSERT_EQ(t.shape().vec(), batch);
        const Vec got = values(d), logs = values(l), signs = values(sl.sign),
                  logabs = values(sl.logabsdet);
        // The relative change of det under a backward error ΔA is tr(A⁻¹ΔA): n cond eps.
        const double rel = forward_tol(dt, n, s.cond, 1.0);
        for (size_t b = 0; b < s.det.size(); ++b) {
          SCOPED_TRACE("matrix " + std::to_string(b));
          const double want = s.det[b];
          EXPECT_LE(std::fabs(got[b] - want), rel * std::fabs(want)) << got[b] << " vs " << want;
          EXPECT_EQ(signs[b], want > 0 ? 1.0 : -1.0);
          EXPECT_LE(std::fabs(logabs[b] - std::log(std::fabs(want))), rel);
          if (want > 0) {
            EXPECT_LE(std::fabs(logs[b] - std::log(want)), rel);
          } else {
            EXPECT_TRUE(std::isnan(logs[b])) << logs[b];
          }
        }
      }
}

TEST(LinalgSolveClosedForms, HandWorkedMatrices) {
  const double c = std::cos(0.3), sn = std::sin(0.3);
  for (ox::DType dt : kDTypes) {
    SCOPED_TRACE(::testing::Message() << dt);
    auto t = [&](const Mat& m) { return to_tensor(m, dt); };
    // [[4,7],[2,6]]: det 24 - 14 = 10, inverse [[6,-7],[-2,4]] / 10.
    const Tensor a = t(mat({{4, 7}, {2, 6}}));
    expect_close(mats(la::inv(a))[0], mat({{0.6, -0.7}, {-0.2, 0.4}}), dt, "inv 2x2");
    expect_close(mats(la::solve(a, t(mat({{11}, {8}}))))[0], mat({{1}, {1}}), dt, "solve 2x2");
    // Closed-form determinants: 2x2, rotation, identity, diagonal, triangular.
    const std::pair<Mat, double> dets[] = {
        {mat({{4, 7}, {2, 6}}), 10},
        {mat({{c, -sn}, {sn, c}}), 1},
        {identity(4), 1},
        {mat({{2, 0, 0}, {0, -3, 0}, {0, 0, 0.5}}), -3},
        {mat({{2, 5}, {0, 3}}), 6},
        {mat({{0, 1}, {1, 0}}), -1},
    };
    for (const auto& [m, want] : dets) {
      expect_close(mats(la::det(t(m)).reshape({1, 1}))[0], mat({{want}}), dt, "det");
      const la::SlogdetResult sl = la::slogdet(t(m));
      EXPECT_EQ(sl.sign.item<double>(), want > 0 ? 1.0 : -1.0);
      expect_close(mats(sl.logabsdet.reshape({1, 1}))[0], mat({{std::log(std::fabs(want))}}), dt,
                   "logabsdet");
      const double l = la::logdet(t(m)).item<double>();
      if (want < 0) {
        EXPECT_TRUE(std::isnan(l)) << "logdet of det " << want << " is " << l;
      }
    }
    expect_close(mats(la::inv(t(mat({{2, 0, 0}, {0, -4, 0}, {0, 0, 0.5}}))))[0],
                 mat({{0.5, 0, 0}, {0, -0.25, 0}, {0, 0, 2}}), dt, "inv diag");
  }
}

TEST(LinalgDet, SingularMatricesHaveDetZero) {
  // I; [[1,2],[2,4]] (its LU's second pivot is exactly 0); the zero matrix (the first is).
  const std::vector<Mat> ms = {identity(2), mat({{1, 2}, {2, 4}}), Mat(2, 2)};
  for (ox::DType dt : kDTypes) {
    SCOPED_TRACE(::testing::Message() << dt);
    const Tensor a = to_tensor(ms, {3}, dt);
    const auto unrefused = [](const char* what, const std::function<void()>& fn) {
      try {
        fn();
      } catch (const ox::Error& e) {
        ADD_FAILURE() << what << " refused a singular matrix: " << e.what();
      }
    };
    unrefused("det", [&] { EXPECT_EQ(values(la::det(a)), (Vec{1, 0, 0})); });
    unrefused("slogdet", [&] {
      const la::SlogdetResult sl = la::slogdet(a);
      EXPECT_EQ(values(sl.sign), (Vec{1, 0, 0}));
      EXPECT_EQ(values(sl.logabsdet), (Vec{0, -kInf, -kInf}));
    });
    unrefused("logdet", [&] { EXPECT_EQ(values(la::logdet(a)), (Vec{0, -kInf, -kInf})); });
  }
}

// ---- Least squares and pseudo-inverse -----------------------------------------------------

struct Dims2 {
  int64_t m, n;
};

TEST(LinalgLstsq, MatchesNormalEquationsAndMinimumNorm) {
  uint64_t seed = 1800;
  const Dims2 shapes[] = {{3, 3}, {5, 3}, {17, 9}, {64, 20}, {3, 5}, {9, 17}};
  for (ox::DType dt : kDTypes)
    for (const auto [m, n] : shapes)
      for (const ShapeV& batch : kBatches)
        for (int64_t k : {1, 3}) {
          SCOPED_TRACE(ctx(dt, batch, m, n) + " k " + std::to_string(k));
          const int64_t big = std::max(m, n), small = std::min(m, n);
          const Spectral s = spectral(batch, m, n, dt, ++seed, kCond, Kind::General);
          const std::vector<Mat> as = mats(s.a);
          const int64_t count = static_cast<int64_t>(as.size());
          const Tensor bt = to_tensor(random_mats(count, m, k, ++seed), batch, dt);
          const std::vector<Mat> bs = mats(bt);
          const la::LstsqResult r = la::lstsq(s.a, bt);
          ASSERT_EQ(r.solution.shape().vec(), with(batch, {n, k}));
          ASSERT_EQ(r.rank.shape().vec(), batch);
          EXPECT_EQ(r.rank.dtype(), ox::kI64);
          ASSERT_EQ(r.singular_values.shape().vec(), with(batch, {small}));
          const ShapeV residual_shape = m > n ? with(batch, {k}) : ShapeV{0};
          ASSERT_EQ(r.residuals.shape().vec(), residual_shape);
          const std::vector<Mat> xs = mats(r.solution), svs = rows_of(r.singular_values),
                                 res = m > n ? rows_of(r.residuals) : std::vector<Mat>{};
          for (int64_t rank : ints(r.rank)) EXPECT_EQ(rank, small);
          for (int64_t b = 0; b < count; ++b) {
            SCOPED_TRACE("matrix " + std::to_string(b));
            const Mat at = transpose(as[b]);
            // Tall: (AᵀA) X = AᵀB; wide: X = Aᵀ (AAᵀ)⁻¹ B, the minimum-norm solution.
            const Mat want = m >= n ? solve_ref(mul(at, as[b]), mul(at, bs[b]))
                                    : mul(at, solve_ref(mul(as[b], at), bs[b]));
            // The least-squares forward error carries a cond² term for the residual.
            EXPECT_LE(max_diff(xs[b], want),
                      forward_tol(dt, big, s.cond * s.cond, max_abs(want) + max_abs(bs[b])));
            Mat sv(1, small);
            for (int64_t j = 0; j < small; ++j) sv(0, j) = std::fabs(s.d[b][j]);
            std::sort(sv.v.rbegin(), sv.v.rend());
            EXPECT_LE(max_diff(svs[b], sv), backward_tol(dt, big, max_abs(sv)));
            if (m > n) {
              const Mat rr = mul(as[b], want);
              Mat sq(1, k);
              for (int64_t j = 0; j < k; ++j)
                for (int64_t i = 0; i < m; ++i) sq(0, j) += std::pow(rr(i, j) - bs[b](i, j), 2);
              EXPECT_LE(max_diff(res[b], sq), forward_tol(dt, big, s.cond, max_abs(sq)));
            }
          }
        }
}

// Vᵀ D⁺ Uᵀ of a spectral matrix A = U D V.
Mat pinv_of(const Spectral& s, size_t b) {
  const int64_t m = s.u[b].rows, n = s.v[b].rows;
  Mat dplus(n, m);
  for (size_t j = 0; j < s.d[b].size(); ++j)
    if (s.d[b][j] != 0) dplus(j, j) = 1 / s.d[b][j];
  return mul(mul(transpose(s.v[b]), dplus), transpose(s.u[b]));
}

TEST(LinalgPinv, MoorePenroseConditionsAndKnownInverse) {
  uint64_t seed = 1900;
  const Dims2 shapes[] = {{1, 1}, {4, 4}, {7, 4}, {4, 7}, {17, 9}};
  for (ox::DType dt : kDTypes)
    for (const auto [m, n] : shapes)
      for (const ShapeV& batch : {ShapeV{}, ShapeV{3}})
        for (bool deficient : {false, true})
          for (bool hermitian : {false, true}) {
            if (hermitian && m != n) continue;
            if (deficient && m * n == 1) continue;
            SCOPED_TRACE(ctx(dt, batch, m, n) + (deficient ? " rank deficient" : "") +
                         (hermitian ? " hermitian" : ""));
            const Spectral s = spectral(batch, m, n, dt, ++seed, kCond,
                                        hermitian ? Kind::Symmetric : Kind::General, deficient);
            const Tensor p = la::pinv(s.a, std::nullopt, std::nullopt, hermitian);
            ASSERT_EQ(p.shape().vec(), with(batch, {n, m}));
            const std::vector<Mat> as = mats(s.a), ps = mats(p);
            const int64_t big = std::max(m, n);
            for (size_t b = 0; b < as.size(); ++b) {
              SCOPED_TRACE("matrix " + std::to_string(b));
              const Mat& a = as[b];
              const Mat& x = ps[b];
              const Mat ax = mul(a, x), xa = mul(x, a);
              const double na = max_abs(a), nx = max_abs(x);
              EXPECT_LE(max_diff(mul(ax, a), a), forward_tol(dt, big, s.cond, na)) << "A X A = A";
              EXPECT_LE(max_diff(mul(xa, x), x), forward_tol(dt, big, s.cond, nx)) << "X A X = X";
              EXPECT_LE(max_diff(ax, transpose(ax)), forward_tol(dt, big, s.cond, 1)) << "(AX)ᵀ";
              EXPECT_LE(max_diff(xa, transpose(xa)), forward_tol(dt, big, s.cond, 1)) << "(XA)ᵀ";
              const Mat want = pinv_of(s, b);
              EXPECT_LE(max_diff(x, want), forward_tol(dt, big, s.cond, max_abs(want)));
            }
            if (deficient && !hermitian) {  // lstsq: the minimum-norm solution is pinv(A) B
              const Tensor bt =
                  to_tensor(random_mats(oxtest::product(batch), m, 2, ++seed), batch, dt);
              const la::LstsqResult r = la::lstsq(s.a, bt);
              const std::vector<Mat> xs = mats(r.solution), bs = mats(bt);
              for (int64_t rank : ints(r.rank)) EXPECT_EQ(rank, std::min(m, n) - 1);
              EXPECT_EQ(r.residuals.shape().vec(), (ShapeV{0}));
              for (size_t b = 0; b < xs.size(); ++b) {
                const Mat want = mul(pinv_of(s, b), bs[b]);
                EXPECT_LE(max_diff(xs[b], want),
                          forward_tol(dt, big, s.cond * s.cond, max_abs(want) + max_abs(bs[b])))
                    << "lstsq matrix " << b;
              }
            }
          }
}

TEST(LinalgPinv, TolerancesCutSmallSingularValues) {
  for (ox::DType dt : kDTypes) {
    const Tensor a = to_tensor(mat({{3, 0, 0}, {0, 1, 0}, {0, 0, 1e-3}}), dt);
    const Mat full = mat({{1.0 / 3, 0, 0}, {0, 1, 0}, {0, 0, 1e3}});
    const Mat cut = mat({{1.0 / 3, 0, 0}, {0, 1, 0}, {0, 0, 0}});
    expect_close(mats(la::pinv(a))[0], full, dt, "default tolerance");
    expect_close(mats(la::pinv(a, 1e-2))[0], cut, dt, "atol 1e-2");
    expect_close(mats(la::pinv(a, std::nullopt, 1e-2))[0], cut, dt, "rtol 1e-2 (0.03)");
    expect_close(mats(la::pinv(a, std::nullopt, 1e-4))[0], full, dt, "rtol 1e-4 (3e-4)");
    expect_close(mats(la::pinv(a, 1e-2, std::nullopt, true))[0], cut, dt, "hermitian atol");
    // lstsq's rcond is relative to max(S) = 3: 1e-2 cuts 1e-3 (rank 2), the default keeps it.
    const Tensor b = to_tensor(mat({{3}, {1}, {1e-3}}), dt);
    const la::LstsqResult kept = la::lstsq(a, b), dropped = la::lstsq(a, b, 1e-2);
    EXPECT_EQ(kept.rank.item<int64_t>(), 3);
    EXPECT_EQ(dropped.rank.item<int64_t>(), 2);
    expect_close(mats(kept.solution)[0], mat({{1}, {1}, {1}}), dt, "lstsq default rcond");
    expect_close(mats(dropped.solution)[0], mat({{1}, {1}, {0}}), dt, "lstsq rcond 1e-2");
  }
}

// ---- Errors -------------------------------------------------------------------------------

Tensor with_singular_second(ox::DType dt) {  // [3,2,2]; matrix 1 is [[1,2],[2,4]] (pivot 2 is 0)
  std::vector<Mat> ms(3, identity(2));
  ms[1] = mat({{1, 2}, {2, 4}});
  return to_tensor(ms, {3}, dt);
}

TEST(LinalgSolveErrors, SingularMatrixNamesBatchAndPivot) {
  for (ox::DType dt : kDTypes) {
    SCOPED_TRACE(::testing::Message() << dt);
    const Tensor a = with_singular_second(dt), b = ox::ones({3, 2, 1}, dt);
    const la::LuFactorExResult f = la::lu_factor_ex(a);
    // lu_solve names the zero diagonal entry of U (0-based) rather than the pivot.
    const std::tuple<const char*, std::function<void()>, const char*> refusing[] = {
        {"solve", [&] { la::solve(a, b); }, "pivot 2"},
        {"solve right", [&] { la::solve(a, b.transpose(-2, -1), false); }, "pivot 2"},
        {"inv", [&] { la::inv(a); }, "pivot 2"},
        {"lu_solve", [&] { la::lu_solve(f.LU, f.pivots, b); }, "U[1, 1]"},
    };
    for (const auto& [name, fn, pivot] : refusing) {
      const ox::Error e = oxtest::caught(fn);
      EXPECT_EQ(e.kind(), ox::ErrorKind::Value) << name << ": " << e.what();
      EXPECT_TRUE(oxtest::contains(e, "batch element [1]")) << name << ": " << e.what();
      EXPECT_TRUE(oxtest::contains(e, pivot)) << name << ": " << e.what();
    }
    EXPECT_EQ(ints(la::solve_ex(a, b).info), (std::vector<int64_t>{0, 2, 0}));
    EXPECT_EQ(ints(la::inv_ex(a).info), (std::vector<int64_t>{0, 2, 0}));
    // NaN and Inf: a Value error, info -1 from the _ex forms.
    for (double bad : {kNaN, kInf}) {
      std::vector<Mat> ms(3, identity(2));
      ms[2](0, 1) = bad;
      const Tensor nan_a = to_tensor(ms, {3}, dt);
      const ox::Error e = oxtest::caught([&] { la::solve(nan_a, b); });
      EXPECT_EQ(e.kind(), ox::ErrorKind::Value) << e.what();
      EXPECT_TRUE(oxtest::contains(e, "batch element [2]")) << e.what();
      EXPECT_EQ(oxtest::kind_of([&] { la::inv(nan_a); }), ox::ErrorKind::Value);
      EXPECT_EQ(ints(la::solve_ex(nan_a, b).info), (std::vector<int64_t>{0, 0, -1}));
      EXPECT_EQ(ints(la::inv_ex(nan_a).info), (std::vector<int64_t>{0, 0, -1}));
    }
  }
}

TEST(LinalgSolveErrors, BadShapesAndDTypes) {
  const auto f64 = [](const ShapeV& s) { return ox::ones(ox::Shape(s), ox::kF64); };
  const Tensor i3 = ox::eye(3, std::nullopt, {.dtype = ox::kF64}), b3 = f64({3, 2});
  const std::pair<const char*, std::function<void()>> shape_errors[] = {
      {"solve non-square",
       [&] {
         la::solve(f64({3, 4}), b3);
       }},
      {"solve rows",
       [&] {
         la::solve(i3, f64({4, 2}));
       }},
      {"solve right cols",
       [&] {
         la::solve(i3, f64({2, 4}), false);
       }},
      {"solve batch",
       [&] {
         la::solve(f64({2, 3, 3}), f64({3, 3, 2}));
       }},
      {"solve 1-d", [&] { la::solve(f64({3}), f64({3})); }},
      {"solve_ex rows",
       [&] {
         la::solve_ex(i3, f64({4, 2}));
       }},
      {"solve_triangular non-square",
       [&] {
         la::solve_triangular(f64({3, 4}), b3, true);
       }},
      {"solve_triangular rows",
       [&] {
         la::solve_triangular(i3, f64({4, 2}), true);
       }},
      {"cholesky_solve rows",
       [&] {
         la::cholesky_solve(f64({4, 2}), i3);
       }},
      {"cholesky_solve non-square",
       [&] {
         la::cholesky_solve(b3, f64({3, 4}));
       }},
      {"lu_solve rows",
       [&] {
         la::lu_solve(i3, ox::ones({3}, ox::kI32), f64({4, 2}));
       }},
      {"inv non-square",
       [&] {
         la::inv(f64({3, 4}));
       }},
      {"inv 1-d", [&] { la::inv(f64({3})); }},
      {"inv_ex non-square",
       [&] {
         la::inv_ex(f64({2, 3}));
       }},
      {"det non-square",
       [&] {
         la::det(f64({3, 4}));
       }},
      {"det 0-d", [&] { la::det(ox::scalar_tensor(1.0, {.dtype = ox::kF64})); }},
      {"slogdet non-square",
       [&] {
         la::slogdet(f64({3, 4}));
       }},
      {"logdet non-square",
       [&] {
         la::logdet(f64({3, 4}));
       }},
      {"lstsq rows",
       [&] {
         la::lstsq(f64({5, 3}), f64({4, 2}));
       }},
      {"lstsq 1-d", [&] { la::lstsq(f64({5}), f64({5})); }},
      {"pinv 1-d", [&] { la::pinv(f64({3})); }},
  };
  for (const auto& [name, fn] : shape_errors)
    EXPECT_EQ(oxtest::kind_of(fn), ox::ErrorKind::Shape) << name;
  // Operands of two dtypes are refused rather than promoted.
  EXPECT_EQ(oxtest::kind_of([&] { la::solve(i3, b3.to(ox::kF32)); }), ox::ErrorKind::DType);
  EXPECT_EQ(oxtest::kind_of([&] { la::lstsq(i3.to(ox::kF32), b3); }), ox::ErrorKind::DType);
  for (ox::DType bad : {ox::kI64, ox::kI32, ox::kF16, ox::kBF16}) {
    SCOPED_TRACE(::testing::Message() << bad);
    const Tensor a = ox::eye(3, std::nullopt, {.dtype = bad}), b = ox::ones({3, 2}, bad);
    const std::pair<const char*, std::function<void()>> dtype_errors[] = {
        {"solve", [&] { la::solve(a, b); }},
        {"solve_ex", [&] { la::solve_ex(a, b); }},
        {"solve_triangular", [&] { la::solve_triangular(a, b, true); }},
        {"cholesky_solve", [&] { la::cholesky_solve(b, a); }},
        {"lu_solve", [&] { la::lu_solve(a, ox::ones({3}, ox::kI32), b); }},
        {"inv", [&] { la::inv(a); }},
        {"inv_ex", [&] { la::inv_ex(a); }},
        {"det", [&] { la::det(a); }},
        {"slogdet", [&] { la::slogdet(a); }},
        {"logdet", [&] { la::logdet(a); }},
        {"lstsq", [&] { la::lstsq(a, b); }},
        {"pinv", [&] { la::pinv(a); }},
    };
    for (const auto& [name, fn] : dtype_errors)
      EXPECT_EQ(oxtest::kind_of(fn), ox::ErrorKind::DType) << name;
  }
}

// ---- Empty shapes -------------------------------------------------------------------------

TEST(LinalgSolveEmpty, ZeroBatchAndZeroSizeMatrices) {
  for (ox::DType dt : kDTypes) {
    SCOPED_TRACE(::testing::Message() << dt);
    const auto z = [&](const ShapeV& s) { return ox::zeros(ox::Shape(s), dt); };
    // det of a 0x0 matrix is the empty product 1; slogdet (1, 0).
    EXPECT_EQ(values(la::det(z({0, 0}))), Vec{1.0});
    EXPECT_EQ(la::det(z({0, 0})).dim(), 0);
    EXPECT_EQ(values(la::det(z({3, 0, 0}))), (Vec{1, 1, 1}));
    EXPECT_EQ(values(la::slogdet(z({0, 0})).sign), Vec{1.0});
    EXPECT_EQ(values(la::slogdet(z({0, 0})).logabsdet), Vec{0.0});
    EXPECT_EQ(values(la::logdet(z({2, 0, 0}))), (Vec{0, 0}));
    EXPECT_EQ(la::det(z({0, 3, 3})).shape().vec(), (ShapeV{0}));
    EXPECT_EQ(la::inv(z({2, 0, 0})).shape().vec(), (ShapeV{2, 0, 0}));
    EXPECT_EQ(la::inv(z({0, 3, 3})).shape().vec(), (ShapeV{0, 3, 3}));
    EXPECT_EQ(la::inv_ex(z({0, 3, 3})).info.shape().vec(), (ShapeV{0}));
    EXPECT_EQ(la::solve(z({0, 0}), z({0, 3})).shape().vec(), (ShapeV{0, 3}));
    EXPECT_EQ(la::solve(z({0, 3, 3}), z({0, 3, 2})).shape().vec(), (ShapeV{0, 3, 2}));
    const Tensor eye3 = ox::eye(3, std::nullopt, {.dtype = dt});
    EXPECT_EQ(la::solve(eye3, z({3, 0})).shape().vec(), (ShapeV{3, 0}));
    EXPECT_EQ(la::solve_triangular(eye3, z({3, 0}), true).shape().vec(), (ShapeV{3, 0}));
    EXPECT_EQ(la::cholesky_solve(z({0, 3, 2}), z({0, 3, 3})).shape().vec(), (ShapeV{0, 3, 2}));
    EXPECT_EQ(la::lstsq(ox::eye(4, 3, {.dtype = dt}), z({4, 0})).solution.shape().vec(),
              (ShapeV{3, 0}));
    EXPECT_EQ(la::pinv(z({3, 0})).shape().vec(), (ShapeV{0, 3}));
    EXPECT_EQ(la::pinv(z({0, 0})).shape().vec(), (ShapeV{0, 0}));
  }
}

// ---- Layouts and threads ------------------------------------------------------------------

using Outputs = std::function<std::vector<Tensor>(const Tensor&, const Tensor&)>;

TEST(LinalgSolveLayouts, NonContiguousOperandsMatchContiguous) {
  for (ox::DType dt : kDTypes) {
    const Tensor spd = spectral({2}, 5, 5, dt, 2000, kCond, Kind::Spd).a;
    const Tensor gen = spectral({2}, 5, 5, dt, 2001, kCond, Kind::General).a;
    const Tensor tall = spectral({2}, 7, 5, dt, 2002, kCond, Kind::General).a;
    const Tensor lower = la::cholesky(spd).contiguous();
    const la::LuFactorResult f = la::lu_factor(gen);
    const Tensor lu = f.LU.contiguous();
    const Tensor b = to_tensor(random_mats(2, 5, 3, 2003), {2}, dt);
    const Tensor bt = to_tensor(random_mats(2, 3, 5, 2004), {2}, dt);
    const Tensor b7 = to_tensor(random_mats(2, 7, 3, 2005), {2}, dt);
    const auto one = [](Tensor t) { return std::vector<Tensor>{t}; };
    const struct {
      const char* name;
      Tensor a, b;
      Outputs fn;
    } cases[] = {
        {"solve", gen, b, [&](const Tensor& x, const Tensor& y) { return one(la::solve(x, y)); }},
        {"solve right", gen, bt,
         [&](const Tensor& x, const Tensor& y) { return one(la::solve(x, y, false)); }},
        {"solve_triangular", lower, b,
         [&](const Tensor& x, const Tensor& y) { return one(la::solve_triangular(x, y, false)); }},
        {"cholesky_solve", lower, b,
         [&](const Tensor& x, const Tensor& y) { return one(la::cholesky_solve(y, x)); }},
        {"lu_solve", lu, b,
         [&](const Tensor& x, const Tensor& y) { return one(la::lu_solve(x, f.pivots, y)); }},
        {"inv", gen, b, [&](const Tensor& x, const Tensor&) { return one(la::inv(x)); }},
        {"det", gen, b, [&](const Tensor& x, const Tensor&) { return one(la::det(x)); }},
        {"slogdet", gen, b,
         [&](const Tensor& x, const Tensor&) {
           const auto r = la::slogdet(x);
           return std::vector<Tensor>{r.sign, r.logabsdet};
         }},
        {"lstsq", tall, b7,
         [&](const Tensor& x, const Tensor& y) {
           const auto r = la::lstsq(x, y);
           return std::vector<Tensor>{r.solution, r.residuals, r.rank, r.singular_values};
         }},
        {"pinv", tall, b, [&](const Tensor& x, const Tensor&) { return one(la::pinv(x)); }},
    };
    for (const auto& c : cases) {
      SCOPED_TRACE(::testing::Message() << c.name << " " << dt);
      const std::vector<Tensor> want = c.fn(c.a, c.b);
      const auto same = [&](const std::vector<Tensor>& got, const std::string& what) {
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); ++i)
          EXPECT_TRUE(same_bits(got[i], want[i])) << what << " output " << i;
      };
      for (const auto& layout : layouts_of(c.a)) same(c.fn(layout.t, c.b), "A " + layout.name);
      for (const auto& layout : layouts_of(c.b)) same(c.fn(c.a, layout.t), "B " + layout.name);
      // Stride 0 over the batch: matrix 0 expanded to both batch slots, against a real copy.
      const Tensor a0 = c.a.narrow(0, 0, 1).expand(c.a.shape());
      const std::vector<Tensor> got = c.fn(a0, c.b), copy = c.fn(a0.contiguous(), c.b);
      ASSERT_EQ(got.size(), copy.size());
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_TRUE(same_bits(got[i], copy[i])) << "A expanded, output " << i;
    }
  }
}

TEST(LinalgSolveThreads, BitwiseTheSameAtOneTwoAndThreeThreads) {
  const Spectral s = spectral({}, 300, 300, ox::kF64, 2100, kCond, Kind::General);
  const Tensor b = to_tensor(random_mats(1, 300, 5, 2101), {}, ox::kF64);
  const Tensor batched = spectral({8}, 24, 24, ox::kF64, 2102, kCond, Kind::General).a;
  // Right-hand sides over several column chunks; a wide matrix whose blocked LU has columns
  // right of its last panel. The blocked LU hands its work items to whichever thread is free.
  const Tensor many_rhs = to_tensor(random_mats(1, 300, 70, 2103), {}, ox::kF32);
  const Tensor wide = spectral({}, 270, 330, ox::kF32, 2104, kCond, Kind::General).a;
  std::vector<Tensor> one, two, three;
  for (auto* out : {&one, &two, &three}) {
    const ThreadCount threads(out == &one ? 1 : out == &two ? 2 : 3);
    *out = {la::solve(s.a, b),
            la::solve(s.a.to(ox::kF32), b.to(ox::kF32)),
            la::inv(batched),
            la::det(batched),
            la::solve(s.a.to(ox::kF32), many_rhs),
            la::lu_factor(wide).LU,
            la::lu_factor(wide.transpose(0, 1)).pivots};
  }
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_TRUE(same_bits(one[i], two[i])) << "output " << i;
    EXPECT_TRUE(same_bits(one[i], three[i])) << "output " << i << ", three threads";
  }
}

}  // namespace
