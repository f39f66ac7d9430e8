// Layers against plain f64 loops written here: Linear, Bilinear, Conv, pooling wiring, norms,
// BatchNorm's running statistics, dropout, embedding, activations.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <sstream>

#include "test_util.h"

namespace {

using namespace ox;
using oxtest::kind_of;

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double atol,
                  double rtol, const std::string& what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], atol + rtol * std::abs(want[i])) << what << " at " << i;
}

// A deterministic tensor of the given shape with values in [-1, 1).
Tensor sample(const Shape& shape, DType dt = kF32, uint64_t salt = 1) {
  std::vector<double> v(static_cast<size_t>(oxtest::product(shape.vec())));
  for (size_t i = 0; i < v.size(); ++i) v[i] = oxtest::uniform_at(int64_t(i), salt, -1, 1);
  return tensor(v, shape).to(dt);
}

std::string printed(const nn::Module& m) {
  std::ostringstream os;
  os << m;
  return os.str();
}

TEST(Linear, MatchesLoopForAnyLeadingDims) {
  for (DType dt : {kF32, kF64}) {
    nn::Linear fc(3, 2);
    fc->to(dt);
    const Tensor x = sample({2, 2, 3}, dt);
    const std::vector<double> w = values(fc->weight), b = values(fc->bias), xs = values(x);
    std::vector<double> want;
    for (int r = 0; r < 4; ++r)
      for (int o = 0; o < 2; ++o) {
        double s = b[o];
        for (int i = 0; i < 3; ++i) s += xs[r * 3 + i] * w[o * 3 + i];
        want.push_back(s);
      }
    const Tensor y = fc(x);
    EXPECT_EQ(y.shape(), Shape({2, 2, 2}));
    expect_close(values(y), want, dt == kF32 ? 1e-6 : 1e-12, 1e-6);
    // Strided input gives the same result.
    const Tensor xt = x.transpose(0, 1).contiguous().transpose(0, 1);
    expect_close(values(fc(xt)), want, dt == kF32 ? 1e-6 : 1e-12, 1e-6);
  }
  nn::Linear no_bias(3, 2, {.bias = false});
  EXPECT_FALSE(no_bias->bias.defined());
  EXPECT_EQ(no_bias->parameters().size(), 1u);
  EXPECT_EQ(no_bias(zeros({0, 3})).shape(), Shape({0, 2}));
  EXPECT_EQ(kind_of([&] { no_bias(zeros({2, 4})); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { no_bias(zeros({2, 3}, {.dtype = kI64})); }), ErrorKind::DType);
  EXPECT_EQ(printed(*nn::Linear(3, 2)), "Linear(in_features=3, out_features=2, bias=true)");
}

TEST(Linear, DefaultInitIsPyTorchs) {
  manual_seed(3);
  nn::Linear fc(400, 300);
  const double bound = 1.0 / 20.0;  // 1 / sqrt(in_features)
  const std::vector<double> w = values(fc->weight), b = values(fc->bias);
  double sum = 0, sq = 0;
  for (double v : w) {
    ASSERT_LE(std::abs(v), bound);
    sum += v;
    sq += v * v;
  }
  const double n = static_cast<double>(w.size());
  EXPECT_NEAR(sum / n, 0.0, 5 * bound / std::sqrt(3 * n));
  EXPECT_NEAR(sq / n, bound * bound / 3, 0.02 * bound * bound);  // U(-b, b) has variance b²/3
  for (double v : b) ASSERT_LE(std::abs(v), bound);
}

TEST(Bilinear, MatchesLoop) {
  nn::Bilinear bl(2, 3, 2);
  const Tensor x1 = sample({4, 2}, kF32, 5), x2 = sample({4, 3}, kF32, 6);
  const std::vector<double> w = values(bl->weight), b = values(bl->bias), a = values(x1),
                            c = values(x2);
  std::vector<double> want;
  for (int n = 0; n < 4; ++n)
    for (int o = 0; o < 2; ++o) {
      double s = b[o];
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j) s += a[n * 2 + i] * w[(o * 2 + i) * 3 + j] * c[n * 3 + j];
      want.push_back(s);
    }
  expect_close(values(bl(x1, x2)), want, 1e-6, 1e-5);
  EXPECT_EQ(kind_of([&] { bl(x1, sample({3, 3})); }), ErrorKind::Shape);
  for (double v : values(bl->weight)) ASSERT_LE(std::abs(v), 1 / std::sqrt(2.0));
}

