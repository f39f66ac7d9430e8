#pragma once
// Element conversion between dtypes. Float to integer is defined for every input (a plain cast
// is undefined behaviour out of range) and gives what PyTorch gives on x86, whose casts compile
// to CVTTSS2SI/CVTTSD2SI: truncation toward zero, and for NaN, ±Inf or a value out of range the
// "integer indefinite" INT_MIN of the instruction's width. i64 uses the 64-bit form, i32, i16
// and i8 the 32-bit form (then keep the low bits, as the narrowing store does), u8 goes through
// i64 (c10's static_cast_with_inter_type). To bool is `!= 0`; 16-bit floats convert through f32.
// Host code of every backend (the CPU kernels, the CUDA runtime's scalar arguments).

#include <type_traits>

#include "core/ops/scalar.h"
#include "oxmera/core/dtype.h"
#include "oxmera/core/half.h"

namespace ox::elementwise {

template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

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
  } else {
    return elementwise::convert_number<To>(v);  // core/ops/scalar.h: one definition
  }
}

// A Scalar as T, converted as its kind's C++ value would be (fill's value on every backend).
template <class T>
inline T scalar_as(const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::Float:
      return convert<T>(s.to_double());
    case Scalar::Kind::Int:
      return convert<T>(s.to_int());
    case Scalar::Kind::Bool:
      return convert<T>(s.to_int() != 0);
  }
  return T{};
}

}  // namespace ox::elementwise
