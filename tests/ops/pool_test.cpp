// Pooling: max_pool2d (values, indices, backward), avg_pool2d (+ backward), adaptive_avg_pool2d
// (+ backward). Expected values come from the plain f64 loops below, written from PyTorch's
// documented rules, and from hand-derived planes; backward passes from the loops that scatter
// each output's gradient back over its window.

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

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }
Tensor rnd(const ShapeV& shape, DType dt) { return ox::randn(ox::Shape(shape)).to(dt); }
// Small integers: many equal values, so ties are common.
Tensor rnd_ties(const ShapeV& shape, DType dt) {
  return ox::randint(-2, 3, ox::Shape(shape)).to(dt);
}

// PyTorch's documented output size: floor (or ceil) of (H + 2p - d(k-1) - 1) / s, plus 1; in
// ceil mode a window that would start in the trailing padding is dropped.
int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const double q = double(in + 2 * p - d * (k - 1) - 1) / double(s);
  int64_t out = int64_t(ceil_mode ? std::ceil(q) : std::floor(q)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

struct Geo {
  int64_t N, C, H, W, kh, kw, sh, sw, ph, pw, dh, dw, Ho, Wo;
  ShapeV in() const { return {N, C, H, W}; }
  ShapeV out() const { return {N, C, Ho, Wo}; }
};

Geo geo(const ShapeV& x, ox::IntPair k, ox::IntPair s, ox::IntPair p, ox::IntPair d, bool ceil) {
  return {x[0],
          x[1],
          x[2],
          x[3],
          k.h,
          k.w,
          s.h,
          s.w,
          p.h,
          p.w,
          d.h,
          d.w,
          out_size(x[2], k.h, s.h, p.h, d.h, ceil),
          out_size(x[3], k.w, s.w, p.w, d.w, ceil)};
}

// Max over each window: the first maximum; a NaN replaces anything, so the last NaN wins.
void ref_max(const Geo& g, const std::vector<double>& x, std::vector<double>& out,
             std::vector<int64_t>& idx) {
  out.assign(size_t(oxtest::product(g.out())), 0);
  idx.assign(out.size(), -1);
  size_t o = 0;
  for (int64_t pl = 0; pl < g.N * g.C; ++pl)
    for (int64_t oh = 0; oh < g.Ho; ++oh)
      for (int64_t ow = 0; ow < g.Wo; ++ow, ++o) {
        double best = -kInf;
        int64_t at = -1;
        for (int64_t i = 0; i < g.kh; ++i)
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t ih = oh * g.sh - g.ph + i * g.dh, iw = ow * g.sw - g.pw + j * g.dw;
            if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
            const double v = x[size_t((pl * g.H + ih) * g.W + iw)];
            if (at < 0 || v > best || std::isnan(v)) best = v, at = ih * g.W + iw;
          }
        out[o] = best, idx[o] = at;
      }
}

// An Avg / AdaptiveAvg output's input rectangle and divisor.
struct Rect {
  int64_t h0, h1, w0, w1;
  double div;
};
using RectFn = std::function<Rect(int64_t, int64_t)>;

RectFn avg_rect(const Geo& g, bool count_include_pad, int64_t divisor_override) {
  return [=](int64_t oh, int64_t ow) {
    int64_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
    int64_t h1 = std::min(h0 + g.kh, g.H + g.ph), w1 = std::min(w0 + g.kw, g.W + g.pw);
    const double padded = double((h1 - h0) * (w1 - w0));
    h0 = std::max<int64_t>(h0, 0), w0 = std::max<int64_t>(w0, 0);
    h1 = std::min(h1, g.H), w1 = std::min(w1, g.W);
    const double inside = double((h1 - h0) * (w1 - w0));
    return Rect{h0, h1, w0, w1,
                divisor_override    ? double(divisor_override)
                : count_include_pad ? padded
                                    : inside};
  };
}

RectFn adaptive_rect(const Geo& g) {
  return [=](int64_t oh, int64_t ow) {
    const int64_t h0 = oh * g.H / g.Ho, w0 = ow * g.W / g.Wo;
    const int64_t h1 = int64_t(std::ceil(double((oh + 1) * g.H) / double(g.Ho)));
    const int64_t w1 = int64_t(std::ceil(double((ow + 1) * g.W) / double(g.Wo)));
    return Rect{h0, h1, w0, w1, double((h1 - h0) * (w1 - w0))};
  };
}

