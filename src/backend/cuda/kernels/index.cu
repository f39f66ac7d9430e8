// gather, scatter and nonzero (Backend contracts in src/backend/backend.h); launchers in
// backend/cuda/index.cpp, which also use sort.cu's scans and radix sort.
//   ox_index_check_<i64|i32>(idx, n, layout, low, size, first)
//       first[0] = the least row-major position (over the index's moving dims) of a value
//       outside [low, size) (atomicMin: the same result in any order)
//   ox_index_report_<i64|i32>(idx, n, layout, size, first, word, site)     one thread
//   ox_index_gather<K>_w<bytes>_<i64|i32>(dst, src, count, layout, args)
//       K = 1 or 8 index operands at most; layout: dst, src, then each index
//   ox_index_scatter_keys<K>_<i64|i32>(keys, payload, count, layout, args, base, invalid)
//       each update's destination offset minus base (invalid for a bad index), payload i
//   ox_index_scatter_<op>_<dtype>(dst, src, keys, payload, count, base, invalid, src_layout)
//       after the stable sort by key: the first update of each run of equal keys applies the
//       run in order (op assign: by width, w<bytes>)
//   ox_index_nonzero_count_<kind>(src, n, layout, tile, counts)
//   ox_index_nonzero_write_<kind>(src, n, layout, tile, starts, dst, rows, coords)
//       kind w<bytes> (integers, bool) or f<bytes> (floats: -0 is zero, NaN is not)

#include <cub/block/block_scan.cuh>

#include "backend/cuda/kernels/check.cuh"
#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/index_plan.cuh"

OXMERA_DEFINE_KERNEL_STAMP;

using namespace ox::cuda::kernels;

// ---- Checks -------------------------------------------------------------------------------------

#define OX_INDEX_CHECK(NAME, I)                                                                  \
  extern "C" __global__ void ox_index_check_##NAME(const I* __restrict__ idx, int64_t n,         \
                                                   Offsets<1> layout, int64_t low, int64_t size, \
                                                   uint64_t* __restrict__ first) {               \
    grid_stride(n, [&](int64_t i) {                                                              \
      int64_t off[1];                                                                            \
      layout.get(i, off);                                                                        \
      const int64_t v = idx[off[0]];                                                             \
      if (v < low || v >= size)                                                                  \
        atomicMin(reinterpret_cast<unsigned long long*>(first), (unsigned long long)i);          \
    });                                                                                          \
  }                                                                                              \
  extern "C" __global__ void ox_index_report_##NAME(                                             \
      const I* __restrict__ idx, int64_t n, Offsets<1> layout, int64_t size,                     \
      const uint64_t* __restrict__ first, CheckWord* word, int32_t site) {                       \
    if (blockIdx.x != 0 || threadIdx.x != 0 || first[0] >= uint64_t(n)) return;                  \
    const int64_t at = int64_t(first[0]);                                                        \
    int64_t off[1];                                                                              \
    layout.get(at, off);                                                                         \
    report_check(word, site, int64_t(idx[off[0]]), at, size);                                    \
  }
OX_INDEX_CHECK(i64, int64_t)
OX_INDEX_CHECK(i32, int32_t)
#undef OX_INDEX_CHECK

// The offset the indices of iteration element i move the indexed array by (off: the layout's
// offsets, the indices from operand `first`); false when one is out of range.
template <class I, int K, int N>
__device__ inline bool index_offset(const IndexArgs<K>& args, const int64_t (&off)[N], int first,
                                    int64_t& offset) {
  offset = 0;
  bool ok = true;
  for (int k = 0; k < K; ++k) {
    if (k >= args.count) break;
    const int64_t v = static_cast<const I*>(args.data[k])[off[first + k]];
    ok = index_step(v, args.low[k], args.size[k], args.stride[k], offset) && ok;
  }
  return ok;
}

// ---- Gather
// ----------------------------------------------------------------------------------------

