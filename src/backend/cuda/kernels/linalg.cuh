#pragma once
// The per-element logic of kernels/linalg.cu as plain functions that the CPU compiles too
// (tests/backend/cuda_linalg_test.cpp checks them against the CPU backend).

#include <cstdint>

#include "core/host_device.h"

namespace ox::cuda::kernels {

// Whether a factorization reads element (i, j): all of the matrix (tri 0), its upper triangle
// (tri 1) or its lower triangle (tri -1).
OX_HOST_DEVICE inline bool linalg_reads(int32_t tri, int64_t i, int64_t j) {
  return !((tri > 0 && i > j) || (tri < 0 && i < j));
}

// Whether the scatter writes a zero at (i, j): below the diagonal (zero_tri 1, an upper
// Cholesky factor) or above it (zero_tri -1, a lower one).
OX_HOST_DEVICE inline bool linalg_zeroes(int32_t zero_tri, int64_t i, int64_t j) {
  return (zero_tri > 0 && i > j) || (zero_tri < 0 && i < j);
}

// x (n elements, one right-hand side) = op(A)⁻¹ x for the triangle of A (element (i, j) at
// a[i + j * lda]) that `upper` names, op(A) = Aᵀ when `transpose`; the other triangle is not
// read, nor the diagonal when `unit` (taken as 1). Substitution in T, in a fixed order; a zero
// pivot divides anyway (Inf/NaN), as the CPU backend's singular path does.
template <class T>
OX_HOST_DEVICE void trsm_column(const T* a, int64_t lda, T* x, int64_t n, bool upper,
                                bool transpose, bool unit) {
  const bool lower_system = upper == transpose;  // op(A) lower triangular
  for (int64_t s = 0; s < n; ++s) {
    const int64_t i = lower_system ? s : n - 1 - s;
    T v = x[i];
    if (lower_system) {
      for (int64_t j = 0; j < i; ++j) v -= (transpose ? a[j + i * lda] : a[i + j * lda]) * x[j];
    } else {
      for (int64_t j = i + 1; j < n; ++j) v -= (transpose ? a[j + i * lda] : a[i + j * lda]) * x[j];
    }
    x[i] = unit ? v : v / (a[i + i * lda]);
  }
}

}  // namespace ox::cuda::kernels
