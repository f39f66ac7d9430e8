// The pseudo-inverse and least squares, both through the SVD (eigh for a hermitian pinv), with
// PyTorch's pinv rule: it holds where the rank does not change, which the SVD's own rule would
// not give for repeated singular values.

#include <algorithm>

#include "autograd/record.h"
#include "linalg/linalg_util.h"

namespace ox::linalg {

using namespace detail;

namespace {

// gA of P = pinv(A) from gP, for A of constant rank (PyTorch's pinv_backward).
Tensor pinv_grad(const Tensor& gp, const Tensor& p, const Tensor& a) {
  const Tensor pt = mT(p), gpt = mT(gp);
  if (a.size(-2) <= a.size(-1)) {
    const Tensor k = matmul(gpt, p);
    const Tensor kpt = matmul(k, pt);
    return -mT(matmul(p, k)) + kpt - matmul(matmul(a, p), kpt) +
           matmul(matmul(pt, p), gpt - matmul(k, a));
  }
  const Tensor k = matmul(p, gpt);
  const Tensor ptk = matmul(pt, k);
  return -mT(matmul(k, p)) + matmul(matmul(gpt - matmul(a, k), p), pt) + ptk -
         matmul(matmul(ptk, p), a);
}

struct Pinv {
  Tensor pinv;    // recorded when a requires grad
  Tensor values;  // singular values (descending), or eigenvalues (ascending) when hermitian
};

// pinv(A) with the values at or below max(atol, rtol * max|value|) dropped.
Pinv pinv_impl(const Tensor& a, double atol, double rtol, bool hermitian, const char* op) {
  check_matrix(a, op, hermitian);
  Pinv out;
  {
    NoGradGuard no_grad;
    Tensor left, right;  // pinv = right diag(1 / values) left
    if (hermitian) {
      const EighResult e = eigh(a);
      out.values = e.eigenvalues;
      right = e.eigenvectors;
      left = mT(e.eigenvectors);
    } else {
      const SvdResult s = svd(a, false);
      out.values = s.S;
      right = mT(s.Vh);
      left = mT(s.U);
    }
    const Tensor magnitude = abs(out.values);
    const Tensor largest = out.values.size(-1) == 0 ? zeros_like(magnitude.sum({-1}, true))
                                                    : amax(magnitude, {-1}, true);
    const Tensor kept = gt(magnitude, maximum(full_like(largest, atol), rtol * largest));
    const Tensor inverse = where(kept, reciprocal(where(kept, out.values, 1.0)), 0.0);
    out.pinv = matmul(right * inverse.unsqueeze(-2), left);
  }
  if (autograd::needs_grad({&a}))
    autograd::record("LinalgPinvBackward", {a}, {out.pinv}, {out.pinv, a},
                     [](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
                       return std::vector<Tensor>{pinv_grad(g[0], s[0], s[1])};
                     });
  return out;
}

}  // namespace

Tensor pinv(const Tensor& a, std::optional<double> atol, std::optional<double> rtol,
            bool hermitian) {
  const char* op = "linalg.pinv";
  check_matrix(a, op, hermitian);
  const double eps = machine_epsilon(a.dtype());
  const double a_tol = atol.value_or(0.0);
  const double r_tol = rtol.value_or(a_tol > 0 ? 0.0 : eps * std::max(a.size(-2), a.size(-1)));
  OX_CHECK(a_tol >= 0 && r_tol >= 0, Value, op, "atol and rtol must not be negative, got ", a_tol,
           " and ", r_tol);
  return pinv_impl(a, a_tol, r_tol, hermitian, op).pinv;
}

LstsqResult lstsq(const Tensor& a, const Tensor& b, std::optional<double> rcond) {
  const char* op = "linalg.lstsq";
  check_matrix(a, op, false);
  check_matrix(b, op, false);
  check_same(a, b, op);
  const int64_t m = a.size(-2), n = a.size(-1);
  OX_CHECK(b.size(-2) == m, Shape, op, "A of shape ", a.shape(), " and B of shape ", b.shape(),
           " need the same number of rows");
  broadcast_batch(a, b, op);
  const double eps = machine_epsilon(a.dtype());
  const double r = rcond.has_value() && *rcond >= 0 ? *rcond : eps * std::max(m, n);
  Pinv p = pinv_impl(a, 0.0, r, false, op);
  Tensor x = matmul(p.pinv, b);
  Tensor rank;
  {
    NoGradGuard no_grad;
    const Tensor s = p.values;
    const Tensor largest = s.size(-1) == 0 ? zeros_like(s.sum({-1}, true)) : s.narrow(-1, 0, 1);
    rank = gt(s, r * largest).sum({-1});
  }
  Tensor residuals = zeros({0}, {.dtype = a.dtype(), .device = a.device()});
  if (m > n && (rank.numel() == 0 || eq(rank, n).all().item<bool>()))
    residuals = square(matmul(a, x) - b).sum({-2});
  return {x, residuals, rank, p.values};
}

}  // namespace ox::linalg
