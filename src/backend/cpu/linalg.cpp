// Linear algebra on LAPACK (OpenBLAS's Fortran symbols; Debian ships no LAPACKE with it).
//
// Thread-count independence: every LAPACK call runs single-threaded (OpenBLAS's threaded BLAS
// splits work by the thread count, which changes summation orders), and the threads share out
// whole work items: one matrix of the batch, or one fixed-width chunk of right-hand-side
// columns. A work item's arithmetic is then the same on whichever thread runs it.

#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "backend/cpu/kernels.h"
#include "backend/cpu/lapack.h"
#include "backend/cpu/parallel.h"
#include "core/dispatch.h"

extern "C" {
// Fortran LAPACK, column-major, every argument by pointer. The hidden string-length arguments
// of gfortran are left out: every string passed is one character, which LAPACK reads alone.
void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info);
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info);
void sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void strtrs_(const char* uplo, const char* trans, const char* diag, const int* n, const int* nrhs,
             const float* a, const int* lda, float* b, const int* ldb, int* info);
void dtrtrs_(const char* uplo, const char* trans, const char* diag, const int* n, const int* nrhs,
             const double* a, const int* lda, double* b, const int* ldb, int* info);
void slaswp_(const int* n, float* a, const int* lda, const int* k1, const int* k2, const int* ipiv,
             const int* incx);
void dlaswp_(const int* n, double* a, const int* lda, const int* k1, const int* k2, const int* ipiv,
             const int* incx);
void strsm_(const char* side, const char* uplo, const char* trans, const char* diag, const int* m,
            const int* n, const float* alpha, const float* a, const int* lda, float* b,
            const int* ldb);
void dtrsm_(const char* side, const char* uplo, const char* trans, const char* diag, const int* m,
            const int* n, const double* alpha, const double* a, const int* lda, double* b,
            const int* ldb);
void sgetrs_(const char* trans, const int* n, const int* nrhs, const float* a, const int* lda,
             const int* ipiv, float* b, const int* ldb, int* info);
void dgetrs_(const char* trans, const int* n, const int* nrhs, const double* a, const int* lda,
             const int* ipiv, double* b, const int* ldb, int* info);
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work,
             const int* lwork, int* info);
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work,
             const int* lwork, int* info);
void sorgqr_(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau,
             float* work, const int* lwork, int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau,
             double* work, const int* lwork, int* info);
void ssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w,
             float* work, const int* lwork, int* iwork, const int* liwork, int* info);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
             double* work, const int* lwork, int* iwork, const int* liwork, int* info);
void ssytrd_(const char* uplo, const int* n, float* a, const int* lda, float* d, float* e,
             float* tau, float* work, const int* lwork, int* info);
void dsytrd_(const char* uplo, const int* n, double* a, const int* lda, double* d, double* e,
             double* tau, double* work, const int* lwork, int* info);
void sormtr_(const char* side, const char* uplo, const char* trans, const int* m, const int* n,
             float* a, const int* lda, const float* tau, float* c, const int* ldc, float* work,
             const int* lwork, int* info);
void dormtr_(const char* side, const char* uplo, const char* trans, const int* m, const int* n,
             double* a, const int* lda, const double* tau, double* c, const int* ldc, double* work,
             const int* lwork, int* info);
void slascl_(const char* type, const int* kl, const int* ku, const float* cfrom, const float* cto,
             const int* m, const int* n, float* a, const int* lda, int* info);
void dlascl_(const char* type, const int* kl, const int* ku, const double* cfrom, const double* cto,
             const int* m, const int* n, double* a, const int* lda, int* info);
void sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s,
             float* u, const int* ldu, float* vt, const int* ldvt, float* work, const int* lwork,
             int* iwork, int* info);
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s,
             double* u, const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork,
             int* iwork, int* info);
}

