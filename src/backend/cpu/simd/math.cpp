// Vector transcendental ops and softmax rows on Highway's contrib/math, compiled once per
// target (foreach_target.h includes this file again for each).
//
// Highway's Exp/Log/Log1p are accurate (1-2 ULP) inside their valid ranges but not IEEE at the
// edges (exp(NaN) = 0, log(0) is finite, log(-1) is a number), so each is wrapped with the
// special values std:: gives.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/simd/math.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format off: foreach_target.h must come first
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
// clang-format on

#include <cmath>
#include <limits>

#include "backend/cpu/simd/simd.h"
#include "oxmera/core/error.h"

HWY_BEFORE_NAMESPACE();
namespace ox::cpu::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class D>
using Vec = hn::Vec<D>;

template <class D>
Vec<D> inf(D d) {
  return hn::Set(d, std::numeric_limits<hn::TFromD<D>>::infinity());
}
template <class D>
Vec<D> nan(D d) {
  return hn::Set(d, std::numeric_limits<hn::TFromD<D>>::quiet_NaN());
}

// The exp family's edges for y = exp(x) or expm1(x): NaN stays NaN, past the largest finite
// result gives inf (Highway's Exp is only valid up to 104 in f32).
template <class D>
Vec<D> exp_edges(D d, Vec<D> x, Vec<D> y) {
  using T = hn::TFromD<D>;
  const Vec<D> overflow = hn::Set(d, T(sizeof(T) == 4 ? 88.8 : 709.8));
  y = hn::IfThenElse(hn::Gt(x, overflow), inf(d), y);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}
// Inlined: a call per vector spilled the callers' registers (softmax spent a third of its time
// in the call).
template <class D>
HWY_INLINE Vec<D> exp(D d, Vec<D> x) {
  return exp_edges(d, x, hn::Exp(d, x));
}

