// Autograd's behaviour: leaves and .grad accumulation, freed graphs, in-place checks, grad mode,
// detach, hooks, retain_grad, autograd::grad with create_graph, custom functions, and a chain
// of 100,000 ops. Expected gradients are derived by hand in each test.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

using ox::ErrorKind;
using ox::Tensor;
using oxtest::kind_of;

Tensor leaf(std::vector<double> v) { return ox::tensor(v).requires_grad_(); }

void expect_values(const Tensor& t, const std::vector<double>& want, double tol = 1e-12) {
  ASSERT_TRUE(t.defined());
  const std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

TEST(Autograd, LeavesAndNodes) {
  Tensor x = leaf({1, 2, 3});
  EXPECT_TRUE(x.requires_grad());
  EXPECT_TRUE(x.is_leaf());
  EXPECT_EQ(x.grad_fn(), nullptr);
  const Tensor y = x * 2;
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(y.is_leaf());
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_EQ(y.grad_fn()->name(), "MulBackward");
  EXPECT_EQ(ox::leaky_relu(x, 0.1).grad_fn()->name(), "LeakyReluBackward");
  EXPECT_EQ(x.reshape({3, 1}).t().grad_fn()->name(), "TransposeBackward");
  EXPECT_FALSE(ox::tensor({1.0}, {.dtype = ox::kF64}).requires_grad());
  EXPECT_EQ(kind_of([] { ox::tensor({1, 2}).requires_grad_(); }), ErrorKind::DType);
}

TEST(Autograd, GradientsAccumulateUntilReset) {
  Tensor x = leaf({1, 2, 3});
  (x * x).sum().backward();  // d/dx sum(x^2) = 2x
  expect_values(x.grad(), {2, 4, 6});
  (x * 3).sum().backward();  // + 3
  expect_values(x.grad(), {5, 7, 9});
  x.mutable_grad() = Tensor();
  (x * x * x).sum().backward();  // 3x^2
  expect_values(x.grad(), {3, 12, 27});
}

TEST(Autograd, BroadcastGradientsSumBackToEachShape) {
  Tensor a = ox::tensor({1.0, 2.0, 3.0}, {}).reshape({3, 1}).requires_grad_();
  Tensor b =
      ox::tensor({10.0, 20.0, 30.0, 40.0}, {.dtype = ox::kF64}).reshape({1, 4}).requires_grad_();
  (a * b).sum().backward();  // d/da_i = sum_j b_j = 100; d/db_j = sum_i a_i = 6
  expect_values(a.grad(), {100, 100, 100});
  expect_values(b.grad(), {6, 6, 6, 6});
  EXPECT_EQ(a.grad().shape(), ox::Shape({3, 1}));
}

TEST(Autograd, SecondBackwardNeedsRetainGraph) {
  Tensor x = leaf({0.5, -1.0});
  Tensor y = (x.exp() * x).sum();
  y.backward();
  const ox::Error e = oxtest::caught([&] { y.backward(); });
  EXPECT_EQ(e.kind(), ErrorKind::Value);
  EXPECT_TRUE(oxtest::contains(e, "retain_graph")) << e.what();

  Tensor z = (x.exp() * x).sum();
  x.mutable_grad() = Tensor();
  z.backward({}, /*retain_graph=*/true);
  const Tensor first = x.grad().clone();
  x.mutable_grad() = Tensor();
  z.backward();
  EXPECT_EQ(first.to_vector<double>(), x.grad().to_vector<double>());  // bitwise the same
}

TEST(Autograd, NonScalarOutputsNeedAGradient) {
  Tensor x = leaf({1, 2});
  Tensor y = x * 2;
  EXPECT_EQ(kind_of([&] { y.backward(); }), ErrorKind::Value);
  y.backward(ox::tensor({1.0, -1.0}, {.dtype = ox::kF64}));
  expect_values(x.grad(), {2, -2});
  EXPECT_EQ(kind_of([&] { (x * 2).backward(ox::tensor({1.0}, {.dtype = ox::kF64})); }),
            ErrorKind::Shape);
  EXPECT_EQ(kind_of([] { ox::tensor({1.0}, {.dtype = ox::kF64}).backward(); }), ErrorKind::Value);
}

TEST(Autograd, InPlaceChecks) {
  Tensor x = leaf({1, 2});
  // A leaf that requires grad: refused at once, allowed without recording.
  const ox::Error e = oxtest::caught([&] { x.add_(1); });
  EXPECT_EQ(e.kind(), ErrorKind::Value);
  EXPECT_TRUE(oxtest::contains(e, "add_")) << e.what();
  {
    ox::NoGradGuard no_grad;
    x.add_(1);
  }
  expect_values(x, {2, 3});
  // A saved tensor changed in place: refused at backward, naming the node.
  Tensor h = x * 1;
  Tensor y = h.exp();  // saves its output
  y.mul_(2);
  const ox::Error late = oxtest::caught([&] { y.sum().backward(); });
  EXPECT_EQ(late.kind(), ErrorKind::Value);
  EXPECT_TRUE(oxtest::contains(late, "ExpBackward")) << late.what();
  // In place on a non-leaf that nothing saved: its history continues. d/dx (2x + 1) = 2.
  x.mutable_grad() = Tensor();
  Tensor z = x * 2;
  z.add_(1);
  z.sum().backward();
  expect_values(x.grad(), {2, 2});
  // add saves neither operand, so writing one in place afterwards does not fail its backward.
  Tensor a = leaf({1, 2});
  Tensor p = a * 1;
  Tensor q = p + 2;
  p.mul_(3);
  q.sum().backward();
  expect_values(a.grad(), {1, 1});
}

TEST(Autograd, WritesIntoViewsRewriteTheBaseHistory) {
  const Tensor w = ox::arange(12, {.dtype = ox::kF64}).reshape({3, 4});
  // y = x with columns 1..2 tripled: d sum(y * w) / dx = w there times 3.
  Tensor x = ox::ones({3, 4}, ox::kF64).requires_grad_();
  Tensor y = x * 1;
  y.narrow(1, 1, 2).mul_(3);
  EXPECT_EQ(y.grad_fn()->name(), "CopySlicesBackward");
  (y * w).sum().backward();
  expect_values(x.grad(), {0, 3, 6, 3, 4, 15, 18, 7, 8, 27, 30, 11});
  // A base without history takes a source that has one.
  Tensor a = ox::ones({4}, ox::kF64).requires_grad_();
  Tensor out = ox::zeros({3, 4}, ox::kF64);
  out.select(0, 1).copy_(a * 2);
  EXPECT_TRUE(out.requires_grad());
  (out * w).sum().backward();
  expect_values(a.grad(), {8, 10, 12, 14});
  // fill_ through a view, and the written view's own history (it reads the new base).
  Tensor u = ox::ones({2, 2}, ox::kF64).requires_grad_();
  Tensor v = u * 1;
  Tensor row = v.select(0, 0);
  row.fill_(7);
  row.add_(u.select(0, 1));
  (row * 3).sum().backward();
  expect_values(u.grad(), {0, 0, 3, 3});
  // A view of a leaf that requires grad is refused; a saved base is caught at backward.
  const ox::Error e = oxtest::caught([&] { u.narrow(0, 0, 1).add_(1); });
  EXPECT_EQ(e.kind(), ErrorKind::Value);
  EXPECT_TRUE(oxtest::contains(e, "leaf")) << e.what();
  Tensor leaf_view = ox::zeros({4}, ox::kF64).narrow(0, 1, 2).requires_grad_();
  EXPECT_EQ(kind_of([&] { leaf_view.mul_(2); }), ErrorKind::Value);
  Tensor h = u * 1;
  Tensor s = h.sin();  // saves h
  h.select(0, 0).add_(1);
  const ox::Error late = oxtest::caught([&] { s.sum().backward(); });
  EXPECT_TRUE(oxtest::contains(late, "SinBackward")) << late.what();
  // gradcheck (twice) through in-place writes into strided views.
  const ox::autograd::DifferentiableFn fn = [](const std::vector<Tensor>& in) {
    Tensor t = in[0] * 1;
    t.t().narrow(0, 1, 2).mul_(in[1]);
    t.select(1, 0).copy_(in[1].select(0, 0).sin());
    return std::vector<Tensor>{t};
  };
  ox::Generator gen(5);
  const Tensor p = ox::rand({3, 4}, {.dtype = ox::kF64}, &gen).requires_grad_();
  const Tensor q = ox::rand({2, 3}, {.dtype = ox::kF64}, &gen).requires_grad_();
  EXPECT_TRUE(ox::autograd::gradcheck(fn, {p, q}));
  EXPECT_TRUE(ox::autograd::gradgradcheck(fn, {p, q}));
}

TEST(Autograd, GradModeGuards) {
  Tensor x = leaf({1});
  EXPECT_TRUE(ox::is_grad_enabled());
  {
    ox::NoGradGuard no_grad;
    EXPECT_FALSE(ox::is_grad_enabled());
    EXPECT_FALSE((x * 2).requires_grad());
    {
      ox::EnableGradGuard enable;
      EXPECT_TRUE((x * 2).requires_grad());
    }
    EXPECT_FALSE(ox::is_grad_enabled());
  }
  EXPECT_TRUE(ox::is_grad_enabled());
}

TEST(Autograd, DetachSharesStorageWithoutHistory) {
  Tensor x = leaf({1, 2});
  Tensor d = (x * 2).detach();
  EXPECT_FALSE(d.requires_grad());
  Tensor y = x * 3;
  Tensor yd = y.detach();
  EXPECT_TRUE(yd.is_same_storage(y));
  (x * d).sum().backward();  // d is a constant: gradient 2x
  expect_values(x.grad(), {2, 4});
}

TEST(Autograd, HooksAndRetainedGradients) {
  Tensor x = leaf({1, 2});
  Tensor h = x * 3;
  h.retain_grad();
  const int64_t handle = h.register_hook([](const Tensor& g) { return g * 10; });
  (h * h).sum().backward();  // dh = 2h = (6, 12), hook: (60, 120), dx = 3 * that
  expect_values(h.grad(), {60, 120});
  expect_values(x.grad(), {180, 360});
  int calls = 0;
  x.register_hook([&calls](const Tensor&) {
    ++calls;
    return Tensor();  // observe only
  });
  x.mutable_grad() = Tensor();
  Tensor h2 = x * 3;
  const int64_t h2_handle = h2.register_hook([](const Tensor& g) { return g * 10; });
  h2.remove_hook(h2_handle);
  (h2 * h2).sum().backward();
  expect_values(x.grad(), {18, 36});
  EXPECT_EQ(calls, 1);
  (void)handle;
}

TEST(Autograd, PostAccumulateGradHooksSeeTheSummedGradient) {
  Tensor w = leaf({1, 2});
  std::vector<std::vector<double>> seen;
  const int64_t handle = w.register_post_accumulate_grad_hook(
      [&seen](const Tensor& p) { seen.push_back(p.grad().to(ox::kF64).to_vector<double>()); });
  // Two uses of w: the hook runs once, after both gradients were added up (3 + 2x).
  (w * 3 + w * w).sum().backward();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], (std::vector<double>{5, 7}));
  // A second backward accumulates: the hook sees the running .grad.
  (w * 3).sum().backward();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1], (std::vector<double>{8, 10}));
  // autograd::grad does not touch .grad, so the hook does not run.
  ox::autograd::grad({(w * 2).sum()}, {w});
  EXPECT_EQ(seen.size(), 2u);
  w.remove_hook(handle);
  (w * 3).sum().backward();
  EXPECT_EQ(seen.size(), 2u);
  Tensor nonleaf = w * 2;
  EXPECT_EQ(kind_of([&] { nonleaf.register_post_accumulate_grad_hook([](const Tensor&) {}); }),
            ErrorKind::Value);
  Tensor constant = ox::ones({2});
  EXPECT_EQ(kind_of([&] { constant.register_post_accumulate_grad_hook([](const Tensor&) {}); }),
            ErrorKind::Value);
}