namespace ox::cpu {

namespace {

// One overload set per routine, so the kernels are templates over the element type.
void potrf(char uplo, int n, float* a, int lda, int* info) { spotrf_(&uplo, &n, a, &lda, info); }
void potrf(char uplo, int n, double* a, int lda, int* info) { dpotrf_(&uplo, &n, a, &lda, info); }
void getrf(int m, int n, float* a, int lda, int* ipiv, int* info) {
  sgetrf_(&m, &n, a, &lda, ipiv, info);
}
void getrf(int m, int n, double* a, int lda, int* ipiv, int* info) {
  dgetrf_(&m, &n, a, &lda, ipiv, info);
}
void laswp(int n, float* a, int lda, int k1, int k2, const int* ipiv) {
  const int inc = 1;
  slaswp_(&n, a, &lda, &k1, &k2, ipiv, &inc);
}
void laswp(int n, double* a, int lda, int k1, int k2, const int* ipiv) {
  const int inc = 1;
  dlaswp_(&n, a, &lda, &k1, &k2, ipiv, &inc);
}
// B = L⁻¹ B for the unit lower triangle L of an m x m block (the U12 block of a blocked LU).
void unit_lower_solve(int m, int n, const float* l, int ldl, float* b, int ldb) {
  const float one = 1;
  strsm_("L", "L", "N", "U", &m, &n, &one, l, &ldl, b, &ldb);
}
void unit_lower_solve(int m, int n, const double* l, int ldl, double* b, int ldb) {
  const double one = 1;
  dtrsm_("L", "L", "N", "U", &m, &n, &one, l, &ldl, b, &ldb);
}
void trtrs(char uplo, char trans, char diag, int n, int nrhs, const float* a, int lda, float* b,
           int ldb, int* info) {
  strtrs_(&uplo, &trans, &diag, &n, &nrhs, a, &lda, b, &ldb, info);
}
void trtrs(char uplo, char trans, char diag, int n, int nrhs, const double* a, int lda, double* b,
           int ldb, int* info) {
  dtrtrs_(&uplo, &trans, &diag, &n, &nrhs, a, &lda, b, &ldb, info);
}
void getrs(char trans, int n, int nrhs, const float* a, int lda, const int* ipiv, float* b, int ldb,
           int* info) {
  sgetrs_(&trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, info);
}
void getrs(char trans, int n, int nrhs, const double* a, int lda, const int* ipiv, double* b,
           int ldb, int* info) {
  dgetrs_(&trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, info);
}
void geqrf(int m, int n, float* a, int lda, float* tau, float* work, int lwork, int* info) {
  sgeqrf_(&m, &n, a, &lda, tau, work, &lwork, info);
}
void geqrf(int m, int n, double* a, int lda, double* tau, double* work, int lwork, int* info) {
  dgeqrf_(&m, &n, a, &lda, tau, work, &lwork, info);
}
void orgqr(int m, int n, int k, float* a, int lda, const float* tau, float* work, int lwork,
           int* info) {
  sorgqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info);
}
void orgqr(int m, int n, int k, double* a, int lda, const double* tau, double* work, int lwork,
           int* info) {
  dorgqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info);
}
void syevd(char jobz, char uplo, int n, float* a, int lda, float* w, float* work, int lwork,
           int* iwork, int liwork, int* info) {
  ssyevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, info);
}
void syevd(char jobz, char uplo, int n, double* a, int lda, double* w, double* work, int lwork,
           int* iwork, int liwork, int* info) {
  dsyevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, info);
}
void sytrd(char uplo, int n, float* a, int lda, float* d, float* e, float* tau, float* work,
           int lwork, int* info) {
  ssytrd_(&uplo, &n, a, &lda, d, e, tau, work, &lwork, info);
}
void sytrd(char uplo, int n, double* a, int lda, double* d, double* e, double* tau, double* work,
           int lwork, int* info) {
  dsytrd_(&uplo, &n, a, &lda, d, e, tau, work, &lwork, info);
}
void ormtr(char uplo, int m, int n, float* a, int lda, const float* tau, float* c, int ldc,
           float* work, int lwork, int* info) {
  sormtr_("L", &uplo, "N", &m, &n, a, &lda, tau, c, &ldc, work, &lwork, info);
}
void ormtr(char uplo, int m, int n, double* a, int lda, const double* tau, double* c, int ldc,
           double* work, int lwork, int* info) {
  dormtr_("L", &uplo, "N", &m, &n, a, &lda, tau, c, &ldc, work, &lwork, info);
}
void lascl(char type, float from, float to, int n, float* a, int lda, int* info) {
  const int zero = 0;
  slascl_(&type, &zero, &zero, &from, &to, &n, &n, a, &lda, info);
}
void lascl(char type, double from, double to, int n, double* a, int lda, int* info) {
  const int zero = 0;
  dlascl_(&type, &zero, &zero, &from, &to, &n, &n, a, &lda, info);
}
void gesdd(char jobz, int m, int n, float* a, int lda, float* s, float* u, int ldu, float* vt,
           int ldvt, float* work, int lwork, int* iwork, int* info) {
  sgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info);
}
void gesdd(char jobz, int m, int n, double* a, int lda, double* s, double* u, int ldu, double* vt,
           int ldvt, double* work, int lwork, int* iwork, int* info) {
  dgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info);
}

