// Every vjp rule against central differences (ox::autograd::gradcheck, f64), on contiguous,
// transposed, broadcast, expanded and sliced inputs, and gradgradcheck for the rules that must
// differentiate twice.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "autograd/grad_check.h"
#include "ops/op_util.h"
#include "test_util.h"

namespace {

using ox::Tensor;
using Inputs = std::vector<Tensor>;
using Fn = std::function<Tensor(const Inputs&)>;

// Values in [lo, hi] with at least `gap` from zero (kinks of abs/relu/... sit at 0).
Tensor values(const ox::Shape& shape, double lo, double hi, double gap, uint64_t seed) {
  ox::Generator gen(seed);
  Tensor u = ox::rand(shape, {.dtype = ox::kF64}, &gen) * (hi - lo) + lo;
  if (gap > 0) u = ox::where(ox::lt(ox::abs(u), gap), u + 2 * gap, u);
  return u;
}

// The same values of shape [m, n] in four layouts, each a leaf that requires grad: contiguous,
// transposed (column-major), sliced (every other column of a wider tensor), and a [m, 1] or
// [1, n] tensor expanded inside fn (see broadcast_layouts).
std::vector<std::pair<std::string, Tensor>> layouts(int64_t m, int64_t n, double lo, double hi,
                                                    double gap, uint64_t seed) {
  const Tensor base = values({m, n}, lo, hi, gap, seed);
  return {
      {"contiguous", base.clone().requires_grad_()},
      {"transposed", base.t().contiguous().t().requires_grad_()},
      {"sliced", ox::cat({base.unsqueeze(2), base.unsqueeze(2)}, 2)
                     .reshape({m, 2 * n})
                     .slice(1, 0, 2 * n, 2)
                     .requires_grad_()},
  };
}

using ox_test::expect_gradcheck;

struct UnaryCase {
  std::string name;
  std::function<Tensor(const Tensor&)> fn;
  double lo, hi, gap;
  bool twice;
};

// gelu's gradient as an op of its own (the rows gelu's vjp calls): first and second order in
// both operands, g and x in each layout.
TEST(AutogradRules, GeluBackward) {
  const Tensor g = values({3, 4}, -2, 2, 0, 11).requires_grad_();
  for (const char* form : {"none", "tanh"}) {
    for (const auto& [layout, x] : layouts(3, 4, -3, 3, 0, 12)) {
      expect_gradcheck(
          std::string("gelu_backward ") + form + " " + layout,
          [form](const std::vector<Tensor>& in) {
            return ox::ops::gelu_backward(in[0], in[1], form);
          },
          {g, x}, true);
    }
  }
}

// relu's gradient as an op of its own: first and second order in both operands (y away from 0).
TEST(AutogradRules, ReluBackward) {
  const Tensor g = values({3, 4}, -2, 2, 0, 13).requires_grad_();
  for (const auto& [layout, y] : layouts(3, 4, -2, 2, 0.1, 14)) {
    expect_gradcheck(
        "relu_backward " + layout,
        [](const std::vector<Tensor>& in) { return ox::ops::relu_backward(in[0], in[1]); }, {g, y},
        true);
  }
}

TEST(AutogradRules, Unary) {
  const std::vector<UnaryCase> cases = {
      {"neg", [](const Tensor& x) { return -x; }, -2, 2, 0, true},
      {"abs", [](const Tensor& x) { return ox::abs(x); }, -2, 2, 0.1, false},
      {"sign", [](const Tensor& x) { return ox::sign(x); }, -2, 2, 0.1, false},
      {"square", [](const Tensor& x) { return ox::square(x); }, -2, 2, 0, true},
      {"exp", [](const Tensor& x) { return ox::exp(x); }, -2, 2, 0, true},
      {"exp2", [](const Tensor& x) { return ox::exp2(x); }, -2, 2, 0, false},
      {"expm1", [](const Tensor& x) { return ox::expm1(x); }, -2, 2, 0, false},
      {"log", [](const Tensor& x) { return ox::log(x); }, 0.3, 3, 0, true},
      {"log2", [](const Tensor& x) { return ox::log2(x); }, 0.3, 3, 0, false},
      {"log10", [](const Tensor& x) { return ox::log10(x); }, 0.3, 3, 0, false},
      {"log1p", [](const Tensor& x) { return ox::log1p(x); }, -0.5, 3, 0, false},
      {"sqrt", [](const Tensor& x) { return ox::sqrt(x); }, 0.3, 3, 0, true},
      {"rsqrt", [](const Tensor& x) { return ox::rsqrt(x); }, 0.3, 3, 0, false},
      {"reciprocal", [](const Tensor& x) { return ox::reciprocal(x); }, 0.3, 3, 0, true},
      {"sin", [](const Tensor& x) { return ox::sin(x); }, -3, 3, 0, true},
      {"cos", [](const Tensor& x) { return ox::cos(x); }, -3, 3, 0, true},
      {"tan", [](const Tensor& x) { return ox::tan(x); }, -1, 1, 0, false},
      {"asin", [](const Tensor& x) { return ox::asin(x); }, -0.8, 0.8, 0, false},
      {"acos", [](const Tensor& x) { return ox::acos(x); }, -0.8, 0.8, 0, false},
      {"atan", [](const Tensor& x) { return ox::atan(x); }, -3, 3, 0, false},
      {"sinh", [](const Tensor& x) { return ox::sinh(x); }, -2, 2, 0, false},
      {"cosh", [](const Tensor& x) { return ox::cosh(x); }, -2, 2, 0, false},
      {"tanh", [](const Tensor& x) { return ox::tanh(x); }, -2, 2, 0, true},
      {"sigmoid", [](const Tensor& x) { return ox::sigmoid(x); }, -3, 3, 0, true},
      {"logsigmoid", [](const Tensor& x) { return ox::logsigmoid(x); }, -3, 3, 0, false},
      {"relu", [](const Tensor& x) { return ox::relu(x); }, -2, 2, 0.1, true},
      {"leaky_relu", [](const Tensor& x) { return ox::leaky_relu(x, 0.1); }, -2, 2, 0.1, false},
      {"elu", [](const Tensor& x) { return ox::elu(x, 1.3); }, -2, 2, 0.1, false},
      {"gelu", [](const Tensor& x) { return ox::gelu(x); }, -3, 3, 0, true},
      {"gelu_tanh", [](const Tensor& x) { return ox::gelu(x, "tanh"); }, -3, 3, 0, true},
      {"silu", [](const Tensor& x) { return ox::silu(x); }, -3, 3, 0, false},
      {"softplus", [](const Tensor& x) { return ox::softplus(x, 2.0, 3.0); }, -3, 3, 0.1, false},
      {"mish", [](const Tensor& x) { return ox::mish(x); }, -3, 3, 0, false},
      {"erf", [](const Tensor& x) { return ox::erf(x); }, -2, 2, 0, false},
      {"erfc", [](const Tensor& x) { return ox::erfc(x); }, -2, 2, 0, false},
      {"floor", [](const Tensor& x) { return ox::floor(x); }, -2, 2, 0, false},
      {"ceil", [](const Tensor& x) { return ox::ceil(x); }, -2, 2, 0, false},
      {"round", [](const Tensor& x) { return ox::round(x); }, -2, 2, 0, false},
      {"trunc", [](const Tensor& x) { return ox::trunc(x); }, -2, 2, 0, false},
      {"clamp", [](const Tensor& x) { return ox::clamp(x, -0.5, 0.7); }, -2, 2, 0, false},
      {"nan_to_num", [](const Tensor& x) { return ox::nan_to_num(x); }, -2, 2, 0, false},
  };
  uint64_t seed = 1;
  for (const UnaryCase& c : cases)
    for (const auto& [layout, x] : layouts(3, 4, c.lo, c.hi, c.gap, seed++)) {
      // Rounding ops and clamp have kinks: keep the inputs off them by construction.
      Tensor input = x;
      if (c.name == "floor" || c.name == "ceil" || c.name == "round" || c.name == "trunc" ||
          c.name == "clamp") {
        ox::NoGradGuard no_grad;
        input.copy_(ox::floor(x * 4) / 4 + 0.11);
      }
      expect_gradcheck(
          c.name + " " + layout, [&c](const Inputs& in) { return c.fn(in[0]); }, {input},
          c.twice && layout == "contiguous");
    }
}

TEST(AutogradRules, UnaryOnBroadcastAndExpandedInputs) {
  const Tensor row = values({1, 4}, -1, 1, 0, 7).requires_grad_();
  expect_gradcheck("tanh of expanded",
                   [](const Inputs& in) {
                     return ox::tanh(in[0].expand({3, 4}));
                   },
                   {row});
  expect_gradcheck("exp of broadcast sum",
                   [](const Inputs& in) {
                     return ox::exp(in[0] + ox::zeros({3, 1}, ox::kF64));
                   },
                   {row});
}

TEST(AutogradRules, Binary) {
  struct Case {
    std::string name;
    std::function<Tensor(const Tensor&, const Tensor&)> fn;
    double lo, hi;
    bool twice;
  };
  const std::vector<Case> cases = {
      {"add", [](const Tensor& a, const Tensor& b) { return ox::add(a, b, 2.5); }, -2, 2, true},
      {"sub", [](const Tensor& a, const Tensor& b) { return ox::sub(a, b, 0.5); }, -2, 2, true},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }, -2, 2, true},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; }, 0.5, 2, true},
      {"pow", [](const Tensor& a, const Tensor& b) { return ox::pow(a, b); }, 0.5, 2, true},
      {"atan2", [](const Tensor& a, const Tensor& b) { return ox::atan2(a, b); }, 0.5, 2, false},
      {"maximum", [](const Tensor& a, const Tensor& b) { return ox::maximum(a, b); }, -2, 2, false},
      {"minimum", [](const Tensor& a, const Tensor& b) { return ox::minimum(a, b); }, -2, 2, false},
      {"hypot", [](const Tensor& a, const Tensor& b) { return ox::hypot(a, b); }, 0.5, 2, false},
      {"logaddexp", [](const Tensor& a, const Tensor& b) { return ox::logaddexp(a, b); }, -2, 2,
       false},
      {"remainder", [](const Tensor& a, const Tensor& b) { return ox::remainder(a, b); }, 0.6, 0.9,
       false},
      {"fmod", [](const Tensor& a, const Tensor& b) { return ox::fmod(a, b); }, 0.6, 0.9, false},
  };
  uint64_t seed = 100;
  for (const Case& c : cases) {
    const auto la = layouts(3, 4, c.lo, c.hi, 0, seed++);
    const auto lb = layouts(3, 4, c.lo, c.hi, 0, seed++);
    for (size_t i = 0; i < la.size(); ++i)
      expect_gradcheck(
          c.name + " " + la[i].first, [&c](const Inputs& in) { return c.fn(in[0], in[1]); },
          {la[i].second, lb[i].second}, c.twice && i == 0);
    // Broadcasting: [3, 1] with [1, 4]; and a scalar on either side.
    const Tensor col = values({3, 1}, c.lo, c.hi, 0, seed++).requires_grad_();
    const Tensor row = values({1, 4}, c.lo, c.hi, 0, seed++).requires_grad_();
    expect_gradcheck(c.name + " broadcast", [&c](const Inputs& in) { return c.fn(in[0], in[1]); },
                     {col, row});
  }
  const Tensor x = values({5}, 0.5, 2, 0, 9).requires_grad_();
  expect_gradcheck("scalar * x", [](const Inputs& in) { return 3.0 * in[0]; }, {x});
  expect_gradcheck("x ** 2.5", [](const Inputs& in) { return ox::pow(in[0], 2.5); }, {x});
  expect_gradcheck("2 ** x", [](const Inputs& in) { return ox::pow(2.0, in[0]); }, {x});
  expect_gradcheck("x / 4", [](const Inputs& in) { return in[0] / 4.0; }, {x});
  // Rounding divisions are piecewise constant: zero gradients away from the steps (a / b stays
  // inside (0, 1) here).
  const Tensor num = values({3, 4}, 0.5, 2, 0, 10).requires_grad_();
  const Tensor den = values({4}, 4, 5, 0, 11).requires_grad_();
  expect_gradcheck("floor_divide",
                   [](const Inputs& in) { return ox::floor_divide(in[0], in[1]) + in[0]; },
                   {num, den});
  expect_gradcheck("div trunc",
                   [](const Inputs& in) { return ox::div(in[0], in[1], "trunc") * in[1]; },
                   {num, den});
}

