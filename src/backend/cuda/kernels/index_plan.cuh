#pragma once
// What the indexing and sorting kernels (kernels/index.cu, kernels/sort.cu) share with their
// launchers (backend/cuda/index.cpp, sort.cpp, radix.cpp): the order-preserving sort keys, the
// radix sort's plan and digits, the index operands' kernel parameter, and layouts of any number
// of operands. Plain C++ outside nvcc, so tests/backend/cuda_index_test.cpp checks them on the
// CPU against the CPU backend.

#include <cstdint>

#include "backend/cuda/kernels/offsets.cuh"
#include "core/host_device.h"

namespace ox::cuda::kernels {

// ---- Sort keys -------------------------------------------------------------------------------
// A value's key: an unsigned integer of the value's width whose order is the CPU sort's order
// (src/backend/cpu/sort.cpp): NaN above every number (all NaNs equal), -0 equal to 0, 16-bit
// floats as in f32 (f16 -> f32 and bf16 -> f32 are exact and monotone, so their own bits order
// them). A descending key is the ascending one complemented within its width: the value order
// reversed, ties still in index order under a stable sort.

// All ones in the low `bytes` bytes.
OX_HOST_DEVICE inline uint64_t key_mask(int bytes) {
  return bytes >= 8 ? ~uint64_t(0) : (uint64_t(1) << (8 * bytes)) - 1;
}

// A floating value's bits (the low `bytes` bytes of `bits`); inf_bits: the bits of +inf.
OX_HOST_DEVICE inline uint64_t float_key(uint64_t bits, int bytes, uint64_t inf_bits) {
  const uint64_t mask = key_mask(bytes);
  const uint64_t sign = uint64_t(1) << (8 * bytes - 1);
  bits &= mask;
  const uint64_t magnitude = bits & ~sign;
  if (magnitude > inf_bits) return mask;  // NaN, whatever its sign and payload
  if (magnitude == 0) bits = 0;           // -0 keys as +0
  return (bits & sign) ? (~bits & mask) : (bits | sign);
}

// A signed integer's value: its two's complement in `bytes` bytes with the sign bit flipped.
OX_HOST_DEVICE inline uint64_t signed_key(int64_t v, int bytes) {
  return (uint64_t(v) & key_mask(bytes)) ^ (uint64_t(1) << (8 * bytes - 1));
}

// Bits of +inf per floating width.
inline constexpr uint64_t kInfF16 = 0x7c00, kInfBF16 = 0x7f80, kInfF32 = 0x7f800000,
                          kInfF64 = 0x7ff0000000000000;

// The key of each dtype's value (kernels/sort.cu calls these on the stored bits).
OX_HOST_DEVICE inline uint64_t f16_key(uint16_t bits) { return float_key(bits, 2, kInfF16); }
OX_HOST_DEVICE inline uint64_t bf16_key(uint16_t bits) { return float_key(bits, 2, kInfBF16); }
OX_HOST_DEVICE inline uint64_t f32_key(uint32_t bits) { return float_key(bits, 4, kInfF32); }
OX_HOST_DEVICE inline uint64_t f64_key(uint64_t bits) { return float_key(bits, 8, kInfF64); }
template <class I>  // an integer type or bool
OX_HOST_DEVICE inline uint64_t int_key(I v) {
  if constexpr (I(-1) < I(0))
    return signed_key(int64_t(v), int(sizeof(I)));
  else
    return uint64_t(v);
}
// The largest key of a dtype of `bytes` bytes (bool: 1): also the mask a descending sort
// complements keys with.
OX_HOST_DEVICE inline uint64_t max_sort_key(int bytes, bool is_bool) {
  return is_bool ? 1 : key_mask(bytes);
}

// ---- Radix sort ------------------------------------------------------------------------------
// An LSD radix sort of (u64 key, i64 payload) pairs, 8 bits per pass, stable: per pass each
// tile of the input counts its digits (hist[digit * tiles + tile]), an exclusive scan of hist
// in that order gives every (digit, tile) its first output position, and each tile writes its
// items there in input order. Only the passes the largest key needs run.

inline constexpr int kRadixThreads = 256;  // a block; also the digits per pass
inline constexpr int64_t kRadixMaxTiles = 65536;

struct RadixPlan {
  int passes = 0;          // bytes of the largest key
  int64_t tile_items = 0;  // a multiple of kRadixThreads
  int64_t tiles = 0;
};

OX_HOST_DEVICE inline int key_bytes(uint64_t max_key) {
  int b = 0;
  while (max_key != 0) {
    ++b;
    max_key >>= 8;
  }
  return b;
}

OX_HOST_DEVICE inline RadixPlan radix_plan(int64_t n, uint64_t max_key) {
  RadixPlan p;
  p.passes = n > 1 ? key_bytes(max_key) : 0;
  // At least 16 chunks of kRadixThreads per tile; more when that would exceed kRadixMaxTiles.
  const int64_t chunk = kRadixThreads;
  int64_t chunks = (n + chunk * kRadixMaxTiles - 1) / (chunk * kRadixMaxTiles);
  if (chunks < 16) chunks = 16;
  p.tile_items = chunks * chunk;
  p.tiles = n > 0 ? (n + p.tile_items - 1) / p.tile_items : 0;
  return p;
}

OX_HOST_DEVICE inline int radix_digit(uint64_t key, int pass) {
  return int((key >> (8 * pass)) & 0xff);
}

// ---- Exclusive scans of i64 --------------------------------------------------------------------
inline constexpr int kScanThreads = 256, kScanItems = 4;
inline constexpr int64_t kScanBlock = int64_t(kScanThreads) * kScanItems;

// ---- Nonzero ---------------------------------------------------------------------------------
// The shape whose coordinates nonzero writes (src's, unmerged), by value.
inline constexpr int kMaxCoordDims = 64;
struct Coords {
  int32_t ndim = 0;
  int64_t shape[kMaxCoordDims] = {};
};
// Items per block of the nonzero kernels: whole chunks of kScanThreads, at most
// kRadixMaxTiles blocks.
OX_HOST_DEVICE inline int64_t nonzero_tile(int64_t n) {
  const int64_t chunk = kScanThreads;
  int64_t chunks = (n + chunk * kRadixMaxTiles - 1) / (chunk * kRadixMaxTiles);
  if (chunks < 16) chunks = 16;
  return chunks * chunk;
}

// ---- Gather and scatter --------------------------------------------------------------------
// The index operands of one gather or scatter, by value: operand k's array, the extent and
// stride of the dim it indexes, and its lowest valid value (-size with wrap, else 0).
template <int K>
struct IndexArgs {
  int32_t count = 0;
  const void* data[K] = {};
  int64_t size[K] = {};
  int64_t stride[K] = {};
  int64_t low[K] = {};
};

// The offset (in the indexed array, elements) that index value v moves to, or false when v is
// outside [low, size).
OX_HOST_DEVICE inline bool index_step(int64_t v, int64_t low, int64_t size, int64_t stride,
                                      int64_t& offset) {
  if (v < low || v >= size) return false;
  if (v < 0) v += size;
  offset += v * stride;
  return true;
}

// The layout of N operands of one shape (the launch layer's make_offsets for any N): size-1
// dims dropped, dims merged where every operand steps through them as one. Returns false when
// more than kMaxDims dims remain. Host only.
template <int N>
bool merge_offsets(int ndim, const int64_t* shape, const int64_t* const* strides, Offsets<N>& o) {
  int64_t size[64 > kMaxDims ? 64 : kMaxDims];
  int64_t stride[N][64 > kMaxDims ? 64 : kMaxDims];
  int count = 0;  // innermost first
  for (int d = ndim - 1; d >= 0; --d) {
    if (shape[d] == 1) continue;
    if (count > 0) {
      bool merges = true;
      for (int k = 0; k < N; ++k)
        merges = merges && strides[k][d] == stride[k][count - 1] * size[count - 1];
      if (merges) {
        size[count - 1] *= shape[d];
        continue;
      }
    }
    if (count == 64) return false;
    size[count] = shape[d];
    for (int k = 0; k < N; ++k) stride[k][count] = strides[k][d];
    ++count;
  }
  if (count > kMaxDims) return false;
  o = Offsets<N>{};
  o.ndim = count;
  for (int i = 0; i < count; ++i) {
    const int d = count - 1 - i;  // outermost first
    o.sizes[d] = size[i];
    for (int k = 0; k < N; ++k) o.strides[k][d] = stride[k][i];
  }
  return true;
}

// The range [low, high] of the offsets sum_d i_d * strides[d] over a shape (every size >= 1).
OX_HOST_DEVICE inline void offset_range(int ndim, const int64_t* shape, const int64_t* strides,
                                        int64_t& low, int64_t& high) {
  for (int d = 0; d < ndim; ++d) {
    const int64_t span = (shape[d] - 1) * strides[d];
    if (span < 0)
      low += span;
    else
      high += span;
  }
}

// The range [low, high] of a scatter's destination offsets: the destination's strides over the
// iteration shape, plus each index operand's valid values (size 0: none) times its stride.
inline void destination_range(int ndim, const int64_t* shape, const int64_t* strides, int nidx,
                              const int64_t* sizes, const int64_t* index_strides, int64_t& low,
                              int64_t& high) {
  low = 0;
  high = 0;
  offset_range(ndim, shape, strides, low, high);
  for (int k = 0; k < nidx; ++k)
    if (sizes[k] > 0) offset_range(1, &sizes[k], &index_strides[k], low, high);
}

}  // namespace ox::cuda::kernels
