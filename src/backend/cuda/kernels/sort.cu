// sort (Backend contract in src/backend/backend.h), and the device-wide building blocks the
// indexing launchers use too (backend/cuda/radix.h): exclusive scans of i64 and the stable LSD
// radix sort of (u64 key, i64 payload) pairs (kernels/index_plan.cuh has its plan).
//   ox_sort_fill_u64(p, n, v)                        p[i] = v
//   ox_sort_scan_block(data, n, sums)                 exclusive scan within blocks of
//                                                     kScanBlock items; block totals to sums
//   ox_sort_scan_add(data, n, sums)                   data[i] += sums[i / kScanBlock]
//   ox_sort_radix_hist(keys, n, pass, tile_items, tiles, hist)
//   ox_sort_radix_scatter(keys, vals, keys_out, vals_out, n, pass, tile_items, tiles, offsets)
//   ox_sort_keys_<dtype>(keys, payload, src, total, layout, flip)   key of each element
//   ox_sort_row_keys(keys, payload, total, n)        keys[p] = payload[p] / n
//   ox_sort_first_nan_<f-dtype>(src, total, layout, n, first)      first NaN per row
//   ox_sort_write_w{1,2,4,8}(values, indices, src, payload, first_nan, count, m, n, k,
//                            out_layout, src_layout)

#include <cub/block/block_scan.cuh>

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/index_plan.cuh"

OXMERA_DEFINE_KERNEL_STAMP;

using namespace ox::cuda::kernels;

extern "C" __global__ void ox_sort_fill_u64(uint64_t* __restrict__ p, int64_t n, uint64_t v) {
  grid_stride(n, [&](int64_t i) { p[i] = v; });
}

// ---- Exclusive scan ---------------------------------------------------------------------------
// Block b scans items [b * kScanBlock, (b + 1) * kScanBlock): thread t holds kScanItems
// consecutive items. Integer sums: any order gives the same bits.
extern "C" __global__ void __launch_bounds__(kScanThreads)
    ox_sort_scan_block(int64_t* __restrict__ data, int64_t n, int64_t* __restrict__ sums) {
  using Scan = cub::BlockScan<long long, kScanThreads>;
  __shared__ typename Scan::TempStorage temp;
  const int64_t first = int64_t(blockIdx.x) * kScanBlock + int64_t(threadIdx.x) * kScanItems;
  long long item[kScanItems];
  long long own = 0;
  for (int j = 0; j < kScanItems; ++j) {
    item[j] = first + j < n ? data[first + j] : 0;
    own += item[j];
  }
  long long before = 0, total = 0;
  Scan(temp).ExclusiveSum(own, before, total);
  for (int j = 0; j < kScanItems; ++j) {
    if (first + j < n) data[first + j] = before;
    before += item[j];
  }
  if (sums != nullptr && threadIdx.x == 0) sums[blockIdx.x] = total;
}

extern "C" __global__ void ox_sort_scan_add(int64_t* __restrict__ data, int64_t n,
                                            const int64_t* __restrict__ sums) {
  grid_stride(n, [&](int64_t i) { data[i] += sums[i / kScanBlock]; });
}

// ---- Radix sort ---------------------------------------------------------------------------------
// Blocks of kRadixThreads threads, one per tile of tile_items items.
extern "C" __global__ void __launch_bounds__(kRadixThreads)
    ox_sort_radix_hist(const uint64_t* __restrict__ keys, int64_t n, int32_t pass,
                       int64_t tile_items, int64_t tiles, int64_t* __restrict__ hist) {
  __shared__ unsigned int count[kRadixThreads];
  count[threadIdx.x] = 0;
  __syncthreads();
  const int64_t begin = int64_t(blockIdx.x) * tile_items;
  const int64_t end = begin + tile_items < n ? begin + tile_items : n;
  for (int64_t i = begin + threadIdx.x; i < end; i += kRadixThreads)
    atomicAdd(&count[radix_digit(keys[i], pass)], 1u);
  __syncthreads();
  hist[int64_t(threadIdx.x) * tiles + blockIdx.x] = count[threadIdx.x];
}

// Writes the tile's items in input order to offsets[digit * tiles + tile] onwards (the scanned
// histogram): chunk by chunk of kRadixThreads items, an item's rank among the equal digits
// before it is its rank in its warp (__match_any_sync) plus the counts of the warps before.
extern "C" __global__ void __launch_bounds__(kRadixThreads)
    ox_sort_radix_scatter(const uint64_t* __restrict__ keys, const int64_t* __restrict__ vals,
                          uint64_t* __restrict__ keys_out, int64_t* __restrict__ vals_out,
                          int64_t n, int32_t pass, int64_t tile_items, int64_t tiles,
                          const int64_t* __restrict__ offsets) {
  constexpr int kWarps = kRadixThreads / 32;
  __shared__ int64_t base[kRadixThreads];  // next output position per digit
  __shared__ int warp_count[kWarps][kRadixThreads];
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  base[t] = offsets[int64_t(t) * tiles + blockIdx.x];
  const int64_t begin = int64_t(blockIdx.x) * tile_items;
  const int64_t end = begin + tile_items < n ? begin + tile_items : n;
  for (int64_t c = begin; c < end; c += kRadixThreads) {  // the same trips in every thread
    for (int w = 0; w < kWarps; ++w) warp_count[w][t] = 0;
    __syncthreads();  // also orders base's writes before its reads
    const int64_t i = c + t;
    const bool valid = i < end;
    const uint64_t key = valid ? keys[i] : 0;
    const int digit = valid ? radix_digit(key, pass) : kRadixThreads;  // a digit of its own
    const unsigned peers = __match_any_sync(0xffffffffu, digit);
    const int rank = __popc(peers & ((1u << lane) - 1u));
    if (valid && rank == 0) warp_count[warp][digit] = __popc(peers);
    __syncthreads();
    if (valid) {
      int64_t at = base[digit] + rank;
      for (int w = 0; w < warp; ++w) at += warp_count[w][digit];
      keys_out[at] = key;
      vals_out[at] = vals[i];
    }
    __syncthreads();  // every read of base and warp_count done
    int added = 0;
    for (int w = 0; w < kWarps; ++w) added += warp_count[w][t];
    base[t] += added;
    __syncthreads();  // before the next chunk clears warp_count and reads base
  }
}

