#pragma once
// Helpers for the ox::linalg tests: matrices read back into f64, products and norms by plain
// loops, and inputs built from a known spectrum (A = U diag(d) V with U, V products of
// Householder reflectors made here), so singular values, eigenvalues, determinants, condition
// numbers and pseudo-inverses are known without calling the code under test.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace linalg_test {

using oxtest::ShapeV;
using Vec = std::vector<double>;

// One row-major matrix in f64.
struct Mat {
  int64_t rows = 0, cols = 0;
  Vec v;
  Mat() = default;
  Mat(int64_t r, int64_t c) : rows(r), cols(c), v(static_cast<size_t>(r * c), 0.0) {}
  double& operator()(int64_t i, int64_t j) { return v[static_cast<size_t>(i * cols + j)]; }
  double operator()(int64_t i, int64_t j) const { return v[static_cast<size_t>(i * cols + j)]; }
};

inline Mat identity(int64_t n) {
  Mat m(n, n);
  for (int64_t i = 0; i < n; ++i) m(i, i) = 1;
  return m;
}
inline Mat transpose(const Mat& a) {
  Mat t(a.cols, a.rows);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < a.cols; ++j) t(j, i) = a(i, j);
  return t;
}
inline Mat mul(const Mat& a, const Mat& b) {
  EXPECT_EQ(a.cols, b.rows);
  Mat c(a.rows, b.cols);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t p = 0; p < a.cols; ++p) {
      const double x = a(i, p);
      for (int64_t j = 0; j < b.cols; ++j) c(i, j) += x * b(p, j);
    }
  return c;
}
inline Mat abs_of(const Mat& a) {
  Mat r = a;
  for (double& x : r.v) x = std::fabs(x);
  return r;
}
inline double max_abs(const Mat& a) {
  double m = 0;
  for (double x : a.v) m = std::max(m, std::fabs(x));
  return m;
}
// NaN-propagating max |a - b| (a NaN difference reads as +inf, so `<= tol` fails).
inline double max_diff(const Mat& a, const Mat& b) {
  if (a.rows != b.rows || a.cols != b.cols) return std::numeric_limits<double>::infinity();
  double m = 0;
  for (size_t i = 0; i < a.v.size(); ++i) {
    const double d = std::fabs(a.v[i] - b.v[i]);
    m = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(m, d);
  }
  return m;
}
// The 1-norm (largest absolute column sum).
inline double norm1(const Mat& a) {
  double m = 0;
  for (int64_t j = 0; j < a.cols; ++j) {
    double s = 0;
    for (int64_t i = 0; i < a.rows; ++i) s += std::fabs(a(i, j));
    m = std::max(m, s);
  }
  return m;
}
inline Mat block(const Mat& a, int64_t rows, int64_t cols) {  // the top-left rows x cols
  Mat r(rows, cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) r(i, j) = a(i, j);
  return r;
}

// The matrices of a [..., r, c] tensor, batch flattened row-major.
inline std::vector<Mat> mats(const ox::Tensor& t) {
  EXPECT_GE(t.dim(), 2);
  const int64_t r = t.size(-2), c = t.size(-1);
  const Vec all = t.to(ox::kF64).contiguous().to_vector<double>();
  int64_t count = 1;
  for (int64_t d = 0; d + 2 < t.dim(); ++d) count *= t.size(d);
  std::vector<Mat> out;
  for (int64_t b = 0; b < count; ++b) {
    Mat m(r, c);
    std::copy(all.begin() + b * r * c, all.begin() + (b + 1) * r * c, m.v.begin());
    out.push_back(std::move(m));
  }
  return out;
}
// Vectors [..., n] as 1 x n matrices.
inline std::vector<Mat> rows_of(const ox::Tensor& t) { return mats(t.unsqueeze(-2)); }

inline ox::Tensor to_tensor(const std::vector<Mat>& ms, const ShapeV& batch, ox::DType dt) {
  EXPECT_FALSE(ms.empty());
  ShapeV shape = batch;
  shape.push_back(ms.front().rows);
  shape.push_back(ms.front().cols);
  Vec all;
  for (const Mat& m : ms) all.insert(all.end(), m.v.begin(), m.v.end());
  return ox::tensor(all, ox::Shape(shape), {.dtype = dt});
}
inline ox::Tensor to_tensor(const Mat& m, ox::DType dt) { return to_tensor({m}, {}, dt); }

inline ShapeV with(ShapeV batch, std::initializer_list<int64_t> tail) {
  batch.insert(batch.end(), tail);
  return batch;
}

inline double eps_of(ox::DType dt) { return dt == ox::kF32 ? 0x1p-23 : 0x1p-52; }