TEST(AutogradRules, WhereAndMaskedFill) {
  const Tensor a = values({3, 4}, -1, 1, 0, 11).requires_grad_();
  const Tensor b = values({4}, -1, 1, 0, 12).requires_grad_();
  const Tensor cond = ox::gt(values({3, 4}, -1, 1, 0, 13), 0);
  expect_gradcheck("where", [&](const Inputs& in) { return ox::where(cond, in[0], in[1]); },
                   {a, b});
  const Tensor v = ox::tensor({0.5}, {.dtype = ox::kF64}).reshape({}).requires_grad_();
  expect_gradcheck("masked_fill",
                   [&](const Inputs& in) { return ox::masked_fill(in[0], cond, in[1]); }, {a, v});
}

TEST(AutogradRules, Reductions) {
  for (const auto& [layout, x] : layouts(3, 4, -2, 2, 0.05, 21)) {
    expect_gradcheck(
        "sum " + layout, [](const Inputs& in) { return in[0].sum(); }, {x}, true);
    expect_gradcheck("sum(1) " + layout, [](const Inputs& in) { return in[0].sum(1); }, {x});
    expect_gradcheck("sum(0, keepdim) " + layout,
                     [](const Inputs& in) { return in[0].sum(0, true); }, {x});
    expect_gradcheck(
        "mean " + layout,
        [](const Inputs& in) {
          return in[0].mean({0, 1});
        },
        {x}, true);
    expect_gradcheck("prod(1) " + layout, [](const Inputs& in) { return in[0].prod(1); }, {x});
    expect_gradcheck("prod " + layout, [](const Inputs& in) { return in[0].prod(); }, {x});
    expect_gradcheck("amax(1) " + layout, [](const Inputs& in) { return in[0].amax(1); }, {x});
    expect_gradcheck("amin " + layout, [](const Inputs& in) { return in[0].amin(); }, {x});
    expect_gradcheck("max(dim) " + layout,
                     [](const Inputs& in) { return std::get<0>(in[0].max(0)); }, {x});
    expect_gradcheck("min(dim, keepdim) " + layout,
                     [](const Inputs& in) { return std::get<0>(in[0].min(1, true)); }, {x});
    expect_gradcheck(
        "var " + layout, [](const Inputs& in) { return in[0].var(1); }, {x}, true);
    expect_gradcheck("std " + layout, [](const Inputs& in) { return in[0].std({0, 1}, 0); }, {x});
    expect_gradcheck(
        "logsumexp " + layout, [](const Inputs& in) { return in[0].logsumexp(1); }, {x}, true);
    for (double p : {1.0, 2.0, 3.0, double(INFINITY)})
      expect_gradcheck("norm p=" + std::to_string(p) + " " + layout,
                       [p](const Inputs& in) { return in[0].norm(p, 1); }, {x});
  }
}

