// vjp rules of the joining and shaping ops (cat, stack, split, pad, repeat, roll, tril/triu, ...),
// the scans (cumsum, cumprod, cummax/cummin), the sort family and einsum, against central
// differences (ox::autograd::gradcheck, f64), with hand-derived gradients for the special cases
// (cumprod through zeros, sort's permutation, cat across dtypes).

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "autograd/grad_check.h"
#include "test_util.h"

namespace {

using ox::Tensor;
using Inputs = std::vector<Tensor>;
using Fn = std::function<Tensor(const Inputs&)>;
using ox_test::leaf;
using ox_test::transposed_leaf;

// Distinct values in [lo, hi] (f64), reproducible: a shuffled ramp with random offsets smaller
// than the step, so sorts and running maxima have no ties for differences to cross.
Tensor distinct(const ox::Shape& shape, double lo, double hi, uint64_t seed) {
  ox::Generator gen(seed);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  const Tensor order = ox::randperm(n, {}, &gen).to(ox::kF64);
  const Tensor jitter = ox::rand({n}, {.dtype = ox::kF64}, &gen) * 0.5;
  const double step = (hi - lo) / static_cast<double>(std::max<int64_t>(n, 1));
  return ((order + jitter) * step + lo).reshape(shape);
}

using ox_test::expect_gradcheck;

std::vector<double> values_of(const Tensor& t) {
  return t.detach().to(ox::kF64).contiguous().to_vector<double>();
}

// ---- Joining and shaping ---------------------------------------------------------------------

TEST(AutogradRulesShape, CatAndStack) {
  const Tensor a = leaf(distinct({2, 3}, -1, 1, 1));
  const Tensor b = transposed_leaf(distinct({2, 2}, -1, 1, 2));
  const Tensor c = leaf(distinct({2, 1}, -1, 1, 3));
  expect_gradcheck(
      "cat dim 1",
      [](const Inputs& in) {
        return ox::cat({in[0], in[1], in[2]}, 1);
      },
      {a, b, c}, true);
  expect_gradcheck("cat dim 0",
                   [](const Inputs& in) {
                     return ox::cat({in[0], in[0].flip({0})}, 0);
                   },
                   {a});
  // A skipped 1-d empty input and a zero-extent one get (empty) gradients.
  const Tensor empty1 = leaf(ox::zeros({0}, ox::kF64)), empty2 = leaf(ox::zeros({2, 0}, ox::kF64));
  expect_gradcheck("cat with empties",
                   [](const Inputs& in) {
                     return ox::cat({in[1], in[0], in[2]}, 1);
                   },
                   {a, empty1, empty2});
  expect_gradcheck(
      "stack",
      [](const Inputs& in) {
        return ox::stack({in[0], in[1] * 2}, 1);
      },
      {a, leaf(distinct({2, 3}, -1, 1, 4))}, true);
  // Mixed dtypes: the f32 input's gradient comes back in f32.
  const Tensor x32 = ox::ones({2}, ox::kF32).requires_grad_();
  const Tensor x64 = ox::ones({3}, ox::kF64).requires_grad_();
  (ox::cat({x32, x64}) * ox::arange(5, {.dtype = ox::kF64})).sum().backward();
  EXPECT_EQ(x32.grad().dtype(), ox::kF32);
  EXPECT_EQ(values_of(x32.grad()), (std::vector<double>{0, 1}));
  EXPECT_EQ(values_of(x64.grad()), (std::vector<double>{2, 3, 4}));
}

TEST(AutogradRulesShape, SplitChunkAndMeshgrid) {
  const Tensor x = leaf(distinct({4, 3}, -1, 1, 10));
  expect_gradcheck("split sizes",
                   [](const Inputs& in) {
                     const auto parts = ox::split(in[0], std::vector<int64_t>{1, 3}, 0);
                     return parts[1] * 2 + parts[0];
                   },
                   {x});
  expect_gradcheck("chunk",
                   [](const Inputs& in) {
                     const auto parts = ox::chunk(in[0], 2, 1);
                     return parts[0].sum(1) * parts[1].squeeze(1);
                   },
                   {x});
  const Tensor u = leaf(distinct({3}, -1, 1, 11)), v = leaf(distinct({2}, -1, 1, 12));
  expect_gradcheck("meshgrid xy",
                   [](const Inputs& in) {
                     const auto g = ox::meshgrid({in[0], in[1]}, "xy");
                     return g[0] * g[1];
                   },
                   {u, v});
}

TEST(AutogradRulesShape, PadRepeatRollTriangles) {
  const Tensor base = distinct({3, 4}, -1, 1, 20);
  for (const Tensor& x : {leaf(base), transposed_leaf(base)}) {
    const std::string layout = x.is_contiguous() ? "contiguous" : "transposed";
    expect_gradcheck("pad constant " + layout,
                     [](const Inputs& in) {
                       return ox::pad(in[0], {1, 2, 0, 1}, "constant", 0.5);
                     },
                     {x});
    expect_gradcheck(
        "pad reflect " + layout,
        [](const Inputs& in) {
          return ox::pad(in[0], {2, 1}, "reflect");
        },
        {x}, true);
    expect_gradcheck("pad replicate " + layout,
                     [](const Inputs& in) {
                       return ox::pad(in[0], {1, 2, 2, 0}, "replicate");
                     },
                     {x});
    expect_gradcheck("pad crop " + layout,
                     [](const Inputs& in) {
                       return ox::pad(in[0], {-1, 1});
                     },
                     {x});
    expect_gradcheck(
        "repeat " + layout,
        [](const Inputs& in) {
          return ox::repeat(in[0], {2, 1, 3});
        },
        {x}, true);
    expect_gradcheck("tile " + layout, [](const Inputs& in) { return ox::tile(in[0], {2}); }, {x});
    expect_gradcheck("repeat_interleave " + layout,
                     [](const Inputs& in) { return ox::repeat_interleave(in[0], 3, 1); }, {x});
    expect_gradcheck("repeat_interleave flat " + layout,
                     [](const Inputs& in) { return ox::repeat_interleave(in[0], 2); }, {x});
    expect_gradcheck(
        "roll " + layout,
        [](const Inputs& in) {
          return ox::roll(in[0], {1, -3}, {0, 1});
        },
        {x}, true);
    expect_gradcheck("roll flat " + layout, [](const Inputs& in) { return ox::roll(in[0], {5}); },
                     {x});
    expect_gradcheck(
        "tril " + layout, [](const Inputs& in) { return ox::tril(in[0], -1); }, {x}, true);
    expect_gradcheck("triu " + layout, [](const Inputs& in) { return ox::triu(in[0], 1); }, {x});
  }
  // Replicate padding sends each padded copy's gradient to the edge element it copies.
  const Tensor r = ox::zeros({3}, ox::kF64).requires_grad_();
  ox::pad(r, {2, 1}, "replicate").sum().backward();
  EXPECT_EQ(values_of(r.grad()), (std::vector<double>{3, 1, 2}));
}

// ---- Scans -----------------------------------------------------------------------------------

TEST(AutogradRulesShape, Cumsum) {
  const Tensor base = distinct({3, 4}, -1, 1, 30);
  for (const Tensor& x : {leaf(base), transposed_leaf(base)}) {
    expect_gradcheck(
        "cumsum dim 1", [](const Inputs& in) { return ox::cumsum(in[0], 1); }, {x}, true);
    expect_gradcheck("cumsum dim 0", [](const Inputs& in) { return ox::cumsum(in[0], 0); }, {x});
  }
  expect_gradcheck("cumsum of a scalar", [](const Inputs& in) { return ox::cumsum(in[0], 0); },
                   {leaf(ox::scalar_tensor(2.0, {.dtype = ox::kF64}))});
  // d/dx_i sum_j w_j cumsum(x)_j = sum_{j >= i} w_j.
  const Tensor x = ox::zeros({4}, ox::kF64).requires_grad_();
  (ox::cumsum(x, 0) * ox::tensor(std::vector<double>{1, 2, 3, 4})).sum().backward();
  EXPECT_EQ(values_of(x.grad()), (std::vector<double>{10, 9, 7, 4}));
  // With an f64 accumulation dtype the f32 input's gradient is f32.
  const Tensor x32 = ox::ones({3}, ox::kF32).requires_grad_();
  ox::cumsum(x32, 0, ox::kF64).sum().backward();
  EXPECT_EQ(x32.grad().dtype(), ox::kF32);
  EXPECT_EQ(values_of(x32.grad()), (std::vector<double>{3, 2, 1}));
}

TEST(AutogradRulesShape, Cumprod) {
  const Tensor base = distinct({3, 4}, 0.5, 1.5, 40);
  expect_gradcheck(
      "cumprod", [](const Inputs& in) { return ox::cumprod(in[0], 1); }, {leaf(base)}, true);
  expect_gradcheck("cumprod transposed dim 0",
                   [](const Inputs& in) { return ox::cumprod(in[0], 0); }, {transposed_leaf(base)});
  // Exact zeros, one and two in a row: the rule must not divide by them.
  const Tensor z = ox::tensor(std::vector<double>{2, 0, 3, 0.5, 1.5, -1, 0, 0, 2, 4, 0.5, 3})
                       .reshape({3, 4})
                       .requires_grad_();
  expect_gradcheck(
      "cumprod through zeros", [](const Inputs& in) { return ox::cumprod(in[0], 1); }, {z}, true);
  // By hand: y = (a, ab, abc) at (a, b, c) = (2, 0, 3), weights (1, 1, 1):
  // dy/da = 1 + b + bc = 1, dy/db = a + ac = 8, dy/dc = ab = 0.
  const Tensor v = ox::tensor(std::vector<double>{2, 0, 3}).requires_grad_();
  ox::cumprod(v, 0).sum().backward();
  EXPECT_EQ(values_of(v.grad()), (std::vector<double>{1, 8, 0}));
}

TEST(AutogradRulesShape, CummaxCummin) {
  const Tensor base = distinct({3, 5}, -1, 1, 50);
  for (const Tensor& x : {leaf(base), transposed_leaf(base)}) {
    expect_gradcheck("cummax", [](const Inputs& in) { return std::get<0>(ox::cummax(in[0], 1)); },
                     {x});
    expect_gradcheck("cummin dim 0",
                     [](const Inputs& in) { return std::get<0>(ox::cummin(in[0], 0)); }, {x});
  }
  // Each running maximum's gradient goes to the element it came from: (1, 3, 2, 5) gives
  // maxima from positions (0, 1, 1, 3).
  const Tensor x = ox::tensor(std::vector<double>{1, 3, 2, 5}).requires_grad_();
  std::get<0>(ox::cummax(x, 0)).sum().backward();
  EXPECT_EQ(values_of(x.grad()), (std::vector<double>{1, 2, 0, 1}));
}

// ---- The sort family -------------------------------------------------------------------------

TEST(AutogradRulesShape, SortFamily) {
  const Tensor base = distinct({3, 5}, -1, 1, 60);
  for (const Tensor& x : {leaf(base), transposed_leaf(base)}) {
    expect_gradcheck(
        "sort", [](const Inputs& in) { return std::get<0>(ox::sort(in[0], 1)); }, {x}, true);
    expect_gradcheck("sort descending dim 0",
                     [](const Inputs& in) { return std::get<0>(ox::sort(in[0], 0, true)); }, {x});
    expect_gradcheck("topk", [](const Inputs& in) { return std::get<0>(ox::topk(in[0], 2, 1)); },
                     {x});
    expect_gradcheck("topk smallest dim 0",
                     [](const Inputs& in) { return std::get<0>(ox::topk(in[0], 2, 0, false)); },
                     {x});
    expect_gradcheck("kthvalue",
                     [](const Inputs& in) { return std::get<0>(ox::kthvalue(in[0], 2, 1)); }, {x});
    expect_gradcheck("kthvalue keepdim",
                     [](const Inputs& in) { return std::get<0>(ox::kthvalue(in[0], 3, 0, true)); },
                     {x});
    expect_gradcheck("median dim",
                     [](const Inputs& in) { return std::get<0>(ox::median(in[0], 1)); }, {x});
    expect_gradcheck("median", [](const Inputs& in) { return ox::median(in[0]); }, {x});
  }
  expect_gradcheck("sort of a scalar",
                   [](const Inputs& in) { return std::get<0>(ox::sort(in[0])); },
                   {leaf(ox::scalar_tensor(2.0, {.dtype = ox::kF64}))});
  // sort's gradient is the inverse permutation of the upstream gradient.
  const Tensor x = ox::tensor(std::vector<double>{3, 1, 2}).requires_grad_();
  (std::get<0>(ox::sort(x)) * ox::tensor(std::vector<double>{10, 20, 30})).sum().backward();
  EXPECT_EQ(values_of(x.grad()), (std::vector<double>{30, 10, 20}));
  // Integer outputs (argsort) carry no history.
  EXPECT_FALSE(ox::argsort(leaf(base)).requires_grad());
}

// ---- einsum ----------------------------------------------------------------------------------

TEST(AutogradRulesShape, Einsum) {
  const Tensor a = leaf(distinct({3, 4}, -1, 1, 70)),
               b = transposed_leaf(distinct({4, 2}, -1, 1, 71));
  const Tensor sq = leaf(distinct({3, 3}, -1, 1, 72));
  const Tensor batch = leaf(distinct({2, 3, 4}, -1, 1, 73)), v = leaf(distinct({4}, -1, 1, 74));
  expect_gradcheck(
      "einsum matmul",
      [](const Inputs& in) {
        return ox::einsum("ij,jk->ik", {in[0], in[1]});
      },
      {a, b}, true);
  expect_gradcheck("einsum trace", [](const Inputs& in) { return ox::einsum("ii", {in[0]}); },
                   {sq});
  expect_gradcheck("einsum diagonal", [](const Inputs& in) { return ox::einsum("ii->i", {in[0]}); },
                   {sq});
  expect_gradcheck("einsum transpose and sum",
                   [](const Inputs& in) { return ox::einsum("bij->jb", {in[0]}); }, {batch});
  expect_gradcheck(
      "einsum ellipsis broadcast",
      [](const Inputs& in) {
        return ox::einsum("...j,j->...", {in[0], in[1]});
      },
      {batch, v}, true);
  expect_gradcheck("einsum outer three operands",
                   [](const Inputs& in) {
                     return ox::einsum("i,j,ij->", {in[0], in[1], in[2]});
                   },
                   {leaf(distinct({3}, -1, 1, 75)), leaf(distinct({4}, -1, 1, 76)), a});
}

}  // namespace
