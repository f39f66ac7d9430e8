// The symmetric tridiagonal eigenproblem by divide and conquer (Cuppen; Gu and Eisenstat), with
// its top step on all threads. LAPACK's stedc runs single-threaded here (its BLAS would follow the
// thread count), and at order 256 the secular-equation roots of its merges (laed4) are the
// largest part of eigh. So the matrix is torn in two by a rank-one change, LAPACK solves the two
// halves side by side, and the merge, LAPACK's laed1, is done here: its deflation (laed2) as is,
// then the roots and the corrected vectors as fixed work items (a root, a vector each) and the
// final products on the packed GEMM. No work item's arithmetic depends on the thread that runs
// it, so neither does the result.

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/kernels.h"
#include "backend/cpu/lapack.h"
#include "backend/cpu/parallel.h"

extern "C" {
void sstedc_(const char* compz, const int* n, float* d, float* e, float* z, const int* ldz,
             float* work, const int* lwork, int* iwork, const int* liwork, int* info);
void dstedc_(const char* compz, const int* n, double* d, double* e, double* z, const int* ldz,
             double* work, const int* lwork, int* iwork, const int* liwork, int* info);
void slaed2_(int* k, const int* n, const int* n1, float* d, float* q, const int* ldq, int* indxq,
             float* rho, float* z, float* dlamda, float* w, float* q2, int* indx, int* indxc,
             int* indxp, int* coltyp, int* info);
void dlaed2_(int* k, const int* n, const int* n1, double* d, double* q, const int* ldq, int* indxq,
             double* rho, double* z, double* dlamda, double* w, double* q2, int* indx, int* indxc,
             int* indxp, int* coltyp, int* info);
void slaed4_(const int* n, const int* i, const float* d, const float* z, float* delta,
             const float* rho, float* dlam, int* info);
void dlaed4_(const int* n, const int* i, const double* d, const double* z, double* delta,
             const double* rho, double* dlam, int* info);
void slamrg_(const int* n1, const int* n2, const float* a, const int* strd1, const int* strd2,
             int* index);
void dlamrg_(const int* n1, const int* n2, const double* a, const int* strd1, const int* strd2,
             int* index);
float snrm2_(const int* n, const float* x, const int* incx);
double dnrm2_(const int* n, const double* x, const int* incx);
}