// ---- Sort
// -----------------------------------------------------------------------------------------

template <class T>
__device__ inline uint64_t sort_key(T v) {
  if constexpr (std::is_same_v<T, float>)
    return f32_key(__float_as_uint(v));
  else if constexpr (std::is_same_v<T, double>)
    return f64_key(uint64_t(__double_as_longlong(v)));
  else if constexpr (std::is_same_v<T, F16>)
    return f16_key(v.bits);
  else if constexpr (std::is_same_v<T, BF16>)
    return bf16_key(v.bits);
  else
    return int_key<T>(v);
}

template <class T>
__device__ inline bool is_nan(T v) {
  if constexpr (std::is_same_v<T, F16>)
    return (v.bits & 0x7fff) > kInfF16;
  else if constexpr (std::is_same_v<T, BF16>)
    return (v.bits & 0x7fff) > kInfBF16;
  else
    return v != v;
}

// Element i (row-major over src's shape, rows of n) gets its key, xor flip (the complement
// within the key's width for a descending sort), and payload i.
#define OX_SORT_KEYS(NAME, T)                                                                \
  extern "C" __global__ void ox_sort_keys_##NAME(                                            \
      uint64_t* __restrict__ keys, int64_t* __restrict__ payload, const T* __restrict__ src, \
      int64_t total, Offsets<1> layout, uint64_t flip) {                                     \
    grid_stride(total, [&](int64_t i) {                                                      \
      int64_t off[1];                                                                        \
      layout.get(i, off);                                                                    \
      keys[i] = sort_key<T>(src[off[0]]) ^ flip;                                             \
      payload[i] = i;                                                                        \
    });                                                                                      \
  }
OXMERA_FOR_EACH_FLOAT_DTYPE(OX_SORT_KEYS)
OXMERA_FOR_EACH_INT_DTYPE(OX_SORT_KEYS)
#undef OX_SORT_KEYS

extern "C" __global__ void ox_sort_row_keys(uint64_t* __restrict__ keys,
                                            const int64_t* __restrict__ payload, int64_t total,
                                            int64_t n) {
  grid_stride(total, [&](int64_t p) { keys[p] = uint64_t(payload[p] / n); });
}

// first[row] = the least j whose element is NaN (first[] holds n beforehand).
#define OX_SORT_FIRST_NAN(NAME, T)                                                              \
  extern "C" __global__ void ox_sort_first_nan_##NAME(const T* __restrict__ src, int64_t total, \
                                                      Offsets<1> layout, int64_t n,             \
                                                      uint64_t* __restrict__ first) {           \
    grid_stride(total, [&](int64_t i) {                                                         \
      int64_t off[1];                                                                           \
      layout.get(i, off);                                                                       \
      if (is_nan<T>(src[off[0]]))                                                               \
        atomicMin(reinterpret_cast<unsigned long long*>(first + i / n),                         \
                  (unsigned long long)(i % n));                                                 \
    });                                                                                         \
  }
OXMERA_FOR_EACH_FLOAT_DTYPE(OX_SORT_FIRST_NAN)
#undef OX_SORT_FIRST_NAN

// Output element e (row-major over the outputs' shape, rows of m) of row r = e / m: position
// p = (k >= 0 ? k : e % m) of the row's order, payload[r * n + p] (a flat src index), or the
// row's first NaN when first_nan is given and holds one. layout: operand 0 values (ignored when
// values is null), operand 1 indices; src_layout over src's shape.
#define OX_SORT_WRITE(WIDTH, T)                                                                   \
  extern "C" __global__ void ox_sort_write_w##WIDTH(                                              \
      T* __restrict__ values, int64_t* __restrict__ indices, const T* __restrict__ src,           \
      const int64_t* __restrict__ payload, const uint64_t* __restrict__ first_nan, int64_t count, \
      int64_t m, int64_t n, int64_t k, Offsets<2> layout, Offsets<1> src_layout) {                \
    grid_stride(count, [&](int64_t e) {                                                           \
      const int64_t r = e / m;                                                                    \
      const int64_t p = k >= 0 ? k : e - r * m;                                                   \
      int64_t j = payload[r * n + p] - r * n;                                                     \
      if (first_nan != nullptr && first_nan[r] < uint64_t(n)) j = int64_t(first_nan[r]);          \
      int64_t out[2], in[1];                                                                      \
      layout.get(e, out);                                                                         \
      indices[out[1]] = j;                                                                        \
      if (values != nullptr) {                                                                    \
        src_layout.get(r* n + j, in);                                                             \
        values[out[0]] = src[in[0]];                                                              \
      }                                                                                           \
    });                                                                                           \
  }
OX_SORT_WRITE(1, uint8_t)
OX_SORT_WRITE(2, uint16_t)
OX_SORT_WRITE(4, uint32_t)
OX_SORT_WRITE(8, uint64_t)
#undef OX_SORT_WRITE
