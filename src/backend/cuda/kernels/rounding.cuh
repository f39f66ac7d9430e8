#pragma once
// Floating-point operations rounded once each, on the host and the device alike: on the device
// explicitly rounded intrinsics (__fadd_rn, __dmul_rn, ...), which nvcc never contracts into an
// FMA, so a kernel evaluates an expression exactly as the CPU backend's baseline x86-64 code
// (which has no FMA) does; on the host the plain operators. For float and double.

#include <cmath>
#include <type_traits>

#include "core/host_device.h"

namespace ox::cuda::kernels {

namespace rn {

template <class T>
OX_HOST_DEVICE inline T add(T a, T b) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<T, float>) {
    return __fadd_rn(a, b);
  } else {
    return __dadd_rn(a, b);
  }
#else
  return a + b;
#endif
}
template <class T>
OX_HOST_DEVICE inline T sub(T a, T b) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<T, float>) {
    return __fsub_rn(a, b);
  } else {
    return __dsub_rn(a, b);
  }
#else
  return a - b;
#endif
}
template <class T>
OX_HOST_DEVICE inline T mul(T a, T b) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<T, float>) {
    return __fmul_rn(a, b);
  } else {
    return __dmul_rn(a, b);
  }
#else
  return a * b;
#endif
}
template <class T>
OX_HOST_DEVICE inline T div(T a, T b) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<T, float>) {
    return __fdiv_rn(a, b);
  } else {
    return __ddiv_rn(a, b);
  }
#else
  return a / b;
#endif
}
template <class T>
OX_HOST_DEVICE inline T sqrt(T a) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<T, float>) {
    return __fsqrt_rn(a);
  } else {
    return __dsqrt_rn(a);
  }
#else
  return std::sqrt(a);
#endif
}
// BinaryOp::Maximum's rule, as the CPU's nan_max: NaN propagates.
template <class T>
OX_HOST_DEVICE inline T nan_max(T x, T y) {
  if (x != x || y != y) return add(x, y);
  return x < y ? y : x;
}

}  // namespace rn

}  // namespace ox::cuda::kernels