#define OX_GATHER(K, WIDTH, T, NAME, I)                                                     \
  extern "C" __global__ void ox_index_gather##K##_w##WIDTH##_##NAME(                        \
      T* __restrict__ dst, const T* __restrict__ src, int64_t count, Offsets<2 + K> layout, \
      IndexArgs<K> args) {                                                                  \
    grid_stride(count, [&](int64_t i) {                                                     \
      int64_t off[2 + K];                                                                   \
      layout.get(i, off);                                                                   \
      int64_t moved;                                                                        \
      if (index_offset<I>(args, off, 2, moved)) dst[off[0]] = src[off[1] + moved];          \
    });                                                                                     \
  }
#define OX_GATHER_WIDTHS(K, NAME, I) \
  OX_GATHER(K, 1, uint8_t, NAME, I)  \
  OX_GATHER(K, 2, uint16_t, NAME, I) \
  OX_GATHER(K, 4, uint32_t, NAME, I) \
  OX_GATHER(K, 8, uint64_t, NAME, I)
OX_GATHER_WIDTHS(1, i64, int64_t)
OX_GATHER_WIDTHS(1, i32, int32_t)
OX_GATHER_WIDTHS(8, i64, int64_t)
OX_GATHER_WIDTHS(8, i32, int32_t)
#undef OX_GATHER_WIDTHS
#undef OX_GATHER

// ---- Scatter
// ---------------------------------------------------------------------------------------

#define OX_SCATTER_KEYS(K, NAME, I)                                               \
  extern "C" __global__ void ox_index_scatter_keys##K##_##NAME(                   \
      uint64_t* __restrict__ keys, int64_t* __restrict__ payload, int64_t count,  \
      Offsets<1 + K> layout, IndexArgs<K> args, int64_t base, uint64_t invalid) { \
    grid_stride(count, [&](int64_t i) {                                           \
      int64_t off[1 + K];                                                         \
      layout.get(i, off);                                                         \
      int64_t moved;                                                              \
      const bool ok = index_offset<I>(args, off, 1, moved);                       \
      keys[i] = ok ? uint64_t(off[0] + moved - base) : invalid;                   \
      payload[i] = i;                                                             \
    });                                                                           \
  }
OX_SCATTER_KEYS(1, i64, int64_t)
OX_SCATTER_KEYS(1, i32, int32_t)
OX_SCATTER_KEYS(8, i64, int64_t)
OX_SCATTER_KEYS(8, i32, int32_t)
#undef OX_SCATTER_KEYS

// The CPU's reductions (src/backend/cpu/scatter.cpp) on storage types: integers wrap, bool
// or/and, floats in their compute type (f32 for the 16-bit ones) rounded back after each
// update, amax/amin: a NaN coming in wins and one already there stays.
template <class T>
__device__ inline auto compute(T v) {
  if constexpr (std::is_same_v<T, F16>)
    return ox::detail::half_bits_to_float(v.bits);
  else if constexpr (std::is_same_v<T, BF16>)
    return ox::detail::bfloat16_bits_to_float(v.bits);
  else
    return v;
}
template <class T, class C>
__device__ inline T store(C v) {
  if constexpr (std::is_same_v<T, F16>)
    return {ox::detail::float_to_half_bits(v)};
  else if constexpr (std::is_same_v<T, BF16>)
    return {ox::detail::float_to_bfloat16_bits(v)};
  else
    return v;
}

struct SumOp {
  template <class T>
  __device__ static T apply(T d, T s) {
    if constexpr (std::is_same_v<T, bool>)
      return d || s;
    else if constexpr (std::is_integral_v<T>)
      return T(uint64_t(d) + uint64_t(s));
    else
      return store<T>(compute(d) + compute(s));
  }
};
struct ProdOp {
  template <class T>
  __device__ static T apply(T d, T s) {
    if constexpr (std::is_same_v<T, bool>)
      return d && s;
    else if constexpr (std::is_integral_v<T>)
      return T(uint64_t(d) * uint64_t(s));
    else
      return store<T>(compute(d) * compute(s));
  }
};
template <bool IsMax>
struct ExtremeOp {
  template <class T>
  __device__ static T apply(T d, T s) {
    const auto a = compute(d), b = compute(s);
    const bool beyond = IsMax ? b > a : b < a;
    if constexpr (std::is_floating_point_v<decltype(a)>)
      return (b != b || beyond) ? s : d;
    else
      return beyond ? s : d;
  }
};
using AmaxOp = ExtremeOp<true>;
using AminOp = ExtremeOp<false>;
struct AssignOp {
  template <class T>
  __device__ static T apply(T, T s) {
    return s;
  }
};