// The log family's edges, for an argument whose pole is at `pole` (0 for log, -1 for log1p).
template <class D>
Vec<D> log_edges(D d, Vec<D> x, Vec<D> y, Vec<D> pole) {
  y = hn::IfThenElse(hn::Lt(x, pole), nan(d), y);
  y = hn::IfThenElse(hn::Eq(x, pole), hn::Neg(inf(d)), y);
  y = hn::IfThenElse(hn::Eq(x, inf(d)), x, y);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

template <class D>
Vec<D> sigmoid(D d, Vec<D> x) {
  const Vec<D> one = hn::Set(d, 1);
  return hn::Div(one, hn::Add(one, exp(d, hn::Neg(x))));
}

// log1p(exp(x)), and x itself past the threshold where the two agree in T (as PyTorch).
template <class D>
Vec<D> softplus(D d, Vec<D> x) {
  const Vec<D> y = hn::Log1p(d, exp(d, x));
  return hn::IfThenElse(hn::Gt(x, hn::Set(d, 20)), x, y);
}

// p[0] + x (p[1] + x (...)): the coefficients lowest degree first.
template <class D, size_t N>
Vec<D> polynomial(D d, Vec<D> x, const float (&p)[N]) {
  Vec<D> y = hn::Set(d, p[N - 1]);
  for (size_t i = N - 1; i-- > 0;) y = hn::MulAdd(y, x, hn::Set(d, p[i]));
  return y;
}

// erf and erfc in f32 (f64 keeps libm's), from two fits made with mpmath's chebyfit for this
// file, each within 1.7e-8 of its function before rounding:
// - |x| < 1: erf(x) = x + x P(x²), P of degree 6 fitting erf(√t) / √t - 1 on [0, 1] (the x
//   term added last and exactly, so that P's rounding is that of a number below 0.16);
// - 1 <= |x| <= 4: erfc(|x|) = exp(T(|x| - 2.5) - x²), T of degree 8 fitting log erfc(x) + x²
//   on [1, 4]. T is small (-2 to -0.85), so the exponent is rounded once, by the multiply-add
//   that subtracts x², and erfc keeps its relative accuracy down to 1e-8;
// - past 4, erfc is below half an f32 ulp of 1, and taken as 0.
constexpr float kErfSmall[] = {0.1283791658f,   -0.3761262667f,    0.1128359472f,  -0.02685421201f,
                               0.005189087423f, -0.0008016864287f, 7.875875063e-5f};
constexpr float kErfcLogTail[] = {-1.556815273f,   -0.3526806742f,  0.05610629639f,
                                  -0.01085854164f, 0.002165303549f, -0.0004201225235f,
                                  7.729137615e-5f, -1.33150144e-5f, 1.637151415e-6f};

template <class D>
Vec<D> erf_small(D d, Vec<D> x) {  // |x| < 1
  return hn::MulAdd(x, polynomial(d, hn::Mul(x, x), kErfSmall), x);
}
template <class D>
Vec<D> erfc_tail(D d, Vec<D> a) {  // a >= 1 (a NaN gives a number: callers keep the NaN)
  const Vec<D> four = hn::Set(d, 4.0f);
  const Vec<D> c = hn::Min(a, four);
  const Vec<D> t = polynomial(d, hn::Sub(c, hn::Set(d, 2.5f)), kErfcLogTail);
  return hn::IfThenZeroElse(hn::Gt(a, four), exp(d, hn::NegMulAdd(c, c, t)));
}
template <class D>
Vec<D> erf(D d, Vec<D> x) {
  const Vec<D> a = hn::Abs(x), one = hn::Set(d, 1.0f);
  const Vec<D> tail = hn::CopySignToAbs(hn::Sub(one, erfc_tail(d, a)), x);
  const Vec<D> y = hn::IfThenElse(hn::Lt(a, one), erf_small(d, x), tail);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}
// 1 + erf(z), as erfc(-z) for z <= -1: without the cancellation that loses the left tail's
// digits. (A NaN z gives a number or NaN: callers keep the NaN.)
template <class D>
Vec<D> one_plus_erf(D d, Vec<D> z) {
  const Vec<D> one = hn::Set(d, 1.0f), tail = erfc_tail(d, hn::Abs(z));
  Vec<D> y = hn::Add(one, erf_small(d, z));
  y = hn::IfThenElse(hn::Ge(z, one), hn::Sub(hn::Set(d, 2.0f), tail), y);
  return hn::IfThenElse(hn::Le(z, hn::Neg(one)), tail, y);
}
// x Φ(x) = x (1 + erf(x / √2)) / 2.
template <class D>
Vec<D> gelu_erf(D d, Vec<D> x) {
  const Vec<D> z = hn::Mul(x, hn::Set(d, 0.70710678118654752f));
  const Vec<D> y = hn::Mul(hn::Mul(hn::Set(d, 0.5f), x), one_plus_erf(d, z));
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}
// gelu's slope Φ(x) + x φ(x) (GeluErfBackward's, without g).
template <class D>
Vec<D> gelu_erf_slope(D d, Vec<D> x) {
  const Vec<D> z = hn::Mul(x, hn::Set(d, 0.70710678118654752f));
  const Vec<D> cdf = hn::Mul(hn::Set(d, 0.5f), one_plus_erf(d, z));
  const Vec<D> pdf = hn::Mul(hn::Set(d, 0.39894228040143267794f),
                             exp(d, hn::Mul(hn::Set(d, -0.5f), hn::Mul(x, x))));
  return hn::IfThenElse(hn::IsNaN(x), x, hn::MulAdd(x, pdf, cdf));
}
// The tanh form's slope (GeluTanhBackward's, without g), in its functor's order.
template <class D>
Vec<D> gelu_tanh_slope(D d, Vec<D> x) {
  using T = hn::TFromD<D>;
  const Vec<D> k = hn::Set(d, T(0.79788456080286535588)), c = hn::Set(d, T(0.044715));
  const Vec<D> one = hn::Set(d, T(1)), half = hn::Set(d, T(0.5)), x2 = hn::Mul(x, x);
  const Vec<D> t = hn::Tanh(d, hn::Mul(k, hn::Add(x, hn::Mul(c, hn::Mul(x, x2)))));
  const Vec<D> du = hn::Mul(k, hn::MulAdd(hn::Set(d, T(3 * 0.044715)), x2, one));
  return hn::MulAdd(hn::Mul(half, x), hn::Mul(hn::NegMulAdd(t, t, one), du),
                    hn::Mul(half, hn::Add(one, t)));
}

// The op's vector function, as a functor over (d, v).
template <class D>
Vec<D> apply(UnaryOp op, D d, Vec<D> x) {
  using T = hn::TFromD<D>;
  const Vec<D> zero = hn::Zero(d);
  switch (op) {
    case UnaryOp::Exp:
      return exp(d, x);
    case UnaryOp::Expm1:
      return exp_edges(d, x, hn::Expm1(d, x));
    case UnaryOp::Log:
      return log_edges(d, x, hn::Log(d, x), zero);
    case UnaryOp::Log2:
      return log_edges(d, x, hn::Log2(d, x), zero);
    case UnaryOp::Log10:
      return log_edges(d, x, hn::Log10(d, x), zero);
    case UnaryOp::Log1p:
      return log_edges(d, x, hn::Log1p(d, x), hn::Set(d, -1));
    case UnaryOp::Tanh:
      return hn::Tanh(d, x);
    case UnaryOp::Sigmoid:
      return sigmoid(d, x);
    case UnaryOp::Silu:
      return hn::Mul(x, sigmoid(d, x));
    case UnaryOp::LogSigmoid:  // min(x, 0) - log1p(exp(-|x|)): no overflow either way
      return hn::Sub(hn::Min(x, zero), hn::Log1p(d, exp(d, hn::Neg(hn::Abs(x)))));
    case UnaryOp::GeluTanh: {
      const Vec<D> inner =
          hn::Mul(hn::Set(d, T(0.79788456080286535588)),
                  hn::Add(x, hn::Mul(hn::Set(d, T(0.044715)), hn::Mul(x, hn::Mul(x, x)))));
      return hn::Mul(hn::Mul(hn::Set(d, T(0.5)), x), hn::Add(hn::Set(d, 1), hn::Tanh(d, inner)));
    }
    case UnaryOp::Mish:
      return hn::Mul(x, hn::Tanh(d, softplus(d, x)));
    case UnaryOp::Erf:
      if constexpr (sizeof(T) == 4) return erf(d, x);
      break;
    case UnaryOp::GeluErf:
      if constexpr (sizeof(T) == 4) return gelu_erf(d, x);
      break;
    default:
      break;
  }
  OX_ASSERT(false, "no vector kernel for unary op ", int(op));
}

// f over n elements; the tail goes through the same vector code on a padded copy.
template <class T, class F>
void map(const T* x, T* y, int64_t n, F f) {
  const hn::ScalableTag<T> d;
  const int64_t lanes = int64_t(hn::Lanes(d));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(f(d, hn::LoadU(d, x + i)), d, y + i);
  if (i < n) {
    HWY_ALIGN T buf[hn::MaxLanes(d)] = {};
    for (int64_t j = 0; j < n - i; ++j) buf[j] = x[i + j];
    hn::Store(f(d, hn::Load(d, buf)), d, buf);
    for (int64_t j = 0; j < n - i; ++j) y[i + j] = buf[j];
  }
}

template <class T>
void Unary(UnaryOp op, const T* x, T* y, int64_t n) {
  // One instantiation per op keeps the switch out of the loop.
  switch (op) {
#define OX_UNARY_CASE(name) \
  case UnaryOp::name:       \
    return map(x, y, n, [](auto d, auto v) { return apply(UnaryOp::name, d, v); });
    OX_UNARY_CASE(Exp)
    OX_UNARY_CASE(Expm1)
    OX_UNARY_CASE(Log)
    OX_UNARY_CASE(Log2)
    OX_UNARY_CASE(Log10)
    OX_UNARY_CASE(Log1p)
    OX_UNARY_CASE(Tanh)
    OX_UNARY_CASE(Sigmoid)
    OX_UNARY_CASE(Silu)
    OX_UNARY_CASE(LogSigmoid)
    OX_UNARY_CASE(GeluTanh)
    OX_UNARY_CASE(Mish)
    OX_UNARY_CASE(Erf)
    OX_UNARY_CASE(GeluErf)
#undef OX_UNARY_CASE
    default:
      OX_ASSERT(false, "no vector kernel for unary op ", int(op));
  }
}
void UnaryF32(UnaryOp op, const float* x, float* y, int64_t n) { Unary(op, x, y, n); }
void UnaryF64(UnaryOp op, const double* x, double* y, int64_t n) { Unary(op, x, y, n); }

// y[i] = a[i] * slope(b[i]) over n elements (the gelu_backward rows: a = g, b = x); the tail
// through the same vector code on padded copies.
template <class T, class Slope>
void map_scaled(const T* a, const T* b, T* y, int64_t n, Slope slope) {
  const hn::ScalableTag<T> d;
  const int64_t lanes = int64_t(hn::Lanes(d));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes)
    hn::StoreU(hn::Mul(hn::LoadU(d, a + i), slope(d, hn::LoadU(d, b + i))), d, y + i);
  if (i < n) {
    HWY_ALIGN T pa[hn::MaxLanes(d)] = {}, pb[hn::MaxLanes(d)] = {};
    for (int64_t j = 0; j < n - i; ++j) pa[j] = a[i + j], pb[j] = b[i + j];
    hn::Store(hn::Mul(hn::Load(d, pa), slope(d, hn::Load(d, pb))), d, pa);
    for (int64_t j = 0; j < n - i; ++j) y[i + j] = pa[j];
  }
}

