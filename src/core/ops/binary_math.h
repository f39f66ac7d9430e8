#pragma once
// The scalar math of every binary op of core/elementwise_ops.h: one functor template per row,
// F<C>, called on the compute type C (f32 for f16/bf16 and f32, f64, the integer types, bool)
// of each dtype the row's class takes. Both operands are of type C; the result is C, or bool
// for the AnyToBool rows. Add and Sub take alpha through WithAlpha.
//
// Integers wrap modulo 2^bits, and an integer division by zero gives 0 (floor_divide,
// trunc-div, remainder, fmod) rather than trapping; docs/OPS.md. Every function here is
// OX_HOST_DEVICE (see unary_math.h), and each is the CPU's own definition, bit for bit.

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/host_device.h"
#include "core/ops/scalar.h"

namespace ox::elementwise {

// ---- Arithmetic ----------------------------------------------------------------------------

template <class C>
struct Add {  // bool: or
  OX_HOST_DEVICE C operator()(C x, C y) const {
    if constexpr (std::is_same_v<C, bool>) {
      return x || y;
    } else if constexpr (is_int_v<C>) {
      return wrap_add(x, y);
    } else {
      return x + y;
    }
  }
};

template <class C>
struct Sub {
  OX_HOST_DEVICE C operator()(C x, C y) const {
    if constexpr (is_int_v<C>) {
      return wrap_sub(x, y);
    } else {
      return x - y;
    }
  }
};

template <class C>
struct Mul {  // bool: and
  OX_HOST_DEVICE C operator()(C x, C y) const {
    if constexpr (std::is_same_v<C, bool>) {
      return x && y;
    } else if constexpr (is_int_v<C>) {
      return wrap_mul(x, y);
    } else {
      return x * y;
    }
  }
};

// alpha as the compute type C: an integer alpha wraps into C as PyTorch's does (u8 alpha -2 is
// 254: x - 254 y = x + 2 y mod 256), through i64 so that alphas beyond i32 wrap too.
template <class C>
OX_HOST_DEVICE inline C alpha_as(double alpha) {
  if constexpr (is_int_v<C>) {
    return static_cast<C>(convert_number<int64_t>(alpha));
  } else {
    return convert_number<C>(alpha);
  }
}

// F(x, alpha * y) for the ops that take alpha (Add, Sub; not for bool, which ignores alpha).
// Backends use F<C> itself when alpha is 1: the same values, one multiplication fewer.
template <template <class> class F, class C>
struct WithAlpha {
  C alpha;
  OX_HOST_DEVICE explicit WithAlpha(double a) : alpha(alpha_as<C>(a)) {}
  OX_HOST_DEVICE C operator()(C x, C y) const { return F<C>{}(x, Mul<C>{}(alpha, y)); }
};

template <class C>
struct Div {  // true division; floats only (the op layer converts integers)
  OX_HOST_DEVICE C operator()(C x, C y) const { return x / y; }
};

// Python's floor division for floats, as PyTorch computes it (exact when a / b rounds up).
template <class C>
OX_HOST_DEVICE inline C floor_divide_float(C a, C b) {
  if (b == C(0)) return a / b;
  const C mod = std::fmod(a, b);
  C div = (a - mod) / b;
  if (mod != C(0) && (b < C(0)) != (mod < C(0))) div -= C(1);
  if (div == C(0)) return std::copysign(C(0), a / b);
  const C floored = std::floor(div);
  return div - floored > C(0.5) ? floored + C(1) : floored;
}

template <class C>
struct FloorDivide {  // rounds toward -inf; integers: x / 0 is 0, INT_MIN / -1 wraps to INT_MIN
  OX_HOST_DEVICE C operator()(C x, C y) const {
    if constexpr (is_float_v<C>) {
      return floor_divide_float(x, y);
    } else {
      if (y == 0) return 0;
      if constexpr (std::is_signed_v<C>) {
        if (y == C(-1)) return wrap_sub(C(0), x);
      }
      const C q = C(x / y);
      return (x % y != 0 && is_negative(x) != is_negative(y)) ? C(q - 1) : q;
    }
  }
};

template <class C>
struct TruncDivide {  // rounds toward 0; integers: x / 0 is 0, INT_MIN / -1 wraps to INT_MIN
  OX_HOST_DEVICE C operator()(C x, C y) const {
    if constexpr (is_float_v<C>) {
      return std::trunc(x / y);
    } else {
      if (y == 0) return 0;
      if constexpr (std::is_signed_v<C>) {
        if (y == C(-1)) return wrap_sub(C(0), x);
      }
      return C(x / y);
    }
  }
};

template <class C>
struct Remainder {  // Python's %: the sign of the divisor; integers: x % 0 is 0
  OX_HOST_DEVICE C operator()(C x, C y) const {
    if constexpr (is_float_v<C>) {
      const C r = std::fmod(x, y);
      return (r != C(0) && (r < C(0)) != (y < C(0))) ? r + y : r;
    } else {
      if (y == 0) return 0;
      if constexpr (std::is_signed_v<C>) {
        if (y == C(-1)) return 0;  // also avoids INT_MIN % -1
      }
      const C r = C(x % y);
      return (r != 0 && is_negative(r) != is_negative(y)) ? C(r + y) : r;
    }
  }
};

template <class C>
struct Fmod {  // C's %: the sign of the dividend; integers: x % 0 is 0
  OX_HOST_DEVICE C operator()(C x, C y) const {
    if constexpr (is_float_v<C>) {
      return std::fmod(x, y);
    } else {
      if (y == 0) return 0;
      if constexpr (std::is_signed_v<C>) {
        if (y == C(-1)) return 0;
      }
      return C(x % y);
    }
  }
};

// base^exp for integers by squaring, wrapping; a negative exponent gives trunc(1 / base^|exp|):
// 1 for base 1, ±1 for base -1, else 0 (0^-n too, where PyTorch raises). 0^0 is 1.
template <class C>
OX_HOST_DEVICE inline C int_pow(C base, C exp) {
  if constexpr (std::is_signed_v<C>) {
    if (exp < 0) return base == 1 ? 1 : base == -1 ? (exp % 2 ? -1 : 1) : 0;
  }
  C result = 1;
  while (exp) {
    if (exp & 1) result = wrap_mul(result, base);
    base = wrap_mul(base, base);
    exp = C(exp >> 1);
  }
  return result;
}

template <class C>
struct Pow {
  OX_HOST_DEVICE C operator()(C x, C y) const {
    if constexpr (is_float_v<C>) {
      return std::pow(x, y);
    } else {
      return int_pow(x, y);
    }
  }
};

template <class C>
struct Atan2 {
  OX_HOST_DEVICE C operator()(C x, C y) const { return std::atan2(x, y); }
};

template <class C>
struct Hypot {
  OX_HOST_DEVICE C operator()(C x, C y) const { return std::hypot(x, y); }
};

template <class C>
struct LogAddExp {  // log(exp(x) + exp(y)) without overflow
  OX_HOST_DEVICE C operator()(C x, C y) const {
    // A NaN operand is returned as it is: through the formula its sign would depend on which
    // operand order the compiler picked for the final addition (x86 keeps the first NaN).
    if (x != x) return x;
    if (y != y) return y;
    if (x == y && std::isinf(x)) return x;  // inf + inf, -inf + -inf (not inf - inf = NaN)
    const C m = x < y ? y : x;
    return m + std::log1p(std::exp(-std::fabs(x - y)));
  }
};

// g * gelu'(x) = g (Φ(x) + x φ(x)), Φ as erfc(-x / √2) / 2, which keeps the left tail's digits
// where 1 + erf(x / √2) would cancel. An infinite x gives NaN (∞ · 0), as PyTorch.
template <class C>
struct GeluErfBackward {
  OX_HOST_DEVICE C operator()(C g, C x) const {
    const C cdf = C(0.5) * std::erfc(x * C(-0.70710678118654752440));
    const C pdf = C(0.39894228040143267794) * std::exp(C(-0.5) * (x * x));
    return g * (cdf + x * pdf);
  }
};

// g * d/dx [x (1 + tanh(u)) / 2], u = √(2/π) (x + 0.044715 x³).
template <class C>
struct GeluTanhBackward {
  OX_HOST_DEVICE C operator()(C g, C x) const {
    const C k = C(0.79788456080286535588), c = C(0.044715), x2 = x * x;
    const C t = std::tanh(k * (x + c * (x * x2)));
    const C du = k * (C(1) + C(3) * c * x2);
    return g * (C(0.5) * (C(1) + t) + C(0.5) * x * ((C(1) - t * t) * du));
  }
};

// relu's gradient from its result y: g where y > 0, else 0 (a NaN y gives 0, as
// where(y > 0, g, 0) did). Both operands are read, so contiguous runs vectorize to a compare
// and a select, with no bool tensor in between.
template <class C>
struct ReluBackward {
  OX_HOST_DEVICE C operator()(C g, C y) const { return y > C(0) ? g : C(0); }
};

template <class C>
struct Maximum {  // NaN propagates; bool: or
  OX_HOST_DEVICE C operator()(C x, C y) const {
    if constexpr (std::is_same_v<C, bool>) {
      return x || y;
    } else {
      if constexpr (is_float_v<C>)
        if (x != x || y != y) return x + y;
      return x < y ? y : x;
    }
  }
};

template <class C>
struct Minimum {  // NaN propagates; bool: and
  OX_HOST_DEVICE C operator()(C x, C y) const {
    if constexpr (std::is_same_v<C, bool>) {
      return x && y;
    } else {
      if constexpr (is_float_v<C>)
        if (x != x || y != y) return x + y;
      return y < x ? y : x;
    }
  }
};

// ---- Bitwise: integers and bool (bool: logical) --------------------------------------------

template <class C>
struct BitwiseAnd {
  OX_HOST_DEVICE C operator()(C x, C y) const {
    if constexpr (std::is_same_v<C, bool>) {
      return x && y;
    } else {
      return C(x & y);
    }
  }
};

template <class C>
struct BitwiseOr {
  OX_HOST_DEVICE C operator()(C x, C y) const {
    if constexpr (std::is_same_v<C, bool>) {
      return x || y;
    } else {
      return C(x | y);
    }
  }
};

template <class C>
struct BitwiseXor {
  OX_HOST_DEVICE C operator()(C x, C y) const {
    if constexpr (std::is_same_v<C, bool>) {
      return x != y;
    } else {
      return C(x ^ y);
    }
  }
};

// ---- AnyToBool: comparisons and logical ops --------------------------------------------------

#define OX_PREDICATE_FUNCTOR(Name, expr)                            \
  template <class C>                                                \
  struct Name {                                                     \
    OX_HOST_DEVICE bool operator()(C x, C y) const { return expr; } \
  };
OX_PREDICATE_FUNCTOR(Eq, x == y)
OX_PREDICATE_FUNCTOR(Ne, x != y)
OX_PREDICATE_FUNCTOR(Lt, x < y)
OX_PREDICATE_FUNCTOR(Le, x <= y)
OX_PREDICATE_FUNCTOR(Gt, x > y)
OX_PREDICATE_FUNCTOR(Ge, x >= y)
OX_PREDICATE_FUNCTOR(LogicalAnd, x != C(0) && y != C(0))
OX_PREDICATE_FUNCTOR(LogicalOr, x != C(0) || y != C(0))
OX_PREDICATE_FUNCTOR(LogicalXor, (x != C(0)) != (y != C(0)))
#undef OX_PREDICATE_FUNCTOR

}  // namespace ox::elementwise