TEST(Autograd, QueuedCallbacksRunOnceTheBackwardPassEnds) {
  Tensor a = leaf({1}), b = leaf({2});
  std::vector<std::string> events;
  a.register_post_accumulate_grad_hook([&](const Tensor&) {
    events.push_back("a");
    ox::autograd::queue_callback([&] {
      // Every leaf has its gradient by now, b's too.
      events.push_back(b.grad().defined() ? "end, b done" : "end, b missing");
      ox::autograd::queue_callback([&] { events.push_back("queued by a callback"); });
    });
  });
  b.register_post_accumulate_grad_hook([&](const Tensor&) { events.push_back("b"); });
  (a * 5 + b * b * 7).sum().backward();
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[2], "end, b done");
  EXPECT_EQ(events[3], "queued by a callback");
  EXPECT_EQ(kind_of([] { ox::autograd::queue_callback([] {}); }), ErrorKind::Value);
}

TEST(Autograd, GradWithCreateGraphGivesSecondDerivatives) {
  Tensor x = leaf({1, 2, -1});
  Tensor y = (x * x * x).sum();
  const std::vector<Tensor> g = ox::autograd::grad({y}, {x}, {}, std::nullopt, true);
  expect_values(g[0], {3, 12, 3});   // 3x^2
  EXPECT_FALSE(x.grad().defined());  // grad() leaves .grad alone
  const std::vector<Tensor> gg = ox::autograd::grad({g[0].sum()}, {x});
  expect_values(gg[0], {6, 12, -6});  // 6x
  Tensor unused = leaf({1});
  EXPECT_EQ(kind_of([&] { ox::autograd::grad({(x * 2).sum()}, {unused}); }), ErrorKind::Value);
  const auto none = ox::autograd::grad({(x * 2).sum()}, {unused}, {}, std::nullopt, false, true);
  EXPECT_FALSE(none[0].defined());
}