// keys sorted (stably: equal keys in iteration order); the thread at the first position of a
// run of equal keys owns that destination element and applies the run's updates in order.
template <class Op, class T>
__device__ inline void scatter_apply(T* __restrict__ dst, const T* __restrict__ src,
                                     const uint64_t* __restrict__ keys,
                                     const int64_t* __restrict__ payload, int64_t count,
                                     int64_t base, uint64_t invalid, const Offsets<1>& src_layout) {
  grid_stride(count, [&](int64_t p) {
    const uint64_t key = keys[p];
    if (key == invalid || (p > 0 && keys[p - 1] == key)) return;
    T* const d = dst + (int64_t(key) + base);
    T acc = *d;
    for (int64_t q = p; q < count && keys[q] == key; ++q) {
      int64_t off[1];
      src_layout.get(payload[q], off);
      acc = Op::template apply<T>(acc, src[off[0]]);
    }
    *d = acc;
  });
}

#define OX_SCATTER_OP(OPNAME, OP, NAME, T)                                                \
  extern "C" __global__ void ox_index_scatter_##OPNAME##_##NAME(                          \
      T* __restrict__ dst, const T* __restrict__ src, const uint64_t* __restrict__ keys,  \
      const int64_t* __restrict__ payload, int64_t count, int64_t base, uint64_t invalid, \
      Offsets<1> src_layout) {                                                            \
    scatter_apply<OP>(dst, src, keys, payload, count, base, invalid, src_layout);         \
  }
#define OX_SCATTER_SUM(NAME, T) OX_SCATTER_OP(sum, SumOp, NAME, T)
#define OX_SCATTER_PROD(NAME, T) OX_SCATTER_OP(prod, ProdOp, NAME, T)
#define OX_SCATTER_AMAX(NAME, T) OX_SCATTER_OP(amax, AmaxOp, NAME, T)
#define OX_SCATTER_AMIN(NAME, T) OX_SCATTER_OP(amin, AminOp, NAME, T)
OXMERA_FOR_EACH_FLOAT_DTYPE(OX_SCATTER_SUM)
OXMERA_FOR_EACH_INT_DTYPE(OX_SCATTER_SUM)
OXMERA_FOR_EACH_FLOAT_DTYPE(OX_SCATTER_PROD)
OXMERA_FOR_EACH_INT_DTYPE(OX_SCATTER_PROD)
OXMERA_FOR_EACH_FLOAT_DTYPE(OX_SCATTER_AMAX)
OXMERA_FOR_EACH_INT_DTYPE(OX_SCATTER_AMAX)
OXMERA_FOR_EACH_FLOAT_DTYPE(OX_SCATTER_AMIN)
OXMERA_FOR_EACH_INT_DTYPE(OX_SCATTER_AMIN)
OX_SCATTER_OP(assign, AssignOp, w1, uint8_t)
OX_SCATTER_OP(assign, AssignOp, w2, uint16_t)
OX_SCATTER_OP(assign, AssignOp, w4, uint32_t)
OX_SCATTER_OP(assign, AssignOp, w8, uint64_t)
#undef OX_SCATTER_SUM
#undef OX_SCATTER_PROD
#undef OX_SCATTER_AMAX
#undef OX_SCATTER_AMIN
#undef OX_SCATTER_OP

// ---- Nonzero
// -------------------------------------------------------------------------------------