// A batch of matrices: matrix t of the batch (row-major over the batch dims) at data + offset(t)
// elements, element (i, j) at i + j * ld.
template <class T>
struct Batch {
  T* data = nullptr;
  Shape batch_shape;
  Strides batch_strides;
  int64_t rows = 0, cols = 0, ld = 1;

  Batch(const StridedArray& a, size_t matrix_dims = 2) : data(static_cast<T*>(a.data)) {
    const size_t nd = a.shape.size();
    OX_ASSERT(nd >= matrix_dims, "linalg kernel: array of ", nd, " dims");
    batch_shape.assign(a.shape.begin(), a.shape.end() - static_cast<int64_t>(matrix_dims));
    batch_strides.assign(a.strides.begin(), a.strides.end() - static_cast<int64_t>(matrix_dims));
    if (matrix_dims == 2) {
      rows = a.shape[nd - 2];
      cols = a.shape[nd - 1];
      OX_ASSERT(a.strides[nd - 2] == 1 || rows <= 1, "linalg kernel: matrix not column-major");
      ld = std::max<int64_t>({1, rows, a.strides[nd - 1]});
    } else if (matrix_dims == 1) {
      rows = a.shape[nd - 1];
      OX_ASSERT(a.strides[nd - 1] == 1 || rows <= 1, "linalg kernel: vector not contiguous");
    }
  }
  int64_t count() const {
    int64_t n = 1;
    for (int64_t s : batch_shape) n *= s;
    return n;
  }
  T* at(int64_t t) const {
    int64_t offset = 0;
    for (size_t d = batch_shape.size(); d-- > 0;) {
      offset += (t % batch_shape[d]) * batch_strides[d];
      t /= batch_shape[d];
    }
    return data + offset;
  }
};

// Whether every element LAPACK will read of an m x n column-major matrix is finite: all of it
// (tri 0), or the upper (tri 1) or lower (tri -1) triangle.
template <class T>
bool all_finite(const T* a, int64_t m, int64_t n, int64_t ld, int tri = 0) {
  // Counted on the bits, so that a column's test vectorizes: all exponent bits set is Inf or NaN.
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  constexpr Bits exponent = std::bit_cast<Bits>(std::numeric_limits<T>::infinity());
  for (int64_t j = 0; j < n; ++j) {
    const int64_t lo = tri < 0 ? std::min(j, m) : 0, hi = tri > 0 ? std::min(j + 1, m) : m;
    Bits non_finite = 0;
    for (int64_t i = lo; i < hi; ++i)
      non_finite += (std::bit_cast<Bits>(a[i + j * ld]) & exponent) == exponent;
    if (non_finite != 0) return false;
  }
  return true;
}

// fn(t) for every matrix t of a batch of n, over threads; LAPACK serial inside.
template <class F>
void for_each_matrix(int64_t n, F&& fn) {
  if (n <= 1 || omp_get_max_threads() == 1) {
    SerialBlas serial;
    for (int64_t t = 0; t < n; ++t) fn(t);
    return;
  }
  parallel_for(0, n, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) fn(t);
  });
}

// The same over fixed-width chunks of right-hand-side columns: work item (t, c) solves columns
// [c * kRhsChunk, ...) of matrix t.
constexpr int64_t kRhsChunk = 32;
template <class F>
void for_each_rhs_chunk(int64_t matrices, int64_t rhs, F&& fn) {
  const int64_t chunks = std::max<int64_t>(1, (rhs + kRhsChunk - 1) / kRhsChunk);
  for_each_matrix(matrices * chunks, [&](int64_t item) {
    const int64_t c = item % chunks, first = c * kRhsChunk;
    fn(item / chunks, first, std::min(kRhsChunk, rhs - first));
  });
}

int32_t* info_at(const StridedArray& info, int64_t t) {
  return static_cast<int32_t*>(info.data) + t;
}

int to_int(int64_t v) {
  OX_ASSERT(v <= INT32_MAX, "linalg kernel: extent ", v, " beyond LAPACK's 32-bit integers");
  return static_cast<int>(v);
}

// A workspace size from a LAPACK query's answer (a floating value, possibly rounded down).
int64_t workspace_size(double query) {
  return std::max<int64_t>(1, static_cast<int64_t>(query) + 1);
}

