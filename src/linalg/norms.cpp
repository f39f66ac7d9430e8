// Norms, rank, powers, cross products and diagonal embedding of ox::linalg, as torch.linalg.
// Each is a composite of public ops (norm, amax, svdvals, matmul, where, views, ...), so
// autograd records those ops and no rule lives here.

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "linalg/linalg_util.h"

namespace ox::linalg {

namespace {

void require_defined(const Tensor& x, const char* op) {
  OX_CHECK(x.defined(), Value, op, "got an undefined tensor");
}

// The two dims of a matrix norm, wrapped: Index error out of range, Value error when they are
// not two or name one dim twice.
std::pair<int64_t, int64_t> matrix_dims(const Tensor& a, const Dims& dims, const char* op) {
  OX_CHECK(dims.size() == 2, Value, op, "dims must name two dims, got ", dims);
  const int64_t d0 = wrap_dim(dims[0], a.dim(), op), d1 = wrap_dim(dims[1], a.dim(), op);
  OX_CHECK(d0 != d1, Value, op, "dims must be two different dims, got ", dims, " for shape ",
           a.shape());
  return {d0, d1};
}

// a with dims d0, d1 moved to the end (in that order), as the SVD wants its matrices.
Tensor matrices_last(const Tensor& a, int64_t d0, int64_t d1) {
  Dims perm;
  for (int64_t d = 0; d < a.dim(); ++d)
    if (d != d0 && d != d1) perm.push_back(d);
  perm.push_back(d0);
  perm.push_back(d1);
  return a.permute(perm);
}

// A result over the batch dims with size-1 dims put back at d0 and d1 (keepdim).
Tensor keep_dims(const Tensor& r, int64_t d0, int64_t d1, bool keepdim) {
  if (!keepdim) return r;
  return r.unsqueeze(std::min(d0, d1)).unsqueeze(std::max(d0, d1));
}

}  // namespace

Tensor vector_norm(const Tensor& x, double ord, DimList dims, bool keepdim) {
  const char* op = "linalg.vector_norm";
  require_defined(x, op);
  OX_CHECK(is_floating(x.dtype()), DType, op, "takes floating tensors, got ", x.dtype());
  OX_CHECK(!std::isnan(ord), Value, op, "ord must not be NaN");
  const int64_t nd = std::max<int64_t>(x.dim(), 1);  // a 0-d tensor takes dim 0 / -1
  std::vector<bool> seen(static_cast<size_t>(nd), false);
  bool empty_extent = dims.empty() && x.numel() == 0;
  for (int64_t d : dims.dims()) {
    const int64_t w = wrap_dim(d, nd, op);
    OX_CHECK(!seen[static_cast<size_t>(w)], Value, op, "dim ", d, " appears more than once in ",
             dims.dims());
    seen[static_cast<size_t>(w)] = true;
    empty_extent = empty_extent || (x.dim() > 0 && x.size(w) == 0);
  }
  // Sums (ord >= 0 finite) are 0 over nothing; max and negative powers have no identity.
  OX_CHECK(!(empty_extent && (ord < 0 || ord == INFINITY)), Empty, op, "cannot compute the ", ord,
           " norm over an empty extent: shape ", x.shape(), ", dims ",
           dims.empty() ? std::string("all") : to_string(dims.dims()));
  return norm(x, ord, dims, keepdim);
}

Tensor matrix_norm(const Tensor& a, std::string_view ord, Dims dims, bool keepdim) {
  const char* op = "linalg.matrix_norm";
  OX_CHECK(ord == "fro" || ord == "nuc", Value, op,
           "ord must be \"fro\", \"nuc\" or a number, got \"", std::string(ord), "\"");
  detail::check_matrix(a, op, false);
  const auto [d0, d1] = matrix_dims(a, dims, op);
  if (ord == "fro") return vector_norm(a, 2, Dims{d0, d1}, keepdim);
  return keep_dims(sum(svdvals(matrices_last(a, d0, d1)), -1), d0, d1, keepdim);
}

Tensor matrix_norm(const Tensor& a, double ord, Dims dims, bool keepdim) {
  const char* op = "linalg.matrix_norm";
  const double mag = std::fabs(ord);
  OX_CHECK(mag == 1 || mag == 2 || mag == INFINITY, Value, op,
           "ord must be 1, -1, 2, -2, inf or -inf (or \"fro\", \"nuc\"), got ", ord);
  detail::check_matrix(a, op, false);
  const auto [d0, d1] = matrix_dims(a, dims, op);
  if (mag == 2) {
    OX_CHECK(a.size(d0) > 0 && a.size(d1) > 0, Empty, op, "the ", ord,
             " norm of an empty matrix is undefined: shape ", a.shape(), ", dims ", dims);
    const Tensor s = svdvals(matrices_last(a, d0, d1));
    return keep_dims(ord > 0 ? amax(s, -1) : amin(s, -1), d0, d1, keepdim);
  }
  // 1: the extreme absolute column sum (summed over rows, d0); inf: of row sums (over d1).
  const int64_t summed = mag == 1 ? d0 : d1, across = mag == 1 ? d1 : d0;
  OX_CHECK(a.size(across) > 0, Empty, op, "the ", ord, " norm takes the ", ord > 0 ? "max" : "min",
           " over dim ", across, " of size 0: shape ", a.shape());
  const Tensor sums = vector_norm(a, 1, summed, /*keepdim=*/true);
  const Tensor r =
      ord > 0 ? amax(sums, across, /*keepdim=*/true) : amin(sums, across, /*keepdim=*/true);
  return keepdim ? r : r.squeeze(std::max(d0, d1)).squeeze(std::min(d0, d1));
}

Tensor matrix_rank(const Tensor& a, std::optional<double> atol, std::optional<double> rtol,
                   bool hermitian) {
  const char* op = "linalg.matrix_rank";
  detail::check_matrix(a, op, false);
  OX_CHECK(!hermitian || a.size(-1) == a.size(-2), Shape, op,
           "hermitian takes square matrices, got shape ", a.shape());
  OX_CHECK(!(atol && std::isnan(*atol)) && !(rtol && std::isnan(*rtol)), Value, op,
           "atol and rtol must not be NaN");
  const Shape batch = detail::batch_shape(a);
  // No nonzero rows, so rank 0 (PyTorch's choice; NumPy refuses).
  if (a.numel() == 0) return zeros(batch, {.dtype = kI64, .device = a.device()});
  const double eps = detail::machine_epsilon(a.dtype());
  const double default_rtol =
      atol && *atol > 0 ? 0.0 : eps * double(std::max(a.size(-1), a.size(-2)));
  const Tensor s = hermitian ? abs(eigvalsh(a)) : svdvals(a);
  const Tensor tol =
      maximum(mul(amax(s, -1, /*keepdim=*/true), rtol.value_or(default_rtol)), atol.value_or(0.0));
  return sum(gt(s, tol), -1);
}

Tensor matrix_power(const Tensor& a, int64_t n) {
  const char* op = "linalg.matrix_power";
  require_defined(a, op);
  OX_CHECK(a.dim() >= 2, Shape, op, "takes matrices [..., n, n], got shape ", a.shape());
  OX_CHECK(a.size(-1) == a.size(-2), Shape, op, "takes square matrices, got shape ", a.shape());
  OX_CHECK(n >= 0 || a.dtype() == kF32 || a.dtype() == kF64, DType, op,
           "a negative power inverts: takes f32 or f64, got ", a.dtype());
  OX_CHECK(n <= 1 || a.dtype() != kBool, DType, op, "powers above 1 multiply: bool refused");
  if (n == 0) {
    // Through masked_fill rather than a fresh eye, so the result stays in a's graph (a zero
    // gradient) as PyTorch's.
    const Tensor idx = arange(a.size(-1), {.device = a.device()});
    const Tensor diagonal = eq(idx.unsqueeze(1), idx.unsqueeze(0));
    return masked_fill(
        masked_fill(a, scalar_tensor(true, {.dtype = kBool, .device = a.device()}), 0), diagonal,
        1);
  }
  if (n == 1) return a.clone();
  if (n == -1) return inv(a);
  const Tensor base = n < 0 ? inv(a) : a;
  // |n| without overflow at INT64_MIN.
  uint64_t k = n < 0 ? 0 - static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
  if (k == 2) return matmul(base, base);
  if (k == 3) return matmul(matmul(base, base), base);
  // Binary powering from the lowest bit, PyTorch's order of products.
  Tensor square, result;
  while (k > 0) {
    const bool bit = (k & 1) != 0;
    k >>= 1;
    square = square.defined() ? matmul(square, square) : base;
    if (bit) result = result.defined() ? matmul(result, square) : square;
  }
  return result;
}

Tensor cross(const Tensor& a, const Tensor& b, int64_t dim) {
  const char* op = "linalg.cross";
  require_defined(a, op);
  require_defined(b, op);
  OX_CHECK(a.dtype() != kBool && b.dtype() != kBool, DType, op, "bool refused, got ", a.dtype(),
           " and ", b.dtype());
  OX_CHECK(a.dim() == b.dim(), Shape, op, "operands of one number of dims expected, got shapes ",
           a.shape(), " and ", b.shape());
  const int64_t d = wrap_dim(dim, a.dim(), op);
  OX_CHECK(a.size(d) == 3 && b.size(d) == 3, Shape, op, "dim ", dim,
           " must have size 3 in both operands, got shapes ", a.shape(), " and ", b.shape());
  broadcast_shapes(a.shape(), b.shape(), op);
  const Tensor a0 = a.select(d, 0), a1 = a.select(d, 1), a2 = a.select(d, 2);
  const Tensor b0 = b.select(d, 0), b1 = b.select(d, 1), b2 = b.select(d, 2);
  return stack({a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0}, d);
}

Tensor diag_embed(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  const char* op = "linalg.diag_embed";
  require_defined(x, op);
  OX_CHECK(x.dim() >= 1, Shape, op, "takes a tensor of at least 1 dim, got a 0-d one");
  const int64_t nd = x.dim() + 1;
  const int64_t d1 = wrap_dim(dim1, nd, op), d2 = wrap_dim(dim2, nd, op);
  OX_CHECK(d1 != d2, Value, op, "dim1 and dim2 must differ, got ", dim1, " and ", dim2,
           " for a result of ", nd, " dims");
  const int64_t n = x.size(-1);
  OX_CHECK(offset > INT64_MIN && (offset < 0 ? -offset : offset) <= INT64_MAX / 2 - n, Value, op,
           "offset ", offset, " too large");
  const int64_t shift = offset < 0 ? -offset : offset, side = n + shift;
  // Built as [..., side, side] with the diagonal c - r == offset, then the two new dims moved
  // to (dim1, dim2). x[i] lands on row i (offset >= 0) or column i (offset < 0); the padding
  // past n is never selected.
  Tensor padded = x;
  if (shift > 0) {
    Shape tail = x.shape();
    tail[tail.size() - 1] = shift;
    padded = cat({x, zeros(tail, {.dtype = x.dtype(), .device = x.device()})}, -1);
  }
  const Tensor idx = arange(side, {.device = x.device()});
  const Tensor on_diagonal = eq(idx.unsqueeze(0) - idx.unsqueeze(1), offset);
  const Tensor values = offset >= 0 ? padded.unsqueeze(-1) : padded.unsqueeze(-2);
  const Tensor square =
      where(on_diagonal, values, zeros({1}, {.dtype = x.dtype(), .device = x.device()}));
  Dims perm;
  for (int64_t d = 0, batch = 0; d < nd; ++d)
    perm.push_back(d == d1 ? nd - 2 : d == d2 ? nd - 1 : batch++);
  return square.permute(perm).contiguous();
}

}  // namespace ox::linalg
