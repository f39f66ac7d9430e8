#pragma once
// cuBLAS for matmul (backend/cuda/matmul.cpp): the library loaded at run time (dlopen by soname,
// nothing linked), a handle per device, and the planning of one strided batched GEMM call from
// the operands' layouts, which is plain host logic (tests/backend/cuda_matmul_test.cpp).
//
// cuBLAS is column-major. A row-major C [M, N] with unit column stride is a column-major
// C^T [N, M], so C = A B runs as C^T = B^T A^T with cuBLAS's first operand our b; a C with unit
// row stride is column-major already, and C = A B runs as it is. Each input is taken in place
// when it has a unit stride in one of its matrix dims (op N or T, ld its other stride) and its
// batch dims collapse to one stride; otherwise the launcher copies it first.

#include <cuda.h>

#include <cstdint>
#include <string>

#include "oxmera/core/dtype.h"
#include "oxmera/core/layout.h"

namespace ox::cuda::detail {

struct DeviceContext;

// One matrix of a batch: element (i, j) at i * rs + j * cs (elements).
struct GemmMatrix {
  int64_t rows, cols, rs, cs;
};
// The leading dimension cuBLAS reads `m` with, as stored row by row (unit column stride) or
// column by column (unit row stride); -1 where `m` is not stored so, or the ld would not be a
// valid positive int. A size-1 dim takes any stride.
int64_t row_major_ld(const GemmMatrix& m);
int64_t col_major_ld(const GemmMatrix& m);
// The one stride that steps through every batch index of `strides` (the dims before the last
// two, of `shape`), row-major; -1 where the batch dims do not collapse so. 0 batch dims: 0.
int64_t batch_stride(const Shape& shape, const Strides& strides);

// One cublasGemmStridedBatchedEx call: C' (m x n, column-major) = op(A') op(B'), batch times.
struct CublasPlan {
  bool usable = true;  // false: a size beyond cuBLAS's int (the tiled kernel computes it)
  bool copy_a = false, copy_b = false, copy_c = false;  // operands to copy contiguous first
  bool swap = false;  // A' is our b and B' our a (C' = C^T); else A' is a, B' is b (C' = C)
  bool trans_a = false, trans_b = false;  // op(A'), op(B'): transposed
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // between batch items, in elements
  int64_t batch = 1;
};
// The call for dst [..., M, N] = a [..., M, K] @ b [..., K, N] (shapes share the batch dims),
// or which operands must first be copied to a contiguous layout (then plan again).
CublasPlan plan_cublas(const Shape& dst_shape, int64_t k, const Strides& dst, const Strides& a,
                       const Strides& b);

// Whether cuBLAS loaded here with every entry point matmul uses; why not, when not (every
// soname tried, with its dlopen error, or the missing symbol). OXMERA_CUDA_NO_CUBLAS=1 turns it
// off ("disabled by OXMERA_CUDA_NO_CUBLAS=1").
bool cublas_available();
const std::string& cublas_unavailable_reason();
// The soname that loaded ("libcublas.so.13"), empty when none did.
const std::string& cublas_soname();

// Runs `plan` on `at`'s device and stream with the device's handle (created on first use).
// dtype f32 (tf32: CUBLAS_COMPUTE_32F_FAST_TF32, else CUBLAS_COMPUTE_32F), f64, f16 or bf16
// (f32 compute); alpha and beta point at floats (f32, f16, bf16) or doubles (f64).
void cublas_gemm(const DeviceContext& at, const CublasPlan& plan, DType dtype, bool tf32,
                 const void* alpha, const void* beta, const void* a_prime, const void* b_prime,
                 void* c_prime);

}  // namespace ox::cuda::detail
