// The vjp rules of ox::linalg's factorizations and solvers against central differences (f64),
// gradgradcheck for cholesky, solve and logdet (and the rules they lean on). Functions of a
// symmetric matrix take (X + Xᵀ) / 2 of a free X, as the perturbations must stay symmetric;
// eigenvectors and singular vectors enter through sign-invariant functions (V ∘ V), as their
// signs are a convention.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <string>
#include <vector>

#include "autograd/grad_check.h"
#include "test_util.h"

namespace {

using ox::Tensor;
using ox_test::expect_gradcheck;
using ox_test::leaf;
using ox_test::transposed_leaf;
using Inputs = std::vector<Tensor>;
namespace la = ox::linalg;

Tensor mT(const Tensor& x) { return x.transpose(-2, -1); }
Tensor sym(const Tensor& x) { return (x + mT(x)) * 0.5; }
Tensor eye_like(int64_t n) { return ox::eye(n, std::nullopt, {.dtype = ox::kF64}); }

// Well conditioned: random entries in [-1, 1] plus n on the diagonal.
Tensor well_conditioned(const ox::Shape& shape, uint64_t seed) {
  const int64_t n = shape[shape.size() - 1];
  return ox_test::values(shape, -1, 1, seed) + eye_like(n) * static_cast<double>(n);
}
// Symmetric positive definite: X Xᵀ + n I.
Tensor spd(const ox::Shape& shape, uint64_t seed) {
  const Tensor x = ox_test::values(shape, -1, 1, seed);
  const int64_t n = shape[shape.size() - 1];
  return ox::matmul(x, mT(x)) + eye_like(n) * static_cast<double>(n);
}
Tensor flat(const std::vector<Tensor>& parts) {
  std::vector<Tensor> f;
  for (const Tensor& p : parts) f.push_back(p.reshape({-1}));
  return ox::cat(f, 0);
}

TEST(AutogradRulesLinalg, Cholesky) {
  for (bool upper : {false, true}) {
    const std::string tag = upper ? "upper" : "lower";
    expect_gradcheck(
        "cholesky " + tag, [upper](const Inputs& in) { return la::cholesky(sym(in[0]), upper); },
        {leaf(spd({4, 4}, 1))}, /*twice=*/true);
    expect_gradcheck("cholesky batched transposed " + tag,
                     [upper](const Inputs& in) { return la::cholesky(sym(in[0]), upper); },
                     {transposed_leaf(spd({2, 3, 3}, 2))});
    expect_gradcheck(
        "cholesky_ex " + tag,
        [upper](const Inputs& in) { return la::cholesky_ex(sym(in[0]), upper).result; },
        {leaf(spd({3, 3}, 3))});
  }
}

TEST(AutogradRulesLinalg, Solve) {
  expect_gradcheck(
      "solve", [](const Inputs& in) { return la::solve(in[0], in[1]); },
      {leaf(well_conditioned({3, 3}, 4)), leaf(ox_test::values({3, 2}, -1, 1, 5))}, true);
  expect_gradcheck(
      "solve right", [](const Inputs& in) { return la::solve(in[0], in[1], false); },
      {transposed_leaf(well_conditioned({3, 3}, 6)), leaf(ox_test::values({2, 3}, -1, 1, 7))},
      true);
  expect_gradcheck("solve vector", [](const Inputs& in) { return la::solve(in[0], in[1]); },
                   {leaf(well_conditioned({2, 3, 3}, 8)), leaf(ox_test::values({2, 3}, -1, 1, 9))});
  expect_gradcheck(
      "solve broadcast batch", [](const Inputs& in) { return la::solve(in[0], in[1]); },
      {leaf(well_conditioned({2, 1, 3, 3}, 10)), leaf(ox_test::values({3, 3, 2}, -1, 1, 11))});
  expect_gradcheck("solve_ex", [](const Inputs& in) { return la::solve_ex(in[0], in[1]).result; },
                   {leaf(well_conditioned({3, 3}, 12)), leaf(ox_test::values({3, 1}, -1, 1, 13))});
}

TEST(AutogradRulesLinalg, SolveTriangular) {
  const Tensor b = ox_test::values({3, 2}, -1, 1, 20);
  for (bool upper : {false, true})
    for (bool left : {true, false})
      for (bool unit : {false, true}) {
        const std::string tag = std::string(upper ? "upper" : "lower") +
                                (left ? " left" : " right") + (unit ? " unit" : "");
        const Tensor rhs = left ? b : mT(b).contiguous();
        expect_gradcheck(
            "solve_triangular " + tag,
            [=](const Inputs& in) { return la::solve_triangular(in[0], in[1], upper, left, unit); },
            {leaf(well_conditioned({3, 3}, 21)), leaf(rhs)}, upper && left && !unit);
      }
  expect_gradcheck(
      "solve_triangular broadcast",
      [](const Inputs& in) { return la::solve_triangular(in[0], in[1], false); },
      {transposed_leaf(well_conditioned({3, 3}, 22)), leaf(ox_test::values({2, 3, 2}, -1, 1, 23))});
}

TEST(AutogradRulesLinalg, CholeskySolve) {
  for (bool upper : {false, true}) {
    const Tensor factor =
        upper ? ox::triu(well_conditioned({3, 3}, 30)) : ox::tril(well_conditioned({3, 3}, 30));
    expect_gradcheck(std::string("cholesky_solve ") + (upper ? "upper" : "lower"),
                     [upper](const Inputs& in) { return la::cholesky_solve(in[0], in[1], upper); },
                     {leaf(ox_test::values({3, 2}, -1, 1, 31)), leaf(factor)});
  }
}

TEST(AutogradRulesLinalg, LuFactorAndLuSolve) {
  expect_gradcheck("lu_factor", [](const Inputs& in) { return la::lu_factor(in[0]).LU; },
                   {leaf(ox_test::values({4, 4}, -1, 1, 40))});
  expect_gradcheck("lu P L U",
                   [](const Inputs& in) {
                     const la::LuResult r = la::lu(in[0]);
                     return flat({r.L, r.U});
                   },
                   {leaf(ox_test::values({2, 3, 3}, -1, 1, 41))});
  const Tensor a = ox_test::values({3, 3}, -1, 1, 42);
  const la::LuFactorResult f = la::lu_factor(a);
  for (bool left : {true, false})
    for (bool adjoint : {false, true}) {
      const Tensor b =
          left ? ox_test::values({3, 2}, -1, 1, 43) : ox_test::values({2, 3}, -1, 1, 43);
      const Tensor pivots = f.pivots;
      expect_gradcheck(
          std::string("lu_solve") + (left ? " left" : " right") + (adjoint ? " adjoint" : ""),
          [pivots, left, adjoint](const Inputs& in) {
            return la::lu_solve(in[0], pivots, in[1], left, adjoint);
          },
          {leaf(f.LU), leaf(b)});
    }
  // Through the factorization to A.
  const Tensor b = ox_test::values({3, 2}, -1, 1, 44);
  expect_gradcheck("lu_solve of lu_factor",
                   [b](const Inputs& in) {
                     const la::LuFactorResult g = la::lu_factor(in[0]);
                     return la::lu_solve(g.LU, g.pivots, b);
                   },
                   {leaf(a)});
}

TEST(AutogradRulesLinalg, InvDetSlogdetLogdet) {
  expect_gradcheck(
      "inv", [](const Inputs& in) { return la::inv(in[0]); },
      {transposed_leaf(well_conditioned({2, 3, 3}, 50))}, true);
  expect_gradcheck("inv_ex", [](const Inputs& in) { return la::inv_ex(in[0]).result; },
                   {leaf(well_conditioned({3, 3}, 51))});
  expect_gradcheck(
      "det", [](const Inputs& in) { return la::det(in[0]); },
      {leaf(ox_test::values({2, 3, 3}, -1, 1, 52))}, true);
  // A singular matrix (rank 2): det is a polynomial, smooth there too.
  const Tensor u = ox_test::values({3, 2}, -1, 1, 53);
  expect_gradcheck("det singular", [](const Inputs& in) { return la::det(in[0]); },
                   {leaf(ox::matmul(u, mT(u)))});
  expect_gradcheck("slogdet", [](const Inputs& in) { return la::slogdet(in[0]).logabsdet; },
                   {leaf(ox_test::values({2, 3, 3}, -1, 1, 54))});
  expect_gradcheck(
      "logdet", [](const Inputs& in) { return la::logdet(in[0]); }, {leaf(spd({2, 3, 3}, 55))},
      true);
}

TEST(AutogradRulesLinalg, Qr) {
  for (const ox::Shape& shape :
       {ox::Shape{4, 3}, ox::Shape{3, 3}, ox::Shape{2, 4}, ox::Shape{2, 4, 3}}) {
    expect_gradcheck("qr reduced " + std::to_string(shape[0]) + "x" + std::to_string(shape[1]),
                     [](const Inputs& in) {
                       const la::QrResult r = la::qr(in[0]);
                       return flat({r.Q, r.R});
                     },
                     {leaf(ox_test::values(shape, -1, 1, 60))});
  }
  expect_gradcheck("qr complete square",
                   [](const Inputs& in) {
                     const la::QrResult r = la::qr(in[0], "complete");
                     return flat({r.Q, r.R});
                   },
                   {leaf(ox_test::values({3, 3}, -1, 1, 61))});
  expect_gradcheck("qr mode r", [](const Inputs& in) { return la::qr(in[0], "r").R; },
                   {transposed_leaf(ox_test::values({4, 3}, -1, 1, 62))});
}

TEST(AutogradRulesLinalg, Eigh) {
  for (const char* uplo : {"L", "U"})
    expect_gradcheck(std::string("eigh ") + uplo,
                     [uplo](const Inputs& in) {
                       const la::EighResult r = la::eigh(sym(in[0]), uplo);
                       return flat({r.eigenvalues, r.eigenvectors * r.eigenvectors});
                     },
                     {leaf(ox_test::values({2, 4, 4}, -1, 1, 70))});
  expect_gradcheck("eigvalsh", [](const Inputs& in) { return la::eigvalsh(sym(in[0])); },
                   {leaf(ox_test::values({4, 4}, -1, 1, 71))});
}

TEST(AutogradRulesLinalg, Svd) {
  for (const ox::Shape& shape :
       {ox::Shape{4, 3}, ox::Shape{3, 3}, ox::Shape{3, 5}, ox::Shape{2, 3, 2}})
    expect_gradcheck(
        "svd " + std::to_string(shape[shape.size() - 2]) + "x" + std::to_string(shape.back()),
        [](const Inputs& in) {
          const la::SvdResult r = la::svd(in[0], false);
          return flat({r.U * r.U, r.S, r.Vh * r.Vh});
        },
        {leaf(ox_test::values(shape, -1, 1, 80))});
  expect_gradcheck("svd full square",
                   [](const Inputs& in) {
                     const la::SvdResult r = la::svd(in[0], true);
                     return flat({r.U * r.U, r.S, r.Vh * r.Vh});
                   },
                   {leaf(ox_test::values({3, 3}, -1, 1, 81))});
  expect_gradcheck("svd full, values only used",
                   [](const Inputs& in) { return la::svd(in[0], true).S; },
                   {leaf(ox_test::values({4, 2}, -1, 1, 82))});
  expect_gradcheck("svdvals", [](const Inputs& in) { return la::svdvals(in[0]); },
                   {transposed_leaf(ox_test::values({2, 3, 4}, -1, 1, 83))});
}

TEST(AutogradRulesLinalg, PinvAndLstsq) {
  for (const ox::Shape& shape : {ox::Shape{4, 3}, ox::Shape{3, 3}, ox::Shape{2, 4}})
    expect_gradcheck("pinv " + std::to_string(shape[0]) + "x" + std::to_string(shape[1]),
                     [](const Inputs& in) { return la::pinv(in[0]); },
                     {leaf(ox_test::values(shape, -1, 1, 90))});
  expect_gradcheck("pinv hermitian",
                   [](const Inputs& in) { return la::pinv(sym(in[0]), {}, {}, true); },
                   {leaf(ox_test::values({3, 3}, -1, 1, 91))});
  expect_gradcheck(
      "lstsq", [](const Inputs& in) { return la::lstsq(in[0], in[1]).solution; },
      {leaf(ox_test::values({5, 3}, -1, 1, 92)), leaf(ox_test::values({5, 2}, -1, 1, 93))});
}

TEST(AutogradLinalgErrors, EigenvectorsOfRepeatedEigenvalues) {
  // The identity's eigenvectors are any orthonormal basis: their gradient is not defined.
  const Tensor a = ox::eye(3, std::nullopt, {.dtype = ox::kF64}).requires_grad_();
  const la::EighResult r = la::eigh(a);
  const ox::Error e = oxtest::caught([&] { r.eigenvectors.sum().backward(); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Value);
  EXPECT_NE(std::string(e.what()).find("too close"), std::string::npos) << e.what();
  // The eigenvalues alone still have one: d(sum w)/dA = I.
  const Tensor b = ox::eye(3, std::nullopt, {.dtype = ox::kF64}).requires_grad_();
  la::eigh(b).eigenvalues.sum().backward();
  const std::vector<double> g = b.grad().contiguous().to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], i % 4 == 0 ? 1.0 : 0.0, 1e-12) << i;
}

TEST(AutogradLinalgErrors, RectangularLuFactorsButRefusesItsGradient) {
  const Tensor a = ox_test::values({4, 3}, -1, 1, 101).requires_grad_();
  const la::LuResult r = la::lu(a);  // the forward pass works under grad mode
  EXPECT_EQ(r.U.shape().vec(), (std::vector<int64_t>{3, 3}));
  const ox::Error e = oxtest::caught([&] { (r.L.sum() + r.U.sum()).backward(); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Value);
  EXPECT_NE(std::string(e.what()).find("square matrices only"), std::string::npos) << e.what();
}

TEST(AutogradLinalgErrors, QrCompleteOfTallMatrix) {
  const Tensor a = ox_test::values({4, 2}, -1, 1, 100).requires_grad_();
  const la::QrResult r = la::qr(a, "complete");
  EXPECT_EQ(oxtest::kind_of([&] { (r.Q.sum() + r.R.sum()).backward(); }), ox::ErrorKind::Value);
}

}  // namespace
