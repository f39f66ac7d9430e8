// Convolutions: conv2d, conv1d, conv2d_input_grad, conv2d_weight_grad, conv_transpose2d.
//
// Every expected value comes from the plain f64 loops below, written from the definition
//   out[n, o, oh, ow] = bias[o] + sum_{cg, i, j} x[n, g * Cg + cg, oh * sh - pt + i * dh,
//                                                ow * sw - pl + j * dw] * w[o, cg, i, j]
// (g = o / (O / G); positions outside the input are 0), and the two adjoint loops that scatter
// the same products back onto x and w. Those adjoints are themselves checked against central
// differences of ox::conv2d, and conv_transpose2d against the input-gradient loop. Tolerances
// are matmul's reviewed table (matmul_util.h): a conv output is a sum of K products.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "matmul_util.h"
#include "test_util.h"

namespace {

using mmtest::expect_close;
using mmtest::same_bits;
using mmtest::ShapeV;
using ox::DType;
using ox::ErrorKind;
using ox::Tensor;
using oxtest::kind_of;

// A convolution's geometry, from the shapes and the padding of each side.
struct Geo {
  int64_t N, C, H, W, O, Cg, KH, KW, G, sh, sw, pt, pl, dh, dw, Ho, Wo;
  ShapeV out() const { return {N, O, Ho, Wo}; }
  ShapeV in() const { return {N, C, H, W}; }
  ShapeV wshape() const { return {O, Cg, KH, KW}; }
};

Geo geo(const ShapeV& x, const ShapeV& w, int64_t sh, int64_t sw, int64_t pt, int64_t pb,
        int64_t pl, int64_t pr, int64_t dh, int64_t dw, int64_t G) {
  Geo g{x[0], x[1], x[2], x[3], w[0], w[1], w[2], w[3], G, sh, sw, pt, pl, dh, dw, 0, 0};
  g.Ho = (g.H + pt + pb - dh * (g.KH - 1) - 1) / sh + 1;
  g.Wo = (g.W + pl + pr - dw * (g.KW - 1) - 1) / sw + 1;
  return g;
}

// Calls f(n, o, oh, ow, c, cg, ih, iw) for every product of the convolution that reads an
// input element (not padding).
template <class F>
void each_product(const Geo& g, F&& f) {
  const int64_t Og = g.O / g.G;
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t o = 0; o < g.O; ++o)
      for (int64_t oh = 0; oh < g.Ho; ++oh)
        for (int64_t ow = 0; ow < g.Wo; ++ow)
          for (int64_t cg = 0; cg < g.Cg; ++cg)
            for (int64_t i = 0; i < g.KH; ++i)
              for (int64_t j = 0; j < g.KW; ++j) {
                const int64_t ih = oh * g.sh - g.pt + i * g.dh, iw = ow * g.sw - g.pl + j * g.dw;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                const int64_t c = (o / Og) * g.Cg + cg;
                f(((n * g.O + o) * g.Ho + oh) * g.Wo + ow, ((n * g.C + c) * g.H + ih) * g.W + iw,
                  ((o * g.Cg + cg) * g.KH + i) * g.KW + j);
              }
}

std::vector<double> ref_forward(const Geo& g, const std::vector<double>& x,
                                const std::vector<double>& w, const std::vector<double>& b) {
  std::vector<double> out(size_t(oxtest::product(g.out())), 0.0);
  each_product(g, [&](int64_t yo, int64_t xi, int64_t wi) { out[yo] += x[xi] * w[wi]; });
  if (!b.empty())
    for (size_t k = 0; k < out.size(); ++k) out[k] += b[(k / size_t(g.Ho * g.Wo)) % g.O];
  return out;
}

std::vector<double> ref_input_grad(const Geo& g, const std::vector<double>& go,
                                   const std::vector<double>& w) {
  std::vector<double> gi(size_t(oxtest::product(g.in())), 0.0);
  each_product(g, [&](int64_t yo, int64_t xi, int64_t wi) { gi[xi] += go[yo] * w[wi]; });
  return gi;
}

std::vector<double> ref_weight_grad(const Geo& g, const std::vector<double>& x,
                                    const std::vector<double>& go) {
  std::vector<double> gw(size_t(oxtest::product(g.wshape())), 0.0);
  each_product(g, [&](int64_t yo, int64_t xi, int64_t wi) { gw[wi] += go[yo] * x[xi]; });
  return gw;
}

std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }

Tensor rnd(const ShapeV& shape, DType dt) { return ox::randn(ox::Shape(shape)).to(dt); }

// One explicitly padded case for the forward and both gradient kernels.
struct Case {
  ShapeV x, w;
  ox::IntPair stride, padding, dilation;
  int64_t groups;
  bool bias;
};

