#pragma once
// Element conversion for the elementwise and copy kernels, as the CPU backend converts
// (core/convert.h): 16-bit floats load as f32 and store rounded as oxmera/core/half.h
// rounds, to bool is `!= 0`, float to integer truncates as x86 does (core/ops/scalar.h's
// convert_number), everything else is static_cast. Plain OX_HOST_DEVICE code over storage.cuh's
// storage types, so that the host tests (tests/backend/cuda_elementwise_test.cpp) compare it
// with the CPU's convert for every pair of dtypes.

#include <cstdint>
#include <type_traits>

#include "backend/cuda/kernels/storage.cuh"
#include "core/host_device.h"
#include "core/ops/scalar.h"
#include "oxmera/core/half.h"

namespace ox::cuda::kernels::ew {

using kernels::BF16;  // storage.cuh
using kernels::F16;

// The type arithmetic runs in: f32 for the 16-bit floats, the storage type otherwise.
template <class T>
using compute_of = std::conditional_t<std::is_same_v<T, F16> || std::is_same_v<T, BF16>, float, T>;

template <class T>
OX_HOST_DEVICE inline compute_of<T> load_value(T v) {
  if constexpr (std::is_same_v<T, F16>) {
    return ox::detail::half_bits_to_float(v.bits);
  } else if constexpr (std::is_same_v<T, BF16>) {
    return ox::detail::bfloat16_bits_to_float(v.bits);
  } else {
    return v;
  }
}

// A compute value v (bool, an integer, float or double) as storage type To: the CPU's
// convert<To>(v).
template <class To, class V>
OX_HOST_DEVICE inline To store_value(V v) {
  if constexpr (std::is_same_v<To, V>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != V(0);
  } else if constexpr (std::is_same_v<To, F16>) {
    return To{ox::detail::float_to_half_bits(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<To, BF16>) {
    return To{ox::detail::float_to_bfloat16_bits(static_cast<float>(v))};
  } else {
    return ox::elementwise::convert_number<To>(v);
  }
}

// An element of storage type From as storage type To (the same type: its bits).
template <class To, class From>
OX_HOST_DEVICE inline To convert_element(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else {
    return store_value<To>(load_value(v));
  }
}

}  // namespace ox::cuda::kernels::ew

// MACRO(args..., suffix, storage type) for each dtype of a family, named as DType names them.
#define OX_EW_FLOATS(M, ...)                      \
  M(__VA_ARGS__, f32, float)                      \
  M(__VA_ARGS__, f64, double)                     \
  M(__VA_ARGS__, f16, ox::cuda::kernels::ew::F16) \
  M(__VA_ARGS__, bf16, ox::cuda::kernels::ew::BF16)
#define OX_EW_INTS(M, ...)     \
  M(__VA_ARGS__, i64, int64_t) \
  M(__VA_ARGS__, i32, int32_t) \
  M(__VA_ARGS__, i16, int16_t) \
  M(__VA_ARGS__, i8, int8_t)   \
  M(__VA_ARGS__, u8, uint8_t)
#define OX_EW_ALL(M, ...)      \
  OX_EW_FLOATS(M, __VA_ARGS__) \
  OX_EW_INTS(M, __VA_ARGS__)   \
  M(__VA_ARGS__, bool, bool)

// The dtypes of each DTypeClass (core/elementwise_ops.h's class_takes), by the class's name.
#define OX_EW_CLASS_Numeric(M, ...) \
  OX_EW_FLOATS(M, __VA_ARGS__)      \
  OX_EW_INTS(M, __VA_ARGS__)
#define OX_EW_CLASS_NumericOrBool(M, ...) OX_EW_ALL(M, __VA_ARGS__)
#define OX_EW_CLASS_Floating(M, ...) OX_EW_FLOATS(M, __VA_ARGS__)
#define OX_EW_CLASS_FloatingOrCopy(M, ...) OX_EW_FLOATS(M, __VA_ARGS__)
#define OX_EW_CLASS_IntegralOrBool(M, ...) \
  OX_EW_INTS(M, __VA_ARGS__)               \
  M(__VA_ARGS__, bool, bool)
#define OX_EW_CLASS_AnyToBool(M, ...) OX_EW_ALL(M, __VA_ARGS__)