template <class T>
void Binary(BinaryOp op, const T* a, const T* b, T* y, int64_t n) {
  switch (op) {
    case BinaryOp::GeluErfBackward:
      if constexpr (sizeof(T) == 4)
        return map_scaled(a, b, y, n, [](auto d, auto v) { return gelu_erf_slope(d, v); });
      break;
    case BinaryOp::GeluTanhBackward:
      return map_scaled(a, b, y, n, [](auto d, auto v) { return gelu_tanh_slope(d, v); });
    default:
      break;
  }
  OX_ASSERT(false, "no vector kernel for binary op ", int(op));
}
void BinaryF32(BinaryOp op, const float* a, const float* b, float* y, int64_t n) {
  Binary(op, a, b, y, n);
}
void BinaryF64(BinaryOp op, const double* a, const double* b, double* y, int64_t n) {
  Binary(op, a, b, y, n);
}

// Softmax of a row in three passes: max (NaN-aware), the sum of exp(x - max), then exp scaled
// (or x - max less the log of the sum). A row whose max is not finite (a NaN, an inf, or all
// -inf) is NaN throughout, as PyTorch's is; past that check x - max is finite and <= 0 or -inf,
// where Highway's Exp is exact to its ulps without exp()'s edge fixes. Two accumulators, summed
// at the end, keep the adds off the exp's critical path.
template <bool kLog, class T>
void SoftmaxRowOf(const T* x, T* y, int64_t n) {
  using D = hn::ScalableTag<T>;
  const D d;
  const int64_t lanes = int64_t(hn::Lanes(d));
  const T neg_inf = -std::numeric_limits<T>::infinity();
  Vec<D> max_v = hn::Set(d, neg_inf);
  auto has_nan = hn::Lt(max_v, max_v);  // all false
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const Vec<D> v = hn::LoadU(d, x + i);
    has_nan = hn::Or(has_nan, hn::IsNaN(v));
    max_v = hn::Max(max_v, v);
  }
  T max = hn::GetLane(hn::MaxOfLanes(d, max_v));
  bool nan_row = !hn::AllFalse(d, has_nan);
  for (; i < n; ++i) {
    nan_row |= x[i] != x[i];
    max = x[i] > max ? x[i] : max;
  }
  if (nan_row || !std::isfinite(max)) {
    std::fill(y, y + n, std::numeric_limits<T>::quiet_NaN());
    return;
  }
  const Vec<D> max_s = hn::Set(d, max);
  // exp(x - max) of one vector, added to the sum; stored unless log_softmax, which needs the sum
  // only.
  auto exp_step = [&](const T* from, T* to, Vec<D>& sum) {
    const Vec<D> e = hn::Exp(d, hn::Sub(hn::LoadU(d, from), max_s));
    if constexpr (!kLog) hn::StoreU(e, d, to);
    sum = hn::Add(sum, e);
  };
  Vec<D> sum0 = hn::Zero(d), sum1 = hn::Zero(d);
  for (i = 0; i + 2 * lanes <= n; i += 2 * lanes) {
    exp_step(x + i, y + i, sum0);
    exp_step(x + i + lanes, y + i + lanes, sum1);
  }
  for (; i + lanes <= n; i += lanes) exp_step(x + i, y + i, sum0);
  if (i < n) {  // the tail on a copy padded with -inf, whose exponentials add nothing
    HWY_ALIGN T buf[hn::MaxLanes(d)];
    std::fill(buf, buf + lanes, neg_inf);
    std::copy(x + i, x + n, buf);
    exp_step(buf, buf, sum1);
    if constexpr (!kLog) std::copy(buf, buf + (n - i), y + i);
  }
  const T sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(sum0, sum1)));
  if constexpr (kLog) {
    // (x - max) - log(sum), not x - (max + log(sum)): a huge max would absorb the log.
    const Vec<D> log_sum = hn::Set(d, std::log(sum));
    map(x, y, n, [&](auto, auto v) { return hn::Sub(hn::Sub(v, max_s), log_sum); });
  } else {
    const Vec<D> inv = hn::Set(d, T(1) / sum);
    map(y, y, n, [&](auto, auto v) { return hn::Mul(v, inv); });
  }
}
template <class T>
void SoftmaxRow(const T* x, T* y, int64_t n, bool log) {
  log ? SoftmaxRowOf<true>(x, y, n) : SoftmaxRowOf<false>(x, y, n);
}
void SoftmaxRowF32(const float* x, float* y, int64_t n, bool log) { SoftmaxRow(x, y, n, log); }
void SoftmaxRowF64(const double* x, double* y, int64_t n, bool log) { SoftmaxRow(x, y, n, log); }

}  // namespace HWY_NAMESPACE
}  // namespace ox::cpu::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ox::cpu::simd {