// ---- The reviewed tolerance table of the linalg tests (docs/TESTING.md: a tolerance loosened per
// op only here, with its reason). docs/TESTING.md's fixed per-dtype tolerances cannot hold for
// factorizations, whose rounding errors grow with n and, for solutions, with the condition
// number. Backward errors (reconstructions, residuals): LAPACK's own test suite accepts a
// factorization when ||A - recon|| / (n ||A|| eps) < 30; these checks use the same ratio with
// the max-abs residual against the 1-norm of A.
constexpr double kLapackRatio = 30.0;
inline double backward_tol(ox::DType dt, int64_t n, double norm) {
  return kLapackRatio * static_cast<double>(std::max<int64_t>(n, 1)) * eps_of(dt) * norm;
}
// Forward errors (a solution, an inverse) grow with the condition number:
// atol = 30 n cond eps scale.
inline double forward_tol(ox::DType dt, int64_t n, double cond, double scale) {
  return backward_tol(dt, n, scale) * cond;
}

// Gaussian numbers from ox::randn under ox::manual_seed(seed), read back as doubles.
inline Vec gaussian(int64_t count, uint64_t seed) {
  ox::manual_seed(seed);
  return ox::randn({std::max<int64_t>(count, 1)}, {.dtype = ox::kF64}).to_vector<double>();
}

// H a (or a H when right) for H = I - 2 w wᵀ / (wᵀ w).
inline void reflect(Mat& a, const double* w, bool right) {
  const int64_t n = right ? a.cols : a.rows;
  double ww = 0;
  for (int64_t i = 0; i < n; ++i) ww += w[i] * w[i];
  if (ww == 0) return;
  if (!right) {
    for (int64_t j = 0; j < a.cols; ++j) {
      double dot = 0;
      for (int64_t i = 0; i < n; ++i) dot += w[i] * a(i, j);
      for (int64_t i = 0; i < n; ++i) a(i, j) -= 2 * dot / ww * w[i];
    }
  } else {
    for (int64_t i = 0; i < a.rows; ++i) {
      double dot = 0;
      for (int64_t j = 0; j < n; ++j) dot += a(i, j) * w[j];
      for (int64_t j = 0; j < n; ++j) a(i, j) -= 2 * dot / ww * w[j];
    }
  }
}

// count matrices r x c of Gaussian numbers.
inline std::vector<Mat> random_mats(int64_t count, int64_t r, int64_t c, uint64_t seed) {
  const Vec g = gaussian(count * r * c, seed);
  std::vector<Mat> out(static_cast<size_t>(count), Mat(r, c));
  for (int64_t b = 0; b < count; ++b)
    std::copy(g.begin() + b * r * c, g.begin() + (b + 1) * r * c, out[b].v.begin());
  return out;
}

// X with A X = B by Gaussian elimination with partial pivoting in f64 (A square, nonsingular).
inline Mat solve_ref(Mat a, Mat b) {
  const int64_t n = a.rows;
  for (int64_t p = 0; p < n; ++p) {
    int64_t piv = p;
    for (int64_t i = p + 1; i < n; ++i)
      if (std::fabs(a(i, p)) > std::fabs(a(piv, p))) piv = i;
    for (int64_t j = 0; j < n; ++j) std::swap(a(p, j), a(piv, j));
    for (int64_t j = 0; j < b.cols; ++j) std::swap(b(p, j), b(piv, j));
    for (int64_t i = p + 1; i < n; ++i) {
      const double l = a(i, p) / a(p, p);
      for (int64_t j = p; j < n; ++j) a(i, j) -= l * a(p, j);
      for (int64_t j = 0; j < b.cols; ++j) b(i, j) -= l * b(p, j);
    }
  }
  for (int64_t i = n - 1; i >= 0; --i)
    for (int64_t j = 0; j < b.cols; ++j) {
      double x = b(i, j);
      for (int64_t p = i + 1; p < n; ++p) x -= a(i, p) * b(p, j);
      b(i, j) = x / a(i, i);
    }
  return b;
}

enum class Kind { General, Symmetric, Spd };

// A batch of matrices A = U diag(d) V (Symmetric/Spd: A = U diag(d) Uᵀ) with known parts.
struct Spectral {
  ox::Tensor a;            // [batch..., m, n] in the requested dtype
  std::vector<Mat> exact;  // the same matrices in f64 before rounding
  std::vector<Vec> d;      // per matrix: the diagonal (signed; eigenvalues when symmetric)
  std::vector<Mat> u, v;   // per matrix: the orthogonal factors
  Vec det;                 // per matrix (square only)
  double cond = 1;         // max |d| / min |d| over every matrix
};