const Case kCases[] = {
    {{2, 3, 7, 6}, {4, 3, 3, 3}, 1, 1, 1, 1, true},
    {{2, 4, 9, 8}, {6, 2, 3, 2}, {2, 1}, {1, 0}, 1, 2, true},
    {{1, 4, 10, 11}, {4, 1, 3, 3}, 2, 2, 2, 4, false},  // depthwise
    {{3, 2, 5, 5}, {5, 2, 1, 1}, 1, 0, 1, 1, true},     // pointwise
    {{2, 3, 9, 9}, {4, 3, 1, 1}, 2, 0, 1, 1, false},    // strided 1x1
    {{2, 3, 5, 4}, {2, 3, 5, 4}, 1, 0, 1, 1, true},     // kernel covers the input: 1x1 out
    {{1, 6, 8, 8}, {6, 3, 3, 3}, 3, 1, {1, 2}, 2, true},
    {{2, 2, 6, 7}, {3, 2, 4, 4}, 1, {3, 2}, 1, 1, false},  // padding beyond half the kernel
    {{1, 1, 5, 5}, {1, 1, 2, 2}, 2, 0, 1, 1, false},       // stride leaves the last row out
    {{2, 6, 4, 5}, {9, 2, 2, 3}, {1, 2}, {1, 1}, {2, 1}, 3, true},
    {{2, 3, 6, 7}, {6, 1, 3, 3}, {1, 2}, 1, 1, 3, true},       // depthwise, 2 per channel
    {{1, 4, 5, 5}, {4, 1, 2, 3}, 1, {1, 2}, {2, 1}, 4, true},  // depthwise, dilated
    // The vector kernels (stride 1, no padding): rows of full vectors and an overlapping last
    // one, rows shorter than a vector, an odd row count, 25 taps in blocks of 9.
    {{2, 1, 12, 30}, {5, 1, 3, 3}, 1, 0, 1, 1, true},  // one input channel
    {{1, 1, 6, 5}, {3, 1, 2, 2}, 1, 0, 1, 1, true},
    {{2, 1, 11, 21}, {3, 1, 5, 5}, 1, 0, 1, 1, false},
    {{2, 3, 9, 20}, {6, 1, 3, 2}, 1, 0, 1, 3, true},  // depthwise
};

Geo geo_of(const Case& c) {
  return geo(c.x, c.w, c.stride.h, c.stride.w, c.padding.h, c.padding.h, c.padding.w, c.padding.w,
             c.dilation.h, c.dilation.w, c.groups);
}

ox::Conv2dOptions opts_of(const Case& c) {
  return {.stride = c.stride,
          .padding = {c.padding.h, c.padding.w},
          .dilation = c.dilation,
          .groups = c.groups};
}

std::string name_of(const Case& c, DType dt) {
  return mmtest::str(c.x) + " * " + mmtest::str(c.w) + " stride (" + std::to_string(c.stride.h) +
         "," + std::to_string(c.stride.w) + ") pad (" + std::to_string(c.padding.h) + "," +
         std::to_string(c.padding.w) + ") dil (" + std::to_string(c.dilation.h) + "," +
         std::to_string(c.dilation.w) + ") groups " + std::to_string(c.groups) + " " +
         std::string(ox::dtype_name(dt));
}

TEST(Conv2d, ForwardAndGradientsMatchNaiveLoops) {
  ox::manual_seed(11);
  for (DType dt : {DType::F64, DType::F32}) {
    for (const Case& c : kCases) {
      const Geo g = geo_of(c);
      const std::string what = name_of(c, dt);
      const Tensor x = rnd(c.x, dt), w = rnd(c.w, dt);
      const Tensor b = c.bias ? rnd({g.O}, dt) : Tensor();
      const Tensor out = ox::conv2d(x, w, b, opts_of(c));
      EXPECT_EQ(out.dtype(), dt);
      const int64_t K = g.Cg * g.KH * g.KW + 1;
      expect_close(out, g.out(),
                   ref_forward(g, vals(x), vals(w), c.bias ? vals(b) : std::vector<double>{}), K,
                   what + " forward");
      const Tensor go = rnd(g.out(), dt);
      expect_close(ox::conv2d_input_grad(ox::Shape(c.x), w, go, opts_of(c)), g.in(),
                   ref_input_grad(g, vals(go), vals(w)), (g.O / g.G) * g.KH * g.KW,
                   what + " input grad");
      expect_close(ox::conv2d_weight_grad(x, ox::Shape(c.w), go, opts_of(c)), g.wshape(),
                   ref_weight_grad(g, vals(x), vals(go)), g.N * g.Ho * g.Wo, what + " weight grad");
    }
  }
}