template <class U, bool Float>
__device__ inline bool nonzero_at(const U* src, const Offsets<1>& layout, int64_t i) {
  int64_t off[1];
  layout.get(i, off);
  const U v = src[off[0]];
  if constexpr (Float)
    return (v & U(~(U(1) << (sizeof(U) * 8 - 1)))) != 0;  // any bit but the sign: NaN too
  else
    return v != 0;
}

// Block b counts the nonzeros of items [b * tile, (b + 1) * tile).
template <class U, bool Float>
__device__ inline void nonzero_count(const U* __restrict__ src, int64_t n, const Offsets<1>& layout,
                                     int64_t tile, int64_t* __restrict__ counts) {
  using Scan = cub::BlockScan<long long, kScanThreads>;
  __shared__ typename Scan::TempStorage temp;
  const int64_t begin = int64_t(blockIdx.x) * tile;
  const int64_t end = begin + tile < n ? begin + tile : n;
  long long own = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += kScanThreads)
    own += nonzero_at<U, Float>(src, layout, i) ? 1 : 0;
  long long before = 0, total = 0;
  Scan(temp).ExclusiveSum(own, before, total);
  if (threadIdx.x == 0) counts[blockIdx.x] = total;
}

// Block b writes the coordinates of its tile's nonzeros from row starts[b] on, chunk by chunk
// of kScanThreads items in order.
template <class U, bool Float>
__device__ inline void nonzero_write(const U* __restrict__ src, int64_t n, const Offsets<1>& layout,
                                     int64_t tile, const int64_t* __restrict__ starts,
                                     int64_t* __restrict__ dst, int64_t rows,
                                     const Coords& coords) {
  using Scan = cub::BlockScan<long long, kScanThreads>;
  __shared__ typename Scan::TempStorage temp;
  const int64_t begin = int64_t(blockIdx.x) * tile;
  const int64_t end = begin + tile < n ? begin + tile : n;
  int64_t row = starts[blockIdx.x];
  for (int64_t c = begin; c < end; c += kScanThreads) {  // the same trips in every thread
    const int64_t i = c + threadIdx.x;
    const bool flag = i < end && nonzero_at<U, Float>(src, layout, i);
    long long before = 0, total = 0;
    Scan(temp).ExclusiveSum(flag ? 1LL : 0LL, before, total);
    const int64_t at = row + before;
    if (flag && at < rows) {
      int64_t* out = dst + at * coords.ndim;
      int64_t rest = i;
      for (int d = coords.ndim - 1; d >= 0; --d) {
        const int64_t q = rest / coords.shape[d];
        out[d] = rest - q * coords.shape[d];
        rest = q;
      }
    }
    row += total;
    __syncthreads();  // temp is reused by the next chunk's scan
  }
}

#define OX_NONZERO(KIND, U, FLOAT)                                                            \
  extern "C" __global__ void __launch_bounds__(kScanThreads)                                  \
      ox_index_nonzero_count_##KIND(const U* __restrict__ src, int64_t n, Offsets<1> layout,  \
                                    int64_t tile, int64_t* __restrict__ counts) {             \
    nonzero_count<U, FLOAT>(src, n, layout, tile, counts);                                    \
  }                                                                                           \
  extern "C" __global__ void __launch_bounds__(kScanThreads)                                  \
      ox_index_nonzero_write_##KIND(const U* __restrict__ src, int64_t n, Offsets<1> layout,  \
                                    int64_t tile, const int64_t* __restrict__ starts,         \
                                    int64_t* __restrict__ dst, int64_t rows, Coords coords) { \
    nonzero_write<U, FLOAT>(src, n, layout, tile, starts, dst, rows, coords);                 \
  }
OX_NONZERO(w1, uint8_t, false)
OX_NONZERO(w2, uint16_t, false)
OX_NONZERO(w4, uint32_t, false)
OX_NONZERO(w8, uint64_t, false)
OX_NONZERO(f2, uint16_t, true)
OX_NONZERO(f4, uint32_t, true)
OX_NONZERO(f8, uint64_t, true)
#undef OX_NONZERO
