// Gradients of ox::linalg vector_norm, matrix_norm, matrix_power, cross and diag_embed against
// central differences (f64). These functions are composites of recorded ops (norm, amax,
// svdvals, inv, matmul, where, ...), so this checks that their compositions differentiate
// right: the ord, the dims moved, keepdim, broadcasting.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "autograd/grad_check.h"

namespace {

using ox::Tensor;
using Inputs = std::vector<Tensor>;
using ox_test::expect_gradcheck;
using ox_test::leaf;
using ox_test::transposed_leaf;
using ox_test::values;

constexpr double kInf = std::numeric_limits<double>::infinity();

// Magnitudes in [0.3, 2] with mixed signs: away from 0, where |x| and |x|^p have no derivative.
Tensor signed_values(const ox::Shape& shape, uint64_t seed) {
  const Tensor mag = values(shape, 0.3, 2.0, seed);
  const Tensor coin = values(shape, 0.0, 1.0, seed + 1000);
  return ox::where(ox::gt(coin, 0.5), mag, -mag);
}

// Well conditioned: 2 I plus entries in [-0.4, 0.4].
Tensor near_identity(int64_t batch, int64_t n, uint64_t seed) {
  return values({batch, n, n}, -0.4, 0.4, seed) + ox::eye(n, std::nullopt, {.dtype = ox::kF64}) * 2;
}

TEST(AutogradRulesLinalgNorms, VectorNorm) {
  const Tensor x = leaf(signed_values({3, 4}, 1));
  const Tensor xt = transposed_leaf(signed_values({4, 3}, 2));
  expect_gradcheck(
      "vector_norm 2, all dims", [](const Inputs& in) { return ox::linalg::vector_norm(in[0]); },
      {x}, true);
  struct Case {
    double ord;
    ox::Dims dims;
    bool keepdim;
  };
  const std::vector<Case> cases = {{1, {1}, false},   {kInf, {0}, false}, {-kInf, {1}, true},
                                   {3, {0, 1}, true}, {0.5, {-1}, false}, {-1.5, {0}, false},
                                   {2, {1, 0}, true}};
  for (const Case& c : cases)
    for (const Tensor& input : {x, xt})
      expect_gradcheck("vector_norm " + std::to_string(c.ord) + " dims " + ox::to_string(c.dims),
                       [&c](const Inputs& in) {
                         return ox::linalg::vector_norm(in[0], c.ord, c.dims, c.keepdim);
                       },
                       {input});
  // ord 0 counts: a zero gradient.
  expect_gradcheck("vector_norm 0",
                   [](const Inputs& in) { return ox::linalg::vector_norm(in[0], 0, 1); }, {x});
}

TEST(AutogradRulesLinalgNorms, MatrixNormSums) {
  const Tensor a = leaf(signed_values({2, 3, 4}, 3));
  expect_gradcheck(
      "matrix_norm fro", [](const Inputs& in) { return ox::linalg::matrix_norm(in[0]); }, {a},
      true);
  for (double ord : {1.0, -1.0, kInf, -kInf}) {
    expect_gradcheck("matrix_norm " + std::to_string(ord),
                     [ord](const Inputs& in) { return ox::linalg::matrix_norm(in[0], ord); }, {a});
    expect_gradcheck("matrix_norm dims (2, 0) keepdim " + std::to_string(ord),
                     [ord](const Inputs& in) {
                       return ox::linalg::matrix_norm(in[0], ord, {2, 0}, true);
                     },
                     {a});
  }
  const Tensor t = transposed_leaf(signed_values({3, 5}, 4));
  expect_gradcheck("matrix_norm fro transposed",
                   [](const Inputs& in) {
                     return ox::linalg::matrix_norm(in[0], "fro", {-1, -2});
                   },
                   {t});
}

TEST(AutogradRulesLinalgNorms, MatrixNormSpectral) {
  // Random matrices: distinct, nonzero singular values, where these norms are smooth.
  const Tensor a = leaf(values({2, 3, 4}, -1, 1, 5));
  const Tensor w = leaf(values({4, 2, 3}, -1, 1, 6));
  for (double ord : {2.0, -2.0}) {
    expect_gradcheck("matrix_norm " + std::to_string(ord),
                     [ord](const Inputs& in) { return ox::linalg::matrix_norm(in[0], ord); }, {a});
    expect_gradcheck("matrix_norm dims (0, 2) " + std::to_string(ord),
                     [ord](const Inputs& in) {
                       return ox::linalg::matrix_norm(in[0], ord, {0, 2}, true);
                     },
                     {w});
  }
  expect_gradcheck("matrix_norm nuc",
                   [](const Inputs& in) { return ox::linalg::matrix_norm(in[0], "nuc"); }, {a});
  expect_gradcheck("matrix_norm nuc dims (2, 0)",
                   [](const Inputs& in) {
                     return ox::linalg::matrix_norm(in[0], "nuc", {2, 0});
                   },
                   {w});
  expect_gradcheck("norm nuc", [](const Inputs& in) { return ox::norm(in[0], "nuc"); },
                   {leaf(values({3, 4}, -1, 1, 7))});
}

TEST(AutogradRulesLinalgNorms, MatrixPower) {
  const Tensor a = leaf(values({2, 3, 3}, -0.8, 0.8, 8));
  for (int64_t n : {0, 1, 2, 3, 5, 6})
    expect_gradcheck(
        "matrix_power " + std::to_string(n),
        [n](const Inputs& in) { return ox::linalg::matrix_power(in[0], n); }, {a}, n == 3);
  const Tensor b = leaf(near_identity(2, 3, 9));
  for (int64_t n : {-1, -2, -3})
    expect_gradcheck("matrix_power " + std::to_string(n),
                     [n](const Inputs& in) { return ox::linalg::matrix_power(in[0], n); }, {b});
  expect_gradcheck("matrix_power 3 transposed",
                   [](const Inputs& in) { return ox::linalg::matrix_power(in[0], 3); },
                   {transposed_leaf(values({3, 3}, -1, 1, 10))});
}

TEST(AutogradRulesLinalgNorms, Cross) {
  const Tensor a = leaf(values({2, 1, 3}, -1, 1, 11));
  const Tensor b = leaf(values({1, 4, 3}, -1, 1, 12));
  expect_gradcheck(
      "cross broadcast", [](const Inputs& in) { return ox::linalg::cross(in[0], in[1]); }, {a, b},
      true);
  const Tensor c = transposed_leaf(values({3, 5}, -1, 1, 13));
  const Tensor d = leaf(values({3, 5}, -1, 1, 14));
  expect_gradcheck("cross dim 0",
                   [](const Inputs& in) { return ox::linalg::cross(in[0], in[1], 0); }, {c, d});
}

TEST(AutogradRulesLinalgNorms, DiagEmbed) {
  const Tensor x = leaf(values({2, 3}, -1, 1, 15));
  expect_gradcheck(
      "diag_embed", [](const Inputs& in) { return ox::linalg::diag_embed(in[0]); }, {x}, true);
  expect_gradcheck("diag_embed offset 1 dims (0, 2)",
                   [](const Inputs& in) { return ox::linalg::diag_embed(in[0], 1, 0, 2); }, {x});
  expect_gradcheck("diag_embed offset -2 dims (2, 1)",
                   [](const Inputs& in) { return ox::linalg::diag_embed(in[0], -2, 2, 1); },
                   {transposed_leaf(values({3, 2}, -1, 1, 16))});
}

}  // namespace