template <class T>
void cholesky_typed(const StridedArray& a, const StridedArray& info, bool upper) {
  const Batch<T> m(a);
  for_each_matrix(m.count(), [&](int64_t t) {
    T* p = m.at(t);
    int32_t* status = info_at(info, t);
    if (!all_finite(p, m.rows, m.cols, m.ld, upper ? 1 : -1)) {
      *status = Backend::kLinalgNonFinite;
      return;
    }
    int r = 0;
    potrf(upper ? 'U' : 'L', to_int(m.rows), p, to_int(m.ld), &r);
    *status = r;
    // LAPACK leaves the other triangle as the input had it.
    for (int64_t j = 0; j < m.cols; ++j) {
      const int64_t lo = upper ? j + 1 : 0, hi = upper ? m.rows : j;
      std::fill(p + j * m.ld + lo, p + j * m.ld + std::max(lo, hi), T(0));
    }
  });
}

// Matrices with both sides at least this long are factored by blocks, the trailing updates on
// the packed GEMM over all threads. The choice depends on the shape alone, and every step's
// arithmetic is fixed by it (panels serial, U12 solves in fixed column chunks, a GEMM whose bits
// do not depend on the split), so the factors do not depend on the thread count.
constexpr int64_t kBlockedLu = 256;
constexpr int64_t kLuBlock = 64;

// getrf by right-looking blocks with a look-ahead of one panel. Once panel j (kLuBlock columns)
// is factored, one parallel region does the rest of step j as work items of kLuBlock columns:
// right of the panel, apply its interchanges, solve U12 = L11⁻¹ A12 and update A22 -= A21 U12;
// left of it, the interchanges alone (applying them once at the end instead, a column taking
// all later panels' at once, measured slower). The first item is the next panel's columns, and
// whoever takes it factors that panel too, while the others go on with the rest, so the serial
// panel factorizations (a third of a 512 x 512 LU without it) overlap the updates. Items go to
// whichever thread is free, so neither uneven items nor a descheduled thread leave the others
// waiting long. An item's arithmetic is fixed by the shape (a row swap is exact, a chunk's solve
// reads that chunk alone, a GEMM element sums in k order whatever columns share its call), so
// the factors do not depend on the thread count. Returns getrf's info.
template <class T>
int blocked_getrf(int64_t m, int64_t n, T* a, int64_t lda, int32_t* ipiv) {
  const int64_t k = std::min(m, n);
  const DType dtype = std::is_same_v<T, float> ? kF32 : kF64;
  auto at = [&](int64_t i, int64_t j) { return a + i + j * lda; };
  int info = 0;
  auto factor_panel = [&](int64_t j) {
    const int64_t jb = std::min(kLuBlock, k - j);
    int panel_info = 0;
    getrf(to_int(m - j), to_int(jb), at(j, j), to_int(lda), ipiv + j, &panel_info);
    if (panel_info > 0 && info == 0) info = panel_info + static_cast<int>(j);
    for (int64_t i = j; i < j + jb; ++i) ipiv[i] += static_cast<int32_t>(j);
  };
  // Panel j's interchanges on columns [first, first + cols).
  auto interchange = [&](int64_t j, int64_t first, int64_t cols) {
    laswp(to_int(cols), at(0, first), to_int(lda), static_cast<int>(j) + 1,
          static_cast<int>(j + std::min(kLuBlock, k - j)), ipiv);
  };
  // Step j on columns [first, first + cols) right of its panel: interchanges, U12, A22.
  auto update = [&](int64_t j, int64_t first, int64_t cols) {
    const int64_t jb = std::min(kLuBlock, k - j), below = m - j - jb;
    interchange(j, first, cols);
    unit_lower_solve(to_int(jb), to_int(cols), at(j, j), to_int(lda), at(j, first), to_int(lda));
    if (below <= 0) return;
    const Device cpu_device = Device::cpu();
    const StridedArray a22{at(j + jb, first), {below, cols}, {1, lda}, dtype, cpu_device};
    const StridedArray a21{at(j + jb, j), {below, jb}, {1, lda}, dtype, cpu_device};
    const StridedArray u12{at(j, first), {jb, cols}, {1, lda}, dtype, cpu_device};
    cpu::matmul(a22, a21, u12, Scalar(-1.0), Scalar(1.0));
  };
  if (k > 0) {
    SerialBlas serial;
    factor_panel(0);
  }
  for (int64_t j = 0; j < k; j += kLuBlock) {
    const int64_t next = j + std::min(kLuBlock, k - j);
    const int64_t right = (n - next + kLuBlock - 1) / kLuBlock, left = j / kLuBlock;
    parallel_for_each_item(right + left, [&](int64_t item) {
      SerialBlas serial;
      if (item >= right) {  // left of the panel: its interchanges alone
        interchange(j, (item - right) * kLuBlock, kLuBlock);
        return;
      }
      const int64_t col = next + item * kLuBlock;
      update(j, col, std::min(kLuBlock, n - col));
      if (item == 0 && next < k) factor_panel(next);
    });
  }
  return info;
}