// |d| spans [scale / sqrt(cond), scale * sqrt(cond)] geometrically, scale = 1 + b / 8 for
// batch element b. General square matrices of odd b get one negative d (a negative det);
// Symmetric ones alternate signs; Spd is all positive. `zero_last` makes the smallest |d|
// exactly 0 (rank deficient; cond is then that of the nonzero part).
inline Spectral spectral(const ShapeV& batch, int64_t m, int64_t n, ox::DType dt, uint64_t seed,
                         double cond, Kind kind, bool zero_last = false) {
  Spectral s;
  const int64_t count = oxtest::product(batch), k = std::min(m, n);
  const Vec g = gaussian(count * (m * m + n * n), seed);
  double dmax = 0, dmin = std::numeric_limits<double>::infinity();
  for (int64_t b = 0; b < count; ++b) {
    const double scale = 1.0 + static_cast<double>(b) / 8.0;
    Vec d(static_cast<size_t>(k));
    for (int64_t j = 0; j < k; ++j) {
      const double t = k == 1 ? 0.5 : static_cast<double>(j) / static_cast<double>(k - 1);
      d[j] = scale * std::pow(cond, 0.5 - t);
      if (kind == Kind::Symmetric && j % 2 == 1) d[j] = -d[j];
    }
    if (kind == Kind::General && m == n && b % 2 == 1) d[0] = -d[0];
    if (zero_last && k > 0) d[k - 1] = 0;
    for (int64_t j = 0; j < k; ++j) {
      if (d[j] == 0) continue;
      dmax = std::max(dmax, std::fabs(d[j]));
      dmin = std::min(dmin, std::fabs(d[j]));
    }
    // Products of m (n) reflectors; each has det -1.
    const double* w = g.data() + b * (m * m + n * n);
    Mat u = identity(m), v = identity(n);
    for (int64_t r = 0; r < m; ++r) reflect(u, w + r * m, /*right=*/false);
    for (int64_t r = 0; r < n; ++r) reflect(v, w + m * m + r * n, /*right=*/true);
    Mat dm(m, n);
    for (int64_t j = 0; j < k; ++j) dm(j, j) = d[j];
    Mat a;
    if (kind == Kind::General) {
      a = mul(mul(u, dm), v);
    } else {
      v = transpose(u);
      a = mul(mul(u, dm), v);
      for (int64_t i = 0; i < m; ++i)  // exactly symmetric
        for (int64_t j = 0; j < i; ++j) a(j, i) = a(i, j) = 0.5 * (a(i, j) + a(j, i));
    }
    double det = (m + n) % 2 == 0 ? 1 : -1;
    if (kind != Kind::General) det = 1;
    for (double x : d) det *= x;
    s.det.push_back(det);
    s.d.push_back(d);
    s.u.push_back(u);
    s.v.push_back(v);
    s.exact.push_back(a);
  }
  s.cond = dmax > 0 ? dmax / dmin : 1;
  s.a = count > 0 ? to_tensor(s.exact, batch, dt)
                  : ox::zeros(ox::Shape(with(batch, {m, n})), {.dtype = dt});
  return s;
}

// The same logical values in other layouts: transposed storage, narrowed out of a larger
// buffer, flipped (negative strides) twice, and (for a batch of one) expanded with stride 0.
struct Layout {
  std::string name;
  ox::Tensor t;
};
inline std::vector<Layout> layouts_of(const ox::Tensor& c) {
  std::vector<Layout> out;
  out.push_back({"transposed", c.transpose(-2, -1).contiguous().transpose(-2, -1)});
  ShapeV big = c.shape().vec();
  big[big.size() - 2] += 3;
  big[big.size() - 1] += 2;
  ox::Tensor buffer = ox::full(ox::Shape(big), 7.0, c.dtype());
  ox::Tensor narrowed = buffer.narrow(-2, 2, c.size(-2)).narrow(-1, 1, c.size(-1));
  narrowed.copy_(c);
  out.push_back({"narrowed", narrowed});
  out.push_back({"flipped", c.flip({-1, -2}).contiguous().flip({-1, -2})});
  return out;
}

// Whether two tensors hold bitwise the same elements and shape.
inline bool same_bits(const ox::Tensor& a, const ox::Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         oxtest::bytes_of(a) == oxtest::bytes_of(b);
}

// Sets the thread count for a scope, then restores the previous one.
struct ThreadCount {
  int saved;
  explicit ThreadCount(int n) : saved(ox::get_num_threads()) { ox::set_num_threads(n); }
  ~ThreadCount() { ox::set_num_threads(saved); }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;
};

// docs/TESTING.md's default closeness: |got - want| <= atol + rtol |want| elementwise.
inline void expect_close(const Mat& got, const Mat& want, ox::DType dt, const std::string& what) {
  const double atol = dt == ox::kF32 ? 1.3e-6 : 1e-7, rtol = dt == ox::kF32 ? 1e-5 : 1e-7;
  ASSERT_EQ(got.rows, want.rows) << what;
  ASSERT_EQ(got.cols, want.cols) << what;
  for (size_t i = 0; i < got.v.size(); ++i)
    EXPECT_LE(std::fabs(got.v[i] - want.v[i]), atol + rtol * std::fabs(want.v[i]))
        << what << " element " << i << ": got " << got.v[i] << ", want " << want.v[i];
}
inline Mat mat(std::initializer_list<std::initializer_list<double>> rows) {
  Mat m(static_cast<int64_t>(rows.size()),
        rows.size() ? static_cast<int64_t>(rows.begin()->size()) : 0);
  int64_t i = 0;
  for (const auto& row : rows) {
    int64_t j = 0;
    for (double x : row) m(i, j++) = x;
    ++i;
  }
  return m;
}

inline std::string ctx(ox::DType dt, const ShapeV& batch, int64_t m, int64_t n) {
  std::ostringstream os;
  os << dt << " batch " << oxtest::shape_str(batch) << " matrix " << m << "x" << n;
  return os.str();
}

}  // namespace linalg_test