struct CubeFn : ox::autograd::Function<CubeFn> {
  static Tensor forward(ox::autograd::AutogradContext* ctx, Tensor x, double scale) {
    ctx->save_for_backward({x});
    ctx->saved_data["scale"] = scale;
    return x * x * x * scale;
  }
  static std::vector<Tensor> backward(ox::autograd::AutogradContext* ctx,
                                      std::vector<Tensor> grads) {
    const Tensor x = ctx->get_saved_variables()[0];
    const double scale = ctx->saved_data["scale"].to_double();
    return {grads[0] * x * x * (3 * scale), Tensor()};
  }
};

TEST(Autograd, CustomFunctionsComposeWithOps) {
  Tensor x = leaf({1, 2});
  Tensor y = CubeFn::apply(x.exp(), 0.5);            // 0.5 e^{3x}: derivative 1.5 e^{3x}
  EXPECT_EQ(y.grad_fn()->name(), "CubeFnBackward");  // the name as written, not mangled
  y.sum().backward();
  expect_values(x.grad(), {1.5 * std::exp(3.0), 1.5 * std::exp(6.0)}, 1e-9);
  const auto r = ox::autograd::gradcheck(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{CubeFn::apply(in[0], 2.0)}; },
      {ox::tensor({0.3, -0.7}, {.dtype = ox::kF64}).requires_grad_()});
  EXPECT_TRUE(r) << r.report;
}

