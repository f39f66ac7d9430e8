#pragma once
// Scalar arithmetic every backend must do alike: integer operations that wrap modulo 2^bits
// (undefined behaviour in plain C++), and conversion between arithmetic types with float to
// integer defined for every input, as PyTorch gives on x86. Shared by the CPU's kernels
// (core/convert.h, backend/cpu/elementwise.h) and, through OX_HOST_DEVICE, by device code.

#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/host_device.h"

namespace ox::elementwise {

// The families of compute types: floats (float, double), integers (bool excluded).
template <class C>
inline constexpr bool is_float_v = std::is_floating_point_v<C>;
template <class C>
inline constexpr bool is_int_v = std::is_integral_v<C> && !std::is_same_v<C, bool>;

// x < 0, and false for unsigned types without a comparison compilers flag as pointless.
template <class C>
OX_HOST_DEVICE inline bool is_negative(C x) {
  if constexpr (std::is_unsigned_v<C>) {
    return false;
  } else {
    return x < C(0);
  }
}

// Integer arithmetic that wraps modulo 2^bits instead of overflowing.
template <class T>
OX_HOST_DEVICE inline T wrap_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <class T>
OX_HOST_DEVICE inline T wrap_sub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <class T>
OX_HOST_DEVICE inline T wrap_mul(T a, T b) {
  using U = std::make_unsigned_t<std::common_type_t<T, unsigned>>;  // no int promotion traps
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}

// x86's CVTTSx2SI of width I: v truncated toward zero when that fits I, else I's minimum (the
// "integer indefinite"). The range test is on [-2^(w-1), 2^(w-1)), exact in float and double;
// NaN fails both comparisons.
template <class I, class F>
OX_HOST_DEVICE inline I truncate_like_x86(F v) {
  constexpr F lo = static_cast<F>(std::numeric_limits<I>::min());  // -2^(w-1), exact
  constexpr F hi = -lo;
  if (v >= lo && v < hi) return static_cast<I>(v);
  return std::numeric_limits<I>::min();
}

// v as To, for the arithmetic types (bool, integers, float, double). To bool is `!= 0`. Float
// to integer truncates as x86 does: i64 through the 64-bit instruction, i32, i16 and i8 through
// the 32-bit one (then the low bits, as the narrowing store keeps), u8 through i64 (c10's
// static_cast_with_inter_type). Everything else is static_cast.
template <class To, class From>
OX_HOST_DEVICE inline To convert_number(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if constexpr (sizeof(To) == 8 || std::is_unsigned_v<To>)
      return static_cast<To>(truncate_like_x86<int64_t>(v));  // u8: the low byte of the i64
    else
      return static_cast<To>(truncate_like_x86<int32_t>(v));  // modular narrowing (C++20)
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace ox::elementwise