TEST(Conv2d, SamePaddingOddAndEvenKernels) {
  ox::manual_seed(12);
  struct SameCase {
    ShapeV x, w;
    ox::IntPair dilation;
  };
  // PyTorch: total = dilation * (k - 1), the start gets total / 2, the end the rest.
  const SameCase cases[] = {{{2, 3, 7, 6}, {4, 3, 3, 3}, 1},
                            {{1, 2, 6, 7}, {3, 2, 4, 4}, 1},       // even: 1 before, 2 after
                            {{2, 2, 8, 9}, {2, 2, 2, 5}, {2, 1}},  // even kernel, dilated
                            {{1, 4, 5, 5}, {4, 2, 4, 2}, {1, 3}}};
  for (DType dt : {DType::F64, DType::F32}) {
    for (const SameCase& c : cases) {
      const int64_t th = c.dilation.h * (c.w[2] - 1), tw = c.dilation.w * (c.w[3] - 1);
      const int64_t G = c.x[1] / c.w[1];
      const Geo g = geo(c.x, c.w, 1, 1, th / 2, th - th / 2, tw / 2, tw - tw / 2, c.dilation.h,
                        c.dilation.w, G);
      ASSERT_EQ(g.Ho, c.x[2]);
      ASSERT_EQ(g.Wo, c.x[3]);
      const ox::Conv2dOptions o{.padding = "same", .dilation = c.dilation, .groups = G};
      const Tensor x = rnd(c.x, dt), w = rnd(c.w, dt), go = rnd(g.out(), dt);
      const std::string what = "same " + mmtest::str(c.x) + " * " + mmtest::str(c.w);
      expect_close(ox::conv2d(x, w, {}, o), g.out(), ref_forward(g, vals(x), vals(w), {}),
                   g.Cg * g.KH * g.KW, what);
      expect_close(ox::conv2d_input_grad(ox::Shape(c.x), w, go, o), g.in(),
                   ref_input_grad(g, vals(go), vals(w)), g.O * g.KH * g.KW, what + " input grad");
      expect_close(ox::conv2d_weight_grad(x, ox::Shape(c.w), go, o), g.wshape(),
                   ref_weight_grad(g, vals(x), vals(go)), g.N * g.Ho * g.Wo, what + " weight grad");
    }
  }
  // "valid" is no padding.
  const Tensor x = rnd({1, 2, 6, 5}, DType::F64), w = rnd({3, 2, 3, 2}, DType::F64);
  const Geo g = geo({1, 2, 6, 5}, {3, 2, 3, 2}, 1, 1, 0, 0, 0, 0, 1, 1, 1);
  expect_close(ox::conv2d(x, w, {}, {.padding = "valid"}), g.out(),
               ref_forward(g, vals(x), vals(w), {}), 12, "valid");
}

TEST(Conv2d, UnbatchedInput) {
  ox::manual_seed(13);
  const Tensor x = rnd({3, 6, 5}, DType::F64), w = rnd({2, 3, 3, 3}, DType::F64);
  const Tensor b = rnd({2}, DType::F64);
  const Geo g = geo({1, 3, 6, 5}, {2, 3, 3, 3}, 1, 1, 1, 1, 1, 1, 1, 1, 1);
  expect_close(ox::conv2d(x, w, b, {.padding = 1}), {2, 6, 5},
               ref_forward(g, vals(x), vals(w), vals(b)), 28, "unbatched");
  const Tensor go = rnd({2, 6, 5}, DType::F64);
  expect_close(ox::conv2d_input_grad({3, 6, 5}, w, go, {.padding = 1}), {3, 6, 5},
               ref_input_grad(g, vals(go), vals(w)), 18, "unbatched input grad");
  expect_close(ox::conv2d_weight_grad(x, {2, 3, 3, 3}, go, {.padding = 1}), {2, 3, 3, 3},
               ref_weight_grad(g, vals(x), vals(go)), 30, "unbatched weight grad");
}