TEST(AutogradRules, ReductionTiesAndZeros) {
  // amax ties split the gradient evenly; max() too.
  Tensor x = ox::tensor({1.0, 3.0, 3.0, 2.0}, {.dtype = ox::kF64}).requires_grad_();
  x.amax().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0.5, 0.5, 0}));
  // prod with one zero: only that element's gradient is nonzero (the product of the others).
  Tensor z = ox::tensor({2.0, 0.0, 5.0}, {.dtype = ox::kF64}).requires_grad_();
  z.prod().backward();
  EXPECT_EQ(z.grad().to_vector<double>(), (std::vector<double>{0, 10, 0}));
  // The 2-norm at zero: gradient 0, not NaN.
  Tensor o = ox::zeros({3}, ox::kF64).requires_grad_();
  o.norm().backward();
  EXPECT_EQ(o.grad().to_vector<double>(), (std::vector<double>{0, 0, 0}));
}

TEST(AutogradRules, Views) {
  const Tensor x = values({3, 4}, -1, 1, 0, 31).requires_grad_();
  const std::vector<std::pair<std::string, Fn>> views = {
      {"view",
       [](const Inputs& in) {
         return in[0].view({4, 3}) * 2;
       }},
      {"reshape of transposed", [](const Inputs& in) { return in[0].t().reshape({12}); }},
      {"permute",
       [](const Inputs& in) {
         return in[0].unsqueeze(0).permute({2, 0, 1}) * 1;
       }},
      {"transpose", [](const Inputs& in) { return in[0].transpose(0, 1) * 1; }},
      {"narrow", [](const Inputs& in) { return in[0].narrow(1, 1, 2) * 1; }},
      {"slice step", [](const Inputs& in) { return in[0].slice(1, 0, 4, 3) * 1; }},
      {"select", [](const Inputs& in) { return in[0].select(0, 2) * 1; }},
      {"expand",
       [](const Inputs& in) {
         return in[0].unsqueeze(0).expand({2, 3, 4}) * 1;
       }},
      {"squeeze", [](const Inputs& in) { return in[0].unsqueeze(1).squeeze(1) * 1; }},
      {"flatten", [](const Inputs& in) { return in[0].flatten() * 1; }},
      {"flip",
       [](const Inputs& in) {
         return in[0].flip({0, 1}) * ox::arange(4, {.dtype = ox::kF64});
       }},
      {"diagonal", [](const Inputs& in) { return in[0].diagonal(1) * 1; }},
      {"unfold", [](const Inputs& in) { return in[0].unfold(1, 2, 1) * 1; }},
      {"as_strided overlapping",
       [](const Inputs& in) {
         return in[0].as_strided({3, 3}, {1, 1}, 2) * 1;
       }},
      {"as_strided of a transposed base",
       [](const Inputs& in) {
         return in[0].t().contiguous().t().as_strided({2, 2}, {4, 1}, 1) * 1;
       }},
      {"clone", [](const Inputs& in) { return in[0].clone(); }},
  };
  for (const auto& [name, fn] : views) expect_gradcheck(name, fn, {x}, name == "transpose");
  // copy_ into a tensor without history: the source's layout, broadcast and dtype come back.
  expect_gradcheck("copy_ transposed, broadcast",
                   [](const Inputs& in) {
                     Tensor out = ox::zeros({2, 4, 3}, ox::kF64);
                     out.copy_(in[0].t());
                     return out * ox::arange(3, {.dtype = ox::kF64});
                   },
                   {x});
  // An in-place write into a view rewrites its base's history (CopySlices).
  expect_gradcheck(
      "mul_ into a view",
      [](const Inputs& in) {
        Tensor t = in[0] * 1;
        t.t().narrow(0, 1, 2).mul_(in[0].narrow(1, 0, 2).t());
        return t;
      },
      {x}, true);
  // Through f32 the function is a staircase at 1e-7: differences need a wider step.
  expect_gradcheck("to f32 and back",
                   [](const Inputs& in) { return in[0].to(ox::kF32).to(ox::kF64) * 1; }, {x}, false,
                   {.eps = 1e-2, .atol = 1e-4, .rtol = 1e-3});
}