HWY_EXPORT(UnaryF32);
HWY_EXPORT(UnaryF64);
HWY_EXPORT(BinaryF32);
HWY_EXPORT(BinaryF64);
HWY_EXPORT(SoftmaxRowF32);
HWY_EXPORT(SoftmaxRowF64);

void unary(UnaryOp op, const float* x, float* y, int64_t n) {
  HWY_DYNAMIC_DISPATCH(UnaryF32)(op, x, y, n);
}
void unary(UnaryOp op, const double* x, double* y, int64_t n) {
  HWY_DYNAMIC_DISPATCH(UnaryF64)(op, x, y, n);
}
void binary(BinaryOp op, const float* a, const float* b, float* y, int64_t n) {
  HWY_DYNAMIC_DISPATCH(BinaryF32)(op, a, b, y, n);
}
void binary(BinaryOp op, const double* a, const double* b, double* y, int64_t n) {
  HWY_DYNAMIC_DISPATCH(BinaryF64)(op, a, b, y, n);
}
void softmax_row(const float* x, float* y, int64_t n, bool log) {
  HWY_DYNAMIC_DISPATCH(SoftmaxRowF32)(x, y, n, log);
}
void softmax_row(const double* x, double* y, int64_t n, bool log) {
  HWY_DYNAMIC_DISPATCH(SoftmaxRowF64)(x, y, n, log);
}

}  // namespace ox::cpu::simd
#endif