TEST(Conv1d, MatchesNaiveLoops) {
  ox::manual_seed(14);
  struct C1 {
    ShapeV x, w;
    int64_t stride, pad, dil, groups;
    bool bias;
  };
  const C1 cases[] = {{{2, 4, 11}, {6, 2, 3}, 2, 1, 2, 2, true},
                      {{3, 3, 8}, {2, 3, 1}, 1, 0, 1, 1, false},
                      {{1, 2, 9}, {4, 1, 5}, 3, 4, 1, 2, true}};
  for (DType dt : {DType::F64, DType::F32}) {
    for (const C1& c : cases) {
      const Geo g = geo({c.x[0], c.x[1], 1, c.x[2]}, {c.w[0], c.w[1], 1, c.w[2]}, 1, c.stride, 0, 0,
                        c.pad, c.pad, 1, c.dil, c.groups);
      const Tensor x = rnd(c.x, dt), w = rnd(c.w, dt), b = c.bias ? rnd({c.w[0]}, dt) : Tensor();
      const Tensor out = ox::conv1d(
          x, w, b, {.stride = c.stride, .padding = c.pad, .dilation = c.dil, .groups = c.groups});
      expect_close(out, {g.N, g.O, g.Wo},
                   ref_forward(g, vals(x), vals(w), c.bias ? vals(b) : std::vector<double>{}),
                   g.Cg * g.KW + 1, "conv1d " + mmtest::str(c.x) + " * " + mmtest::str(c.w));
    }
  }
  // "same" with an even kernel (1 before, 2 after), and an unbatched input.
  const Tensor x = rnd({3, 10}, DType::F64), w = rnd({2, 3, 4}, DType::F64);
  const Geo g = geo({1, 3, 1, 10}, {2, 3, 1, 4}, 1, 1, 0, 0, 1, 2, 1, 1, 1);
  expect_close(ox::conv1d(x, w, {}, {.padding = "same"}), {2, 10},
               ref_forward(g, vals(x), vals(w), {}), 12, "conv1d same unbatched");
  EXPECT_EQ(kind_of([&] { ox::conv1d(x, w, {}, {.stride = 2, .padding = "same"}); }),
            ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::conv1d(x, ox::ones({2, 4, 3}, DType::F64)); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::conv1d(x, ox::ones({2, 3, 11}, DType::F64)); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::conv1d(x.unsqueeze(0).unsqueeze(0), w); }), ErrorKind::Shape);
}

TEST(ConvTranspose2d, EqualsTheInputGradientOfConv2d) {
  ox::manual_seed(15);
  struct TC {
    ShapeV x, w;  // x [N, C_in, H, W], w [C_in, C_out / G, KH, KW]
    ox::IntPair stride, padding, output_padding;
    int64_t groups;
    ox::IntPair dilation;
    bool bias;
  };
  const TC cases[] = {
      {{2, 4, 5, 6}, {4, 3, 3, 3}, 2, 1, 1, 1, 1, true},
      {{1, 4, 4, 3}, {4, 2, 3, 2}, {2, 3}, {0, 1}, {1, 2}, 2, 1, false},
      {{2, 3, 4, 4}, {3, 2, 2, 3}, 1, 0, 1, 1, 2, true},  // output_padding < dilation
      {{1, 2, 3, 3}, {2, 1, 1, 1}, 1, 0, 0, 1, 1, true},
      {{1, 3, 4, 4}, {3, 1, 3, 3}, 2, 1, 1, 3, 1, true}};  // depthwise
  for (DType dt : {DType::F64, DType::F32}) {
    for (const TC& c : cases) {
      const int64_t Cout = c.w[1] * c.groups;
      const int64_t Hout = (c.x[2] - 1) * c.stride.h - 2 * c.padding.h +
                           c.dilation.h * (c.w[2] - 1) + c.output_padding.h + 1;
      const int64_t Wout = (c.x[3] - 1) * c.stride.w - 2 * c.padding.w +
                           c.dilation.w * (c.w[3] - 1) + c.output_padding.w + 1;
      // The conv2d whose input has the transposed convolution's output shape, and whose output
      // is the transposed convolution's input.
      Geo g = geo({c.x[0], Cout, Hout, Wout}, c.w, c.stride.h, c.stride.w, c.padding.h, c.padding.h,
                  c.padding.w, c.padding.w, c.dilation.h, c.dilation.w, c.groups);
      g.Ho = c.x[2], g.Wo = c.x[3];  // output_padding rows get no window (floor of the formula)
      const Tensor x = rnd(c.x, dt), w = rnd(c.w, dt), b = c.bias ? rnd({Cout}, dt) : Tensor();
      const Tensor out = ox::conv_transpose2d(x, w, b,
                                              {.stride = c.stride,
                                               .padding = c.padding,
                                               .output_padding = c.output_padding,
                                               .groups = c.groups,
                                               .dilation = c.dilation});
      std::vector<double> want = ref_input_grad(g, vals(x), vals(w));
      if (c.bias)
        for (size_t k = 0; k < want.size(); ++k)
          want[k] += vals(b)[(k / size_t(Hout * Wout)) % Cout];
      expect_close(out, {c.x[0], Cout, Hout, Wout}, want, c.x[1] * c.w[2] * c.w[3] + 1,
                   "conv_transpose2d " + mmtest::str(c.x) + " * " + mmtest::str(c.w));
    }
  }
  const Tensor x = rnd({1, 2, 3, 3}, DType::F32), w = rnd({2, 2, 3, 3}, DType::F32);
  // Unbatched input, and a bias with a negative stride.
  const Tensor b = rnd({2}, DType::F32), bf = ox::empty({2}).flip({0}).copy_(b);
  EXPECT_TRUE(same_bits(ox::conv_transpose2d(x.squeeze(0), w, bf, {.stride = 2}),
                        ox::conv_transpose2d(x, w, b, {.stride = 2}).squeeze(0)));
  EXPECT_EQ(kind_of([&] { ox::conv_transpose2d(x, w, {}, {.stride = 2, .output_padding = 2}); }),
            ErrorKind::Value);
  EXPECT_EQ(kind_of([&] {
              ox::conv_transpose2d(x, rnd({3, 2, 3, 3}, DType::F32));
            }),
            ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::conv_transpose2d(x, w, rnd({3}, DType::F32)); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::conv_transpose2d(x, w, {}, {.padding = 3}); }), ErrorKind::Shape);
}

