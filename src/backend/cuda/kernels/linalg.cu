// The helper kernels of the linear algebra launchers (src/backend/cuda/linalg.cpp), which run
// the factorizations themselves on cuSOLVER. Matrices are column-major, element (i, j) of a
// matrix at i + j * ld; `batch` walks the batch dims (its index t is the row-major index over
// them, as the host numbers the matrices). f32 and f64:
//   ox_linalg_gather_<dtype>(a, batch, count, rows, cols, ld, scratch, flags, tri, transpose)
//       one block per matrix: flags[t] = 1 when an element of matrix t that the factorization
//       reads (all of it, tri 0; the upper triangle, tri 1; the lower, tri -1) is NaN or Inf,
//       else 0; the matrix copied to scratch + t * rows * cols packed (ld rows), or its
//       transpose (ld cols) when `transpose`; zeros instead for a flagged matrix, so that
//       cuSOLVER never sees a non-finite value
//   ox_linalg_scatter_<dtype>(a, batch, count, rows, cols, ld, scratch, flags, info, zero_tri,
//                             copy, nonfinite)
//       one block per matrix: a flagged matrix is left as it is and gets info[t] = nonfinite;
//       the others get the packed scratch copied back when `copy`, with zeros below the
//       diagonal (zero_tri 1) or above it (zero_tri -1)
//   ox_linalg_transpose_<dtype>(src, src_ld, src_step, dst, batch, dst_ld, count, rows, cols)
//       dst (rows x cols, matrix t at the batch offset) = the transpose of the packed src
//       matrix t (cols x rows at src + t * src_step)
//   ox_linalg_trsm_<dtype>(a, b, batch, count, n, k, lda, ldb, upper, transpose, unit)
//       b [n, k] = op(A)^-1 b for triangular A, one thread per (matrix, right-hand-side
//       column): forward or back substitution in the dtype, in a fixed order; a zero pivot
//       divides anyway (Inf/NaN). batch: operand 0 A, operand 1 b.

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/linalg.cuh"
#include "backend/cuda/kernels/offsets.cuh"

OXMERA_DEFINE_KERNEL_STAMP;

using namespace ox::cuda::kernels;

namespace {

template <class T>
__device__ void gather(const T* __restrict__ a, const Offsets<1>& batch, int64_t count,
                       int64_t rows, int64_t cols, int64_t ld, T* __restrict__ scratch,
                       int32_t* __restrict__ flags, int32_t tri, int32_t transpose) {
  const int64_t size = rows * cols;
  for (int64_t t = blockIdx.x; t < count; t += gridDim.x) {
    int64_t offset[1];
    batch.get(t, offset);
    const T* m = a + offset[0];
    int bad = 0;
    for (int64_t e = threadIdx.x; e < size; e += blockDim.x) {
      const int64_t i = e % rows, j = e / rows;
      if (linalg_reads(tri, i, j) && !isfinite(m[i + j * ld])) bad = 1;
    }
    bad = __syncthreads_or(bad);  // uniform over the block: every thread walks the same t
    T* s = scratch + t * size;
    for (int64_t e = threadIdx.x; e < size; e += blockDim.x) {
      const int64_t i = e % rows, j = e / rows;
      const T v = bad ? T(0) : m[i + j * ld];
      s[transpose ? j + i * cols : e] = v;
    }
    if (threadIdx.x == 0) flags[t] = bad;
  }
}

template <class T>
__device__ void scatter(T* __restrict__ a, const Offsets<1>& batch, int64_t count, int64_t rows,
                        int64_t cols, int64_t ld, const T* __restrict__ scratch,
                        const int32_t* __restrict__ flags, int32_t* __restrict__ info,
                        int32_t zero_tri, int32_t copy, int32_t nonfinite) {
  const int64_t size = rows * cols;
  for (int64_t t = blockIdx.x; t < count; t += gridDim.x) {
    if (flags[t] != 0) {
      if (threadIdx.x == 0) info[t] = nonfinite;
      continue;
    }
    if (copy == 0) continue;
    int64_t offset[1];
    batch.get(t, offset);
    T* m = a + offset[0];
    const T* s = scratch + t * size;
    for (int64_t e = threadIdx.x; e < size; e += blockDim.x) {
      const int64_t i = e % rows, j = e / rows;
      m[i + j * ld] = linalg_zeroes(zero_tri, i, j) ? T(0) : s[e];
    }
  }
}

template <class T>
__device__ void transpose_into(const T* __restrict__ src, int64_t src_ld, int64_t src_step,
                               T* __restrict__ dst, const Offsets<1>& batch, int64_t dst_ld,
                               int64_t count, int64_t rows, int64_t cols) {
  const int64_t size = rows * cols;
  grid_stride(count * size, [&](int64_t idx) {
    const int64_t t = idx / size, e = idx - t * size;
    const int64_t i = e % rows, j = e / rows;
    int64_t offset[1];
    batch.get(t, offset);
    dst[offset[0] + i + j * dst_ld] = src[t * src_step + j + i * src_ld];
  });
}

template <class T>
__device__ void trsm(const T* __restrict__ a, T* __restrict__ b, const Offsets<2>& batch,
                     int64_t count, int64_t n, int64_t k, int64_t lda, int64_t ldb, int32_t upper,
                     int32_t transpose, int32_t unit) {
  grid_stride(count * k, [&](int64_t idx) {
    const int64_t t = idx / k, c = idx - t * k;
    int64_t offset[2];
    batch.get(t, offset);
    trsm_column(a + offset[0], lda, b + offset[1] + c * ldb, n, upper != 0, transpose != 0,
                unit != 0);
  });
}

}  // namespace

#define OX_LINALG(NAME, T)                                                                      \
  extern "C" __global__ void ox_linalg_gather_##NAME(                                           \
      const T* a, Offsets<1> batch, int64_t count, int64_t rows, int64_t cols, int64_t ld,      \
      T* scratch, int32_t* flags, int32_t tri, int32_t transpose) {                             \
    gather(a, batch, count, rows, cols, ld, scratch, flags, tri, transpose);                    \
  }                                                                                             \
  extern "C" __global__ void ox_linalg_scatter_##NAME(                                          \
      T* a, Offsets<1> batch, int64_t count, int64_t rows, int64_t cols, int64_t ld,            \
      const T* scratch, const int32_t* flags, int32_t* info, int32_t zero_tri, int32_t copy,    \
      int32_t nonfinite) {                                                                      \
    scatter(a, batch, count, rows, cols, ld, scratch, flags, info, zero_tri, copy, nonfinite);  \
  }                                                                                             \
  extern "C" __global__ void ox_linalg_transpose_##NAME(                                        \
      const T* src, int64_t src_ld, int64_t src_step, T* dst, Offsets<1> batch, int64_t dst_ld, \
      int64_t count, int64_t rows, int64_t cols) {                                              \
    transpose_into(src, src_ld, src_step, dst, batch, dst_ld, count, rows, cols);               \
  }                                                                                             \
  extern "C" __global__ void ox_linalg_trsm_##NAME(                                             \
      const T* a, T* b, Offsets<2> batch, int64_t count, int64_t n, int64_t k, int64_t lda,     \
      int64_t ldb, int32_t upper, int32_t transpose, int32_t unit) {                            \
    trsm(a, b, batch, count, n, k, lda, ldb, upper, transpose, unit);                           \
  }
OX_LINALG(f32, float)
OX_LINALG(f64, double)
#undef OX_LINALG
