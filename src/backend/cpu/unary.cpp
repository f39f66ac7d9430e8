// Unary elementwise ops: one functor each over map_unary.

#include <cmath>

#include "backend/cpu/elementwise.h"
#include "backend/cpu/kernels.h"

namespace ox::cpu {

namespace {

constexpr double kSqrt2 = 1.4142135623730950488;
constexpr double kSqrt2OverPi = 0.79788456080286535588;

template <class C>
inline C sigmoid(C x) {
  return C(1) / (C(1) + std::exp(-x));
}

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

template <class T>
void floating_unary(UnaryOp op, const StridedArray& dst, const StridedArray& src,
                    const UnaryParams& p) {
  using C = compute_t<T>;
  const C a = C(p.a), b = C(p.b), c = C(p.c);
  // clang-format off
  switch (op) {
    case UnaryOp::Exp: return map_unary<T, T>(dst, src, [](C x) { return std::exp(x); });
    case UnaryOp::Exp2: return map_unary<T, T>(dst, src, [](C x) { return std::exp2(x); });
    case UnaryOp::Expm1: return map_unary<T, T>(dst, src, [](C x) { return std::expm1(x); });
    case UnaryOp::Log: return map_unary<T, T>(dst, src, [](C x) { return std::log(x); });
    case UnaryOp::Log2: return map_unary<T, T>(dst, src, [](C x) { return std::log2(x); });
    case UnaryOp::Log10: return map_unary<T, T>(dst, src, [](C x) { return std::log10(x); });
    case UnaryOp::Log1p: return map_unary<T, T>(dst, src, [](C x) { return std::log1p(x); });
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
    case UnaryOp::Tanh: return map_unary<T, T>(dst, src, [](C x) { return std::tanh(x); });
    case UnaryOp::Erf: return map_unary<T, T>(dst, src, [](C x) { return std::erf(x); });
    case UnaryOp::Erfc: return map_unary<T, T>(dst, src, [](C x) { return std::erfc(x); });
    case UnaryOp::Floor: return map_unary<T, T>(dst, src, [](C x) { return std::floor(x); });
    case UnaryOp::Ceil: return map_unary<T, T>(dst, src, [](C x) { return std::ceil(x); });
    case UnaryOp::Round: return map_unary<T, T>(dst, src, [](C x) { return std::nearbyint(x); });
    case UnaryOp::Trunc: return map_unary<T, T>(dst, src, [](C x) { return std::trunc(x); });
    case UnaryOp::Sigmoid: return map_unary<T, T>(dst, src, [](C x) { return sigmoid(x); });
    case UnaryOp::LogSigmoid:  // min(x, 0) - log1p(exp(-|x|)): no overflow either way
      return map_unary<T, T>(dst, src, [](C x) {
        return std::min(x, C(0)) - std::log1p(std::exp(-std::fabs(x)));
      });
    case UnaryOp::LeakyRelu:
      return map_unary<T, T>(dst, src, [a](C x) { return x < C(0) ? x * a : x; });
    case UnaryOp::Elu:
      return map_unary<T, T>(dst, src, [a](C x) { return x > C(0) ? x : a * std::expm1(x); });
    case UnaryOp::GeluErf:
      return map_unary<T, T>(dst, src, [](C x) {
        return C(0.5) * x * (C(1) + std::erf(x / C(kSqrt2)));
      });
    case UnaryOp::GeluTanh:
      return map_unary<T, T>(dst, src, [](C x) {
        return C(0.5) * x * (C(1) + std::tanh(C(kSqrt2OverPi) * (x + C(0.044715) * x * x * x)));
      });
    case UnaryOp::Silu: return map_unary<T, T>(dst, src, [](C x) { return x * sigmoid(x); });
    case UnaryOp::Softplus:
      return map_unary<T, T>(dst, src, [a, b](C x) { return softplus(x, a, b); });
    case UnaryOp::Mish:
      return map_unary<T, T>(dst, src, [](C x) { return x * std::tanh(softplus(x, C(1), C(20))); });
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