// The adjoint loops above are what the gradient kernels are checked against; here they are
// checked themselves, against central differences of ox::conv2d in f64.
TEST(Conv2d, GradientsMatchCentralDifferences) {
  ox::manual_seed(16);
  const ShapeV xs{2, 4, 5, 4}, ws{4, 2, 3, 2};
  const ox::Conv2dOptions o{.stride = {2, 1}, .padding = {1, 1}, .dilation = {1, 2}, .groups = 2};
  const Tensor x = rnd(xs, DType::F64), w = rnd(ws, DType::F64);
  const Tensor y = ox::conv2d(x, w, {}, o);
  const std::vector<double> go = vals(rnd(oxtest::shape_of(y), DType::F64));
  const Tensor go_t = ox::tensor(go, y.shape());
  auto loss = [&](const Tensor& xx, const Tensor& ww) {
    const std::vector<double> v = vals(ox::conv2d(xx, ww, {}, o));
    double s = 0;
    for (size_t k = 0; k < v.size(); ++k) s += v[k] * go[k];
    return s;
  };
  const double eps = 1e-6;
  auto check = [&](const Tensor& param, const Tensor& grad, bool is_x) {
    std::vector<double> p = vals(param);
    const std::vector<double> gv = vals(grad);
    for (size_t k = 0; k < p.size(); ++k) {
      std::vector<double> up = p, dn = p;
      up[k] += eps, dn[k] -= eps;
      const Tensor tu = ox::tensor(up, param.shape()), td = ox::tensor(dn, param.shape());
      const double fd =
          is_x ? (loss(tu, w) - loss(td, w)) / (2 * eps) : (loss(x, tu) - loss(x, td)) / (2 * eps);
      EXPECT_NEAR(gv[k], fd, 1e-5 + 1e-3 * std::fabs(fd)) << (is_x ? "x" : "w") << "[" << k << "]";
    }
  };
  check(x, ox::conv2d_input_grad(ox::Shape(xs), w, go_t, o), true);
  check(w, ox::conv2d_weight_grad(x, ox::Shape(ws), go_t, o), false);
  // The reference loops agree with them too.
  const Geo g = geo(xs, ws, 2, 1, 1, 1, 1, 1, 1, 2, 2);
  expect_close(ox::conv2d_input_grad(ox::Shape(xs), w, go_t, o), xs, ref_input_grad(g, go, vals(w)),
               12, "fd case input grad");
}

