// The everyday LibTorch API on ox::Tensor: bare-integer shapes, TensorOptions' chainable form,
// the default dtype, method forms of ops, operator[], accessors, item() as a Scalar, isclose /
// allclose / equal, custom Functions with trailing undefined gradients. Expected values are
// closed forms.

#include <gtest/gtest.h>

#include <oxmera/oxmera.h>
#include <cmath>

#include "test_util.h"

namespace {

using namespace oxtest;

using ox::Tensor;

std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }

TEST(BareIntegerShapes, AreOneDimShapesAsInLibTorch) {
  EXPECT_EQ(ox::zeros(3).shape(), ox::Shape({3}));
  EXPECT_EQ(ox::ones(size_t{4}).shape(), ox::Shape({4}));
  EXPECT_EQ(ox::randn(2).shape(), ox::Shape({2}));
  EXPECT_EQ(ox::full(int64_t{5}, 2.0).shape(), ox::Shape({5}));
  const Tensor x = ox::arange(6).view({2, 3});
  EXPECT_EQ(x.view(-1).shape(), ox::Shape({6}));
  EXPECT_EQ(x.reshape(6).shape(), ox::Shape({6}));
  EXPECT_EQ(vals(x.flip(-1)), (std::vector<double>{2, 1, 0, 5, 4, 3}));
  EXPECT_EQ(vals(ox::arange(3).repeat(2)), (std::vector<double>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(ox::Shape::filled(2, 7), ox::Shape({7, 7}));
}

TEST(TensorOptionsBuilder, ChainsAndPassesWhereverTensorOptionsDoes) {
  const auto o = ox::dtype(ox::kF64).device(ox::default_device()).requires_grad(true);
  EXPECT_EQ(o.dtype(), ox::kF64);
  EXPECT_TRUE(o.requires_grad());
  const Tensor z = ox::zeros({2, 2}, o);
  EXPECT_EQ(z.dtype(), ox::kF64);
  EXPECT_TRUE(z.requires_grad());
  EXPECT_TRUE(z.is_leaf());
  EXPECT_TRUE(ox::ones(2, ox::requires_grad()).requires_grad());
  EXPECT_TRUE(ox::randn(2, {.requires_grad = true}).requires_grad());
  // An integer tensor cannot require grad: the request is refused, not dropped.
  EXPECT_EQ(kind_of([] { ox::zeros(2, ox::dtype(ox::kI64).requires_grad(true)); }),
            ox::ErrorKind::DType);

  const Tensor i = ox::arange(3);
  const auto io = i.options();
  EXPECT_EQ(io.dtype(), ox::kI64);
  EXPECT_EQ(io.device(), i.device());
  EXPECT_EQ(ox::zeros(2, i.options().dtype(ox::kF32)).dtype(), ox::kF32);
  EXPECT_EQ(ox::TensorOptionsBuilder{}.dtype(), ox::default_dtype());
}

TEST(DefaultDtype, IsF32AndSetsWhatFloatingCreationMakes) {
  EXPECT_EQ(ox::default_dtype(), ox::kF32);
  EXPECT_EQ(ox::tensor({5.5, 3.0}).dtype(), ox::kF32);  // as torch::tensor({5.5, 3.0})
  EXPECT_EQ(ox::tensor({{1.5}, {2.5}}).dtype(), ox::kF32);
  EXPECT_EQ(ox::tensor(std::vector<double>{5.5}).dtype(), ox::kF64);  // the C++ type decides
  EXPECT_EQ(ox::tensor({1, 2}).dtype(), ox::kI64);
  EXPECT_EQ(ox::tensor({5.5}, {.dtype = ox::kF64}).dtype(), ox::kF64);

  ox::set_default_dtype(ox::kF64);
  EXPECT_EQ(ox::zeros(2).dtype(), ox::kF64);
  EXPECT_EQ(ox::rand(2).dtype(), ox::kF64);
  EXPECT_EQ(ox::tensor({0.1}).dtype(), ox::kF64);
  EXPECT_EQ(ox::tensor({0.1}).item<double>(), 0.1);  // not rounded through f32
  EXPECT_EQ(ox::full(1, 0.5).dtype(), ox::kF64);
  EXPECT_EQ(ox::arange(0.0, 1.0, 0.5).dtype(), ox::kF64);
  EXPECT_EQ(ox::arange(3).dtype(), ox::kI64);
  EXPECT_EQ(kind_of([] { ox::set_default_dtype(ox::kI32); }), ox::ErrorKind::DType);
  EXPECT_EQ(ox::default_dtype(), ox::kF64);
  ox::set_default_dtype(ox::kF32);
  EXPECT_EQ(ox::zeros(2).dtype(), ox::kF32);
}

TEST(MethodForms, EqualTheFreeFunctions) {
  const Tensor a = ox::tensor({1.0f, 2.0f, 3.0f});
  const Tensor b = ox::tensor({3.0f, 2.0f, 1.0f});
  EXPECT_EQ(a.eq(b).to_vector<bool>(), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(a.ne(2).to_vector<bool>(), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(a.lt(b).to_vector<bool>(), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(a.le(2).to_vector<bool>(), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(a.gt(b).to_vector<bool>(), (std::vector<bool>{false, false, true}));
  EXPECT_EQ(a.ge(2).to_vector<bool>(), (std::vector<bool>{false, true, true}));
  EXPECT_EQ(vals(a.add(b, 2)), (std::vector<double>{7, 6, 5}));
  EXPECT_EQ(vals(a.add(1)), (std::vector<double>{2, 3, 4}));
  EXPECT_EQ(vals(a.sub(b)), (std::vector<double>{-2, 0, 2}));
  EXPECT_EQ(vals(a.mul(b)), (std::vector<double>{3, 4, 3}));
  EXPECT_EQ(vals(a.div(2)), (std::vector<double>{0.5, 1, 1.5}));
  EXPECT_EQ(vals(a.clamp_min(2)), (std::vector<double>{2, 2, 3}));
  EXPECT_EQ(vals(a.clamp_max(2)), (std::vector<double>{1, 2, 2}));
  EXPECT_EQ(vals(a.reciprocal()), (std::vector<double>{1, 0.5, double(1.0f / 3.0f)}));
  const std::vector<double> s = vals(a.softmax(0));
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(s[size_t(i)], std::exp(i + 1.0) / z, 1e-6);
  const std::vector<double> ls = vals(a.log_softmax(-1));
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(ls[size_t(i)], i + 1.0 - std::log(z), 1e-6);

  const Tensor x = ox::arange(10);
  EXPECT_EQ(x.chunk(3).size(), 3u);
  EXPECT_EQ(vals(x.chunk(3)[2]), (std::vector<double>{8, 9}));
  EXPECT_EQ(vals(x.split(4)[1]), (std::vector<double>{4, 5, 6, 7}));
  EXPECT_EQ(vals(x.split(std::vector<int64_t>{1, 9})[0]), (std::vector<double>{0}));
  EXPECT_EQ(x.scalar_type(), ox::kI64);
  EXPECT_EQ(x.is_cuda(), x.device().is_cuda());
  EXPECT_EQ(x.is_cpu(), x.device().is_cpu());

  EXPECT_EQ(vals(x.index_select(0, ox::tensor({9, 0}))), (std::vector<double>{9, 0}));
  EXPECT_EQ(x.type_as(a).dtype(), ox::kF32);
  EXPECT_TRUE(a.is_floating_point());
  EXPECT_FALSE(x.is_floating_point());
  EXPECT_EQ(x.view({2, 5}).ndimension(), 2);
  const Tensor m = ox::arange(8, {.dtype = ox::kF32}).view({2, 2, 2});
  // Batch 0: [[0, 1], [2, 3]]^2 = [[2, 3], [6, 11]].
  EXPECT_EQ(vals(m.bmm(m)[0]), (std::vector<double>{2, 3, 6, 11}));
  Tensor leaf = ox::ones(2, {.requires_grad = true});
  const Tensor d = (leaf * 2).data();  // no history, same values
  EXPECT_FALSE(d.requires_grad());
  EXPECT_EQ(vals(d), (std::vector<double>{2, 2}));
  EXPECT_FALSE(leaf.set_requires_grad(false).requires_grad());

  const Tensor n = x.new_zeros({2, 2});
  EXPECT_EQ(n.dtype(), ox::kI64);
  EXPECT_EQ(n.device(), x.device());
  EXPECT_EQ(vals(a.new_full(2, 7)), (std::vector<double>{7, 7}));
  EXPECT_EQ(a.new_ones(1, {.dtype = ox::kF64}).dtype(), ox::kF64);
  EXPECT_EQ(a.new_empty({0, 3}).shape(), ox::Shape({0, 3}));
}

TEST(RandomLike, TakesTheShapeDtypeAndDeviceOfItsModel) {
  const Tensor like = ox::zeros({3, 2}, {.dtype = ox::kF64});
  ox::manual_seed(7);
  const Tensor r = ox::randn_like(like);
  EXPECT_EQ(r.shape(), like.shape());
  EXPECT_EQ(r.dtype(), ox::kF64);
  EXPECT_EQ(r.device(), like.device());
  ox::manual_seed(7);
  EXPECT_TRUE(ox::equal(r, ox::randn({3, 2}, {.dtype = ox::kF64})));  // the same draw
  const Tensor u = ox::rand_like(like, {.dtype = ox::kF32});
  EXPECT_EQ(u.dtype(), ox::kF32);
  EXPECT_TRUE(u.ge(0).all().item<bool>() && u.lt(1).all().item<bool>());
  const Tensor i = ox::randint_like(ox::zeros(100, {.dtype = ox::kI32}), 3, 5);
  EXPECT_EQ(i.dtype(), ox::kI32);
  EXPECT_TRUE(i.ge(3).all().item<bool>() && i.lt(5).all().item<bool>());
}

TEST(MethodForms, InPlaceUnaryWritesAndRecordsItsGradient) {
  Tensor x = ox::tensor({-1.0, 0.5, 2.0}, {.dtype = ox::kF64});
  Tensor y = x.clone();
  y.exp_();
  for (size_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(vals(y)[i], std::exp(vals(x)[i]));
  y = x.clone();
  EXPECT_EQ(vals(y.relu_()), (std::vector<double>{0, 0.5, 2}));
  EXPECT_EQ(vals(x.clone().abs_()), (std::vector<double>{1, 0.5, 2}));
  EXPECT_EQ(vals(x.clone().pow_(2)), (std::vector<double>{1, 0.25, 4}));
  EXPECT_EQ(vals(x.clone().clamp_min_(0)), (std::vector<double>{0, 0.5, 2}));
  EXPECT_EQ(vals(x.clone().clamp_max_(0)), (std::vector<double>{-1, 0, 0}));
  EXPECT_EQ(vals(x.clone().neg_().sign_()), (std::vector<double>{1, -1, -1}));
  // An integer tensor keeps its dtype: the f32 result of sqrt cannot be written back.
  Tensor ints = ox::tensor({4, 9});
  EXPECT_EQ(kind_of([&] { ints.sqrt_(); }), ox::ErrorKind::DType);

  // Through autograd: d/dx sum(exp(2x)) = 2 exp(2x), with the in-place exp on a non-leaf.
  Tensor leaf = ox::tensor({0.25, -0.5}, {.dtype = ox::kF64}).requires_grad_();
  Tensor h = leaf * 2;
  h.exp_();
  h.sum().backward();
  const std::vector<double> g = vals(leaf.grad());
  EXPECT_NEAR(g[0], 2 * std::exp(0.5), 1e-12);
  EXPECT_NEAR(g[1], 2 * std::exp(-1.0), 1e-12);
  // Sigmoid in place on a non-leaf: d/dx sigmoid(3x) = 3 s (1 - s).
  leaf.mutable_grad() = Tensor();
  Tensor s = leaf * 3;
  s.sigmoid_();
  s.sum().backward();
  const double s0 = 1 / (1 + std::exp(-0.75));
  EXPECT_NEAR(vals(leaf.grad())[0], 3 * s0 * (1 - s0), 1e-12);
  // In place on a leaf that requires grad is refused, as in PyTorch.
  EXPECT_EQ(kind_of([&] { leaf.tanh_(); }), ox::ErrorKind::Value);
}

TEST(Subscript, SelectsAlongDimZeroAndWritesThroughTemporaries) {
  Tensor x = ox::arange(12, {.dtype = ox::kF32}).view({3, 4});
  EXPECT_EQ(x[1][2].item<float>(), 6.0f);
  EXPECT_EQ(x[-1].shape(), ox::Shape({4}));
  x[0] = 5;  // fill_ into the view
  EXPECT_EQ(vals(x[0]), (std::vector<double>{5, 5, 5, 5}));
  x[1][3] = 100;
  EXPECT_EQ(x[1][3].item<float>(), 100.0f);
  x[2] = ox::tensor({1.0f, 2.0f, 3.0f, 4.0f});  // copy_ into the view
  EXPECT_EQ(vals(x[2]), (std::vector<double>{1, 2, 3, 4}));
  // A named tensor rebinds on assignment: the base is untouched.
  Tensor row = x[0];
  row = ox::zeros(4);
  EXPECT_EQ(vals(x[0]), (std::vector<double>{5, 5, 5, 5}));
  // A tensor subscript indexes (integers) or masks (bools).
  EXPECT_EQ(vals(x[ox::tensor({2, 0})][0]), (std::vector<double>{1, 2, 3, 4}));
  const Tensor v = ox::tensor({1.0f, -2.0f, 3.0f});
  EXPECT_EQ(vals(v[v.gt(0)]), (std::vector<double>{1, 3}));
  EXPECT_EQ(kind_of([&] { (void)x[3]; }), ox::ErrorKind::Index);
}

TEST(Accessor, ReadsAndWritesThroughStrides) {
  Tensor base = ox::arange(6, {.dtype = ox::kF32, .device = ox::Device::cpu()}).view({2, 3});
  const Tensor t = base.t();  // [3, 2], strides (1, 3)
  auto a = t.accessor<float, 2>();
  EXPECT_EQ(a.size(0), 3);
  EXPECT_EQ(a.size(1), 2);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 2; ++j) EXPECT_EQ(a[i][j], float(j * 3 + i));
  a[2][1] = -1;
  EXPECT_EQ(base[1][2].item<float>(), -1.0f);
  const Tensor narrowed = base.narrow(1, 1, 2);  // a storage offset
  EXPECT_EQ((narrowed.accessor<float, 2>()[0][0]), 1.0f);
  EXPECT_EQ(kind_of([&] { (void)base.accessor<double, 2>(); }), ox::ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { (void)base.accessor<float, 1>(); }), ox::ErrorKind::Shape);
}

TEST(Item, IsAScalarOfTheTensorsKind) {
  const ox::Scalar f = ox::tensor({2.5f}).item();
  EXPECT_TRUE(f.isFloatingPoint());
  EXPECT_EQ(f.toFloat(), 2.5f);
  EXPECT_EQ(f.toLong(), 2);
  const ox::Scalar i = ox::tensor({-7}).sum().item();
  EXPECT_TRUE(i.isIntegral());
  EXPECT_EQ(i.toInt(), -7);
  EXPECT_EQ(i.toDouble(), -7.0);
  EXPECT_EQ(i.to<int16_t>(), -7);
  const ox::Scalar b = ox::tensor({true}).item();
  EXPECT_TRUE(b.isBoolean());
  EXPECT_TRUE(b.toBool());
  EXPECT_EQ(kind_of([] { ox::tensor({1.0f, 2.0f}).item(); }), ox::ErrorKind::Value);
}

TEST(Closeness, IsCloseAllCloseAndEqualFollowPyTorch) {
  const float inf = INFINITY;
  const Tensor a = ox::tensor({1.0f, 100.0f, inf, -inf, NAN, 0.0f});
  const Tensor b = ox::tensor({1.000001f, 100.001f, inf, inf, NAN, 1e-9f});
  // |a - b| <= 1e-8 + 1e-5 |b|: 1e-6 <= 1.00001e-5 yes; 1e-3 <= 1.00001e-3 yes (in f32, the
  // difference is 0.0009994507); inf == inf; -inf vs inf no; NaN no; 1e-9 <= 1e-8 yes.
  EXPECT_EQ(ox::isclose(a, b).to_vector<bool>(),
            (std::vector<bool>{true, true, true, false, false, true}));
  EXPECT_EQ(ox::isclose(a, b, 1e-5, 1e-8, true).to_vector<bool>(),
            (std::vector<bool>{true, true, true, false, true, true}));
  EXPECT_EQ(ox::isclose(a, b, 0, 0).to_vector<bool>(),
            (std::vector<bool>{false, false, true, false, false, false}));
  EXPECT_FALSE(a.allclose(b));
  EXPECT_TRUE(a.narrow(0, 0, 3).allclose(b.narrow(0, 0, 3)));
  EXPECT_TRUE(ox::allclose(ox::ones({2, 3}), ox::ones(3)));  // broadcasts
  // Integers compare in f64, without overflow in a - b.
  const Tensor big = ox::tensor({INT64_MAX, INT64_MIN});
  EXPECT_EQ(ox::isclose(big, ox::tensor({INT64_MIN, INT64_MIN})).to_vector<bool>(),
            (std::vector<bool>{false, true}));
  EXPECT_TRUE(ox::isclose(ox::tensor({100}), ox::tensor({101}), 0.01, 0).item<bool>());
  EXPECT_EQ(kind_of([&] { ox::isclose(a, a.to(ox::kF64)); }), ox::ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { ox::isclose(a, a, -1); }), ox::ErrorKind::Value);

  EXPECT_TRUE(ox::equal(ox::arange(4), ox::arange(4)));
  EXPECT_FALSE(ox::arange(4).equal(ox::arange(4).flip(0)));
  EXPECT_FALSE(ox::equal(ox::ones(3), ox::ones({1, 3})));  // no broadcasting
  EXPECT_TRUE(ox::equal(ox::zeros({0, 2}), ox::zeros({0, 2})));
}

// LibTorch's LinearFunction: apply(x, w) without the defaulted bias, backward returning an
// undefined third gradient.
struct LinearNoBias : ox::autograd::Function<LinearNoBias> {
  static Tensor forward(ox::autograd::AutogradContext* ctx, Tensor x, Tensor w) {
    ctx->save_for_backward({x, w});
    return ox::matmul(x, w.t());
  }
  static std::vector<Tensor> backward(ox::autograd::AutogradContext* ctx, std::vector<Tensor> g) {
    const auto saved = ctx->get_saved_variables();
    return {ox::matmul(g[0], saved[1]), ox::matmul(g[0].t(), saved[0]), Tensor()};
  }
};
struct ExtraDefinedGradient : ox::autograd::Function<ExtraDefinedGradient> {
  static Tensor forward(ox::autograd::AutogradContext*, Tensor x) { return x * 1; }
  static std::vector<Tensor> backward(ox::autograd::AutogradContext*, std::vector<Tensor> g) {
    return {g[0], g[0]};
  }
};

TEST(CustomFunction, TrailingUndefinedGradientsAreDroppedAsInLibTorch) {
  const Tensor x = ox::tensor({{1.0, 2.0}}, {.dtype = ox::kF64}).requires_grad_();
  const Tensor w = ox::tensor({{3.0, 4.0}}, {.dtype = ox::kF64}).requires_grad_();
  LinearNoBias::apply(x, w).sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{3, 4}));
  EXPECT_EQ(vals(w.grad()), (std::vector<double>{1, 2}));
  const Tensor y = ox::ones(2, {.dtype = ox::kF64, .requires_grad = true});
  const ox::Error e = caught([&] { ExtraDefinedGradient::apply(y).sum().backward(); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Value);
  EXPECT_TRUE(contains(e, "backward returned 2 gradients for 1 forward arguments")) << e.what();
}

TEST(DeviceFromType, IsDeviceZeroOfIt) {
  const ox::Device d = ox::DeviceType::CUDA;
  EXPECT_EQ(d, ox::Device::cuda(0));
  EXPECT_EQ(ox::Device(ox::DeviceType::CPU), ox::Device::cpu());
}

}  // namespace