std::vector<double> ref_avg(const Geo& g, const std::vector<double>& x, const RectFn& rect) {
  std::vector<double> out;
  for (int64_t pl = 0; pl < g.N * g.C; ++pl)
    for (int64_t oh = 0; oh < g.Ho; ++oh)
      for (int64_t ow = 0; ow < g.Wo; ++ow) {
        const Rect r = rect(oh, ow);
        double s = 0;
        for (int64_t ih = r.h0; ih < r.h1; ++ih)
          for (int64_t iw = r.w0; iw < r.w1; ++iw) s += x[size_t((pl * g.H + ih) * g.W + iw)];
        out.push_back(r.h0 < r.h1 && r.w0 < r.w1 ? s / r.div : 0.0);
      }
  return out;
}

std::vector<double> ref_avg_backward(const Geo& g, const std::vector<double>& go,
                                     const RectFn& rect) {
  std::vector<double> gi(size_t(oxtest::product(g.in())), 0.0);
  size_t o = 0;
  for (int64_t pl = 0; pl < g.N * g.C; ++pl)
    for (int64_t oh = 0; oh < g.Ho; ++oh)
      for (int64_t ow = 0; ow < g.Wo; ++ow, ++o) {
        const Rect r = rect(oh, ow);
        for (int64_t ih = r.h0; ih < r.h1; ++ih)
          for (int64_t iw = r.w0; iw < r.w1; ++iw)
            gi[size_t((pl * g.H + ih) * g.W + iw)] += go[o] / r.div;
      }
  return gi;
}

std::vector<double> ref_max_backward(const Geo& g, const std::vector<double>& go,
                                     const std::vector<int64_t>& idx) {
  std::vector<double> gi(size_t(oxtest::product(g.in())), 0.0);
  const size_t per_plane = size_t(g.Ho * g.Wo);
  for (size_t o = 0; o < go.size(); ++o)
    gi[(o / per_plane) * size_t(g.H * g.W) + size_t(idx[o])] += go[o];
  return gi;
}

// Exact comparison with NaN equal to NaN (a max is one of its inputs).
void expect_exact(const Tensor& got, const ShapeV& shape, const std::vector<double>& want,
                  const std::string& what) {
  ASSERT_EQ(oxtest::shape_of(got), shape) << what;
  const std::vector<double> g = vals(got);
  for (size_t k = 0; k < g.size(); ++k)
    if (!(g[k] == want[k] || (std::isnan(g[k]) && std::isnan(want[k]))))
      ADD_FAILURE() << what << ": element " << k << " is " << g[k] << ", expected " << want[k];
}

struct MaxCase {
  ShapeV x;
  ox::IntPair k;
  ox::OptionalIntPair s;
  ox::IntPair p, d;
  bool ceil;
};
const MaxCase kMaxCases[] = {
    {{2, 3, 7, 8}, 2, {}, 0, 1, false},
    {{1, 2, 9, 9}, 3, 2, 1, 1, false},
    {{2, 2, 10, 7}, {3, 2}, {2, 1}, {1, 1}, {2, 1}, false},
    {{1, 1, 5, 5}, 2, 2, 0, 1, true},
    {{1, 3, 6, 7}, 3, 2, 1, 1, true},
    {{1, 2, 7, 7}, 3, 1, 0, 2, false},
    {{2, 1, 5, 6}, {2, 3}, {2, 2}, {1, 1}, 1, true},
};

TEST(MaxPool2d, ValuesIndicesAndBackwardMatchNaiveLoops) {
  ox::manual_seed(31);
  for (DType dt : {DType::F64, DType::F32}) {
    for (const MaxCase& c : kMaxCases) {
      const ox::IntPair s = c.s.value.value_or(c.k);
      const Geo g = geo(c.x, c.k, s, c.p, c.d, c.ceil);
      for (bool ties : {false, true}) {
        const Tensor x = ties ? rnd_ties(c.x, dt) : rnd(c.x, dt);
        const std::string what = "max_pool2d " + mmtest::str(c.x) + (ties ? " ties" : "");
        const auto [out, idx] = ox::max_pool2d_with_indices(
            x, c.k, {.stride = c.s, .padding = c.p, .dilation = c.d, .ceil_mode = c.ceil});
        std::vector<double> want;
        std::vector<int64_t> want_idx;
        ref_max(g, vals(x), want, want_idx);
        expect_exact(out, g.out(), want, what);
        EXPECT_EQ(idx.dtype(), DType::I64);
        EXPECT_EQ(idx.to_vector<int64_t>(), want_idx) << what;
        const Tensor go = rnd(g.out(), dt);
        expect_close(ox::max_pool2d_backward(go, idx, ox::Shape(c.x)), c.x,
                     ref_max_backward(g, vals(go), want_idx), g.kh * g.kw, what + " backward");
      }
    }
  }
}