template <class T>
void lu_factor_typed(const StridedArray& a, const StridedArray& pivots, const StridedArray& info) {
  const Batch<T> m(a);
  const int64_t k = std::min(m.rows, m.cols);
  const bool blocked = k >= kBlockedLu;
  auto factor = [&](int64_t t) {
    T* p = m.at(t);
    int32_t* status = info_at(info, t);
    if (!all_finite(p, m.rows, m.cols, m.ld)) {
      *status = Backend::kLinalgNonFinite;
      return;
    }
    int32_t* ipiv = static_cast<int32_t*>(pivots.data) + t * k;
    if (blocked) {
      *status = blocked_getrf(m.rows, m.cols, p, m.ld, ipiv);
      return;
    }
    int r = 0;
    SerialBlas serial;
    getrf(to_int(m.rows), to_int(m.cols), p, to_int(m.ld), ipiv, &r);
    *status = r;
  };
  // A blocked factorization spreads its own updates over the threads.
  if (blocked) {
    for (int64_t t = 0; t < m.count(); ++t) factor(t);
  } else {
    for_each_matrix(m.count(), factor);
  }
}

template <class T>
void triangular_solve_typed(const StridedArray& a, const StridedArray& b, bool upper,
                            bool transpose, bool unit_diagonal) {
  const Batch<T> ma(a), mb(b);
  for_each_rhs_chunk(mb.count(), mb.cols, [&](int64_t t, int64_t first, int64_t width) {
    if (mb.rows == 0 || width == 0) return;
    int r = 0;  // trtrs reports an exactly zero diagonal element and solves nothing then
    trtrs(upper ? 'U' : 'L', transpose ? 'T' : 'N', unit_diagonal ? 'U' : 'N', to_int(mb.rows),
          to_int(width), ma.at(t), to_int(ma.ld), mb.at(t) + first * mb.ld, to_int(mb.ld), &r);
    if (r > 0) {
      // A singular triangle: divide anyway, as PyTorch's trsm does, so the zero pivot shows as
      // Inf/NaN in the result instead of a right-hand side left unsolved.
      const T* pa = ma.at(t);
      T* pb = mb.at(t) + first * mb.ld;
      const int64_t n = mb.rows;
      for (int64_t c = 0; c < width; ++c) {
        T* x = pb + c * mb.ld;
        auto elem = [&](int64_t i, int64_t j) {
          return transpose ? pa[j + i * ma.ld] : pa[i + j * ma.ld];
        };
        const bool lower_system = upper == transpose;  // op(A) lower triangular
        for (int64_t s = 0; s < n; ++s) {
          const int64_t i = lower_system ? s : n - 1 - s;
          T v = x[i];
          if (lower_system) {
            for (int64_t j = 0; j < i; ++j) v -= elem(i, j) * x[j];
          } else {
            for (int64_t j = i + 1; j < n; ++j) v -= elem(i, j) * x[j];
          }
          x[i] = unit_diagonal ? v : v / elem(i, i);
        }
      }
    }
  });
}

template <class T>
void lu_solve_typed(const StridedArray& lu, const StridedArray& pivots, const StridedArray& b,
                    bool transpose) {
  const Batch<T> ma(lu), mb(b);
  const Batch<int32_t> piv(pivots, 1);
  for_each_rhs_chunk(mb.count(), mb.cols, [&](int64_t t, int64_t first, int64_t width) {
    if (mb.rows == 0 || width == 0) return;
    int r = 0;
    getrs(transpose ? 'T' : 'N', to_int(mb.rows), to_int(width), ma.at(t), to_int(ma.ld), piv.at(t),
          mb.at(t) + first * mb.ld, to_int(mb.ld), &r);
    OX_ASSERT(r == 0, "getrs argument ", -r, " refused");
  });
}

