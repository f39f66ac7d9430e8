// Factorizations: cholesky, lu_factor / lu, qr, eigh / eigvalsh, svd / svdvals, each one LAPACK
// primitive and, beside it, its vjp written with public ops (so it can be differentiated again).
//
// A symmetric input needs no transposing copy: a row-major buffer of A, read column-major, is
// Aᵀ, whose upper triangle is A's lower one. cholesky and eigh copy A as it is and ask LAPACK
// for the other triangle.

#include <algorithm>
#include <cmath>

#include "autograd/record.h"
#include "linalg/linalg_util.h"

namespace ox::linalg {

using namespace detail;

namespace {

bool upper_of(std::string_view uplo, const char* op) {
  OX_CHECK(uplo == "L" || uplo == "U", Value, op, "UPLO must be \"L\" or \"U\", got \"",
           std::string(uplo), "\"");
  return uplo == "U";
}

bool all_zero(const Tensor& g) { return g.numel() == 0 || abs(g).max().item<double>() == 0; }

// The smallest gap between neighbours of the ascending (or descending) values along the last dim
// of w, relative to the largest magnitude, and where it is: to refuse gradients of vectors that
// these values do not define.
void check_separated(const Tensor& w, const char* op, const char* what) {
  const int64_t n = w.size(-1);
  if (n < 2 || w.numel() == 0) return;
  const std::vector<double> v = w.to(kF64).contiguous().to_vector<double>();
  const double eps = machine_epsilon(w.dtype());
  const Shape batch = batch_shape(w, 1);
  for (size_t b = 0; b * n < v.size(); ++b) {
    const double* row = v.data() + b * n;
    double scale = 0;
    for (int64_t i = 0; i < n; ++i) scale = std::max(scale, std::abs(row[i]));
    for (int64_t i = 0; i + 1 < n; ++i) {
      const double gap = std::abs(row[i + 1] - row[i]);
      OX_CHECK(gap > 64 * eps * scale, Value, op, "backward: ", what, " ", i, " and ", i + 1,
               " are ", row[i], " and ", row[i + 1], batch_text(batch, static_cast<int64_t>(b)),
               ", too close to define their vectors, so the vectors' gradient is not defined");
    }
  }
}

// diag(v) for a batch of vectors v [..., k].
Tensor diagonal_matrix(const Tensor& v) {
  const int64_t k = v.size(-1);
  return identity_like(v, k) * v.unsqueeze(-1);
}

// ---- cholesky ----------------------------------------------------------------------------

// The gradient of A from that of its factor L (A = L Lᵀ), after Murray (2016), as PyTorch:
// gA = L⁻ᵀ Φ L⁻¹ with Φ the symmetric matrix whose lower triangle is tril(Lᵀ gL), halved on
// the diagonal.
Tensor cholesky_grad(Tensor gl, Tensor l, bool upper) {
  if (upper) {
    gl = mT(gl);
    l = mT(l);
  }
  Tensor phi = tril(matmul(mT(l), gl));
  phi = 0.5 * (phi + mT(tril(phi, -1)));
  phi = solve_triangular(mT(l), phi, /*upper=*/true, /*left=*/true);
  return solve_triangular(l, phi, /*upper=*/false, /*left=*/false);
}

ResultWithInfo cholesky_impl(const Tensor& a, bool upper, const char* op) {
  check_matrix(a, op, true);
  Tensor factor = fresh_copy(a, op);
  Tensor info = int32_zeros(batch_shape(a), a.device());
  if (factor.numel() > 0) backend_of(a, op).cholesky(array_of(mT(factor)), array_of(info), !upper);
  if (autograd::needs_grad({&a}))
    autograd::record("LinalgCholeskyBackward", {a}, {factor}, {factor},
                     [upper](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
                       return std::vector<Tensor>{cholesky_grad(g[0], s[0], upper)};
                     });
  return {factor, info};
}

// ---- LU ----------------------------------------------------------------------------------

// gA of A = P L U (square) from the gradient of the packed LU (PyTorch's rule):
// gA = P L⁻ᵀ [tril(Lᵀ gL, -1) + triu(gU Uᵀ)] U⁻ᵀ.
Tensor lu_factor_grad(const Tensor& glu, const Tensor& lu, const Tensor& pivots) {
  const auto [l, u] = unpack_lu(lu);
  Tensor phi = tril(matmul(mT(l), tril(glu, -1)), -1) + triu(matmul(triu(glu), mT(u)));
  phi = solve_triangular(mT(u), phi, /*upper=*/false, /*left=*/false);
  phi = solve_triangular(mT(l), phi, /*upper=*/true, /*left=*/true, /*unitriangular=*/true);
  return matmul(permutation_matrix(pivots, lu.size(-1), lu.dtype()), phi);
}

LuFactorExResult lu_factor_impl(const Tensor& a, const char* op) {
  check_matrix(a, op, false);
  const Shape batch = batch_shape(a);
  Tensor lu = column_major_copy(a, op);
  Shape pivot_shape = batch;
  pivot_shape.push_back(std::min(a.size(-2), a.size(-1)));
  Tensor pivots = int32_zeros(pivot_shape, a.device());
  Tensor info = int32_zeros(batch, a.device());
  if (lu.numel() > 0) backend_of(a, op).lu_factor(array_of(lu), array_of(pivots), array_of(info));
  if (autograd::needs_grad({&a})) {
    // The rule below is PyTorch's square one; the issue asks for no rectangular rule, so a
    // rectangular factorization records too but refuses a gradient when backward reaches it.
    const bool square = a.size(-1) == a.size(-2);
    autograd::record("LinalgLuFactorBackward", {a}, {lu}, {lu, pivots},
                     [square, op](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
                       OX_CHECK(square, Value, op,
                                "backward: the gradient of an LU factorization is defined here "
                                "for square matrices only, got shape ",
                                s[0].shape());
                       return std::vector<Tensor>{lu_factor_grad(g[0], s[0], s[1])};
                     });
  }
  return {lu, pivots, info};
}

std::string zero_pivot(int32_t code) {
  return "the matrix is singular: U[" + std::to_string(code - 1) + ", " + std::to_string(code - 1) +
         "] (pivot " + std::to_string(code) + ") is exactly zero";
}

// ---- QR ----------------------------------------------------------------------------------

// copyltu(M): the symmetric matrix with M's lower triangle.
Tensor copy_lower_to_upper(const Tensor& m) { return tril(m) + mT(tril(m, -1)); }

// gA for A = Q R with m >= n (Q [m, n], R [n, n]):
// gA = (gQ + Q copyltu(M)) R⁻ᵀ, M = R gRᵀ - gQᵀ Q.
Tensor qr_grad_tall(const Tensor& gq, const Tensor& gr, const Tensor& q, const Tensor& r) {
  const Tensor m = matmul(r, mT(gr)) - matmul(mT(gq), q);
  const Tensor b = gq + matmul(q, copy_lower_to_upper(m));
  return solve_triangular(mT(r), b, /*upper=*/false, /*left=*/false);
}

// m < n: A = [X | Y] with X = Q U square; Y = Q V moves Q too.
Tensor qr_grad(const Tensor& gq, const Tensor& gr, const Tensor& q, const Tensor& r) {
  const int64_t m = q.size(-2), n = r.size(-1);
  if (m >= n) return qr_grad_tall(gq, gr, q, r);
  // R = [U | V] with X = Q U and V = Qᵀ Y, so V's gradient reaches Q as Y gVᵀ (Y = Q V).
  const Tensor v = r.narrow(-1, m, n - m), gv = gr.narrow(-1, m, n - m);
  const Tensor u = r.narrow(-1, 0, m), gu = gr.narrow(-1, 0, m);
  const Tensor gx = qr_grad_tall(gq + matmul(matmul(q, v), mT(gv)), gu, q, u);
  return cat({gx, matmul(q, gv)}, -1);
}

// ---- eigh --------------------------------------------------------------------------------

// gA = V (diag(gw) + F ∘ (Vᵀ gV)) Vᵀ, F_ij = 1 / (w_j - w_i) off the diagonal.
Tensor eigh_grad(const Tensor& gw, const Tensor& gv, const Tensor& w, const Tensor& v,
                 const char* op) {
  Tensor inner = diagonal_matrix(gw);
  if (gv.defined() && !all_zero(gv)) {
    check_separated(w, op, "eigenvalues");
    const int64_t n = w.size(-1);
    const Tensor e = w.unsqueeze(-2) - w.unsqueeze(-1) + identity_like(w, n);
    const Tensor off = 1 - identity_like(w, n);
    inner = inner + matmul(mT(v), gv) / e * off;
  }
  return matmul(matmul(v, inner), mT(v));
}

EighResult eigh_impl(const Tensor& a, bool upper, bool vectors, const char* op) {
  check_matrix(a, op, true);
  // Refuse a matrix that is not symmetric rather than answer for half of it.
  if (a.numel() > 0) {
    NoGradGuard no_grad;
    const Tensor asym = amax(abs(a - mT(a)), {-2, -1}).to(kF64).contiguous();
    const Tensor scale = amax(abs(a), {-2, -1}).to(kF64).contiguous();
    const std::vector<double> d = asym.to_vector<double>(), s = scale.to_vector<double>();
    const double tol = std::sqrt(machine_epsilon(a.dtype()));
    for (size_t t = 0; t < d.size(); ++t)
      OX_CHECK(!(d[t] > tol * s[t]), Value, op, "the matrix is not symmetric: max|A - Aᵀ| = ", d[t],
               " exceeds ", tol, " * max|A| = ", tol * s[t],
               batch_text(batch_shape(a), static_cast<int64_t>(t)));
  }
  Tensor work = fresh_copy(a, op);
  const int64_t n = a.size(-1);
  Shape wshape = batch_shape(a);
  wshape.push_back(n);
  Tensor w = make_empty(wshape, a.dtype(), a.device(), op);
  Tensor info = int32_zeros(batch_shape(a), a.device());
  if (work.numel() > 0)
    backend_of(a, op).eigh(array_of(mT(work)), array_of(w), array_of(info), vectors, !upper);
  check_info(info, op, [](int32_t code) {
    return "the eigenvalue iteration did not converge (LAPACK info " + std::to_string(code) + ")";
  });
  // work, read column-major, holds the eigenvectors as columns.
  return {w, vectors ? transposed_result(work) : Tensor()};
}

// ---- SVD ---------------------------------------------------------------------------------

// PyTorch's rule for A = U diag(S) Vh (reduced, real):
// gA = U [(skew(Uᵀ gU) / E) S + S (skew(Vᵀ gV) / E) + diag(gS)] Vᵀ
//      + (I - U Uᵀ) gU S⁻¹ Vᵀ + U S⁻¹ gVᵀ (I - V Vᵀ),   E_jk = S_k² - S_j², skew(X) = X - Xᵀ.
Tensor svd_grad(const Tensor& gu, const Tensor& gs, const Tensor& gvh, const Tensor& u,
                const Tensor& s, const Tensor& vh, const char* op) {
  const bool vectors = (gu.defined() && !all_zero(gu)) || (gvh.defined() && !all_zero(gvh));
  Tensor inner = diagonal_matrix(gs);
  if (!vectors) return matmul(matmul(u, inner), vh);
  check_separated(s, op, "singular values");
  const int64_t k = s.size(-1), m = u.size(-2), n = vh.size(-1);
  const TensorOptions like{.dtype = s.dtype(), .device = s.device()};
  const Tensor s2 = s * s;
  const Tensor e = s2.unsqueeze(-2) - s2.unsqueeze(-1) + eye(k, std::nullopt, like);
  const Tensor v = mT(vh);
  const Tensor utgu = matmul(mT(u), gu), vtgv = matmul(vh, mT(gvh));
  inner =
      inner + (utgu - mT(utgu)) / e * s.unsqueeze(-2) + s.unsqueeze(-1) * ((vtgv - mT(vtgv)) / e);
  Tensor ga = matmul(matmul(u, inner), vh);
  if (m > k || n > k) {
    const std::vector<double> values = s.to(kF64).contiguous().to_vector<double>();
    for (double value : values)
      OX_CHECK(value != 0, Value, op,
               "backward: a zero singular value of a non-square matrix leaves its vectors, and "
               "so their gradient, undefined");
  }
  const Tensor s_inv = reciprocal(s);
  if (m > k) ga = ga + matmul((gu - matmul(u, utgu)) * s_inv.unsqueeze(-2), vh);
  if (n > k) ga = ga + matmul(u * s_inv.unsqueeze(-2), gvh - matmul(matmul(gvh, v), vh));
  return ga;
}

SvdResult svd_impl(const Tensor& a, bool full_matrices, bool vectors, const char* op) {
  check_matrix(a, op, false);
  const Shape batch = batch_shape(a);
  const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  Tensor work = column_major_copy(a, op);
  Shape sshape = batch;
  sshape.push_back(k);
  Tensor s = make_empty(sshape, a.dtype(), a.device(), op);
  Tensor u, vh;
  if (vectors) {
    u = column_major_empty(batch, m, full_matrices ? m : k, a.dtype(), a.device(), op);
    vh = column_major_empty(batch, full_matrices ? n : k, n, a.dtype(), a.device(), op);
  }
  Tensor info = int32_zeros(batch, a.device());
  if (k > 0 && a.numel() > 0) {
    const StridedArray none{nullptr, {}, {}, a.dtype(), a.device()};
    backend_of(a, op).svd(array_of(work), vectors ? array_of(u) : none, array_of(s),
                          vectors ? array_of(vh) : none, array_of(info), full_matrices);
  } else if (vectors && full_matrices) {
    // No singular values: the full bases are identities.
    const TensorOptions like{.dtype = a.dtype(), .device = a.device()};
    u = eye(m, std::nullopt, like).expand(u.shape()).contiguous();
    vh = eye(n, std::nullopt, like).expand(vh.shape()).contiguous();
  }
  check_info(info, op, [](int32_t code) {
    return "the SVD iteration did not converge (LAPACK info " + std::to_string(code) + ")";
  });
  return {u, s, vh};
}

}  // namespace

// ---- Public functions --------------------------------------------------------------------

Tensor cholesky(const Tensor& a, bool upper) {
  ResultWithInfo r = cholesky_impl(a, upper, "linalg.cholesky");
  check_info(r.info, "linalg.cholesky", [](int32_t code) {
    return "the matrix is not positive definite: its leading minor of order " +
           std::to_string(code) + " is not positive";
  });
  return r.result;
}

ResultWithInfo cholesky_ex(const Tensor& a, bool upper) {
  return cholesky_impl(a, upper, "linalg.cholesky_ex");
}

LuFactorResult lu_factor(const Tensor& a) {
  LuFactorExResult r = lu_factor_impl(a, "linalg.lu_factor");
  check_info(r.info, "linalg.lu_factor", zero_pivot);
  return {r.LU, r.pivots};
}

LuFactorExResult lu_factor_ex(const Tensor& a) { return lu_factor_impl(a, "linalg.lu_factor_ex"); }

LuResult lu(const Tensor& a) {
  LuFactorExResult f = lu_factor_impl(a, "linalg.lu");
  // Only NaN/Inf is an error here; a singular matrix has an LU factorization too.
  check_finite_info(f.info, "linalg.lu");
  const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  const TensorOptions like{.dtype = a.dtype(), .device = a.device()};
  Tensor l = tril(f.LU.narrow(-1, 0, k), -1) + eye(m, k, like);
  Tensor u = triu(f.LU.narrow(-2, 0, k));
  return {permutation_matrix(f.pivots, m, a.dtype()), l, u};
}

QrResult qr(const Tensor& a, std::string_view mode) {
  const char* op = "linalg.qr";
  check_matrix(a, op, false);
  OX_CHECK(mode == "reduced" || mode == "complete" || mode == "r", Value, op,
           "mode must be \"reduced\", \"complete\" or \"r\", got \"", std::string(mode), "\"");
  const Shape batch = batch_shape(a);
  const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  const bool complete = mode == "complete";
  Tensor work = column_major_copy(a, op);
  Shape tau_shape = batch;
  tau_shape.push_back(k);
  Tensor tau = make_empty(tau_shape, a.dtype(), a.device(), op);
  Tensor info = int32_zeros(batch, a.device());
  Backend& backend = backend_of(a, op);
  if (work.numel() > 0) backend.geqrf(array_of(work), array_of(tau), array_of(info));
  check_finite_info(info, op);
  const int64_t r_rows = complete ? m : k;
  Tensor r = triu(work.narrow(-2, 0, r_rows));
  // Q from the reflectors, in a buffer of its own columns (R was taken first).
  const int64_t q_cols = complete ? m : k;
  Tensor q = column_major_empty(batch, m, q_cols, a.dtype(), a.device(), op);
  if (q.numel() > 0) {
    backend.copy(array_of(q.narrow(-1, 0, k)), array_of(work.narrow(-1, 0, k)), false);
    backend.orgqr(array_of(q), array_of(tau));
  }
  if (autograd::needs_grad({&a})) {
    const bool with_q = mode != "r", unique = !(complete && m > n);
    std::vector<Tensor> outputs = with_q ? std::vector<Tensor>{q, r} : std::vector<Tensor>{r};
    autograd::record(
        "LinalgQrBackward", {a}, outputs, {q, r},
        [with_q, unique, op](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
          OX_CHECK(unique, Value, op,
                   "backward: mode \"complete\" with more rows than columns has no unique Q, so "
                   "no gradient; use mode \"reduced\"");
          const Tensor gq = with_q ? g[0] : zeros_like(s[0]);
          return std::vector<Tensor>{qr_grad(gq, g[with_q ? 1 : 0], s[0], s[1])};
        });
  }
  return {mode == "r" ? Tensor() : q, r};
}

EighResult eigh(const Tensor& a, std::string_view uplo) {
  const char* op = "linalg.eigh";
  const bool upper = upper_of(uplo, op);
  EighResult r = eigh_impl(a, upper, true, op);
  if (autograd::needs_grad({&a}))
    autograd::record("LinalgEighBackward", {a}, {r.eigenvalues, r.eigenvectors},
                     {r.eigenvalues, r.eigenvectors},
                     [op](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
                       return std::vector<Tensor>{eigh_grad(g[0], g[1], s[0], s[1], op)};
                     });
  return r;
}

Tensor eigvalsh(const Tensor& a, std::string_view uplo) {
  const char* op = "linalg.eigvalsh";
  const bool upper = upper_of(uplo, op);
  // The gradient needs the eigenvectors.
  const bool grad = autograd::needs_grad({&a});
  EighResult r = eigh_impl(a, upper, grad, op);
  if (grad)
    autograd::record("LinalgEigvalshBackward", {a}, {r.eigenvalues}, {r.eigenvectors},
                     [](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
                       return std::vector<Tensor>{matmul(s[0] * g[0].unsqueeze(-2), mT(s[0]))};
                     });
  return r.eigenvalues;
}

SvdResult svd(const Tensor& a, bool full_matrices) {
  const char* op = "linalg.svd";
  SvdResult r = svd_impl(a, full_matrices, true, op);
  if (autograd::needs_grad({&a})) {
    const int64_t k = r.S.size(-1);
    autograd::record(
        "LinalgSvdBackward", {a}, {r.U, r.S, r.Vh}, {r.U, r.S, r.Vh},
        [op, k](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
          // Columns of U (rows of Vh) beyond k are not determined: refuse a gradient there.
          const Tensor gu_extra = g[0].narrow(-1, k, g[0].size(-1) - k);
          const Tensor gvh_extra = g[2].narrow(-2, k, g[2].size(-2) - k);
          OX_CHECK(all_zero(gu_extra) && all_zero(gvh_extra), Value, op,
                   "backward: the columns of U (rows of Vh) past min(m, n) that full_matrices "
                   "adds are not unique, so they have no gradient");
          return std::vector<Tensor>{svd_grad(g[0].narrow(-1, 0, k), g[1], g[2].narrow(-2, 0, k),
                                              s[0].narrow(-1, 0, k), s[1], s[2].narrow(-2, 0, k),
                                              op)};
        });
  }
  return r;
}

Tensor svdvals(const Tensor& a) {
  const char* op = "linalg.svdvals";
  const bool grad = autograd::needs_grad({&a});
  SvdResult r = svd_impl(a, false, grad, op);
  if (grad)
    autograd::record("LinalgSvdvalsBackward", {a}, {r.S}, {r.U, r.Vh},
                     [](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
                       return std::vector<Tensor>{matmul(s[0] * g[0].unsqueeze(-2), s[1])};
                     });
  return r.S;
}

}  // namespace ox::linalg