TEST(MaxPool2d, HandDerivedTiesNaNAndInfinity) {
  // Windows of 2x2: {1, 3 | 3, 2} has its first 3 at index 1; {3, 0 | NaN, NaN} gives NaN at
  // the last NaN, index 9; {-inf, -inf | -inf, -inf} gives -inf at its first element.
  const Tensor x = ox::tensor(std::vector<double>{1, 3, 3, 0, -kInf, -kInf,  //
                                                  3, 2, kNaN, kNaN, -kInf, -kInf},
                              {1, 1, 2, 6});
  const auto [out, idx] = ox::max_pool2d_with_indices(x, 2);
  expect_exact(out, {1, 1, 1, 3}, {3, kNaN, -kInf}, "hand");
  EXPECT_EQ(idx.to_vector<int64_t>(), (std::vector<int64_t>{1, 9, 4}));
  // Padding is never the maximum: an all-negative plane with padding 1.
  const Tensor neg = ox::tensor(std::vector<float>{-5, -4, -3, -2}, {1, 2, 2});
  const auto [o2, i2] = ox::max_pool2d_with_indices(neg, 2, {.stride = 1, .padding = 1});
  expect_exact(o2, {1, 3, 3}, {-5, -4, -4, -3, -2, -2, -3, -2, -2}, "padded");
  EXPECT_EQ(i2.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1, 2, 3, 3, 2, 3, 3}));
  // Output shapes, hand-derived (ceil mode drops a window starting in the trailing padding).
  const Tensor z = ox::zeros({1, 1, 5, 6});
  EXPECT_EQ(oxtest::shape_of(ox::max_pool2d(z, 2)), (ShapeV{1, 1, 2, 3}));
  EXPECT_EQ(oxtest::shape_of(ox::max_pool2d(z, 2, {.ceil_mode = true})), (ShapeV{1, 1, 3, 3}));
  EXPECT_EQ(oxtest::shape_of(ox::max_pool2d(z, 2, {.padding = 1, .ceil_mode = true})),
            (ShapeV{1, 1, 3, 4}));
  EXPECT_EQ(oxtest::shape_of(ox::max_pool2d(z, 3, {.stride = 2, .padding = 1, .ceil_mode = true})),
            (ShapeV{1, 1, 3, 4}));
}

TEST(MaxPool2d, BackwardChecksIndices) {
  const Tensor go = ox::ones({1, 1, 2, 2});
  // Overlapping windows sending gradient to one element accumulate; -1 is skipped.
  const Tensor idx = ox::tensor(std::vector<int64_t>{0, 0, -1, 3}, {1, 1, 2, 2});
  EXPECT_EQ(ox::max_pool2d_backward(go, idx, {1, 1, 2, 2}).to_vector<float>(),
            (std::vector<float>{2, 0, 0, 1}));
  const Tensor bad = ox::tensor(std::vector<int64_t>{0, 4, 1, 2}, {1, 1, 2, 2});
  const ox::Error e = oxtest::caught([&] { ox::max_pool2d_backward(go, bad, {1, 1, 2, 2}); });
  EXPECT_EQ(e.kind(), ErrorKind::Index);
  EXPECT_TRUE(oxtest::contains(e, "position 1")) << e.what();
  EXPECT_EQ(kind_of([&] {
              ox::max_pool2d_backward(go, idx.to(DType::I32), {1, 1, 2, 2});
            }),
            ErrorKind::DType);
  EXPECT_EQ(kind_of([&] {
              ox::max_pool2d_backward(go, idx.reshape({1, 1, 4}), {1, 1, 2, 2});
            }),
            ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::max_pool2d_backward(go, idx, {1, 2, 2, 2}); }), ErrorKind::Shape);
}