TEST(Conv2d, MatchesLoopWithStridePaddingGroups) {
  nn::Conv2d conv(4, 2, {3, 2}, {.stride = {2, 1}, .padding = 1, .groups = 2});
  EXPECT_EQ(conv->weight.shape(), Shape({2, 2, 3, 2}));
  conv->to(kF64);
  const Tensor x = sample({1, 4, 5, 4}, kF64, 9);
  const std::vector<double> w = values(conv->weight), b = values(conv->bias), xs = values(x);
  const int64_t ho = (5 + 2 - 3) / 2 + 1, wo = (4 + 2 - 2) / 1 + 1;
  std::vector<double> want;
  for (int o = 0; o < 2; ++o)
    for (int i = 0; i < ho; ++i)
      for (int j = 0; j < wo; ++j) {
        double s = b[o];
        for (int c = 0; c < 2; ++c)
          for (int kh = 0; kh < 3; ++kh)
            for (int kw = 0; kw < 2; ++kw) {
              const int h = i * 2 - 1 + kh, ww = j - 1 + kw;
              if (h < 0 || h >= 5 || ww < 0 || ww >= 4) continue;
              s += xs[((o * 2 + c) * 5 + h) * 4 + ww] * w[((o * 2 + c) * 3 + kh) * 2 + kw];
            }
        want.push_back(s);
      }
  const Tensor y = conv(x);
  EXPECT_EQ(y.shape(), Shape({1, 2, ho, wo}));
  expect_close(values(y), want, 1e-12, 1e-12);
  EXPECT_EQ(printed(*conv),
            "Conv2d(4, 2, kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), groups=2)");
  EXPECT_EQ(kind_of([&] { nn::Conv2d(3, 2, 3, {.groups = 2}); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { conv(sample({1, 4, 5, 4})); }), ErrorKind::DType);
  nn::Conv2d same(1, 1, 3, {.padding = "same", .bias = false});
  EXPECT_EQ(same(zeros({1, 1, 7, 5})).shape(), Shape({1, 1, 7, 5}));
  // Default init: kaiming_uniform_(a = √5), bound 1 / √fan_in with fan_in = 2 · 3 · 2.
  for (double v : values(nn::Conv2d(4, 8, {3, 2}, {.groups = 2})->weight))
    ASSERT_LE(std::abs(v), 1 / std::sqrt(12.0));
}

TEST(Conv1dAndTranspose, WireThroughToTheOps) {
  nn::Conv1d c1(2, 3, 3, {.stride = 2, .padding = 1});
  const Tensor x = sample({2, 2, 9});
  EXPECT_EQ(values(c1(x)), values(conv1d(x, c1->weight, c1->bias, {.stride = 2, .padding = 1})));
  nn::ConvTranspose2d ct(2, 4, 3, {.stride = 2, .padding = 1, .output_padding = 1});
  EXPECT_EQ(ct->weight.shape(), Shape({2, 4, 3, 3}));
  const Tensor z = sample({1, 2, 4, 4});
  const Tensor y = ct(z);
  EXPECT_EQ(y.shape(), Shape({1, 4, 8, 8}));  // (4 - 1) * 2 - 2 + 3 + 1
  EXPECT_EQ(values(y), values(conv_transpose2d(z, ct->weight, ct->bias,
                                               {.stride = 2, .padding = 1, .output_padding = 1})));
  // ConvTranspose's fan_in is weight.size(1) × kernel area = 4 · 9.
  for (double v : values(ct->weight)) ASSERT_LE(std::abs(v), 1 / 6.0);
}

TEST(Pooling, ModulesAreTheirOps) {
  const Tensor x = sample({1, 2, 6, 6});
  EXPECT_EQ(values(nn::MaxPool2d(2)(x)), values(max_pool2d(x, 2)));
  EXPECT_EQ(values(nn::MaxPool2d(3, {.stride = 2, .padding = 1})(x)),
            values(max_pool2d(x, 3, {.stride = 2, .padding = 1})));
  EXPECT_EQ(values(nn::AvgPool2d(2)(x)), values(avg_pool2d(x, 2)));
  const Tensor g = nn::AdaptiveAvgPool2d(1)(x);
  EXPECT_EQ(g.shape(), Shape({1, 2, 1, 1}));
  expect_close(values(g), values(x.mean({2, 3})), 1e-7, 1e-6);
  EXPECT_EQ(printed(*nn::MaxPool2d(2)),
            "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=false)");
}

// Normalizes each row of `rows` x `n` values in f64: (x - mean) / sqrt(var + eps).
std::vector<double> normalized_rows(const std::vector<double>& x, int64_t rows, int64_t n,
                                    double eps) {
  std::vector<double> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += x[r * n + i];
    mean /= n;
    for (int64_t i = 0; i < n; ++i) var += (x[r * n + i] - mean) * (x[r * n + i] - mean);
    var /= n;
    for (int64_t i = 0; i < n; ++i) out[r * n + i] = (x[r * n + i] - mean) / std::sqrt(var + eps);
  }
  return out;
}