TEST(Conv2d, LayoutsGiveTheContiguousResult) {
  ox::manual_seed(17);
  const ShapeV xs{3, 4, 7, 6}, ws{6, 2, 3, 3};
  const ox::Conv2dOptions o{.stride = {1, 2}, .padding = 1, .groups = 2};
  const ox::Conv2dOptions pw{.groups = 2};  // the pointwise path reads its input as columns
  const ox::Conv2dOptions dw{.padding = {2, 1}, .dilation = {2, 1}, .groups = 4};  // depthwise
  const Tensor wdw = rnd({8, 1, 3, 3}, DType::F32);
  const Tensor x = rnd(xs, DType::F32), w = rnd(ws, DType::F32), w1 = rnd({6, 2, 1, 1}, DType::F32);
  std::vector<std::pair<std::string, Tensor>> layouts;
  layouts.emplace_back("transposed", ox::empty({3, 4, 6, 7}).transpose(2, 3).copy_(x));
  layouts.emplace_back("channels-last", ox::empty({3, 7, 6, 4}).permute({0, 3, 1, 2}).copy_(x));
  layouts.emplace_back("narrowed", ox::empty({4, 6, 9, 8})
                                       .narrow(0, 1, 3)
                                       .narrow(1, 2, 4)
                                       .narrow(3, 1, 6)
                                       .narrow(2, 2, 7)
                                       .copy_(x));
  layouts.emplace_back("flipped", ox::empty(ox::Shape(xs)).flip({0, 3}).copy_(x));
  layouts.emplace_back("batch-expanded", x.narrow(0, 1, 1).expand(ox::Shape(xs)));
  for (const auto& [name, xl] : layouts) {
    const Tensor xc = xl.contiguous();
    EXPECT_TRUE(same_bits(ox::conv2d(xl, w, {}, o), ox::conv2d(xc, w, {}, o))) << name;
    EXPECT_TRUE(same_bits(ox::conv2d(xl, w1, {}, pw), ox::conv2d(xc, w1, {}, pw))) << name;
    EXPECT_TRUE(same_bits(ox::conv2d(xl, wdw, {}, dw), ox::conv2d(xc, wdw, {}, dw))) << name;
    const Tensor god = ox::conv2d(xc, wdw, {}, dw);
    EXPECT_TRUE(same_bits(ox::conv2d_weight_grad(xl, {8, 1, 3, 3}, god, dw),
                          ox::conv2d_weight_grad(xc, {8, 1, 3, 3}, god, dw)))
        << name;
    const Tensor go = ox::conv2d(xc, w, {}, o);  // any values of the output's shape
    EXPECT_TRUE(same_bits(ox::conv2d_weight_grad(xl, ox::Shape(ws), go, o),
                          ox::conv2d_weight_grad(xc, ox::Shape(ws), go, o)))
        << name;
  }
  // A transposed weight, and a flipped grad_output.
  const Tensor wl = ox::empty({3, 3, 2, 6}).permute({3, 2, 0, 1}).copy_(w);
  EXPECT_TRUE(same_bits(ox::conv2d(x, wl, {}, o), ox::conv2d(x, w, {}, o)));
  const Tensor go = rnd(oxtest::shape_of(ox::conv2d(x, w, {}, o)), DType::F32);
  const Tensor gof = ox::empty(go.shape()).flip({1, 3}).copy_(go);
  EXPECT_TRUE(same_bits(ox::conv2d_input_grad(ox::Shape(xs), wl, gof, o),
                        ox::conv2d_input_grad(ox::Shape(xs), w, go, o)));
  // Reference on one of them, so "equal" is not "equally wrong".
  const Geo g = geo(xs, ws, 1, 2, 1, 1, 1, 1, 1, 1, 2);
  expect_close(ox::conv2d(layouts[1].second, w, {}, o), g.out(),
               ref_forward(g, vals(x), vals(w), {}), 18, "channels-last");
}

TEST(Conv2d, SixteenBitFloats) {
  ox::manual_seed(18);
  for (const Case& c : {kCases[1], kCases[10]})  // GEMM and depthwise
    for (DType dt : {DType::F16, DType::BF16}) {
      const Geo g = geo_of(c);
      const Tensor x = rnd(c.x, dt), w = rnd(c.w, dt), b = rnd({g.O}, dt), go = rnd(g.out(), dt);
      const Tensor out = ox::conv2d(x, w, b, opts_of(c));
      EXPECT_EQ(out.dtype(), dt);
      expect_close(out, g.out(), ref_forward(g, vals(x), vals(w), vals(b)), g.Cg * g.KH * g.KW + 1,
                   std::string("16-bit forward ") + std::string(ox::dtype_name(dt)));
      expect_close(ox::conv2d_input_grad(ox::Shape(c.x), w, go, opts_of(c)), g.in(),
                   ref_input_grad(g, vals(go), vals(w)), (g.O / g.G) * g.KH * g.KW,
                   std::string("16-bit input grad ") + std::string(ox::dtype_name(dt)));
      expect_close(ox::conv2d_weight_grad(x, ox::Shape(c.w), go, opts_of(c)), g.wshape(),
                   ref_weight_grad(g, vals(x), vals(go)), g.N * g.Ho * g.Wo,
                   std::string("16-bit weight grad ") + std::string(ox::dtype_name(dt)));
    }
}

TEST(Conv2d, ThreadCountsGiveIdenticalBits) {
  ox::manual_seed(19);
  const ShapeV xs{4, 8, 33, 35}, ws{16, 4, 3, 3};
  const ox::Conv2dOptions o{.padding = 1, .groups = 2};
  const Tensor x = rnd(xs, DType::F32), w = rnd(ws, DType::F32), b = rnd({16}, DType::F32);
  const Tensor go = rnd({4, 16, 33, 35}, DType::F32);
  const Tensor wt = rnd({8, 3, 3, 3}, DType::F32);
  const Tensor wd = rnd({16, 1, 3, 3}, DType::F32);
  const ox::Conv2dOptions od{.stride = {1, 2}, .padding = 1, .groups = 8};
  const Tensor god = rnd({4, 16, 33, 18}, DType::F32);
  const std::vector<std::pair<std::string, std::function<Tensor()>>> runs = {
      {"forward", [&] { return ox::conv2d(x, w, b, o); }},
      {"input grad", [&] { return ox::conv2d_input_grad(ox::Shape(xs), w, go, o); }},
      {"weight grad", [&] { return ox::conv2d_weight_grad(x, ox::Shape(ws), go, o); }},
      {"transpose", [&] { return ox::conv_transpose2d(x, wt, {}, {.stride = 2, .padding = 1}); }},
      {"depthwise", [&] { return ox::conv2d(x, wd, b, od); }},
      {"depthwise input grad", [&] { return ox::conv2d_input_grad(ox::Shape(xs), wd, god, od); }},
      {"depthwise weight grad",
       [&] {
         return ox::conv2d_weight_grad(x, {16, 1, 3, 3}, god, od);
       }},
      {"one channel", [&] { return ox::conv2d(x.narrow(1, 0, 1), wd.narrow(0, 0, 5), {}, {}); }},
      {"one channel weight grad",
       [&] {
         return ox::conv2d_weight_grad(x.narrow(1, 0, 1), {16, 1, 3, 3},
                                       go.narrow(2, 0, 31).narrow(3, 0, 33).contiguous(), {});
       }},
      {"conv1d",
       [&] { return ox::conv1d(x.flatten(2), w.select(2, 1), b, {.padding = 1, .groups = 2}); }},
  };
  for (const auto& [name, f] : runs) {
    const auto [one, two] = mmtest::at_1_and_2_threads(f);
    EXPECT_TRUE(same_bits(one, two)) << name;
  }
}