namespace ox::cpu {

namespace {

// Below this order stedc runs as it is; from it, the halves are at least 64.
constexpr int kSplitOrder = 128;

// Overloads by element type, Fortran calling convention hidden.
int stedc(int n, float* d, float* e, float* z, int ldz, float* work, int lwork, int* iwork,
          int liwork) {
  int info = 0;
  sstedc_("I", &n, d, e, z, &ldz, work, &lwork, iwork, &liwork, &info);
  return info;
}
int stedc(int n, double* d, double* e, double* z, int ldz, double* work, int lwork, int* iwork,
          int liwork) {
  int info = 0;
  dstedc_("I", &n, d, e, z, &ldz, work, &lwork, iwork, &liwork, &info);
  return info;
}
void laed2(int* k, int n, int n1, float* d, float* q, int ldq, int* indxq, float* rho, float* z,
           float* dlamda, float* w, float* q2, int* indx, int* indxc, int* indxp, int* coltyp,
           int* info) {
  slaed2_(k, &n, &n1, d, q, &ldq, indxq, rho, z, dlamda, w, q2, indx, indxc, indxp, coltyp, info);
}
void laed2(int* k, int n, int n1, double* d, double* q, int ldq, int* indxq, double* rho, double* z,
           double* dlamda, double* w, double* q2, int* indx, int* indxc, int* indxp, int* coltyp,
           int* info) {
  dlaed2_(k, &n, &n1, d, q, &ldq, indxq, rho, z, dlamda, w, q2, indx, indxc, indxp, coltyp, info);
}
int laed4(int n, int i, const float* d, const float* z, float* delta, float rho, float* dlam) {
  int info = 0;
  slaed4_(&n, &i, d, z, delta, &rho, dlam, &info);
  return info;
}
int laed4(int n, int i, const double* d, const double* z, double* delta, double rho, double* dlam) {
  int info = 0;
  dlaed4_(&n, &i, d, z, delta, &rho, dlam, &info);
  return info;
}
void lamrg(int n1, int n2, const float* a, int* index) {
  const int up = 1, down = -1;
  slamrg_(&n1, &n2, a, &up, &down, index);
}
void lamrg(int n1, int n2, const double* a, int* index) {
  const int up = 1, down = -1;
  dlamrg_(&n1, &n2, a, &up, &down, index);
}
float nrm2(int n, const float* x) {
  const int one = 1;
  return snrm2_(&n, x, &one);
}
double nrm2(int n, const double* x) {
  const int one = 1;
  return dnrm2_(&n, x, &one);
}
template <class T>
int serial_stedc(int n, T* d, T* e, T* z, int ldz) {
  std::vector<T> work(1 + 4 * size_t(n) + size_t(n) * n);
  std::vector<int> iwork(3 + 5 * size_t(n));
  SerialBlas serial;
  return stedc(n, d, e, z, ldz, work.data(), int(work.size()), iwork.data(), int(iwork.size()));
}

// q (rows x k, leading dimension ldq) <- a (rows x inner, leading dimension lda) times s
// (inner x k, leading dimension inner), all column-major: the packed GEMM, whose elements each
// sum in depth order whatever the threads (zeros when inner is 0).
template <class T>
void product(int rows, int k, int inner, const T* a, int lda, const T* s, T* q, int ldq) {
  constexpr DType dtype = std::is_same_v<T, float> ? kF32 : kF64;
  const auto view = [](const T* p, int r, int c, int ld) {
    return StridedArray{const_cast<T*>(p), {r, c}, {1, ld}, dtype, Device::cpu()};
  };
  cpu::matmul(view(q, rows, k, ldq), view(a, rows, inner, lda), view(s, inner, k, inner),
              Scalar(1.0), Scalar(0.0));
}

// LAPACK's laed3: the k non-deflated roots of the secular equation (into d), the eigenvectors
// of the rank-one-modified diagonal (recomputed from corrected weights, Gu and Eisenstat's
// remedy for lost orthogonality), and the products with the halves' eigenvectors in q2.
template <class T>
int secular_merge(int k, int n, int n1, T* d, T* q, int ldq, T rho, const T* dlamda, const T* q2,
                  const int* indx, const int* ctot, T* w) {
  std::vector<int> root_info(size_t(k), 0);
  parallel_for(0, k, 8, [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j)
      root_info[size_t(j)] = laed4(k, int(j) + 1, dlamda, w, q + j * ldq, rho, d + j);
  });
  for (int j = 0; j < k; ++j)
    if (root_info[size_t(j)] != 0) return root_info[size_t(j)];

  auto at = [&](int i, int j) -> T& { return q[i + int64_t(j) * ldq]; };
  if (k == 2) {
    for (int j = 0; j < 2; ++j) {
      const T top = at(0, j), bottom = at(1, j);
      at(0, j) = indx[0] == 1 ? top : bottom;
      at(1, j) = indx[1] == 1 ? top : bottom;
    }
  } else if (k > 2) {
    const std::vector<T> sign(w, w + k);
    parallel_for(0, k, 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        T wi = at(int(i), int(i));
        for (int j = 0; j < k; ++j)
          if (j != i) wi *= at(int(i), j) / (dlamda[i] - dlamda[j]);
        w[i] = std::copysign(std::sqrt(-wi), sign[size_t(i)]);
      }
    });
    parallel_for(0, k, 16, [&](int64_t begin, int64_t end) {
      std::vector<T> s(size_t(k), T(0));
      SerialBlas serial;
      for (int64_t j = begin; j < end; ++j) {
        for (int i = 0; i < k; ++i) s[size_t(i)] = w[i] / at(i, int(j));
        const T norm = nrm2(k, s.data());
        for (int i = 0; i < k; ++i) at(i, int(j)) = s[size_t(indx[i] - 1)] / norm;
      }
    });
  }

  // The halves' eigenvectors (compressed by laed2 into q2) times the rank-one problem's.
  const int n2 = n - n1, n12 = ctot[0] + ctot[1], n23 = ctot[1] + ctot[2];
  std::vector<T> s(size_t(std::max(n12, n23)) * size_t(k));
  for (int j = 0; j < k; ++j)
    std::copy(&at(ctot[0], j), &at(ctot[0], j) + n23, s.data() + int64_t(j) * n23);
  product(n2, k, n23, q2 + int64_t(n1) * n12, n2, s.data(), q + n1, ldq);
  for (int j = 0; j < k; ++j) std::copy(&at(0, j), &at(0, j) + n12, s.data() + int64_t(j) * n12);
  product(n1, k, n12, q2, n1, s.data(), q, ldq);
  return 0;
}

