#pragma once
// The kernels' storage types and the conversions every family shares, as the CPU backend
// converts (src/core/convert.h): 16-bit floats travel as their bits and convert through f32,
// rounding as include/oxmera/core/half.h (whose constexpr functions run on the device too);
// float to integer truncates as x86 does (core/ops/scalar.h's truncate_like_x86, the one
// definition). Plain OX_HOST_DEVICE code, so the host tests run these very functions.

#include <cstdint>
#include <type_traits>

#include "core/host_device.h"
#include "core/ops/scalar.h"
#include "oxmera/core/half.h"

namespace ox::cuda::kernels {

// Storage types of the 16-bit floats: their bits.
struct F16 {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};

using elementwise::truncate_like_x86;

// A double as storage type T, as the CPU's convert<T>(double). (convert<T>(float f) equals
// convert<T>(double(f)) for every T: the float widens exactly.)
template <class T>
OX_HOST_DEVICE inline T from_double(double v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(v);
  } else if constexpr (std::is_same_v<T, F16>) {
    return {ox::detail::float_to_half_bits(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<T, BF16>) {
    return {ox::detail::float_to_bfloat16_bits(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0.0;
  } else if constexpr (sizeof(T) == 8 || std::is_unsigned_v<T>) {
    return static_cast<T>(truncate_like_x86<int64_t>(v));  // u8: the low byte of the i64
  } else {
    return static_cast<T>(truncate_like_x86<int32_t>(v));  // modular narrowing
  }
}

// An i64 as storage type T, as the CPU's convert<T>(int64_t).
template <class T>
OX_HOST_DEVICE inline T from_int64(int64_t v) {
  if constexpr (std::is_same_v<T, F16>) {
    return {ox::detail::float_to_half_bits(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<T, BF16>) {
    return {ox::detail::float_to_bfloat16_bits(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else {
    return static_cast<T>(v);
  }
}

// Storage type T as a double, as the CPU's convert<double>(T).
template <class T>
OX_HOST_DEVICE inline double to_double(T v) {
  if constexpr (std::is_same_v<T, F16>) {
    return double(ox::detail::half_bits_to_float(v.bits));
  } else if constexpr (std::is_same_v<T, BF16>) {
    return double(ox::detail::bfloat16_bits_to_float(v.bits));
  } else {
    return static_cast<double>(v);
  }
}

}  // namespace ox::cuda::kernels
