#pragma once
// What every ox::linalg function does around its LAPACK primitive: check operands, make the
// column-major work copies LAPACK writes into, and turn per-matrix status codes into errors.

#include <functional>
#include <string>

#include "backend/backend.h"
#include "oxmera/linalg.h"
#include "tensor/tensor_impl.h"

namespace ox::linalg::detail {

// The last two dims swapped (torch's .mT).
inline Tensor mT(const Tensor& x) { return x.transpose(-2, -1); }

// The buffer t (a fresh result nobody else holds) with its last two dims swapped, as a tensor
// of its own rather than a view: results in LAPACK's column-major form are handed out this way.
Tensor transposed_result(const Tensor& t);

// Refuses an undefined tensor, a dtype other than f32/f64 (DType), fewer than two dims and,
// when `square`, a non-square matrix (Shape).
void check_matrix(const Tensor& a, const char* op, bool square);
// Refuses operands on different devices or of different dtypes.
void check_same(const Tensor& a, const Tensor& b, const char* op);

// All dims but the last `matrix_dims`.
Shape batch_shape(const Tensor& a, size_t matrix_dims = 2);
// a broadcast batch shape of two operands (a Shape error naming both otherwise).
Shape broadcast_batch(const Tensor& a, const Tensor& b, const char* op);

// A fresh [batch..., rows, cols] tensor in LAPACK's column-major form, batches row-major.
Tensor column_major_empty(const Shape& batch, int64_t rows, int64_t cols, DType dtype,
                          Device device, const char* op);
// A row-major copy of a that LAPACK may overwrite (contiguous() could hand back a itself).
Tensor fresh_copy(const Tensor& a, const char* op);
// The dtype's machine epsilon (f32 or f64).
double machine_epsilon(DType dtype);
// A column-major copy of `a` (of its own batch shape, or broadcast to `batch`).
Tensor column_major_copy(const Tensor& a, const char* op);
Tensor column_major_copy(const Tensor& a, const Shape& batch, const char* op);
// A read-only operand in LAPACK's form without a copy where a or aᵀ already is column-major:
// `view` is column-major and holds a, or aᵀ when `transposed`. Otherwise a column-major copy.
struct LapackOperand {
  Tensor view;
  bool transposed = false;
};
LapackOperand lapack_operand(const Tensor& a, const char* op);
// Whether a's matrices are column-major (strides[-2] == 1, strides[-1] >= rows).
bool is_column_major(const Tensor& a);

// P [..., m, m] of A = P L U from getrf's 1-based row interchanges (on the host).
Tensor permutation_matrix(const Tensor& pivots, int64_t m, DType dtype);

// Contiguous i32 zeros of `shape` (info, pivots).
Tensor int32_zeros(const Shape& shape, Device device);
// The n x n identity (n x m with m) in like's dtype and device.
Tensor identity_like(const Tensor& like, int64_t n, std::optional<int64_t> m = std::nullopt);
// The unit lower L and upper U packed in a square getrf LU.
struct UnpackedLu {
  Tensor L, U;
};
UnpackedLu unpack_lu(const Tensor& lu);

// The kernel argument of t (its own layout).
inline StridedArray array_of(const Tensor& t) { return t.impl()->array(); }
inline Backend& backend_of(const Tensor& t, const char* op) { return backend_for(t.device(), op); }

// " of batch element [1, 2]" for flat index t of a batch, or "" for an unbatched matrix.
std::string batch_text(const Shape& batch, int64_t t);

// Throws a Value error for the first matrix holding NaN or Inf (info kLinalgNonFinite).
void check_finite_info(const Tensor& info, const char* op);
// Throws a Value error for the first matrix whose info is not 0: "<op>: <input> holds NaN or
// Inf" for kLinalgNonFinite, else `failure(code)` (what LAPACK's code means for this op), each
// followed by batch_text.
void check_info(const Tensor& info, const char* op,
                const std::function<std::string(int32_t)>& failure);

}  // namespace ox::linalg::detail