TEST(AutogradRules, Matmul) {
  struct Case {
    std::string name;
    ox::Shape a, b;
  };
  const std::vector<Case> cases = {
      {"matrix", {3, 4}, {4, 2}},        {"vector-matrix", {4}, {4, 2}},
      {"matrix-vector", {3, 4}, {4}},    {"dot", {4}, {4}},
      {"batched", {2, 3, 4}, {2, 4, 2}}, {"batch broadcast", {2, 1, 3, 4}, {3, 4, 2}},
  };
  uint64_t seed = 40;
  for (const Case& c : cases) {
    const Tensor a = values(c.a, -1, 1, 0, seed++).requires_grad_();
    const Tensor b = values(c.b, -1, 1, 0, seed++).requires_grad_();
    expect_gradcheck(
        "matmul " + c.name, [](const Inputs& in) { return ox::matmul(in[0], in[1]); }, {a, b},
        c.name == "matrix" || c.name == "batched");
  }
  const Tensor at = values({4, 3}, -1, 1, 0, 50).t().requires_grad_();
  const Tensor bt = values({2, 4}, -1, 1, 0, 51).t().requires_grad_();
  expect_gradcheck("matmul of transposed views",
                   [](const Inputs& in) { return ox::matmul(in[0], in[1]); }, {at, bt});
  const Tensor in = values({3, 2}, -1, 1, 0, 52).requires_grad_();
  expect_gradcheck("addmm", [](const Inputs& v) { return ox::addmm(v[0], v[1], v[2], 0.5, 2.0); },
                   {in, at, bt});
  const Tensor x = values({3, 4}, -1, 1, 0, 53).requires_grad_();
  const Tensor y = values({4, 5}, -1, 1, 0, 54).requires_grad_();
  const Tensor m = values({4, 2}, -1, 1, 0, 55).requires_grad_();
  const Tensor v4 = values({4}, -1, 1, 0, 56).requires_grad_();
  expect_gradcheck(
      "mm", [](const Inputs& in) { return ox::mm(in[0], in[1]); }, {x, m}, true);
  expect_gradcheck("mv", [](const Inputs& in) { return ox::mv(in[0], in[1]); }, {x, v4});
  expect_gradcheck("dot", [](const Inputs& in) { return ox::dot(in[0], in[1]); },
                   {v4, values({4}, -1, 1, 0, 57).requires_grad_()});
  const Tensor ba = values({2, 3, 4}, -1, 1, 0, 58).requires_grad_();
  const Tensor bb =
      values({2, 4, 2}, -1, 1, 0, 59).transpose(1, 2).contiguous().transpose(1, 2).requires_grad_();
  const Tensor bc = values({3, 2}, -1, 1, 0, 60).requires_grad_();
  expect_gradcheck("bmm", [](const Inputs& in) { return ox::bmm(in[0], in[1]); }, {ba, bb});
  expect_gradcheck("baddbmm",
                   [](const Inputs& in) { return ox::baddbmm(in[2], in[0], in[1], 0.5, 2.0); },
                   {ba, bb, bc});
  expect_gradcheck("tensordot",
                   [](const Inputs& in) {
                     return ox::tensordot(in[0], in[1], {0, 2}, {0, 1});
                   },
                   {ba.transpose(0, 2).detach().requires_grad_(),
                    values({4, 2, 3}, -1, 1, 0, 61).requires_grad_()});
  expect_gradcheck("einsum ij,jk->ik",
                   [](const Inputs& v) {
                     return ox::einsum("ij,jk->ik", {v[0], v[1]});
                   },
                   {x, y});
}

TEST(AutogradRules, SoftmaxFamily) {
  for (const auto& [layout, x] : layouts(3, 4, -2, 2, 0, 61)) {
    expect_gradcheck(
        "softmax " + layout, [](const Inputs& in) { return ox::softmax(in[0], 1); }, {x},
        layout == "contiguous");
    expect_gradcheck("softmax dim 0 " + layout,
                     [](const Inputs& in) { return ox::softmax(in[0], 0); }, {x});
    expect_gradcheck(
        "log_softmax " + layout, [](const Inputs& in) { return ox::log_softmax(in[0], -1); }, {x},
        layout == "contiguous");
  }
}

}  // namespace
