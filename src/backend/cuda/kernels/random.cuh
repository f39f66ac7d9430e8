#pragma once
// The value of one element of a random draw (Backend::random, bernoulli), as the CPU backend
// computes it (src/backend/cpu/random.cpp): element i reads lane i % per of Philox block
// first + i / per (core/philox.h), then converts as core/convert.h does (storage.cuh). Plain C++
// outside nvcc, so tests/backend/cuda_random_test.cpp checks these very functions against the CPU
// backend.
//
// Arithmetic that the CPU does as a separate multiply and add (x86-64 without FMA) is written
// with mul/add below: nvcc would otherwise contract a + s * u into one fused multiply-add,
// whose single rounding gives other bits.

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "backend/cuda/kernels/storage.cuh"
#include "core/host_device.h"
#include "core/philox.h"
#include "oxmera/core/half.h"

namespace ox::cuda::kernels::rng {

// The shared storage types and conversions (storage.cuh), by the names this file's users give.
using kernels::BF16;
using kernels::F16;
using kernels::from_double;
using kernels::from_int64;
using kernels::to_double;

OX_HOST_DEVICE inline double mul(double x, double y) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(x, y);
#else
  return x * y;
#endif
}
OX_HOST_DEVICE inline double add(double x, double y) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(x, y);
#else
  return x + y;
#endif
}

template <class F, class U>
OX_HOST_DEVICE inline F bits_as(U u) {
  static_assert(sizeof(F) == sizeof(U));
  F f;
  memcpy(&f, &u, sizeof(F));
  return f;
}

// std::nextafter(t, -inf) for a float type, by its bits.
template <class F, class U>
OX_HOST_DEVICE inline F next_down(F t) {
  if (t != t || t == -std::numeric_limits<F>::infinity()) return t;  // NaN, -inf stay
  U u;
  memcpy(&u, &t, sizeof(F));
  constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
  if (t == F(0)) return bits_as<F>(U(sign | 1));  // +-0: the negative denormal
  u = (u & sign) ? U(u + 1) : U(u - 1);
  return bits_as<F>(u);
}

// The largest T below `to` (cpu/random.cpp's largest_below): what a uniform draw from [a, to)
// that rounding to T carried up to `to` takes instead.
template <class T>
OX_HOST_DEVICE inline T largest_below(double to) {
  const T t = from_double<T>(to);
  if constexpr (std::is_same_v<T, F16> || std::is_same_v<T, BF16>) {
    if (to_double(t) < to) return t;
    const uint16_t bits = t.bits;  // sign and magnitude: one step towards -inf
    return {uint16_t(bits == 0 ? 0x8001u : (bits & 0x8000u) ? bits + 1u : bits - 1u)};
  } else if constexpr (std::is_same_v<T, float>) {
    return to_double(t) < to ? t : next_down<float, uint32_t>(t);
  } else if constexpr (std::is_same_v<T, double>) {
    return to_double(t) < to ? t : next_down<double, uint64_t>(t);
  } else {
    return t;
  }
}

// The parameters of one draw, as the host prepares them from a RandomSpec.
template <class T>
struct Draw {
  uint64_t seed;
  uint64_t first_block;
  double a;      // uniform: low end; normal: mean
  double scale;  // uniform: b - a; normal: std
  double b;      // uniform: high end
  T top;         // largest_below<T>(b)
  int64_t low;   // integer: [low, low + range)
  uint64_t range;
};

// Uniform draws stay in [a, b) in every dtype, whatever rounding to T does.
template <class T>
OX_HOST_DEVICE inline T below_b(T v, const Draw<T>& d) {
  return d.b > d.a && to_double(v) >= d.b ? d.top : v;
}

template <class T>
OX_HOST_DEVICE inline T uniform32_value(const philox::Block& blk, int lane, const Draw<T>& d) {
  const float f = float(add(d.a, mul(d.scale, double(philox::uniform32(blk, lane)))));
  return below_b(from_double<T>(double(f)), d);
}
template <class T>
OX_HOST_DEVICE inline T uniform64_value(const philox::Block& blk, int lane, const Draw<T>& d) {
  return below_b(from_double<T>(add(d.a, mul(d.scale, philox::uniform64(blk, lane)))), d);
}
template <class T>
OX_HOST_DEVICE inline T normal_value(const philox::Block& blk, int lane, const Draw<T>& d) {
  return from_double<T>(add(d.a, mul(d.scale, philox::normal(blk, lane))));
}
template <class T>
OX_HOST_DEVICE inline T integer_value(const philox::Block& blk, int lane, const Draw<T>& d) {
  return from_int64<T>(philox::integer(blk, lane, d.low, d.range));
}
// A bernoulli draw with probability p: 1 or 0 as T (cpu::convert<T>(bool)).
template <class T>
OX_HOST_DEVICE inline T bernoulli_value(const philox::Block& blk, int lane, double p) {
  return from_int64<T>(philox::bernoulli(blk, lane, p) ? 1 : 0);
}
// randperm's Fisher-Yates from the back: step i (n - 1 down to 1) swaps elements i and this,
// from element i of an Integer-kind draw.
OX_HOST_DEVICE inline int64_t shuffle_partner(uint64_t seed, uint64_t first, int64_t i) {
  const philox::Block blk = philox::block(seed, first + uint64_t(i / 2));
  return static_cast<int64_t>(philox::bits64(blk, int(i % 2)) % uint64_t(i + 1));
}
// Whether bernoulli takes p (else it is reported: value 0, position its index, bound 1).
OX_HOST_DEVICE inline bool probability_ok(double p) { return p >= 0 && p <= 1; }

}  // namespace ox::cuda::kernels::rng