// A weight gradient summing over many positions (3 images of 13 x 227) is cut into slices of
// the reduction with a remainder; results match the loop and do not depend on the threads.
TEST(Conv2d, WeightGradOverLongReductions) {
  ox::manual_seed(21);
  const ShapeV xs{3, 4, 13, 227}, ws{6, 2, 3, 3};
  const ox::Conv2dOptions o{.padding = 1, .groups = 2};
  const Geo g = geo(xs, ws, 1, 1, 1, 1, 1, 1, 1, 1, 2);
  for (DType dt : {DType::F64, DType::F32}) {
    const Tensor x = rnd(xs, dt), go = rnd(g.out(), dt);
    expect_close(ox::conv2d_weight_grad(x, ox::Shape(ws), go, o), ws,
                 ref_weight_grad(g, vals(x), vals(go)), g.N * g.Ho * g.Wo, "long weight grad");
    const auto [one, two] =
        mmtest::at_1_and_2_threads([&] { return ox::conv2d_weight_grad(x, ox::Shape(ws), go, o); });
    EXPECT_TRUE(same_bits(one, two));
  }
}

// A batch whose column buffer exceeds the op's 256 MiB budget runs in chunks of images: here
// 75.5 MB of f64 columns per image, so chunks of 3 and 1 images.
TEST(Conv2d, LargeBatchInChunks) {
  ox::manual_seed(20);
  const ShapeV xs{4, 64, 128, 128}, ws{2, 64, 3, 3};
  const Tensor x = rnd(xs, DType::F64), w = rnd(ws, DType::F64), b = rnd({2}, DType::F64);
  const Geo g = geo(xs, ws, 1, 1, 1, 1, 1, 1, 1, 1, 1);
  const ox::Conv2dOptions o{.padding = 1};
  const std::vector<double> xv = vals(x), wv = vals(w);
  expect_close(ox::conv2d(x, w, b, o), g.out(), ref_forward(g, xv, wv, vals(b)), 577, "chunked");
  const Tensor go = rnd(g.out(), DType::F64);
  const std::vector<double> gov = vals(go);
  expect_close(ox::conv2d_input_grad(ox::Shape(xs), w, go, o), xs, ref_input_grad(g, gov, wv), 18,
               "chunked input grad");
  expect_close(ox::conv2d_weight_grad(x, ox::Shape(ws), go, o), ws, ref_weight_grad(g, xv, gov),
               g.N * g.Ho * g.Wo, "chunked weight grad");
}

TEST(Conv2d, EmptyExtents) {
  const Tensor w = ox::ones({3, 2, 3, 3});
  EXPECT_EQ(oxtest::shape_of(ox::conv2d(ox::ones({0, 2, 5, 5}), w, {}, {.padding = 1})),
            (ShapeV{0, 3, 5, 5}));
  // No input channels: the output is the bias.
  const Tensor out =
      ox::conv2d(ox::ones({2, 0, 4, 4}), ox::ones({3, 0, 3, 3}), ox::tensor({1.f, 2.f, 3.f}));
  EXPECT_EQ(oxtest::shape_of(out), (ShapeV{2, 3, 2, 2}));
  const std::vector<float> v = out.to_vector<float>();
  for (size_t k = 0; k < v.size(); ++k) EXPECT_EQ(v[k], float((k / 4) % 3 + 1));
  EXPECT_EQ(oxtest::shape_of(ox::conv2d(ox::ones({2, 2, 4, 4}), ox::ones({0, 2, 3, 3}))),
            (ShapeV{2, 0, 2, 2}));
  const Tensor gi = ox::conv2d_input_grad({0, 2, 5, 5}, w, ox::ones({0, 3, 3, 3}));
  EXPECT_EQ(oxtest::shape_of(gi), (ShapeV{0, 2, 5, 5}));
  const Tensor gw =
      ox::conv2d_weight_grad(ox::ones({0, 2, 5, 5}), {3, 2, 3, 3}, ox::ones({0, 3, 3, 3}));
  EXPECT_EQ(gw.to_vector<float>(), std::vector<float>(54, 0.f));
}