struct AvgCase {
  ShapeV x;
  ox::IntPair k;
  ox::OptionalIntPair s;
  ox::IntPair p;
  bool ceil;
};
const AvgCase kAvgCases[] = {
    {{2, 3, 7, 8}, 2, {}, 0, false},
    {{1, 2, 9, 9}, 3, 2, 1, false},
    {{2, 2, 10, 7}, {3, 2}, {2, 1}, {1, 1}, true},
    {{1, 1, 5, 5}, 2, 2, 1, true},
    {{1, 3, 6, 7}, 3, 2, 1, true},
    {{2, 1, 4, 4}, 4, 1, 2, false},
};

TEST(AvgPool2d, MatchesNaiveLoopsEveryWay) {
  ox::manual_seed(32);
  for (DType dt : {DType::F64, DType::F32}) {
    for (const AvgCase& c : kAvgCases) {
      const ox::IntPair s = c.s.value.value_or(c.k);
      const Geo g = geo(c.x, c.k, s, c.p, 1, c.ceil);
      const Tensor x = rnd(c.x, dt), go = rnd(g.out(), dt);
      for (bool include : {true, false}) {
        for (int64_t divisor : {0, 3}) {
          const ox::AvgPool2dOptions o{
              .stride = c.s,
              .padding = c.p,
              .ceil_mode = c.ceil,
              .count_include_pad = include,
              .divisor_override = divisor ? std::optional<int64_t>(divisor) : std::nullopt};
          const RectFn rect = avg_rect(g, include, divisor);
          const std::string what = "avg_pool2d " + mmtest::str(c.x) +
                                   (include ? " include_pad" : " exclude_pad") +
                                   (divisor ? " divisor 3" : "");
          expect_close(ox::avg_pool2d(x, c.k, o), g.out(), ref_avg(g, vals(x), rect), g.kh * g.kw,
                       what);
          expect_close(ox::avg_pool2d_backward(go, ox::Shape(c.x), c.k, o), c.x,
                       ref_avg_backward(g, vals(go), rect), g.kh * g.kw, what + " backward");
        }
      }
    }
  }
}

TEST(AvgPool2d, HandDerived) {
  const Tensor x = ox::arange(1, 10, 1, {.dtype = DType::F64}).reshape({1, 1, 3, 3});
  // Padding 1: windows hold {1}, {2, 3}, {4, 7}, {5, 6, 8, 9}.
  expect_close(ox::avg_pool2d(x, 2, {.padding = 1}), {1, 1, 2, 2}, {0.25, 1.25, 2.75, 7}, 1,
               "include pad");
  expect_close(ox::avg_pool2d(x, 2, {.padding = 1, .count_include_pad = false}), {1, 1, 2, 2},
               {1, 2.5, 5.5, 7}, 1, "exclude pad");
  // Ceil mode: the overhanging windows divide by the elements inside, padding or not.
  expect_close(ox::avg_pool2d(x, 2, {.ceil_mode = true}), {1, 1, 2, 2}, {3, 4.5, 7.5, 9}, 1,
               "ceil");
  expect_close(ox::avg_pool2d(x, 2, {.ceil_mode = true, .divisor_override = 2}), {1, 1, 2, 2},
               {6, 4.5, 7.5, 4.5}, 1, "divisor");
  expect_close(
      ox::avg_pool2d_backward(ox::ones({1, 1, 2, 2}, DType::F64), {1, 1, 3, 3}, 2, {.padding = 1}),
      {1, 1, 3, 3}, {0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25}, 1, "backward");
}

TEST(AdaptiveAvgPool2d, NonDivisibleSizes) {
  ox::manual_seed(33);
  struct AC {
    ShapeV x;
    ox::IntPair out;
  };
  const AC cases[] = {{{2, 3, 5, 7}, {3, 2}},
                      {{1, 2, 3, 3}, {5, 5}},
                      {{2, 2, 6, 6}, 1},
                      {{1, 1, 4, 4}, 2},
                      {{1, 2, 7, 10}, {4, 3}}};
  for (DType dt : {DType::F64, DType::F32}) {
    for (const AC& c : cases) {
      const Geo g{c.x[0], c.x[1], c.x[2], c.x[3], 0, 0, 0, 0, 0, 0, 0, 0, c.out.h, c.out.w};
      const Tensor x = rnd(c.x, dt), go = rnd(g.out(), dt);
      const std::string what = "adaptive " + mmtest::str(c.x) + " -> " + mmtest::str(g.out());
      const int64_t k = (c.x[2] / c.out.h + 2) * (c.x[3] / c.out.w + 2);
      expect_close(ox::adaptive_avg_pool2d(x, c.out), g.out(),
                   ref_avg(g, vals(x), adaptive_rect(g)), k, what);
      expect_close(ox::adaptive_avg_pool2d_backward(go, ox::Shape(c.x)), c.x,
                   ref_avg_backward(g, vals(go), adaptive_rect(g)), k, what + " backward");
    }
  }
  // Hand-derived: 5 -> 3 takes [0, 2), [1, 4), [3, 5).
  const Tensor x = ox::tensor({1.0, 2.0, 3.0, 4.0, 5.0}, {.dtype = ox::kF64}).reshape({1, 1, 5});
  expect_close(ox::adaptive_avg_pool2d(x, {1, 3}), {1, 1, 3}, {1.5, 3, 4.5}, 1, "hand");
  EXPECT_EQ(oxtest::shape_of(ox::adaptive_avg_pool2d(ox::ones({2, 3, 4, 4}), {0, 2})),
            (ShapeV{2, 3, 0, 2}));
}

