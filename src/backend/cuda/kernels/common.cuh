#pragma once
// What every kernel family (kernels/*.cu) shares: the stamp the module loader checks, the
// grid-stride loop, and element conversion with the CPU backend's results
// (src/backend/cpu/convert.h: float to integer as x86 truncates, 16-bit floats through f32,
// rounding as include/oxmera/core/half.h, whose constexpr functions run on the device too).
//
// A family may include only headers under src/backend/cuda/kernels/, src/core/ and
// include/oxmera/core/ besides the toolkit's: the fingerprint hashes those folders, and the
// build fails when a kernel includes anything else from the source tree (cmake/cuda_kernel.cmake).

#include <cstdint>
#include <type_traits>

#include "oxmera/core/half.h"

#ifndef OXMERA_KERNEL_STAMP
#error "OXMERA_KERNEL_STAMP is defined by the build (cmake/cuda_kernel.cmake)"
#endif

// The stamp of this family's sources, nvcc version, flags and targets. The module loader reads
// it back (cuModuleGetGlobal) and refuses a module whose stamp is not the one the host expects.
#define OXMERA_DEFINE_KERNEL_STAMP \
  extern "C" __device__ const char oxmera_kernel_stamp[] = OXMERA_KERNEL_STAMP

namespace ox::cuda::kernels {

// Element i of a grid-stride loop over n elements: any grid covers any n.
template <class F>
__device__ inline void grid_stride(int64_t n, F&& f) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) f(i);
}

// Storage types: 16-bit floats travel as their bits.
struct HalfBits {
  uint16_t bits;
};
struct BFloat16Bits {
  uint16_t bits;
};

// CVTTSx2SI of width I: v truncated toward zero when that fits I, else I's minimum.
template <class I, class F>
__device__ inline I truncate_like_x86(F v) {
  constexpr F lo = static_cast<F>(I(1) << (sizeof(I) * 8 - 1));  // -2^(w-1), exact
  constexpr F hi = -lo;
  if (v >= lo && v < hi) return static_cast<I>(v);
  return I(I(1) << (sizeof(I) * 8 - 1));
}

// A double converted to storage type T as the CPU backend's convert<T>(double).
template <class T>
__device__ inline T from_double(double v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(v);
  } else if constexpr (std::is_same_v<T, HalfBits>) {
    return {ox::detail::float_to_half_bits(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<T, BFloat16Bits>) {
    return {ox::detail::float_to_bfloat16_bits(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0.0;
  } else if constexpr (sizeof(T) == 8 || std::is_unsigned_v<T>) {
    return static_cast<T>(truncate_like_x86<int64_t>(v));  // u8: the low byte of the i64
  } else {
    return static_cast<T>(truncate_like_x86<int32_t>(v));  // modular narrowing
  }
}

// An i64 converted to storage type T as convert<T>(int64_t).
template <class T>
__device__ inline T from_int64(int64_t v) {
  if constexpr (std::is_same_v<T, HalfBits>) {
    return {ox::detail::float_to_half_bits(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<T, BFloat16Bits>) {
    return {ox::detail::float_to_bfloat16_bits(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else {
    return static_cast<T>(v);
  }
}

}  // namespace ox::cuda::kernels

// Instantiate MACRO(suffix, storage type) for each dtype, named as DType names them.
#define OXMERA_FOR_EACH_FLOAT_DTYPE(MACRO) \
  MACRO(f32, float)                        \
  MACRO(f64, double)                       \
  MACRO(f16, ox::cuda::kernels::HalfBits)  \
  MACRO(bf16, ox::cuda::kernels::BFloat16Bits)
#define OXMERA_FOR_EACH_INT_DTYPE(MACRO) \
  MACRO(i64, int64_t)                    \
  MACRO(i32, int32_t)                    \
  MACRO(i16, int16_t)                    \
  MACRO(i8, int8_t)                      \
  MACRO(u8, uint8_t)                     \
  MACRO(bool, bool)