TEST(Norms, LayerNormRmsNormGroupNorm) {
  const Tensor x = sample({3, 4}, kF64);
  nn::LayerNorm ln(Shape{4});
  ln->to(kF64);
  {
    NoGradGuard g;
    ln->weight.copy_(tensor({1.0, 2.0, -1.0, 0.5}, {.dtype = ox::kF64}));
    ln->bias.copy_(tensor({0.0, 1.0, 0.0, -1.0}, {.dtype = ox::kF64}));
  }
  std::vector<double> want = normalized_rows(values(x), 3, 4, 1e-5);
  const double w[] = {1, 2, -1, 0.5}, b[] = {0, 1, 0, -1};
  for (size_t i = 0; i < want.size(); ++i) want[i] = want[i] * w[i % 4] + b[i % 4];
  expect_close(values(ln(x)), want, 1e-12, 1e-10);

  nn::RMSNorm rms(Shape{4}, {.eps = 1e-6});
  rms->to(kF64);
  std::vector<double> xs = values(x), want_rms(xs.size());
  for (int r = 0; r < 3; ++r) {
    double ms = 0;
    for (int i = 0; i < 4; ++i) ms += xs[r * 4 + i] * xs[r * 4 + i];
    for (int i = 0; i < 4; ++i) want_rms[r * 4 + i] = xs[r * 4 + i] / std::sqrt(ms / 4 + 1e-6);
  }
  expect_close(values(rms(x)), want_rms, 1e-12, 1e-10);

  // GroupNorm: 2 groups of 2 channels over [2, 4, 3] — each (sample, group) is one row of 6.
  nn::GroupNorm gn(2, 4);
  gn->to(kF64);
  {
    NoGradGuard g;
    gn->weight.copy_(tensor({1.0, 2.0, 3.0, 4.0}, {.dtype = ox::kF64}));
    gn->bias.copy_(tensor({0.5, 0.0, -0.5, 0.0}, {.dtype = ox::kF64}));
  }
  const Tensor xg = sample({2, 4, 3}, kF64, 4);
  std::vector<double> want_g = normalized_rows(values(xg), 4, 6, 1e-5);
  for (size_t i = 0; i < want_g.size(); ++i) {
    const size_t c = (i / 3) % 4;
    want_g[i] = want_g[i] * (1.0 + c) + (c == 0 ? 0.5 : c == 2 ? -0.5 : 0.0);
  }
  expect_close(values(gn(xg)), want_g, 1e-12, 1e-10);
  EXPECT_EQ(kind_of([&] { nn::GroupNorm(3, 4); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { gn(sample({2, 3, 3}, kF64)); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ln(sample({3, 4}, kF32)); }), ErrorKind::DType);
}

TEST(BatchNorm, TrainingStatisticsAndRunningUpdate) {
  nn::BatchNorm2d bn(2);
  bn->to(kF64);
  const Tensor x = sample({3, 2, 2, 2}, kF64, 11);
  const std::vector<double> xs = values(x);
  // Per channel: the 12 values of 3 samples × 2 × 2.
  std::vector<double> mean(2, 0), var(2, 0);
  const auto at = [&](int n, int c, int i) { return xs[(n * 2 + c) * 4 + i]; };
  for (int c = 0; c < 2; ++c) {
    for (int n = 0; n < 3; ++n)
      for (int i = 0; i < 4; ++i) mean[c] += at(n, c, i) / 12;
    for (int n = 0; n < 3; ++n)
      for (int i = 0; i < 4; ++i) var[c] += (at(n, c, i) - mean[c]) * (at(n, c, i) - mean[c]) / 12;
  }
  std::vector<double> want;
  for (int n = 0; n < 3; ++n)
    for (int c = 0; c < 2; ++c)
      for (int i = 0; i < 4; ++i)
        want.push_back((at(n, c, i) - mean[c]) / std::sqrt(var[c] + 1e-5));
  expect_close(values(bn(x)), want, 1e-12, 1e-10, "train");
  // running = 0.9 · initial + 0.1 · batch, with the unbiased variance (n / (n - 1)).
  expect_close(values(bn->running_mean), {0.1 * mean[0], 0.1 * mean[1]}, 1e-14, 1e-12);
  expect_close(values(bn->running_var),
               {0.9 + 0.1 * var[0] * 12 / 11, 0.9 + 0.1 * var[1] * 12 / 11}, 1e-14, 1e-12);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);

  // Eval mode normalizes with the running statistics and changes nothing.
  bn->eval();
  const std::vector<double> rm = values(bn->running_mean), rv = values(bn->running_var);
  std::vector<double> want_eval;
  for (int n = 0; n < 3; ++n)
    for (int c = 0; c < 2; ++c)
      for (int i = 0; i < 4; ++i)
        want_eval.push_back((at(n, c, i) - rm[c]) / std::sqrt(rv[c] + 1e-5));
  expect_close(values(bn(x)), want_eval, 1e-12, 1e-10, "eval");
  EXPECT_EQ(values(bn->running_mean), rm);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);

  // momentum = nullopt: the cumulative average of the batch means.
  nn::BatchNorm1d avg(2, {.momentum = std::nullopt});
  avg->to(kF64);
  const Tensor b1 = tensor({{1.0, 2.0}, {3.0, 6.0}}, {.dtype = ox::kF64}),
               b2 = tensor({{5.0, 0.0}, {7.0, 2.0}}, {.dtype = ox::kF64});
  avg(b1);
  avg(b2);
  expect_close(values(avg->running_mean), {(2.0 + 6.0) / 2, (4.0 + 1.0) / 2}, 1e-14, 1e-12);
  // Without running statistics the batch statistics are used in eval mode too.
  nn::BatchNorm1d untracked(2, {.affine = false, .track_running_stats = false});
  untracked->eval();
  EXPECT_FALSE(untracked->running_mean.defined());
  EXPECT_EQ(untracked->state_dict().size(), 0u);
  expect_close(values(untracked(b1.to(kF32))), {-1, -1, 1, 1}, 1e-3, 1e-3);
  EXPECT_EQ(kind_of([&] { bn(sample({3, 2, 2}, kF64)); }), ErrorKind::Shape);
  bn->train();
  EXPECT_EQ(kind_of([&] { bn(sample({1, 2, 1, 1}, kF64)); }), ErrorKind::Value);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);  // a refused batch is not counted
  EXPECT_EQ(printed(*bn),
            "BatchNorm2d(2, eps=1e-05, momentum=0.1, affine=true, track_running_stats=true)");
}

