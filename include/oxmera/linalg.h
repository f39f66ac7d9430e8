#pragma once
// ox::linalg: torch.linalg's names and conventions. Every function takes f32 or f64 matrices
// batched over any leading dims (`[..., m, n]`) and computes on the CPU through LAPACK, the
// batch spread over threads (results do not depend on the thread count). Two-operand functions
// broadcast their batch dims.
//
// Errors: a matrix that is not square where one must be is a Shape error; one that is not
// positive definite (cholesky), singular (solve, inv, lu_factor, lu_solve) or holding NaN or Inf
// is a Value error naming the batch index (row-major over the batch dims) and the failing minor
// or pivot. The *_ex forms return an i32 `info` tensor of the batch shape instead: 0 success,
// k > 0 the order of the failing leading minor (cholesky) or the 1-based pivot that is exactly
// zero (LU), -1 a matrix holding NaN or Inf (nothing else is computed for it).

#include <optional>
#include <string_view>

#include "oxmera/ops.h"
#include "oxmera/tensor.h"

namespace ox::linalg {

// A result with its per-matrix status (the *_ex forms).
struct ResultWithInfo {
  Tensor result;
  Tensor info;  // i32, the batch shape
};

// ---- Factorizations ----------------------------------------------------------------------
// A = L Lᵀ (upper: A = Uᵀ U) of a symmetric positive-definite A; only the lower (upper)
// triangle of A is read.
Tensor cholesky(const Tensor& a, bool upper = false);
ResultWithInfo cholesky_ex(const Tensor& a, bool upper = false);

// A = P L U with partial pivoting. pivots: i32, 1-based row interchanges as LAPACK's getrf
// (row i was swapped with row pivots[i] - 1), shape [..., min(m, n)].
struct LuFactorResult {
  Tensor LU, pivots;
};
// Refuses a singular matrix (a zero pivot) as PyTorch does; lu_factor_ex and lu do not.
LuFactorResult lu_factor(const Tensor& a);
struct LuFactorExResult {
  Tensor LU, pivots, info;
};
LuFactorExResult lu_factor_ex(const Tensor& a);
struct LuResult {
  Tensor P, L, U;  // P [..., m, m], L [..., m, k] unit lower, U [..., k, n], k = min(m, n)
};
LuResult lu(const Tensor& a);

// A = Q R. mode "reduced": Q [..., m, k], R [..., k, n] (k = min(m, n)); "complete": Q
// [..., m, m], R [..., m, n]; "r": R alone (Q undefined).
struct QrResult {
  Tensor Q, R;
};
QrResult qr(const Tensor& a, std::string_view mode = "reduced");

// A = Q diag(w) Qᵀ of a symmetric A, eigenvalues ascending. Reads the triangle UPLO names ("L"
// or "U"), but refuses (Value error naming the batch index and the asymmetry) a matrix with
// max|A - Aᵀ| > tol * max|A|, tol = sqrt(machine epsilon) of the dtype, rather than silently
// answering for a symmetrized matrix.
struct EighResult {
  Tensor eigenvalues, eigenvectors;
};
EighResult eigh(const Tensor& a, std::string_view uplo = "L");
Tensor eigvalsh(const Tensor& a, std::string_view uplo = "L");

// A = U diag(S) Vh, singular values descending. full_matrices: U [..., m, m], Vh [..., n, n];
// otherwise U [..., m, k], Vh [..., k, n].
struct SvdResult {
  Tensor U, S, Vh;
};
SvdResult svd(const Tensor& a, bool full_matrices = true);
Tensor svdvals(const Tensor& a);

// ---- Solvers -----------------------------------------------------------------------------
// X with A X = B (left) or X A = B (right). B is [..., n, k], or [n] for a vector when A is
// [n, n] unbatched... as torch.linalg.solve: a B of A's dims minus one is a batch of vectors.
Tensor solve(const Tensor& a, const Tensor& b, bool left = true);
ResultWithInfo solve_ex(const Tensor& a, const Tensor& b, bool left = true);
// A triangular (its other triangle is not read); unitriangular: the diagonal is taken as 1.
Tensor solve_triangular(const Tensor& a, const Tensor& b, bool upper, bool left = true,
                        bool unitriangular = false);
// X with A X = B from the Cholesky factor of A (torch.cholesky_solve's argument order).
Tensor cholesky_solve(const Tensor& b, const Tensor& factor, bool upper = false);
// X with A X = B (adjoint: Aᵀ X = B; left false: X A = B) from lu_factor's result.
Tensor lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& b, bool left = true,
                bool adjoint = false);
Tensor inv(const Tensor& a);
ResultWithInfo inv_ex(const Tensor& a);

// Least squares: X minimizing ||A X - B|| (minimum norm when A is rank deficient), through the
// SVD with singular values at or below rcond * max(S) treated as zero (rcond defaults to
// max(m, n) * machine epsilon, as the gelsd driver).
struct LstsqResult {
  Tensor solution;         // [..., n, k]
  Tensor residuals;        // squared residual norms [..., k] when m > n and A has full rank,
                           // else empty [0], as PyTorch
  Tensor rank;             // i64, the batch shape
  Tensor singular_values;  // [..., min(m, n)]
};
LstsqResult lstsq(const Tensor& a, const Tensor& b, std::optional<double> rcond = std::nullopt);
// Moore-Penrose pseudo-inverse through the SVD (hermitian: through eigh); singular values at
// or below max(atol, rtol * max(S)) count as zero. rtol defaults to max(m, n) * eps when atol
// is absent or zero, else 0, as PyTorch.
Tensor pinv(const Tensor& a, std::optional<double> atol = std::nullopt,
            std::optional<double> rtol = std::nullopt, bool hermitian = false);

// ---- Determinants ------------------------------------------------------------------------
// A singular matrix has det 0 and slogdet (0, -inf); logdet is NaN for a negative det.
Tensor det(const Tensor& a);
struct SlogdetResult {
  Tensor sign, logabsdet;
};
SlogdetResult slogdet(const Tensor& a);
Tensor logdet(const Tensor& a);

// ---- Norms, rank, powers, products -------------------------------------------------------
// The vector norm of x over `dims` (all dims when empty): ord 2, 1, inf, -inf, 0 or any p.
Tensor vector_norm(const Tensor& x, double ord = 2, DimList dims = {}, bool keepdim = false);
// The matrix norm over the two `dims`: ord "fro" or "nuc", or a number: 1, -1, 2, -2 (largest
// and smallest singular value), inf, -inf (max and min absolute row sum).
Tensor matrix_norm(const Tensor& a, std::string_view ord = "fro", Dims dims = {-2, -1},
                   bool keepdim = false);
Tensor matrix_norm(const Tensor& a, double ord, Dims dims = {-2, -1}, bool keepdim = false);
// The number of singular values above max(atol, rtol * max(S)) (defaults as pinv); i64.
Tensor matrix_rank(const Tensor& a, std::optional<double> atol = std::nullopt,
                   std::optional<double> rtol = std::nullopt, bool hermitian = false);
// A^n by repeated squaring; n = 0 gives the identity, n < 0 the power of inv(A).
Tensor matrix_power(const Tensor& a, int64_t n);
// The 3-vector cross product along dim (of size 3), operands broadcast.
Tensor cross(const Tensor& a, const Tensor& b, int64_t dim = -1);
// Batches of diagonal matrices: the last dim of x becomes the `offset` diagonal of the plane
// (dim1, dim2) of the result.
Tensor diag_embed(const Tensor& x, int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1);

}  // namespace ox::linalg
