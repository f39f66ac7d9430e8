#pragma once
// Element conversion between dtypes. Float to integer is defined for every input (a plain cast
// is undefined behaviour out of range) and gives what PyTorch gives on x86, whose casts compile
// to CVTTSS2SI/CVTTSD2SI: truncation toward zero, and for NaN, ±Inf or a value out of range the
// "integer indefinite" INT_MIN of the instruction's width. i64 uses the 64-bit form, i32, i16
// and i8 the 32-bit form (then keep the low bits, as the narrowing store does), u8 goes through
// i64 (c10's static_cast_with_inter_type). To bool is `!= 0`; 16-bit floats convert through f32.

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "oxmera/core/half.h"

namespace ox::cpu {

template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// CVTTSx2SI of width I: v truncated toward zero when that fits I, else I's minimum. The range
// test is on [-2^(w-1), 2^(w-1)), exact in float and double; NaN fails both comparisons.
template <class I, class F>
inline I truncate_like_x86(F v) {
  constexpr F lo = static_cast<F>(std::numeric_limits<I>::min());  // -2^(w-1), exact
  constexpr F hi = -lo;
  if (v >= lo && v < hi) return static_cast<I>(v);
  return std::numeric_limits<I>::min();
}

template <class To, class From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (is_half_v<From>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (is_half_v<To>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if constexpr (sizeof(To) == 8 || std::is_unsigned_v<To>)
      return static_cast<To>(truncate_like_x86<int64_t>(v));  // u8: the low byte of the i64
    else
      return static_cast<To>(truncate_like_x86<int32_t>(v));  // modular narrowing (C++20)
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace ox::cpu