TEST(Dropout, TrainAndEval) {
  manual_seed(5);
  nn::Dropout drop(0.25);
  const Tensor x = ones({100000});
  const std::vector<double> y = values(drop(x));
  int64_t zeros_seen = 0;
  for (double v : y) {
    if (v == 0)
      ++zeros_seen;
    else
      ASSERT_NEAR(v, 1 / 0.75, 1e-6);
  }
  EXPECT_NEAR(double(zeros_seen) / 100000, 0.25, 0.01);
  drop->eval();
  EXPECT_EQ(values(drop(x)), values(x));

  nn::Dropout2d drop2d(0.5);
  const std::vector<double> z = values(drop2d(ones({4, 8, 3, 3})));
  for (int plane = 0; plane < 32; ++plane)
    for (int i = 1; i < 9; ++i) ASSERT_EQ(z[plane * 9 + i], z[plane * 9]) << "plane " << plane;
  drop2d->eval();
  EXPECT_EQ(values(drop2d(ones({2, 3, 2}))), std::vector<double>(12, 1.0));
  EXPECT_EQ(kind_of([&] { nn::Dropout(1.5); }), ErrorKind::Value);
}

TEST(Embedding, LookupPaddingAndMaxNorm) {
  manual_seed(2);
  nn::Embedding emb(5, 3, {.padding_idx = -1});
  EXPECT_EQ(*emb->options.padding_idx, 4);
  EXPECT_EQ(values(emb->weight.select(0, 4)), std::vector<double>(3, 0.0));
  const Tensor idx = tensor(std::vector<int64_t>{1, 4, 1, 0}).reshape({2, 2});
  const Tensor y = emb(idx);
  EXPECT_EQ(y.shape(), Shape({2, 2, 3}));
  EXPECT_EQ(values(y.select(0, 0).select(0, 0)), values(emb->weight.select(0, 1)));
  y.sum().backward();
  const std::vector<double> g = values(emb->weight.grad());
  EXPECT_EQ(std::vector<double>(g.begin() + 3, g.begin() + 6), std::vector<double>(3, 2.0));
  EXPECT_EQ(std::vector<double>(g.begin() + 12, g.end()), std::vector<double>(3, 0.0));

  nn::Embedding capped(3, 2, {.max_norm = 1.0});
  {
    NoGradGuard guard;
    capped->weight.copy_(tensor({{3.f, 4.f}, {0.3f, 0.4f}, {6.f, 8.f}}));
  }
  capped(tensor(std::vector<int64_t>{0, 1}));
  // Row 0 (norm 5) is scaled to norm 1; row 1 is within; row 2 was not looked up.
  expect_close(values(capped->weight), {0.6, 0.8, 0.3, 0.4, 6, 8}, 1e-6, 1e-6);
  EXPECT_EQ(kind_of([&] { nn::Embedding(3, 2, {.padding_idx = 3}); }), ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { emb(tensor(std::vector<int64_t>{5})); }), ErrorKind::Index);
}

