// Unary elementwise ops: one functor each over map_unary; the transcendental ones that Highway
// vectorizes go to their SIMD kernel instead (simd/math.cpp).

#include <cmath>

#include "backend/cpu/elementwise.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/simd/simd.h"

namespace ox::cpu {

namespace {

constexpr double kSqrt2 = 1.4142135623730950488;

template <class C>
inline C softplus(C x, C beta, C threshold) {
  return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
}

// Ops defined for every numeric dtype, computed in T's compute type.
template <class T>
void numeric_unary(UnaryOp op, const StridedArray& dst, const StridedArray& src,
                   const UnaryParams& p) {
  using C = compute_t<T>;
  switch (op) {
    case UnaryOp::Neg:
      if constexpr (std::is_integral_v<C>) {
        return map_unary<T, T>(dst, src, [](C x) { return wrap_sub(C(0), x); });
      } else {
        return map_unary<T, T>(dst, src, [](C x) { return -x; });
      }
    case UnaryOp::Abs:
      if constexpr (std::is_integral_v<C> && std::is_signed_v<C>) {
        return map_unary<T, T>(dst, src, [](C x) { return x < 0 ? wrap_sub(C(0), x) : x; });
      } else if constexpr (std::is_integral_v<C>) {
        return map_unary<T, T>(dst, src, [](C x) { return x; });
      } else {
        return map_unary<T, T>(dst, src, [](C x) { return std::fabs(x); });
      }
    case UnaryOp::Sign:  // NaN stays NaN
      return map_unary<T, T>(dst, src, [](C x) {
        if constexpr (std::is_floating_point_v<C>)
          if (x != x) return x;
        return C(C(0) < x) - C(x < C(0));
      });
    case UnaryOp::Square:
      if constexpr (std::is_integral_v<C>) {
        return map_unary<T, T>(dst, src, [](C x) { return wrap_mul(x, x); });
      } else {
        return map_unary<T, T>(dst, src, [](C x) { return x * x; });
      }
    case UnaryOp::Relu:  // NaN propagates
      return map_unary<T, T>(dst, src, [](C x) { return x < C(0) ? C(0) : x; });
    case UnaryOp::Clamp: {  // NaN propagates; min(max(x, lo), hi), so lo > hi gives hi
      const C lo = convert<C>(p.a), hi = convert<C>(p.b);
      return map_unary<T, T>(dst, src, [lo, hi](C x) {
        if constexpr (std::is_floating_point_v<C>)
          if (x != x) return x;
        const C y = x < lo ? lo : x;
        return hi < y ? hi : y;
      });
    }
    default:
      OX_ASSERT(false, "unary op ", int(op), " is not a numeric op");
  }
}

// dst[i] = op(src[i]) by the op's SIMD kernel for every layout: contiguous runs of the compute
// type go straight to it, other runs through a buffer, so a result never depends on the layout.
template <class T>
void map_unary_simd(UnaryOp op, const StridedArray& dst, const StridedArray& src) {
  using C = compute_t<T>;
  parallel_runs<2>({&dst, &src}, [op](const std::array<char*, 2>& p,
                                      const std::array<int64_t, 2>& step, int64_t n) {
    if constexpr (std::is_same_v<T, C>) {
      if (step[0] == sizeof(T) && step[1] == sizeof(T))
        return simd::unary(op, reinterpret_cast<const C*>(p[1]), reinterpret_cast<C*>(p[0]), n);
    }
    constexpr int64_t kBuffer = 256;
    C buf[kBuffer];
    for (int64_t i0 = 0; i0 < n; i0 += kBuffer) {
      const int64_t m = std::min(kBuffer, n - i0);
      char* out = p[0] + i0 * step[0];
      const char* in = p[1] + i0 * step[1];
      if constexpr (is_half_v<T>) {
        if (step[0] == sizeof(T) && step[1] == sizeof(T)) {  // a contiguous 16-bit run
          simd::widen(reinterpret_cast<const T*>(in), buf, m);
          simd::unary(op, buf, buf, m);
          simd::narrow(buf, reinterpret_cast<T*>(out), m);
          continue;
        }
      }
      for (int64_t i = 0; i < m; ++i) buf[i] = load<T>(in + i * step[1]);
      simd::unary(op, buf, buf, m);
      for (int64_t i = 0; i < m; ++i) store<T>(out + i * step[0], buf[i]);
    }
  });
}

template <class T>
void floating_unary(UnaryOp op, const StridedArray& dst, const StridedArray& src,
                    const UnaryParams& p) {
  using C = compute_t<T>;
  if (simd::has_unary(op)) return map_unary_simd<T>(op, dst, src);
  const C a = C(p.a), b = C(p.b), c = C(p.c);
  // clang-format off
  switch (op) {
    case UnaryOp::Exp2: return map_unary<T, T>(dst, src, [](C x) { return std::exp2(x); });
    case UnaryOp::Sqrt: return map_unary<T, T>(dst, src, [](C x) { return std::sqrt(x); });
    case UnaryOp::Rsqrt: return map_unary<T, T>(dst, src, [](C x) { return C(1) / std::sqrt(x); });
    case UnaryOp::Reciprocal: return map_unary<T, T>(dst, src, [](C x) { return C(1) / x; });
    case UnaryOp::Sin: return map_unary<T, T>(dst, src, [](C x) { return std::sin(x); });
    case UnaryOp::Cos: return map_unary<T, T>(dst, src, [](C x) { return std::cos(x); });
    case UnaryOp::Tan: return map_unary<T, T>(dst, src, [](C x) { return std::tan(x); });
    case UnaryOp::Asin: return map_unary<T, T>(dst, src, [](C x) { return std::asin(x); });
    case UnaryOp::Acos: return map_unary<T, T>(dst, src, [](C x) { return std::acos(x); });
    case UnaryOp::Atan: return map_unary<T, T>(dst, src, [](C x) { return std::atan(x); });
    case UnaryOp::Sinh: return map_unary<T, T>(dst, src, [](C x) { return std::sinh(x); });
    case UnaryOp::Cosh: return map_unary<T, T>(dst, src, [](C x) { return std::cosh(x); });
    case UnaryOp::Erf: return map_unary<T, T>(dst, src, [](C x) { return std::erf(x); });
    case UnaryOp::Erfc: return map_unary<T, T>(dst, src, [](C x) { return std::erfc(x); });
    case UnaryOp::Floor: return map_unary<T, T>(dst, src, [](C x) { return std::floor(x); });
    case UnaryOp::Ceil: return map_unary<T, T>(dst, src, [](C x) { return std::ceil(x); });
    case UnaryOp::Round: return map_unary<T, T>(dst, src, [](C x) { return std::nearbyint(x); });
    case UnaryOp::Trunc: return map_unary<T, T>(dst, src, [](C x) { return std::trunc(x); });
    case UnaryOp::LeakyRelu:
      return map_unary<T, T>(dst, src, [a](C x) { return x < C(0) ? x * a : x; });
    case UnaryOp::Elu:
      return map_unary<T, T>(dst, src, [a](C x) { return x > C(0) ? x : a * std::expm1(x); });
    case UnaryOp::GeluErf:
      return map_unary<T, T>(dst, src, [](C x) {
        return C(0.5) * x * (C(1) + std::erf(x / C(kSqrt2)));
      });
    case UnaryOp::Softplus:
      return map_unary<T, T>(dst, src, [a, b](C x) { return softplus(x, a, b); });
    case UnaryOp::NanToNum:
      return map_unary<T, T>(dst, src, [a, b, c](C x) {
        return x != x ? a : x == INFINITY ? b : x == -INFINITY ? c : x;
      });
    default: return numeric_unary<T>(op, dst, src, p);
  }
  // clang-format on
}

template <class T>
void predicate_unary(UnaryOp op, const StridedArray& dst, const StridedArray& src) {
  using C = compute_t<T>;
  switch (op) {
    case UnaryOp::IsNan:
      return map_unary<bool, T>(dst, src, [](C x) {
        if constexpr (std::is_floating_point_v<C>) return x != x;
        return false;
      });
    case UnaryOp::IsInf:
      return map_unary<bool, T>(dst, src, [](C x) {
        if constexpr (std::is_floating_point_v<C>) return std::isinf(x);
        return false;
      });
    case UnaryOp::IsFinite:
      return map_unary<bool, T>(dst, src, [](C x) {
        if constexpr (std::is_floating_point_v<C>) return std::isfinite(x);
        return true;
      });
    case UnaryOp::LogicalNot:
      return map_unary<bool, T>(dst, src, [](C x) { return x == C(0); });
    default:
      OX_ASSERT(false, "unary op ", int(op), " is not a predicate");
  }
}

}  // namespace

void unary(UnaryOp op, const StridedArray& dst, const StridedArray& src, const UnaryParams& p) {
  switch (op) {
    case UnaryOp::IsNan:
    case UnaryOp::IsInf:
    case UnaryOp::IsFinite:
    case UnaryOp::LogicalNot:
      return dispatch_dtype(src.dtype, [&]<class T>() { predicate_unary<T>(op, dst, src); });
    case UnaryOp::BitwiseNot:
      return dispatch_integral_or_bool(src.dtype, [&]<class T>() {
        if constexpr (std::is_same_v<T, bool>) {
          map_unary<bool, bool>(dst, src, [](bool x) { return !x; });
        } else {
          map_unary<T, T>(dst, src, [](T x) { return T(~x); });
        }
      });
    case UnaryOp::Neg:
    case UnaryOp::Abs:
    case UnaryOp::Sign:
    case UnaryOp::Square:
    case UnaryOp::Relu:
    case UnaryOp::Clamp:
      if (!is_floating(src.dtype))
        return dispatch_integral_or_bool(src.dtype, [&]<class T>() {
          if constexpr (!std::is_same_v<T, bool>) numeric_unary<T>(op, dst, src, p);
        });
      [[fallthrough]];
    default:
      return dispatch_floating(src.dtype, [&]<class T>() { floating_unary<T>(op, dst, src, p); });
  }
}

}  // namespace ox::cpu