template <class T>
T max_magnitude(int n, const T* d, const T* e) {
  T m = 0;
  for (int i = 0; i < n; ++i) m = std::max(m, std::abs(d[i]));
  for (int i = 0; i + 1 < n; ++i) m = std::max(m, std::abs(e[i]));
  return m;
}

template <class T>
int split_tridiagonal_eigh(int n, T* d, T* e, T* z, int ldz) {
  // stedc's scaling: the secular equation squares its weights, so work at norm 1.
  const T norm = max_magnitude(n, d, e);
  if (!(norm > 0) || !std::isfinite(norm)) return serial_stedc(n, d, e, z, ldz);
  for (int i = 0; i < n; ++i) d[i] /= norm;
  for (int i = 0; i + 1 < n; ++i) e[i] /= norm;

  // T = diag(T1, T2) + rho v v^T, v = e_cut + e_(cut+1) up to sign: the halves lose |rho| at the
  // corners they share, and laed2 takes the sign of rho into account.
  const int n1 = n / 2, n2 = n - n1;
  T rho = e[n1 - 1];
  d[n1 - 1] -= std::abs(rho);
  d[n1] -= std::abs(rho);
  for (int j = 0; j < n; ++j) std::fill(z + int64_t(j) * ldz, z + int64_t(j) * ldz + n, T(0));
  int half_info[2] = {0, 0};
  parallel_for(0, 2, 1, [&](int64_t begin, int64_t end) {
    for (int64_t h = begin; h < end; ++h) {
      const int first = h == 0 ? 0 : n1, size = h == 0 ? n1 : n2;
      half_info[h] =
          serial_stedc(size, d + first, e + first, z + first + int64_t(first) * ldz, ldz);
    }
  });
  for (int h : half_info)
    if (h != 0) return h;

  // laed1: deflation, then the secular merge, then the order of the merged eigenvalues.
  std::vector<int> indxq(static_cast<size_t>(n)), iwork(4 * static_cast<size_t>(n));
  for (int i = 0; i < n1; ++i) indxq[size_t(i)] = i + 1;  // each half already ascending
  for (int i = 0; i < n2; ++i) indxq[size_t(n1 + i)] = i + 1;
  std::vector<T> weights(static_cast<size_t>(n)), dlamda(static_cast<size_t>(n)),
      w(static_cast<size_t>(n));
  std::vector<T> q2(static_cast<size_t>(n) * n);  // compressed, then deflated, columns
  for (int j = 0; j < n1; ++j) weights[size_t(j)] = z[n1 - 1 + int64_t(j) * ldz];
  for (int j = n1; j < n; ++j) weights[size_t(j)] = z[n1 + int64_t(j) * ldz];
  int k = 0, info = 0;
  int* indx = iwork.data();
  int* indxc = indx + n;
  int* coltyp = indxc + n;
  int* indxp = coltyp + n;
  {
    SerialBlas serial;
    laed2(&k, n, n1, d, z, ldz, indxq.data(), &rho, weights.data(), dlamda.data(), w.data(),
          q2.data(), indx, indxc, indxp, coltyp, &info);
  }
  if (info != 0) return info;
  if (k > 0) {
    info =
        secular_merge(k, n, n1, d, z, ldz, rho, dlamda.data(), q2.data(), indxc, coltyp, w.data());
    if (info != 0) return info;
    lamrg(k, n - k, d, indxq.data());
  } else {
    for (int i = 0; i < n; ++i) indxq[size_t(i)] = i + 1;
  }

  // Ascending eigenvalues, their vectors with them, and the scale undone.
  // q2 is free again: it takes the vectors in their new order, weights the values.
  for (int i = 0; i < n; ++i) {
    const int64_t from = indxq[size_t(i)] - 1;
    weights[size_t(i)] = d[from] * norm;
    std::copy(z + from * ldz, z + from * ldz + n, q2.data() + int64_t(i) * n);
  }
  std::copy(weights.begin(), weights.end(), d);
  for (int j = 0; j < n; ++j)
    std::copy(q2.data() + int64_t(j) * n, q2.data() + int64_t(j + 1) * n, z + int64_t(j) * ldz);
  return 0;
}

}  // namespace

int tridiagonal_eigh(int n, float* d, float* e, float* z, int ldz) {
  return n < kSplitOrder ? serial_stedc(n, d, e, z, ldz) : split_tridiagonal_eigh(n, d, e, z, ldz);
}
int tridiagonal_eigh(int n, double* d, double* e, double* z, int ldz) {
  return n < kSplitOrder ? serial_stedc(n, d, e, z, ldz) : split_tridiagonal_eigh(n, d, e, z, ldz);
}

}  // namespace ox::cpu
