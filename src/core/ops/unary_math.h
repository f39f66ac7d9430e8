#pragma once
// The scalar math of every unary op of core/elementwise_ops.h: one functor template per row,
// F<C>, called on the compute type C (f32 for f16/bf16 and f32, f64, the integer types, bool)
// of each dtype the row's class takes. Backends construct them with make_unary<F, C>(params)
// and apply them per element; the CPU inlines them into its loops (backend/cpu/unary.cpp).
//
// Every function here is OX_HOST_DEVICE: no exceptions, no std::function, only <cmath>
// functions that CUDA device code has, and numeric_limits only through its constexpr members.
//
// The CPU computes the ops of simd::has_unary (exp, expm1, the logs, tanh, sigmoid, silu,
// logsigmoid, gelu-tanh, mish) with Highway's vector approximations for every layout; their
// functors here are the libm definitions (within a few ULP of those, not bitwise: tested in
// tests/core/elementwise_ops_test.cpp). Every other functor is the CPU's own definition.

#include <cmath>
#include <limits>
#include <type_traits>

#include "core/elementwise_ops.h"
#include "core/host_device.h"
#include "core/ops/scalar.h"

namespace ox::elementwise {

// A functor of a unary op for compute type C, with the op's parameters when it takes them.
template <template <class> class F, class C>
OX_HOST_DEVICE inline F<C> make_unary(const UnaryParams& p) {
  if constexpr (std::is_constructible_v<F<C>, const UnaryParams&>) {
    return F<C>(p);
  } else {
    return F<C>{};
  }
}

// ---- Numeric: integers wrap, floats as IEEE --------------------------------------------------

template <class C>
struct Neg {
  OX_HOST_DEVICE C operator()(C x) const {
    if constexpr (is_float_v<C>) {
      return -x;
    } else {
      return wrap_sub(C(0), x);
    }
  }
};

template <class C>
struct Abs {
  OX_HOST_DEVICE C operator()(C x) const {
    if constexpr (is_float_v<C>) {
      return std::fabs(x);
    } else if constexpr (std::is_signed_v<C>) {
      return x < 0 ? wrap_sub(C(0), x) : x;  // INT_MIN stays INT_MIN
    } else {
      return x;
    }
  }
};

template <class C>
struct Sign {  // -1, 0 or 1; NaN stays NaN, -0 gives 0
  OX_HOST_DEVICE C operator()(C x) const {
    if constexpr (is_float_v<C>)
      if (x != x) return x;
    return C(C(C(0) < x) - C(is_negative(x)));
  }
};

template <class C>
struct Square {
  OX_HOST_DEVICE C operator()(C x) const {
    if constexpr (is_float_v<C>) {
      return x * x;
    } else {
      return wrap_mul(x, x);
    }
  }
};

template <class C>
struct Relu {  // NaN propagates
  OX_HOST_DEVICE C operator()(C x) const { return is_negative(x) ? C(0) : x; }
};

template <class C>
struct Clamp {  // min(max(x, lo), hi), so lo > hi gives hi; NaN propagates
  C lo, hi;
  OX_HOST_DEVICE explicit Clamp(const UnaryParams& p)
      : lo(convert_number<C>(p.a)), hi(convert_number<C>(p.b)) {}
  OX_HOST_DEVICE C operator()(C x) const {
    if constexpr (is_float_v<C>)
      if (x != x) return x;
    const C y = x < lo ? lo : x;
    return hi < y ? hi : y;
  }
};

// ---- Floating ------------------------------------------------------------------------------

// One-line functors over a <cmath> function (C is float or double).
#define OX_CMATH_FUNCTOR(Name, expr)                        \
  template <class C>                                        \
  struct Name {                                             \
    OX_HOST_DEVICE C operator()(C x) const { return expr; } \
  };
OX_CMATH_FUNCTOR(Exp, std::exp(x))
OX_CMATH_FUNCTOR(Exp2, std::exp2(x))
OX_CMATH_FUNCTOR(Expm1, std::expm1(x))
OX_CMATH_FUNCTOR(Log, std::log(x))
OX_CMATH_FUNCTOR(Log2, std::log2(x))
OX_CMATH_FUNCTOR(Log10, std::log10(x))
OX_CMATH_FUNCTOR(Log1p, std::log1p(x))
OX_CMATH_FUNCTOR(Sqrt, std::sqrt(x))
OX_CMATH_FUNCTOR(Rsqrt, C(1) / std::sqrt(x))
OX_CMATH_FUNCTOR(Reciprocal, C(1) / x)
OX_CMATH_FUNCTOR(Sin, std::sin(x))
OX_CMATH_FUNCTOR(Cos, std::cos(x))
OX_CMATH_FUNCTOR(Tan, std::tan(x))
OX_CMATH_FUNCTOR(Asin, std::asin(x))
OX_CMATH_FUNCTOR(Acos, std::acos(x))
OX_CMATH_FUNCTOR(Atan, std::atan(x))
OX_CMATH_FUNCTOR(Sinh, std::sinh(x))
OX_CMATH_FUNCTOR(Cosh, std::cosh(x))
OX_CMATH_FUNCTOR(Tanh, std::tanh(x))
OX_CMATH_FUNCTOR(Erf, std::erf(x))
OX_CMATH_FUNCTOR(Erfc, std::erfc(x))
OX_CMATH_FUNCTOR(Floor, std::floor(x))
OX_CMATH_FUNCTOR(Ceil, std::ceil(x))
OX_CMATH_FUNCTOR(Round, std::nearbyint(x))  // half to even, in the default rounding mode
OX_CMATH_FUNCTOR(Trunc, std::trunc(x))
#undef OX_CMATH_FUNCTOR

template <class C>
OX_HOST_DEVICE inline C sigmoid(C x) {
  return C(1) / (C(1) + std::exp(-x));
}
// log1p(exp(x * beta)) / beta, and x itself past the threshold (as PyTorch).
template <class C>
OX_HOST_DEVICE inline C softplus(C x, C beta, C threshold) {
  return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
}

template <class C>
struct Sigmoid {
  OX_HOST_DEVICE C operator()(C x) const { return sigmoid(x); }
};

template <class C>
struct LogSigmoid {  // min(x, 0) - log1p(exp(-|x|)): no overflow either way
  OX_HOST_DEVICE C operator()(C x) const {
    return (x < C(0) ? x : C(0)) - std::log1p(std::exp(-std::fabs(x)));
  }
};

template <class C>
struct Silu {
  OX_HOST_DEVICE C operator()(C x) const { return x * sigmoid(x); }
};

template <class C>
struct LeakyRelu {
  C slope;
  OX_HOST_DEVICE explicit LeakyRelu(const UnaryParams& p) : slope(C(p.a)) {}
  OX_HOST_DEVICE C operator()(C x) const { return x < C(0) ? x * slope : x; }
};

template <class C>
struct Elu {
  C alpha;
  OX_HOST_DEVICE explicit Elu(const UnaryParams& p) : alpha(C(p.a)) {}
  OX_HOST_DEVICE C operator()(C x) const { return x > C(0) ? x : alpha * std::expm1(x); }
};

template <class C>
struct GeluErf {  // x * Φ(x)
  OX_HOST_DEVICE C operator()(C x) const {
    return C(0.5) * x * (C(1) + std::erf(x / C(1.4142135623730950488)));
  }
};

template <class C>
struct GeluTanh {  // 0.5 x (1 + tanh(sqrt(2/π) (x + 0.044715 x³))), as the vector kernel
  OX_HOST_DEVICE C operator()(C x) const {
    const C inner = C(0.79788456080286535588) * (x + C(0.044715) * (x * (x * x)));
    return (C(0.5) * x) * (C(1) + std::tanh(inner));
  }
};

template <class C>
struct Softplus {
  C beta, threshold;
  OX_HOST_DEVICE explicit Softplus(const UnaryParams& p) : beta(C(p.a)), threshold(C(p.b)) {}
  OX_HOST_DEVICE C operator()(C x) const { return softplus(x, beta, threshold); }
};

template <class C>
struct Mish {  // x tanh(softplus(x)), softplus with beta 1 and threshold 20
  OX_HOST_DEVICE C operator()(C x) const { return x * std::tanh(softplus(x, C(1), C(20))); }
};

// ---- FloatingOrCopy: integers are returned unchanged by the op layer -----------------------

template <class C>
struct NanToNum {
  C nan, posinf, neginf;
  OX_HOST_DEVICE explicit NanToNum(const UnaryParams& p)
      : nan(C(p.a)), posinf(C(p.b)), neginf(C(p.c)) {}
  OX_HOST_DEVICE C operator()(C x) const {
    constexpr C inf = std::numeric_limits<C>::infinity();
    return x != x ? nan : x == inf ? posinf : x == -inf ? neginf : x;
  }
};

// ---- AnyToBool -----------------------------------------------------------------------------

template <class C>
struct IsNan {
  OX_HOST_DEVICE bool operator()(C x) const {
    if constexpr (is_float_v<C>) {
      return x != x;
    } else {
      return false;
    }
  }
};

template <class C>
struct IsInf {
  OX_HOST_DEVICE bool operator()(C x) const {
    if constexpr (is_float_v<C>) {
      return std::isinf(x);
    } else {
      return false;
    }
  }
};

template <class C>
struct IsFinite {
  OX_HOST_DEVICE bool operator()(C x) const {
    if constexpr (is_float_v<C>) {
      return std::isfinite(x);
    } else {
      return true;
    }
  }
};

template <class C>
struct LogicalNot {
  OX_HOST_DEVICE bool operator()(C x) const { return x == C(0); }
};

// ---- IntegralOrBool ------------------------------------------------------------------------

template <class C>
struct BitwiseNot {
  OX_HOST_DEVICE C operator()(C x) const {
    if constexpr (std::is_same_v<C, bool>) {
      return !x;
    } else {
      return C(~x);
    }
  }
};

}  // namespace ox::elementwise
