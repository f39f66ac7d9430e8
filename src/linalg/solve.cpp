// Solvers and determinants: solve_triangular, cholesky_solve, lu_solve, solve, inv, det,
// slogdet, logdet, with their vjps in public ops.
//
// A general A is factored as it is stored: a row-major copy, read column-major by LAPACK, is
// Aᵀ, so solve factors Aᵀ = P L U and asks getrs for the transposed system instead of copying
// A across. det(A) = det(Aᵀ) likewise.

#include <algorithm>
#include <cmath>
#include <limits>

#include "autograd/record.h"
#include "linalg/linalg_util.h"

namespace ox::linalg {

using namespace detail;

namespace {

Shape matrix_shape(Shape batch, int64_t rows, int64_t cols) {
  batch.push_back(rows);
  batch.push_back(cols);
  return batch;
}

// ---- Triangular solves -------------------------------------------------------------------

// X with A X = B (A triangular, square); right-side solves come here transposed.
Tensor triangular_solve_left(const Tensor& a, const Tensor& b, bool upper, bool unit,
                             const char* op) {
  const Shape batch = broadcast_batch(a, b, op);
  Tensor x = column_major_copy(b, batch, op);
  if (x.numel() == 0) return x;
  // A column-major view holding Aᵀ solves the transposed system with the other triangle.
  const LapackOperand la = lapack_operand(a, op);
  const Tensor view = la.view.expand(matrix_shape(batch, a.size(-2), a.size(-1)));
  backend_of(a, op).triangular_solve(array_of(view), array_of(x), upper != la.transposed,
                                     la.transposed, unit);
  return x;
}

// The gradient of A is confined to the triangle the solve reads.
Tensor triangle_of(const Tensor& g, bool upper, bool unit) {
  return upper ? triu(g, unit ? 1 : 0) : tril(g, unit ? -1 : 0);
}

// ---- LU solves ---------------------------------------------------------------------------

// b [batch..., n, k] overwritten... : a fresh column-major X with op(A) X = B from a
// column-major LU view (any batch strides) and its pivots, broadcast to `batch`.
Tensor lu_solve_raw(const Tensor& lu, const Tensor& pivots, const Tensor& b, const Shape& batch,
                    bool transpose, const char* op) {
  Tensor x = column_major_copy(b, batch, op);
  if (x.numel() == 0) return x;
  const int64_t n = lu.size(-1);
  Shape pivot_shape = batch;
  pivot_shape.push_back(n);
  backend_of(lu, op).lu_solve(array_of(lu.expand(matrix_shape(batch, n, n))),
                              array_of(pivots.expand(pivot_shape)), array_of(x), transpose);
  return x;
}

// Aᵀ factored in place of a row-major copy of A: `lu` (column-major view) is the LU of Aᵀ.
struct TransposedLu {
  Tensor lu, pivots, info;
};
TransposedLu factor_transposed(const Tensor& a, const char* op) {
  const Tensor lu = mT(fresh_copy(a, op));
  Shape pivot_shape = batch_shape(a);
  pivot_shape.push_back(a.size(-1));
  Tensor pivots = int32_zeros(pivot_shape, a.device());
  Tensor info = int32_zeros(batch_shape(a), a.device());
  if (lu.numel() > 0) backend_of(a, op).lu_factor(array_of(lu), array_of(pivots), array_of(info));
  return {lu, pivots, info};
}

std::string singular_pivot(int32_t code) {
  return "the matrix is singular: pivot " + std::to_string(code) +
         " of the LU factorization of its transpose is exactly zero";
}

// gA of A = P L U from gA of A itself: gL = tril(Pᵀ gA Uᵀ, -1), gU = triu(Lᵀ Pᵀ gA), packed.
Tensor packed_lu_grad(const Tensor& ga, const Tensor& lu, const Tensor& pivots) {
  const auto [l, u] = unpack_lu(lu);
  const Tensor ptga = matmul(mT(permutation_matrix(pivots, lu.size(-1), lu.dtype())), ga);
  return tril(matmul(ptga, mT(u)), -1) + triu(matmul(mT(l), ptga));
}

// ---- solve -------------------------------------------------------------------------------

// B as a batch of vectors (torch's rule: B has one dim fewer than A and matches its batch).
bool is_vector_rhs(const Tensor& a, const Tensor& b) {
  return b.dim() == a.dim() - 1 && b.dim() >= 1 &&
         Shape(b.shape().begin(), b.shape().end() - 1) == batch_shape(a);
}

ResultWithInfo solve_impl(const Tensor& a, const Tensor& b_in, bool left, const char* op) {
  check_matrix(a, op, true);
  OX_CHECK(b_in.defined(), Value, op, "got an undefined tensor");
  check_same(a, b_in, op);
  const bool vector = is_vector_rhs(a, b_in);
  const Tensor b = vector ? b_in.unsqueeze(left ? -1 : -2) : b_in;
  OX_CHECK(b.dim() >= 2, Shape, op, "B must be a matrix or a batch of vectors, got shape ",
           b_in.shape(), " for A of shape ", a.shape());
  const int64_t n = a.size(-1);
  OX_CHECK(b.size(left ? -2 : -1) == n, Shape, op, "A of shape ", a.shape(), " and B of shape ",
           b_in.shape(), " do not match (", left ? "A X = B" : "X A = B", ")");
  const Shape batch = broadcast_batch(a, b, op);
  TransposedLu f = factor_transposed(a, op);
  // lu holds Aᵀ's factors: A X = B is the transposed system; X A = B, i.e. Aᵀ Xᵀ = Bᵀ, is not.
  Tensor x = lu_solve_raw(f.lu, f.pivots, left ? b : mT(b), batch, left, op);
  if (!left) x = mT(x);
  if (autograd::needs_grad({&a, &b})) {
    autograd::record("LinalgSolveBackward", {a, b}, {x}, {a, x, f.lu, f.pivots},
                     [left, batch, op](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
                       const Tensor &a_saved = s[0], &x_saved = s[1];
                       // gB solves Aᵀ gB = gX (left) or gB Aᵀ = gX (right).
                       Tensor gb;
                       if (is_grad_enabled()) {
                         gb =
                             solve(mT(a_saved), g[0], left);  // differentiable again (create_graph)
                       } else {
                         gb = lu_solve_raw(s[2], s[3], left ? g[0] : mT(g[0]), batch, !left, op);
                         if (!left) gb = mT(gb);
                       }
                       const Tensor ga = left ? -matmul(gb, mT(x_saved)) : -matmul(mT(x_saved), gb);
                       return std::vector<Tensor>{ga, gb};
                     });
  }
  return {vector ? x.squeeze(left ? -1 : -2) : x, f.info};
}

// ---- Determinants ------------------------------------------------------------------------

// (-1)^(number of interchanges) of LU pivots [..., k].
Tensor pivot_sign(const Tensor& pivots, DType dtype) {
  const int64_t k = pivots.size(-1);
  const Tensor swaps =
      ne(pivots, arange(1, k + 1, 1, {.dtype = kI32, .device = pivots.device()})).sum({-1});
  return 1 - 2 * remainder(swaps, 2).to(dtype);
}

struct LuDeterminant {
  Tensor diagonal, sign;  // U's diagonal [..., n] and the permutation's sign [...]
};
LuDeterminant lu_determinant(const Tensor& a, const char* op) {
  check_matrix(a, op, true);
  NoGradGuard no_grad;
  TransposedLu f = factor_transposed(a, op);
  check_finite_info(f.info, op);
  return {f.lu.diagonal(0, -2, -1), pivot_sign(f.pivots, a.dtype())};
}

// adj(A)ᵀ = det(A) A⁻ᵀ, through the SVD where A is singular: A = U S Vh gives
// adj(A)ᵀ = det(U) det(Vh) U diag(prod_{j != i} s_j) Vh.
Tensor adjugate_transposed(const Tensor& a, const Tensor& det_a) {
  const Tensor singular = eq(det_a, 0).any();
  if (!singular.item<bool>()) return det_a.unsqueeze(-1).unsqueeze(-1) * mT(inv(a));
  const SvdResult r = svd(a, false);
  const int64_t k = r.S.size(-1);
  const Tensor others = where(eye(k, std::nullopt, {.dtype = kBool, .device = a.device()}), 1.0,
                              r.S.unsqueeze(-2).expand(matrix_shape(batch_shape(r.S, 1), k, k)))
                            .prod(-1);
  const Tensor signs = det(r.U) * det(r.Vh);
  return signs.unsqueeze(-1).unsqueeze(-1) * matmul(r.U * others.unsqueeze(-2), r.Vh);
}

}  // namespace

// ---- Public functions --------------------------------------------------------------------

Tensor solve_triangular(const Tensor& a, const Tensor& b, bool upper, bool left,
                        bool unitriangular) {
  const char* op = "linalg.solve_triangular";
  check_matrix(a, op, true);
  check_matrix(b, op, false);
  check_same(a, b, op);
  OX_CHECK(b.size(left ? -2 : -1) == a.size(-1), Shape, op, "A of shape ", a.shape(),
           " and B of shape ", b.shape(), " do not match (", left ? "A X = B" : "X A = B", ")");
  // X A = B is Aᵀ Xᵀ = Bᵀ, with Aᵀ's triangle the other one.
  Tensor x = left ? triangular_solve_left(a, b, upper, unitriangular, op)
                  : mT(triangular_solve_left(mT(a), mT(b), !upper, unitriangular, op));
  if (autograd::needs_grad({&a, &b}))
    autograd::record(
        "LinalgSolveTriangularBackward", {a, b}, {x}, {a, x},
        [upper, left, unitriangular](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
          const Tensor gb = solve_triangular(mT(s[0]), g[0], !upper, left, unitriangular);
          const Tensor ga = left ? -matmul(gb, mT(s[1])) : -matmul(mT(s[1]), gb);
          return std::vector<Tensor>{triangle_of(ga, upper, unitriangular), gb};
        });
  return x;
}

Tensor cholesky_solve(const Tensor& b, const Tensor& factor, bool upper) {
  const char* op = "linalg.cholesky_solve";
  check_matrix(factor, op, true);
  check_matrix(b, op, false);
  // A = L Lᵀ: X = L⁻ᵀ (L⁻¹ B); A = Uᵀ U: X = U⁻¹ (U⁻ᵀ B).
  const Tensor y = solve_triangular(upper ? mT(factor) : factor, b, false);
  return solve_triangular(upper ? factor : mT(factor), y, true);
}

Tensor lu_solve(const Tensor& lu, const Tensor& pivots, const Tensor& b, bool left, bool adjoint) {
  const char* op = "linalg.lu_solve";
  check_matrix(lu, op, true);
  check_matrix(b, op, false);
  check_same(lu, b, op);
  const int64_t n = lu.size(-1);
  OX_CHECK(pivots.defined() && pivots.dtype() == kI32, DType, op, "pivots must be i32, got ",
           pivots.defined() ? pivots.dtype() : kI32);
  OX_CHECK(pivots.dim() == lu.dim() - 1 && pivots.size(-1) == n &&
               Shape(pivots.shape().begin(), pivots.shape().end() - 1) == batch_shape(lu),
           Shape, op, "pivots of shape ", pivots.shape(), " do not match LU of shape ", lu.shape());
  OX_CHECK(b.size(left ? -2 : -1) == n, Shape, op, "LU of shape ", lu.shape(), " and B of shape ",
           b.shape(), " do not match");
  if (pivots.numel() > 0) {
    // getrs swaps rows by the pivots: one outside [1, n] would address outside B.
    const Tensor bad = logical_or(lt(pivots, 1), gt(pivots, n));
    OX_CHECK(!bad.any().item<bool>(), Value, op, "pivots must lie in [1, ", n, "]");
    const Tensor zero = eq(lu.diagonal(0, -2, -1), 0);
    if (zero.any().item<bool>()) {
      const std::vector<uint8_t> flags = zero.to(kU8).contiguous().to_vector<uint8_t>();
      const size_t first = std::find(flags.begin(), flags.end(), 1) - flags.begin();
      OX_CHECK(false, Value, op, "the matrix is singular: U[", first % n, ", ", first % n,
               "] is exactly zero", batch_text(batch_shape(lu), static_cast<int64_t>(first / n)));
    }
  }
  const Shape batch = broadcast_batch(lu, b, op);
  const Tensor factors = is_column_major(lu) ? lu : column_major_copy(lu, op);
  // X A = B is Aᵀ Xᵀ = Bᵀ; X Aᵀ = B is A Xᵀ = Bᵀ.
  const bool transpose = left ? adjoint : !adjoint;
  Tensor x = lu_solve_raw(factors, pivots.contiguous(), left ? b : mT(b), batch, transpose, op);
  if (!left) x = mT(x);
  if (autograd::needs_grad({&lu, &b}))
    autograd::record("LinalgLuSolveBackward", {lu, b}, {x}, {lu, pivots, x},
                     [left, adjoint](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
                       const Tensor &lu_s = s[0], &piv = s[1], &x_s = s[2];
                       const Tensor gb = lu_solve(lu_s, piv, g[0], left, !adjoint);
                       // The gradient of A (of the system as solved), then of its packed factors.
                       Tensor ga = left ? -matmul(gb, mT(x_s)) : -matmul(mT(x_s), gb);
                       if (adjoint) ga = mT(ga);
                       return std::vector<Tensor>{packed_lu_grad(ga, lu_s, piv), gb};
                     });
  return x;
}

Tensor solve(const Tensor& a, const Tensor& b, bool left) {
  ResultWithInfo r = solve_impl(a, b, left, "linalg.solve");
  check_info(r.info, "linalg.solve", singular_pivot);
  return r.result;
}

ResultWithInfo solve_ex(const Tensor& a, const Tensor& b, bool left) {
  return solve_impl(a, b, left, "linalg.solve_ex");
}

ResultWithInfo inv_ex(const Tensor& a) {
  const char* op = "linalg.inv_ex";
  check_matrix(a, op, true);
  const int64_t n = a.size(-1);
  const Shape batch = batch_shape(a);
  TransposedLu f = factor_transposed(a, op);
  const Tensor identity = identity_like(a, n);
  // Aᵀ's factors with the transposed solve give A⁻¹.
  Tensor y = lu_solve_raw(f.lu, f.pivots, identity, batch, true, op);
  if (autograd::needs_grad({&a}))
    autograd::record("LinalgInvBackward", {a}, {y}, {y},
                     [](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
                       return std::vector<Tensor>{-matmul(matmul(mT(s[0]), g[0]), mT(s[0]))};
                     });
  return {y, f.info};
}

Tensor inv(const Tensor& a) {
  ResultWithInfo r = inv_ex(a);
  check_info(r.info, "linalg.inv", singular_pivot);
  return r.result;
}

Tensor det(const Tensor& a) {
  const char* op = "linalg.det";
  const LuDeterminant d = lu_determinant(a, op);
  Tensor value = d.diagonal.prod(-1) * d.sign;
  if (autograd::needs_grad({&a}))
    autograd::record("LinalgDetBackward", {a}, {value}, {a, value},
                     [](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
                       return std::vector<Tensor>{g[0].unsqueeze(-1).unsqueeze(-1) *
                                                  adjugate_transposed(s[0], s[1])};
                     });
  return value;
}

SlogdetResult slogdet(const Tensor& a) {
  const char* op = "linalg.slogdet";
  const LuDeterminant d = lu_determinant(a, op);
  Tensor sign = ox::sign(d.diagonal).prod(-1) * d.sign;
  Tensor logabsdet = log(abs(d.diagonal)).sum({-1});
  if (autograd::needs_grad({&a}))
    autograd::record("LinalgSlogdetBackward", {a}, {logabsdet}, {a},
                     [](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
                       return std::vector<Tensor>{g[0].unsqueeze(-1).unsqueeze(-1) * mT(inv(s[0]))};
                     });
  return {sign, logabsdet};
}

Tensor logdet(const Tensor& a) {
  const SlogdetResult r = slogdet(a);
  // A negative determinant has no real logarithm; a zero one gives -inf through logabsdet.
  return where(lt(r.sign, 0), std::numeric_limits<double>::quiet_NaN(), r.logabsdet);
}

}  // namespace ox::linalg