TEST(Activations, ModulesMatchClosedForms) {
  const std::vector<double> xs = {-2.0, -0.5, 0.0, 0.5, 3.0};
  const Tensor x = tensor(xs).to(kF64);
  const auto each = [&](auto f) {
    std::vector<double> out;
    for (double v : xs) out.push_back(f(v));
    return out;
  };
  expect_close(values(nn::ReLU()(x)), each([](double v) { return std::max(v, 0.0); }), 0, 0);
  expect_close(values(nn::LeakyReLU(0.2)(x)), each([](double v) { return v > 0 ? v : 0.2 * v; }),
               1e-15, 1e-15);
  expect_close(values(nn::ELU(0.5)(x)),
               each([](double v) { return v > 0 ? v : 0.5 * std::expm1(v); }), 1e-15, 1e-14);
  expect_close(values(nn::GELU()(x)),
               each([](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }), 1e-15,
               1e-13);
  expect_close(values(nn::GELU("tanh")(x)), each([](double v) {
                 return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
               }),
               1e-15, 1e-13);
  expect_close(values(nn::SiLU()(x)), each([](double v) { return v / (1 + std::exp(-v)); }), 1e-15,
               1e-13);
  expect_close(values(nn::Mish()(x)),
               each([](double v) { return v * std::tanh(std::log1p(std::exp(v))); }), 1e-15, 1e-13);
  expect_close(values(nn::Tanh()(x)), each([](double v) { return std::tanh(v); }), 1e-15, 1e-14);
  expect_close(values(nn::Sigmoid()(x)), each([](double v) { return 1 / (1 + std::exp(-v)); }),
               1e-15, 1e-14);
  expect_close(values(nn::Softplus(nn::SoftplusOptions{.beta = 2})(x)),
               each([](double v) { return std::log1p(std::exp(2 * v)) / 2; }), 1e-15, 1e-13);
  const double z = std::exp(-2.0) + std::exp(-0.5) + 1 + std::exp(0.5) + std::exp(3.0);
  expect_close(values(nn::Softmax(0)(x)), each([&](double v) { return std::exp(v) / z; }), 1e-15,
               1e-13);
  expect_close(values(nn::LogSoftmax(-1)(x)), each([&](double v) { return v - std::log(z); }),
               1e-14, 1e-13);
  EXPECT_EQ(kind_of([&] { nn::GELU("fast"); }), ErrorKind::Value);
}

}  // namespace