TEST(Pool2d, LayoutsGiveTheContiguousResult) {
  ox::manual_seed(34);
  const ShapeV xs{3, 4, 9, 8};
  const Tensor x = rnd_ties(xs, DType::F32);
  std::vector<std::pair<std::string, Tensor>> layouts;
  layouts.emplace_back("transposed", ox::empty({3, 4, 8, 9}).transpose(2, 3).copy_(x));
  layouts.emplace_back("channels-last", ox::empty({3, 9, 8, 4}).permute({0, 3, 1, 2}).copy_(x));
  layouts.emplace_back("narrowed", ox::empty({5, 6, 11, 12})
                                       .narrow(0, 2, 3)
                                       .narrow(1, 1, 4)
                                       .narrow(2, 2, 9)
                                       .narrow(3, 3, 8)
                                       .copy_(x));
  layouts.emplace_back("flipped", ox::empty(ox::Shape(xs)).flip({1, 2, 3}).copy_(x));
  layouts.emplace_back("batch-expanded", x.narrow(0, 2, 1).expand(ox::Shape(xs)));
  const ox::MaxPool2dOptions mo{.stride = 2, .padding = 1, .ceil_mode = true};
  const ox::AvgPool2dOptions ao{.stride = {2, 1}, .padding = 1, .count_include_pad = false};
  for (const auto& [name, xl] : layouts) {
    const Tensor xc = xl.contiguous();
    const auto [v1, i1] = ox::max_pool2d_with_indices(xl, 3, mo);
    const auto [v2, i2] = ox::max_pool2d_with_indices(xc, 3, mo);
    EXPECT_TRUE(same_bits(v1, v2)) << name;
    EXPECT_TRUE(same_bits(i1, i2)) << name;
    EXPECT_TRUE(same_bits(ox::avg_pool2d(xl, 3, ao), ox::avg_pool2d(xc, 3, ao))) << name;
    EXPECT_TRUE(same_bits(ox::adaptive_avg_pool2d(xl, {4, 3}), ox::adaptive_avg_pool2d(xc, {4, 3})))
        << name;
    // The same layout as grad_output and as indices of the backward passes.
    const ShapeV os = oxtest::shape_of(v2);
    const Tensor go = rnd(os, DType::F32);
    const Tensor gol = ox::empty({os[0], os[1], os[3], os[2]}).transpose(2, 3).copy_(go);
    const Tensor il = ox::empty({os[0], os[1], os[3], os[2]}, DType::I64).transpose(2, 3).copy_(i2);
    EXPECT_TRUE(same_bits(ox::max_pool2d_backward(gol, il, ox::Shape(xs)),
                          ox::max_pool2d_backward(go, i2, ox::Shape(xs))))
        << name;
  }
  const ShapeV as = oxtest::shape_of(ox::avg_pool2d(x, 3, ao));
  const Tensor go = rnd(as, DType::F32);
  const Tensor gof = ox::empty(ox::Shape(as)).flip({0, 3}).copy_(go);
  EXPECT_TRUE(same_bits(ox::avg_pool2d_backward(gof, ox::Shape(xs), 3, ao),
                        ox::avg_pool2d_backward(go, ox::Shape(xs), 3, ao)));
}

