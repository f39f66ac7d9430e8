#pragma once
// Philox4x32-10 (Salmon et al., SC'11) and the mapping from its words to distributions.
// Shared by every backend, so a seed gives the same numbers on each (docs/RANDOM.md).
// Block b of a generator with seed s is philox(counter = {lo(b), hi(b), 0, 0},
// key = {lo(s), hi(s)}); an element of a draw reads words of the block that
// its row-major index selects.

#include <cmath>
#include <cstdint>

#include "core/host_device.h"

namespace ox::philox {

struct Block {
  uint32_t w[4];
};

OX_HOST_DEVICE inline Block philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                                          uint32_t k0, uint32_t k1) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t(kMul0) * c0, p1 = uint64_t(kMul1) * c2;
    const uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0);
    const uint32_t hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
    const uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return {{c0, c1, c2, c3}};
}

OX_HOST_DEVICE inline Block block(uint64_t seed, uint64_t index) {
  return philox4x32_10(uint32_t(index), uint32_t(index >> 32), 0, 0, uint32_t(seed),
                       uint32_t(seed >> 32));
}

// How many elements one block serves, per draw kind.
enum class Kind { Uniform32, Uniform64, Normal, Integer, Bernoulli };
OX_HOST_DEVICE constexpr uint64_t elements_per_block(Kind k) {
  return (k == Kind::Uniform32 || k == Kind::Bernoulli) ? 4 : 2;
}
OX_HOST_DEVICE constexpr uint64_t blocks_for(Kind k, uint64_t n) {
  return (n + elements_per_block(k) - 1) / elements_per_block(k);
}

OX_HOST_DEVICE inline uint64_t join(uint32_t lo, uint32_t hi) { return uint64_t(hi) << 32 | lo; }

// [0, 1) with 24 random bits: exact in f32.
OX_HOST_DEVICE inline float unit_float(uint32_t w) { return float(w >> 8) * 0x1p-24f; }
// [0, 1) with 53 random bits: exact in f64.
OX_HOST_DEVICE inline double unit_double(uint64_t x) { return double(x >> 11) * 0x1p-53; }

// Element i of a draw whose first block is `first` reads lane i % elements_per_block of
// block first + i / elements_per_block. These map a block's words to a lane's value.
OX_HOST_DEVICE inline float uniform32(const Block& b, int lane) { return unit_float(b.w[lane]); }
OX_HOST_DEVICE inline uint64_t bits64(const Block& b, int lane) {
  return join(b.w[2 * lane], b.w[2 * lane + 1]);
}
OX_HOST_DEVICE inline double uniform64(const Block& b, int lane) {
  return unit_double(bits64(b, lane));
}
// Box-Muller on one block: lane 0 takes the cosine branch, lane 1 the sine.
OX_HOST_DEVICE inline double normal(const Block& b, int lane) {
  const double u1 = double((bits64(b, 0) >> 11) + 1) * 0x1p-53;  // (0, 1]: the log is finite
  const double u2 = unit_double(bits64(b, 1));
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double theta = 6.283185307179586476925286766559 * u2;
  return lane == 0 ? r * std::cos(theta) : r * std::sin(theta);
}
// [low, low + range) by modulo: the bias is below range / 2^64, negligible at any size.
OX_HOST_DEVICE inline int64_t integer(const Block& b, int lane, int64_t low, uint64_t range) {
  return int64_t(uint64_t(low) + bits64(b, lane) % range);
}
OX_HOST_DEVICE inline bool bernoulli(const Block& b, int lane, double p) {
  return double(b.w[lane]) * 0x1p-32 < p;
}

}  // namespace ox::philox