namespace {

using namespace ox;

Tensor leaf64(const Shape& shape, uint64_t salt) {
  return sample(shape, kF64, salt).requires_grad_();
}

TEST(LayerGradients, CompositeFunctionalFormsPassGradcheck) {
  namespace F = nn::functional;
  const Tensor x1 = leaf64({3, 2}, 1), x2 = leaf64({3, 3}, 2), w = leaf64({2, 2, 3}, 3),
               b = leaf64({2}, 4);
  EXPECT_TRUE(autograd::gradcheck(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{F::bilinear(in[0], in[1], in[2], in[3])};
      },
      {x1, x2, w, b}));
  const Tensor xg = leaf64({2, 4, 3}, 5), gw = leaf64({4}, 6), gb = leaf64({4}, 7);
  EXPECT_TRUE(autograd::gradcheck(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{F::group_norm(in[0], 2, in[1], in[2])};
      },
      {xg, gw, gb}));
  const Tensor bw = leaf64({4}, 8), bb = leaf64({4}, 9);
  EXPECT_TRUE(autograd::gradcheck(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{F::batch_norm(in[0], {}, {}, in[1], in[2], /*training=*/true)};
      },
      {xg, bw, bb}));
  const Tensor lw = leaf64({5, 3}, 10), lb = leaf64({5}, 11), lx = leaf64({2, 2, 3}, 12);
  EXPECT_TRUE(autograd::gradcheck(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{F::linear(in[0], in[1], in[2])};
      },
      {lx, lw, lb}));
}

TEST(Shapes, IdentityFlattenUnflatten) {
  const Tensor x = sample({2, 3, 4});
  EXPECT_EQ(nn::Identity()(x).impl(), x.impl());
  EXPECT_EQ(nn::Flatten()(x).shape(), Shape({2, 12}));
  EXPECT_EQ(nn::Flatten({.start_dim = 0, .end_dim = 1})(x).shape(), Shape({6, 4}));
  const Tensor u = nn::Unflatten(1, Shape{3, 1})(sample({2, 3}));
  EXPECT_EQ(u.shape(), Shape({2, 3, 1}));
  EXPECT_EQ(kind_of([] { nn::Unflatten(1, Shape{2, 2})(sample({2, 3})); }), ErrorKind::Shape);
  // Braced options through the holder, for a loss too.
  EXPECT_EQ(nn::MSELoss({.reduction = "sum"})(tensor({1.f, 2.f}), tensor({0.f, 0.f})).item<float>(),
            5.f);
}

}  // namespace