template <class T>
void geqrf_typed(const StridedArray& a, const StridedArray& tau, const StridedArray& info) {
  const Batch<T> m(a);
  const Batch<T> vt(tau, 1);
  const int rows = to_int(m.rows), cols = to_int(m.cols), ld = to_int(m.ld);
  T query = 0;
  int r = 0;
  geqrf(rows, cols, nullptr, ld, nullptr, &query, -1, &r);
  const int64_t lwork = workspace_size(static_cast<double>(query));
  parallel_for(0, m.count(), 1, [&](int64_t b, int64_t e) {
    std::vector<T> work(static_cast<size_t>(lwork));
    SerialBlas serial;
    for (int64_t t = b; t < e; ++t) {
      T* p = m.at(t);
      if (!all_finite(p, m.rows, m.cols, m.ld)) {
        *info_at(info, t) = Backend::kLinalgNonFinite;
        continue;
      }
      int s = 0;
      if (rows > 0 && cols > 0) geqrf(rows, cols, p, ld, vt.at(t), work.data(), to_int(lwork), &s);
      *info_at(info, t) = s;
    }
  });
}

template <class T>
void orgqr_typed(const StridedArray& q, const StridedArray& tau) {
  const Batch<T> m(q);
  const Batch<T> vt(tau, 1);
  const int rows = to_int(m.rows), cols = to_int(m.cols), ld = to_int(m.ld);
  const int k = to_int(vt.rows);
  T query = 0;
  int r = 0;
  orgqr(rows, cols, k, nullptr, ld, nullptr, &query, -1, &r);
  const int64_t lwork = workspace_size(static_cast<double>(query));
  parallel_for(0, m.count(), 1, [&](int64_t b, int64_t e) {
    std::vector<T> work(static_cast<size_t>(lwork));
    SerialBlas serial;
    for (int64_t t = b; t < e; ++t) {
      int s = 0;
      if (rows > 0 && cols > 0)
        orgqr(rows, cols, k, m.at(t), ld, vt.at(t), work.data(), to_int(lwork), &s);
      OX_ASSERT(s == 0, "orgqr argument ", -s, " refused");
    }
  });
}

// Symmetric matrices with eigenvectors from this order up take syevd's steps one by one: the
// tridiagonal reduction (sytrd) serially per matrix; divide and conquer with its top step on all
// threads (tridiagonal.cpp); then the back transformation Z <- Q Z (ormtr, a third of the time at
// n = 256) over fixed-width chunks of Z's columns on all threads. A column's result depends on
// that column alone, and the chunks on the order alone, so the vectors do not depend on the
// thread count.
constexpr int64_t kSplitEigh = 128;
constexpr int64_t kEighChunk = 64;

// syevd's scaling: a matrix whose largest element lies outside [rmin, rmax] is scaled into it
// first (its eigenvalues scaled back after), so that the reduction neither under- nor
// overflows. Returns the factor applied, 1 for none.
template <class T>
T scale_into_range(T* a, int n, int ld, char uplo) {
  const T smallest = std::numeric_limits<T>::min() / std::numeric_limits<T>::epsilon();
  const T rmin = std::sqrt(smallest), rmax = std::sqrt(T(1) / smallest);
  T norm = 0;
  for (int64_t j = 0; j < n; ++j) {
    const int64_t lo = uplo == 'U' ? 0 : j, hi = uplo == 'U' ? j + 1 : n;
    for (int64_t i = lo; i < hi; ++i) norm = std::max(norm, std::abs(a[i + j * ld]));
  }
  const T sigma = norm > 0 && norm < rmin ? rmin / norm : norm > rmax ? rmax / norm : T(1);
  if (sigma != T(1)) {
    int r = 0;
    lascl(uplo, T(1), sigma, n, a, ld, &r);
    OX_ASSERT(r == 0, "lascl argument ", -r, " refused");
  }
  return sigma;
}