TEST(Pool2d, SixteenBitFloatsAndRefusedDtypes) {
  ox::manual_seed(35);
  for (DType dt : {DType::F16, DType::BF16}) {
    const Tensor x = rnd({2, 3, 7, 6}, dt);
    const Geo g = geo({2, 3, 7, 6}, 3, 2, 1, 1, false);
    const auto [out, idx] = ox::max_pool2d_with_indices(x, 3, {.stride = 2, .padding = 1});
    std::vector<double> want;
    std::vector<int64_t> want_idx;
    ref_max(g, vals(x), want, want_idx);
    EXPECT_EQ(out.dtype(), dt);
    expect_exact(out, g.out(), want, "16-bit max");
    EXPECT_EQ(idx.to_vector<int64_t>(), want_idx);
    expect_close(ox::avg_pool2d(x, 3, {.stride = 2, .padding = 1}), g.out(),
                 ref_avg(g, vals(x), avg_rect(g, true, 0)), 9, "16-bit avg");
    const Tensor go = rnd(g.out(), dt);
    expect_close(ox::avg_pool2d_backward(go, {2, 3, 7, 6}, 3, {.stride = 2, .padding = 1}),
                 {2, 3, 7, 6}, ref_avg_backward(g, vals(go), avg_rect(g, true, 0)), 9,
                 "16-bit avg backward");
    expect_close(ox::max_pool2d_backward(go, idx, {2, 3, 7, 6}), {2, 3, 7, 6},
                 ref_max_backward(g, vals(go), want_idx), 9, "16-bit max backward");
    const Geo ga{2, 3, 7, 6, 0, 0, 0, 0, 0, 0, 0, 0, 3, 4};
    expect_close(ox::adaptive_avg_pool2d(x, {3, 4}), ga.out(),
                 ref_avg(ga, vals(x), adaptive_rect(ga)), 12, "16-bit adaptive");
  }
  const Tensor xi = ox::ones({1, 1, 4, 4}, DType::I64);
  EXPECT_EQ(kind_of([&] { ox::max_pool2d(xi, 2); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { ox::avg_pool2d(xi, 2); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { ox::adaptive_avg_pool2d(xi, 2); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] {
              ox::adaptive_avg_pool2d(ox::ones({1, 1, 4, 4}, DType::Bool), 2);
            }),
            ErrorKind::DType);
}

TEST(Pool2d, ThreadCountsGiveIdenticalBits) {
  ox::manual_seed(36);
  const ShapeV xs{4, 16, 64, 63};
  const Tensor x = rnd(xs, DType::F32);
  const auto [v, idx] = ox::max_pool2d_with_indices(x, 3, {.stride = 1, .padding = 1});
  const Tensor gm = rnd(oxtest::shape_of(v), DType::F32);
  const ox::AvgPool2dOptions ao{.stride = 1, .padding = 1};
  const Tensor ga = rnd(oxtest::shape_of(ox::avg_pool2d(x, 3, ao)), DType::F32);
  const Tensor gd = rnd({4, 16, 5, 7}, DType::F32);
  const std::vector<std::pair<std::string, std::function<Tensor()>>> runs = {
      {"max", [&] { return ox::max_pool2d(x, 3, {.stride = 1, .padding = 1}); }},
      {"max indices",
       [&] { return std::get<1>(ox::max_pool2d_with_indices(x, 3, {.stride = 1, .padding = 1})); }},
      {"max backward", [&] { return ox::max_pool2d_backward(gm, idx, ox::Shape(xs)); }},
      {"avg", [&] { return ox::avg_pool2d(x, 3, ao); }},
      {"avg backward", [&] { return ox::avg_pool2d_backward(ga, ox::Shape(xs), 3, ao); }},
      {"adaptive",
       [&] {
         return ox::adaptive_avg_pool2d(x, {5, 7});
       }},
      {"adaptive backward", [&] { return ox::adaptive_avg_pool2d_backward(gd, ox::Shape(xs)); }},
  };
  for (const auto& [name, f] : runs) {
    const auto [one, two] = mmtest::at_1_and_2_threads(f);
    EXPECT_TRUE(same_bits(one, two)) << name;
  }
}

TEST(Pool2d, EmptyBatchAndUnbatched) {
  EXPECT_EQ(oxtest::shape_of(ox::max_pool2d(ox::ones({0, 3, 4, 4}), 2)), (ShapeV{0, 3, 2, 2}));
  EXPECT_EQ(oxtest::shape_of(ox::avg_pool2d(ox::ones({0, 3, 4, 4}), 2)), (ShapeV{0, 3, 2, 2}));
  EXPECT_EQ(oxtest::shape_of(ox::max_pool2d_backward(
                ox::ones({0, 3, 2, 2}), ox::zeros({0, 3, 2, 2}, DType::I64), {0, 3, 4, 4})),
            (ShapeV{0, 3, 4, 4}));
  ox::manual_seed(37);
  const Tensor x = rnd({3, 6, 5}, DType::F64);
  const Geo g = geo({1, 3, 6, 5}, 2, 2, 1, 1, false);
  const auto [out, idx] = ox::max_pool2d_with_indices(x, 2, {.padding = 1});
  std::vector<double> want;
  std::vector<int64_t> want_idx;
  ref_max(g, vals(x), want, want_idx);
  expect_exact(out, {3, g.Ho, g.Wo}, want, "unbatched max");
  EXPECT_EQ(idx.to_vector<int64_t>(), want_idx);
  const Tensor go = rnd({3, g.Ho, g.Wo}, DType::F64);
  expect_close(ox::max_pool2d_backward(go, idx, {3, 6, 5}), {3, 6, 5},
               ref_max_backward(g, vals(go), want_idx), 4, "unbatched max backward");
  expect_close(ox::avg_pool2d(x, 2, {.padding = 1}), {3, g.Ho, g.Wo},
               ref_avg(g, vals(x), avg_rect(g, true, 0)), 4, "unbatched avg");
  EXPECT_EQ(oxtest::shape_of(
                ox::adaptive_avg_pool2d_backward(ox::ones({3, 2, 2}, DType::F64), {3, 6, 5})),
            (ShapeV{3, 6, 5}));
}

TEST(Pool2d, BadArgumentsGiveTypedErrors) {
  const Tensor x = ox::ones({1, 2, 5, 5});
  EXPECT_EQ(kind_of([&] { ox::max_pool2d(x, 0); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::max_pool2d(x, 2, {.stride = {1, 0}}); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::max_pool2d(x, 2, {.dilation = 0}); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::max_pool2d(x, 3, {.padding = 2}); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::max_pool2d(x, 2, {.padding = -1}); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::avg_pool2d(x, {2, 4}, {.padding = {0, 3}}); }), ErrorKind::Value);
  const ox::Error e = oxtest::caught([&] { ox::max_pool2d(ox::ones({1, 1, 2, 2}), 3); });
  EXPECT_EQ(e.kind(), ErrorKind::Shape);
  EXPECT_TRUE(oxtest::contains(e, "[1, 1, 2, 2]")) << e.what();
  EXPECT_EQ(kind_of([&] { ox::max_pool2d(ox::ones({5, 5}), 2); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::max_pool2d(ox::ones({1, 1, 1, 5, 5}), 2); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::avg_pool2d(ox::ones({1, 0, 5, 5}), 2); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::avg_pool2d(x, 2, {.divisor_override = 0}); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::adaptive_avg_pool2d(x, {-1, 2}); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::adaptive_avg_pool2d(ox::ones({1, 2, 0, 5}), 2); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] {
              ox::avg_pool2d_backward(ox::ones({1, 2, 3, 3}), {1, 2, 5, 5}, 2);
            }),
            ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] {
              ox::avg_pool2d_backward(ox::ones({1, 2, 2, 2}), {1, 2, 5}, 2);
            }),
            ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] {
              ox::adaptive_avg_pool2d_backward(ox::ones({1, 3, 2, 2}), {1, 2, 5, 5});
            }),
            ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::max_pool2d(Tensor(), 2); }), ErrorKind::Value);
  // Huge kernels and strides compute in 128 bits: errors or results, never wrapped sizes.
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(kind_of([&] { ox::max_pool2d(x, kMax); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::max_pool2d(x, 2, {.dilation = kMax}); }), ErrorKind::Shape);
  const int64_t big = int64_t{1} << 62;
  const Tensor v = ox::arange(1, 26, 1, {.dtype = DType::F64}).reshape({1, 1, 5, 5});
  EXPECT_EQ(ox::max_pool2d(v, big, {.stride = kMax, .padding = big / 2}).item<double>(), 25.0);
  EXPECT_EQ(ox::avg_pool2d(v, big, {.padding = big / 2, .count_include_pad = false}).item<double>(),
            13.0);
  EXPECT_EQ(ox::avg_pool2d(v, big, {.padding = big / 2}).item<double>(), 325.0 / 0x1p124);
}

}  // namespace
