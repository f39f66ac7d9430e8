// Binary elementwise ops and where: one functor each over map_binary.

#include <cmath>

#include "backend/cpu/elementwise.h"
#include "backend/cpu/kernels.h"

namespace ox::cpu {

namespace {

// Python's floor division for floats, as PyTorch computes it (exact when a/b rounds up).
template <class C>
inline C floor_divide(C a, C b) {
  if (b == C(0)) return a / b;
  const C mod = std::fmod(a, b);
  C div = (a - mod) / b;
  if (mod != C(0) && (b < C(0)) != (mod < C(0))) div -= C(1);
  if (div == C(0)) return std::copysign(C(0), a / b);
  const C floored = std::floor(div);
  return div - floored > C(0.5) ? floored + C(1) : floored;
}

template <class C>
inline C python_remainder(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    const C r = std::fmod(a, b);
    return (r != C(0) && (r < C(0)) != (b < C(0))) ? r + b : r;
  } else {
    if (b == 0) return 0;  // integer division by zero gives 0 (docs/OPS.md)
    if constexpr (std::is_signed_v<C>) {
      if (b == C(-1)) return 0;  // also avoids INT_MIN % -1
    }
    const C r = a % b;
    return (r != 0 && (r < 0) != (b < 0)) ? C(r + b) : r;
  }
}

template <class C>
inline C int_pow(C base, C exp) {
  if constexpr (std::is_signed_v<C>) {
    if (exp < 0) return base == 1 ? 1 : base == -1 ? (exp % 2 ? -1 : 1) : 0;  // trunc(1/b^n)
  }
  C result = 1;
  while (exp) {
    if (exp & 1) result = wrap_mul(result, base);
    base = wrap_mul(base, base);
    exp = C(exp >> 1);
  }
  return result;
}

template <class T>
void arithmetic(BinaryOp op, const StridedArray& d, const StridedArray& a, const StridedArray& b,
                double alpha) {
  using C = compute_t<T>;
  constexpr bool kInt = std::is_integral_v<C>;
  // An integer alpha wraps into T as PyTorch's does (u8 alpha -2 is 254: x - 254 y = x + 2 y
  // mod 256), through i64 so that alphas beyond i32 wrap too.
  const C al = kInt ? static_cast<C>(convert<int64_t>(alpha)) : convert<C>(alpha);
  switch (op) {
    case BinaryOp::Add:
      if constexpr (kInt) {
        if (alpha == 1) return map_binary<T, T>(d, a, b, [](C x, C y) { return wrap_add(x, y); });
        return map_binary<T, T>(d, a, b, [al](C x, C y) { return wrap_add(x, wrap_mul(al, y)); });
      } else {
        if (alpha == 1) return map_binary<T, T>(d, a, b, [](C x, C y) { return x + y; });
        return map_binary<T, T>(d, a, b, [al](C x, C y) { return x + al * y; });
      }
    case BinaryOp::Sub:
      if constexpr (kInt) {
        if (alpha == 1) return map_binary<T, T>(d, a, b, [](C x, C y) { return wrap_sub(x, y); });
        return map_binary<T, T>(d, a, b, [al](C x, C y) { return wrap_sub(x, wrap_mul(al, y)); });
      } else {
        if (alpha == 1) return map_binary<T, T>(d, a, b, [](C x, C y) { return x - y; });
        return map_binary<T, T>(d, a, b, [al](C x, C y) { return x - al * y; });
      }
    case BinaryOp::Mul:
      if constexpr (kInt)
        return map_binary<T, T>(d, a, b, [](C x, C y) { return wrap_mul(x, y); });
      else
        return map_binary<T, T>(d, a, b, [](C x, C y) { return x * y; });
    case BinaryOp::Div:  // true division: the op layer gives floating inputs
      if constexpr (!kInt) return map_binary<T, T>(d, a, b, [](C x, C y) { return x / y; });
      break;
    case BinaryOp::FloorDiv:
      if constexpr (kInt) {
        return map_binary<T, T>(d, a, b, [](C x, C y) -> C {
          if (y == 0) return 0;
          if constexpr (std::is_signed_v<C>) {
            if (y == C(-1)) return wrap_sub(C(0), x);
          }
          const C q = C(x / y);
          return (x % y != 0 && (x < 0) != (y < 0)) ? C(q - 1) : q;
        });
      } else {
        return map_binary<T, T>(d, a, b, [](C x, C y) { return floor_divide(x, y); });
      }
    case BinaryOp::TruncDiv:
      if constexpr (kInt) {
        return map_binary<T, T>(d, a, b, [](C x, C y) -> C {
          if (y == 0) return 0;
          if constexpr (std::is_signed_v<C>) {
            if (y == C(-1)) return wrap_sub(C(0), x);
          }
          return C(x / y);
        });
      } else {
        return map_binary<T, T>(d, a, b, [](C x, C y) { return std::trunc(x / y); });
      }
    case BinaryOp::Remainder:
      return map_binary<T, T>(d, a, b, [](C x, C y) { return python_remainder(x, y); });
    case BinaryOp::Fmod:
      if constexpr (kInt) {
        return map_binary<T, T>(d, a, b, [](C x, C y) -> C {
          if (y == 0) return 0;
          if constexpr (std::is_signed_v<C>) {
            if (y == C(-1)) return 0;
          }
          return C(x % y);
        });
      } else {
        return map_binary<T, T>(d, a, b, [](C x, C y) { return std::fmod(x, y); });
      }
    case BinaryOp::Pow:
      if constexpr (kInt)
        return map_binary<T, T>(d, a, b, [](C x, C y) { return int_pow(x, y); });
      else
        return map_binary<T, T>(d, a, b, [](C x, C y) { return std::pow(x, y); });
    case BinaryOp::Maximum:  // NaN propagates
      return map_binary<T, T>(d, a, b, [](C x, C y) {
        if constexpr (!kInt)
          if (x != x || y != y) return x + y;
        return x < y ? y : x;
      });
    case BinaryOp::Minimum:
      return map_binary<T, T>(d, a, b, [](C x, C y) {
        if constexpr (!kInt)
          if (x != x || y != y) return x + y;
        return y < x ? y : x;
      });
    case BinaryOp::Atan2:
      if constexpr (!kInt)
        return map_binary<T, T>(d, a, b, [](C x, C y) { return std::atan2(x, y); });
      break;
    case BinaryOp::Hypot:
      if constexpr (!kInt)
        return map_binary<T, T>(d, a, b, [](C x, C y) { return std::hypot(x, y); });
      break;
    case BinaryOp::LogAddExp:
      if constexpr (!kInt) {
        return map_binary<T, T>(d, a, b, [](C x, C y) {
          if (x == y && std::isinf(x)) return x;  // inf + inf, -inf + -inf
          const C m = x < y ? y : x;
          return m + std::log1p(std::exp(-std::fabs(x - y)));
        });
      }
      break;
    case BinaryOp::BitwiseAnd:
      if constexpr (kInt) return map_binary<T, T>(d, a, b, [](C x, C y) { return C(x & y); });
      break;
    case BinaryOp::BitwiseOr:
      if constexpr (kInt) return map_binary<T, T>(d, a, b, [](C x, C y) { return C(x | y); });
      break;
    case BinaryOp::BitwiseXor:
      if constexpr (kInt) return map_binary<T, T>(d, a, b, [](C x, C y) { return C(x ^ y); });
      break;
    default:
      break;
  }
  OX_ASSERT(false, "binary op ", int(op), " not defined for ", a.dtype);
}

template <class T>
void comparison(BinaryOp op, const StridedArray& d, const StridedArray& a, const StridedArray& b) {
  using C = compute_t<T>;
  switch (op) {
    case BinaryOp::Eq:
      return map_binary<bool, T>(d, a, b, [](C x, C y) { return x == y; });
    case BinaryOp::Ne:
      return map_binary<bool, T>(d, a, b, [](C x, C y) { return x != y; });
    case BinaryOp::Lt:
      return map_binary<bool, T>(d, a, b, [](C x, C y) { return x < y; });
    case BinaryOp::Le:
      return map_binary<bool, T>(d, a, b, [](C x, C y) { return x <= y; });
    case BinaryOp::Gt:
      return map_binary<bool, T>(d, a, b, [](C x, C y) { return x > y; });
    case BinaryOp::Ge:
      return map_binary<bool, T>(d, a, b, [](C x, C y) { return x >= y; });
    case BinaryOp::LogicalAnd:
      return map_binary<bool, T>(d, a, b, [](C x, C y) { return x != C(0) && y != C(0); });
    case BinaryOp::LogicalOr:
      return map_binary<bool, T>(d, a, b, [](C x, C y) { return x != C(0) || y != C(0); });
    case BinaryOp::LogicalXor:
      return map_binary<bool, T>(d, a, b, [](C x, C y) { return (x != C(0)) != (y != C(0)); });
    default:
      OX_ASSERT(false, "binary op ", int(op), " is not a comparison");
  }
}

}  // namespace