TEST(Conv2d, BadArgumentsGiveTypedErrors) {
  const Tensor x = ox::ones({1, 4, 5, 5}), w = ox::ones({6, 2, 3, 3});
  // Ranks and channels.
  EXPECT_EQ(kind_of([&] { ox::conv2d(ox::ones({4, 5}), w); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::conv2d(x, ox::ones({6, 4, 3})); }), ErrorKind::Shape);
  const ox::Error e = oxtest::caught([&] { ox::conv2d(x, w); });  // 4 != 2 * 1
  EXPECT_EQ(e.kind(), ErrorKind::Shape);
  EXPECT_TRUE(oxtest::contains(e, "[1, 4, 5, 5]")) << e.what();
  EXPECT_TRUE(oxtest::contains(e, "[6, 2, 3, 3]")) << e.what();
  EXPECT_NO_THROW(ox::conv2d(x, w, {}, {.groups = 2}));
  EXPECT_EQ(kind_of([&] { ox::conv2d(x, w, {}, {.groups = 3}); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] {
              ox::conv2d(x, ox::ones({5, 2, 3, 3}), {}, {.groups = 2});
            }),
            ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::conv2d(x, w, {}, {.groups = 0}); }), ErrorKind::Value);
  // Kernel against the padded input.
  EXPECT_EQ(kind_of([&] { ox::conv2d(x, ox::ones({6, 4, 6, 3})); }), ErrorKind::Shape);
  EXPECT_NO_THROW(ox::conv2d(x, ox::ones({6, 4, 6, 3}), {}, {.padding = {1, 0}}));
  EXPECT_EQ(kind_of([&] {
              ox::conv2d(x, ox::ones({6, 4, 3, 3}), {}, {.dilation = 3});
            }),
            ErrorKind::Shape);
  // Stride, dilation, padding.
  const Tensor w4 = ox::ones({6, 4, 3, 3});
  EXPECT_EQ(kind_of([&] { ox::conv2d(x, w4, {}, {.stride = {1, 0}}); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::conv2d(x, w4, {}, {.dilation = {0, 1}}); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::conv2d(x, w4, {}, {.padding = -1}); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::conv2d(x, w4, {}, {.stride = 2, .padding = "same"}); }),
            ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::conv2d(x, w4, {}, {.padding = "full"}); }), ErrorKind::Value);
  // Bias.
  EXPECT_EQ(kind_of([&] { ox::conv2d(x, w4, ox::ones({5})); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::conv2d(x, w4, ox::ones({6, 1})); }), ErrorKind::Shape);
  // Dtypes: one floating dtype for all; integers refused.
  EXPECT_EQ(kind_of([&] { ox::conv2d(x, w4.to(DType::F64)); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { ox::conv2d(x, w4, ox::ones({6}, DType::F64)); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { ox::conv2d(x.to(DType::I64), w4.to(DType::I64)); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { ox::conv2d(Tensor(), w4); }), ErrorKind::Value);
  // The gradient kernels check grad_output against the shapes.
  EXPECT_EQ(kind_of([&] {
              ox::conv2d_input_grad({1, 4, 5, 5}, w4, ox::ones({1, 6, 4, 3}));
            }),
            ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] {
              ox::conv2d_input_grad({1, 4, 5}, w4, ox::ones({1, 6, 3, 3}));
            }),
            ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] {
              ox::conv2d_weight_grad(x, {6, 4, 3, 3}, ox::ones({1, 6, 3, 4}));
            }),
            ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] {
              ox::conv2d_weight_grad(x, {6, 4, 3, 3}, ox::ones({1, 6, 3, 3}, DType::F64));
            }),
            ErrorKind::DType);
  EXPECT_EQ(kind_of([&] {
              ox::conv2d_weight_grad(x, {6, 4, 3}, ox::ones({1, 6, 3, 3}));
            }),
            ErrorKind::Shape);
  // Sizes that overflow 64 bits are errors, not wrapped arithmetic.
  constexpr int64_t kHuge = std::numeric_limits<int64_t>::max() / 2;
  EXPECT_EQ(kind_of([&] { ox::conv2d(x, w4, {}, {.dilation = kHuge}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::conv2d(x, w4, {}, {.padding = kHuge}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] {
              ox::conv2d(x, ox::ones({6, 4, 1, 1}), {}, {.padding = {0, kHuge / 2}});
            }),
            ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] {
              ox::conv_transpose2d(ox::ones({1, 6, 3, 3}), w4, {}, {.stride = kHuge});
            }),
            ErrorKind::Shape);
}

}  // namespace