template <class T>
void split_eigh(const Batch<T>& m, const Batch<T>& vw, const StridedArray& info, char uplo) {
  const int n = to_int(m.rows), ld = to_int(m.ld);
  const int64_t nn = int64_t(n) * n, count = m.count();
  // Per matrix: its Householder scalars, off-diagonal, Z (n x n, leading dimension n) and the
  // scale applied.
  std::vector<T> tau(static_cast<size_t>(count * n)), off_diagonal(static_cast<size_t>(count * n));
  std::vector<T> z(static_cast<size_t>(count * nn)), sigma(static_cast<size_t>(count), T(1));
  T query = 0;
  int r = 0;
  sytrd(uplo, n, nullptr, ld, nullptr, nullptr, nullptr, &query, -1, &r);
  const int64_t lwork = workspace_size(static_cast<double>(query));
  for_each_matrix(count, [&](int64_t t) {
    T* p = m.at(t);
    int32_t* status = info_at(info, t);
    if (!all_finite(p, n, n, ld, uplo == 'U' ? 1 : -1)) {
      *status = Backend::kLinalgNonFinite;
      return;
    }
    std::vector<T> work(static_cast<size_t>(lwork));
    SerialBlas serial;
    sigma[t] = scale_into_range(p, n, ld, uplo);
    int s = 0;
    sytrd(uplo, n, p, ld, vw.at(t), off_diagonal.data() + t * n, tau.data() + t * n, work.data(),
          to_int(lwork), &s);
    OX_ASSERT(s == 0, "sytrd argument ", -s, " refused");
    *status = 0;
  });
  // One matrix takes all threads inside the solver; a batch shares them out by matrix.
  const auto solve = [&](int64_t t) {
    if (*info_at(info, t) == 0)
      *info_at(info, t) =
          tridiagonal_eigh(n, vw.at(t), off_diagonal.data() + t * n, z.data() + t * nn, n);
  };
  if (count == 1)
    solve(0);
  else
    for_each_matrix(count, solve);
  // Z <- Q Z by column chunks, then Z into the matrix's place. Each thread reads the reflectors
  // from a copy of its own: LAPACK's ormtr writes 1 into each reflector's leading element while
  // it applies it (restoring it after), which races on a shared matrix.
  const int64_t chunks = (n + kEighChunk - 1) / kEighChunk;
  parallel_for(0, count * chunks, 1, [&](int64_t begin, int64_t end) {
    SerialBlas serial;
    std::vector<T> reflectors(static_cast<size_t>(nn)), work;
    for (int64_t item = begin, held = -1; item < end; ++item) {
      const int64_t t = item / chunks, first = item % chunks * kEighChunk;
      if (*info_at(info, t) != 0) continue;
      if (t != held) {
        for (int64_t j = 0; j < n; ++j)
          std::copy(m.at(t) + j * ld, m.at(t) + j * ld + n, reflectors.data() + j * n);
        held = t;
      }
      const int width = to_int(std::min<int64_t>(kEighChunk, n - first));
      T* zc = z.data() + t * nn + first * n;
      T wquery = 0;
      int s = 0;
      ormtr(uplo, n, width, reflectors.data(), n, tau.data() + t * n, zc, n, &wquery, -1, &s);
      work.resize(static_cast<size_t>(workspace_size(static_cast<double>(wquery))));
      ormtr(uplo, n, width, reflectors.data(), n, tau.data() + t * n, zc, n, work.data(),
            to_int(int64_t(work.size())), &s);
      OX_ASSERT(s == 0, "ormtr argument ", -s, " refused");
    }
  });
  for_each_matrix(count, [&](int64_t t) {
    if (*info_at(info, t) != 0) return;
    T* p = m.at(t);
    const T* zt = z.data() + t * nn;
    for (int64_t j = 0; j < n; ++j) std::copy(zt + j * n, zt + (j + 1) * n, p + j * ld);
    if (sigma[t] != T(1))
      for (T* w = vw.at(t); w != vw.at(t) + n; ++w) *w /= sigma[t];
  });
}

template <class T>
void eigh_typed(const StridedArray& a, const StridedArray& w, const StridedArray& info,
                bool vectors, bool upper) {
  const Batch<T> m(a);
  const Batch<T> vw(w, 1);
  const int n = to_int(m.rows), ld = to_int(m.ld);
  const char jobz = vectors ? 'V' : 'N', uplo = upper ? 'U' : 'L';
  if (vectors && n >= kSplitEigh) return split_eigh(m, vw, info, uplo);
  T query = 0;
  int iquery = 0, r = 0, minus_one = -1;
  syevd(jobz, uplo, n, nullptr, ld, nullptr, &query, minus_one, &iquery, minus_one, &r);
  const int64_t lwork = workspace_size(static_cast<double>(query));
  const int64_t liwork = std::max(1, iquery);
  parallel_for(0, m.count(), 1, [&](int64_t b, int64_t e) {
    std::vector<T> work(static_cast<size_t>(lwork));
    std::vector<int> iwork(static_cast<size_t>(liwork));
    SerialBlas serial;
    for (int64_t t = b; t < e; ++t) {
      T* p = m.at(t);
      if (!all_finite(p, m.rows, m.cols, m.ld, upper ? 1 : -1)) {
        *info_at(info, t) = Backend::kLinalgNonFinite;
        continue;
      }
      int s = 0;
      if (n > 0)
        syevd(jobz, uplo, n, p, ld, vw.at(t), work.data(), to_int(lwork), iwork.data(),
              to_int(liwork), &s);
      *info_at(info, t) = s;
    }
  });
}