void binary(BinaryOp op, const StridedArray& dst, const StridedArray& a, const StridedArray& b,
            double alpha) {
  if (binary_returns_bool(op))
    return dispatch_dtype(a.dtype, [&]<class T>() { comparison<T>(op, dst, a, b); });
  if (a.dtype == kBool) {  // bool arithmetic is logical (the op layer lets bitwise/max/min in)
    switch (op) {
      case BinaryOp::BitwiseAnd:
      case BinaryOp::Minimum:
      case BinaryOp::Mul:
        return map_binary<bool, bool>(dst, a, b, [](bool x, bool y) { return x && y; });
      case BinaryOp::BitwiseOr:
      case BinaryOp::Maximum:
      case BinaryOp::Add:
        return map_binary<bool, bool>(dst, a, b, [](bool x, bool y) { return x || y; });
      case BinaryOp::BitwiseXor:
        return map_binary<bool, bool>(dst, a, b, [](bool x, bool y) { return x != y; });
      default:
        OX_ASSERT(false, "binary op ", int(op), " not defined for bool");
    }
  }
  dispatch_dtype(a.dtype, [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) arithmetic<T>(op, dst, a, b, alpha);
  });
}

void where(const StridedArray& dst, const StridedArray& cond, const StridedArray& a,
           const StridedArray& b) {
  dispatch_dtype(dst.dtype, [&]<class T>() {
    parallel_runs<4>({&dst, &cond, &a, &b}, [](const std::array<char*, 4>& p,
                                               const std::array<int64_t, 4>& step, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        const bool c = *reinterpret_cast<const bool*>(p[1] + i * step[1]);
        *reinterpret_cast<T*>(p[0] + i * step[0]) =
            *reinterpret_cast<const T*>(c ? p[2] + i * step[2] : p[3] + i * step[3]);
      }
    });
  });
}

}  // namespace ox::cpu