struct WrongFn : ox::autograd::Function<WrongFn> {
  static Tensor forward(ox::autograd::AutogradContext*, Tensor x) { return x * x; }
  static std::vector<Tensor> backward(ox::autograd::AutogradContext*, std::vector<Tensor> g) {
    return {g[0] * 3};  // wrong on purpose: should be 2x
  }
};

TEST(Autograd, GradcheckReportsTheWorstEntry) {
  const auto r = ox::autograd::gradcheck(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{WrongFn::apply(in[0])}; },
      {ox::tensor({0.5, 2.0}, {.dtype = ox::kF64}).requires_grad_()});
  EXPECT_FALSE(r);
  EXPECT_NE(r.report.find("analytical"), std::string::npos) << r.report;
  EXPECT_NE(r.report.find("numerical"), std::string::npos) << r.report;
  EXPECT_EQ(kind_of([] {
              ox::autograd::gradcheck([](const std::vector<Tensor>& in) { return in; },
                                      {ox::tensor({1.f}).requires_grad_()});
            }),
            ErrorKind::DType);
  EXPECT_EQ(kind_of([] {
              ox::autograd::gradcheck(
                  [](const std::vector<Tensor>& in) { return in; },
                  {ox::tensor({1.0}, {.dtype = ox::kF64}).expand({3}).requires_grad_()});
            }),
            ErrorKind::Value);
}

TEST(Autograd, LongChainsNeedNoRecursion) {
  Tensor x = leaf({1.0});
  {
    Tensor y = x;
    for (int i = 0; i < 100000; ++i) y = y * 1.0000001;
    y.sum().backward();
  }  // the graph is destroyed here, node by node without recursion
  expect_values(x.grad(), {std::pow(1.0000001, 100000)}, 1e-9);
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = y + 1.0;
}  // an unused 100,000-node graph goes away too

TEST(Autograd, SoftmaxCompositeMatchesTheHandDerivedGradient) {
  // f(x) = sum(softmax(x W) * y) over rows; df/dx = (s * (y - sum(s * y))) W^T with s the
  // softmax of the row, computed here in f64 loops.
  const std::vector<double> xv = {0.3, -1.2, 0.8, 0.1, 0.5, -0.4};  // 2 x 3
  const std::vector<double> wv = {0.2, -0.5, 1.0, 0.7, 0.3, -0.8, 0.6, 0.1, -0.2, 0.4, 0.9, -0.3};
  const std::vector<double> yv = {1, 0, 0, 1, 0.5, -1, 2, 0};  // 2 x 4
  Tensor x = ox::tensor(xv, {2, 3}).requires_grad_();
  const Tensor w = ox::tensor(wv, {3, 4}), y = ox::tensor(yv, {2, 4});
  (ox::softmax(ox::matmul(x, w), -1) * y).sum().backward();
  std::vector<double> want(6, 0.0);
  for (int r = 0; r < 2; ++r) {
    double z[4], s[4], m = -1e300, total = 0, sy = 0;
    for (int j = 0; j < 4; ++j) {
      z[j] = 0;
      for (int k = 0; k < 3; ++k) z[j] += xv[size_t(r * 3 + k)] * wv[size_t(k * 4 + j)];
      m = std::max(m, z[j]);
    }
    for (int j = 0; j < 4; ++j) total += (s[j] = std::exp(z[j] - m));
    for (int j = 0; j < 4; ++j) sy += (s[j] /= total) * yv[size_t(r * 4 + j)];
    for (int k = 0; k < 3; ++k)
      for (int j = 0; j < 4; ++j)
        want[size_t(r * 3 + k)] += s[j] * (yv[size_t(r * 4 + j)] - sy) * wv[size_t(k * 4 + j)];
  }
  expect_values(x.grad(), want, 1e-12);
}

}  // namespace