template <class T>
void svd_typed(const StridedArray& a, const StridedArray& u, const StridedArray& s,
               const StridedArray& vh, const StridedArray& info, bool full_matrices) {
  const Batch<T> m(a);
  const Batch<T> vs(s, 1);
  const bool vectors = u.data != nullptr;
  const int rows = to_int(m.rows), cols = to_int(m.cols), ld = to_int(m.ld);
  const int k = std::min(rows, cols);
  const char jobz = !vectors ? 'N' : full_matrices ? 'A' : 'S';
  // gesdd wants ldu >= 1 and ldvt >= 1 even when it does not touch them.
  Batch<T> mu = vectors ? Batch<T>(u) : m, mv = vectors ? Batch<T>(vh) : m;
  const int ldu = vectors ? to_int(mu.ld) : 1, ldvt = vectors ? to_int(mv.ld) : 1;
  T query = 0;
  int r = 0;
  std::vector<int> probe(static_cast<size_t>(8 * std::max(k, 1)));
  gesdd(jobz, rows, cols, nullptr, ld, nullptr, nullptr, ldu, nullptr, ldvt, &query, -1,
        probe.data(), &r);
  const int64_t lwork = workspace_size(static_cast<double>(query));
  parallel_for(0, m.count(), 1, [&](int64_t b, int64_t e) {
    std::vector<T> work(static_cast<size_t>(lwork));
    std::vector<int> iwork(static_cast<size_t>(8 * std::max(k, 1)));
    SerialBlas serial;
    for (int64_t t = b; t < e; ++t) {
      T* p = m.at(t);
      if (!all_finite(p, m.rows, m.cols, m.ld)) {
        *info_at(info, t) = Backend::kLinalgNonFinite;
        continue;
      }
      int status = 0;
      if (k > 0)
        gesdd(jobz, rows, cols, p, ld, vs.at(t), vectors ? mu.at(t) : nullptr, ldu,
              vectors ? mv.at(t) : nullptr, ldvt, work.data(), to_int(lwork), iwork.data(),
              &status);
      *info_at(info, t) = status;
    }
  });
}

template <class F>
void dispatch_lapack(DType dtype, F&& f) {
  if (dtype == kF32) return f.template operator()<float>();
  OX_ASSERT(dtype == kF64, "linalg kernel given ", dtype);
  f.template operator()<double>();
}

}  // namespace

void cholesky(const StridedArray& a, const StridedArray& info, bool upper) {
  dispatch_lapack(a.dtype, [&]<class T>() { cholesky_typed<T>(a, info, upper); });
}
void lu_factor(const StridedArray& a, const StridedArray& pivots, const StridedArray& info) {
  dispatch_lapack(a.dtype, [&]<class T>() { lu_factor_typed<T>(a, pivots, info); });
}
void triangular_solve(const StridedArray& a, const StridedArray& b, bool upper, bool transpose,
                      bool unit_diagonal) {
  dispatch_lapack(a.dtype, [&]<class T>() {
    triangular_solve_typed<T>(a, b, upper, transpose, unit_diagonal);
  });
}
void lu_solve(const StridedArray& lu, const StridedArray& pivots, const StridedArray& b,
              bool transpose) {
  dispatch_lapack(lu.dtype, [&]<class T>() { lu_solve_typed<T>(lu, pivots, b, transpose); });
}
void geqrf(const StridedArray& a, const StridedArray& tau, const StridedArray& info) {
  dispatch_lapack(a.dtype, [&]<class T>() { geqrf_typed<T>(a, tau, info); });
}
void orgqr(const StridedArray& q, const StridedArray& tau) {
  dispatch_lapack(q.dtype, [&]<class T>() { orgqr_typed<T>(q, tau); });
}
void eigh(const StridedArray& a, const StridedArray& w, const StridedArray& info, bool vectors,
          bool upper) {
  dispatch_lapack(a.dtype, [&]<class T>() { eigh_typed<T>(a, w, info, vectors, upper); });
}
void svd(const StridedArray& a, const StridedArray& u, const StridedArray& s,
         const StridedArray& vh, const StridedArray& info, bool full_matrices) {
  dispatch_lapack(a.dtype, [&]<class T>() { svd_typed<T>(a, u, s, vh, info, full_matrices); });
}

}  // namespace ox::cpu
