// Sorting along the last dim: sort, top-k and k-th selection share one total order. Each value
// becomes an unsigned key whose integer order is the value order (NaN largest, -0 == 0,
// descending by complementing the key), paired with its index; the pairs are then all
// distinct, so an unstable std::sort / std::nth_element on (key, index) gives exactly the
// stable sort, a top-k equal to its prefix and a k-th element equal to its entry k. Keys of up
// to 32 bits pack with a 32-bit index into one uint64_t. Whole rows of 256 or more take an LSD
// radix sort on the key (stable, so again the (key, index) order; 3-5x faster than std::sort).
// Rows are independent and spread over threads whole, so results never depend on the count.

#include <algorithm>
#include <bit>
#include <memory>
#include <type_traits>

#include "backend/cpu/kernels.h"
#include "backend/cpu/loops.h"
#include "backend/cpu/scratch.h"
#include "core/dispatch.h"

namespace ox::cpu {

namespace {

constexpr int64_t kSortGrain = 16384;  // elements per parallel task, at least

template <class T>
using key_type = std::conditional_t<sizeof(compute_t<T>) == 8, uint64_t, uint32_t>;

// The ascending key of v (a T in its compute type): unsigned order equals the value order,
// every NaN the largest key.
template <class T, class C = compute_t<T>>
inline key_type<T> ascending_key(C v) {
  using K = key_type<T>;
  constexpr K top = K(1) << (sizeof(K) * 8 - 1);
  if constexpr (std::is_floating_point_v<C>) {
    static_assert(sizeof(C) == sizeof(K));
    if (v != v) return ~K(0);
    const K bits = std::bit_cast<K>(v == C(0) ? C(0) : v);  // -0 keys as +0
    return (bits & top) ? ~bits : (bits | top);
  } else if constexpr (std::is_signed_v<C>) {
    // Sign-extended to the key's width, then the sign bit flipped: signed order as unsigned.
    return static_cast<K>(static_cast<std::make_signed_t<K>>(v)) ^ top;
  } else {
    return static_cast<K>(v);
  }
}

// (key, index) pairs: packed into one word when both fit, a struct otherwise.
struct PackedKey {
  using Entry = uint64_t;
  static Entry make(uint64_t key, int64_t i) { return key << 32 | static_cast<uint64_t>(i); }
  static uint64_t key(Entry e) { return e >> 32; }
  static int64_t index(Entry e) { return static_cast<int64_t>(e & 0xffffffffu); }
};
struct Wide {
  struct Entry {
    uint64_t key;
    int64_t idx;
    bool operator<(const Entry& o) const { return key < o.key || (key == o.key && idx < o.idx); }
  };
  static Entry make(uint64_t key, int64_t i) { return {key, i}; }
  static uint64_t key(const Entry& e) { return e.key; }
  static int64_t index(const Entry& e) { return e.idx; }
};

// Rows at least this long take the radix sort; shorter ones std::sort.
constexpr int64_t kRadixMin = 256;

// LSD radix sort by key, one byte per pass, of entries made in index order: stable, so it gives
// the (key, index) order. Passes whose byte is the same in every key are skipped.
template <class P, int KeyBytes>
void radix_sort(typename P::Entry* a, typename P::Entry* tmp, int64_t n) {
  using Entry = typename P::Entry;
  int64_t count[KeyBytes][256] = {};
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t k = P::key(a[i]);
    for (int d = 0; d < KeyBytes; ++d) ++count[d][(k >> (8 * d)) & 0xff];
  }
  Entry* src = a;
  Entry* dst = tmp;
  for (int d = 0; d < KeyBytes; ++d) {
    int64_t* c = count[d];
    if (c[(P::key(src[0]) >> (8 * d)) & 0xff] == n) continue;
    int64_t sum = 0;
    for (int b = 0; b < 256; ++b) {
      const int64_t k = c[b];
      c[b] = sum;
      sum += k;
    }
    for (int64_t i = 0; i < n; ++i) dst[c[(P::key(src[i]) >> (8 * d)) & 0xff]++] = src[i];
    std::swap(src, dst);
  }
  if (src != a) std::copy(src, src + n, a);
}

struct RowGeometry {
  Shape outer;
  Strides o_val, o_idx, o_src;
  int64_t rows = 1;
  int64_t n = 1, m = 1;  // row length in src, in the outputs
  int64_t s_val = 0, s_idx = 0, s_src = 0;

  RowGeometry(const StridedArray& values, const StridedArray& indices, const StridedArray& src) {
    const size_t nd = src.shape.size();
    const size_t k = nd ? nd - 1 : 0;
    const Strides& vstr = values.data ? values.strides : indices.strides;
    if (nd) {
      n = src.shape[k];
      m = indices.shape[k];
      s_val = vstr[k];
      s_idx = indices.strides[k];
      s_src = src.strides[k];
    }
    const Shape oshape(src.shape.begin(), src.shape.begin() + k);
    const Strides ov(vstr.begin(), vstr.begin() + k);
    const Strides oi(indices.strides.begin(), indices.strides.begin() + k);
    const Strides os(src.strides.begin(), src.strides.begin() + k);
    MergedDims<3> md = merge_dims<3>(oshape, {&ov, &oi, &os});
    outer = std::move(md.shape);
    o_val = std::move(md.strides[0]);
    o_idx = std::move(md.strides[1]);
    o_src = std::move(md.strides[2]);
    for (int64_t s : outer) rows *= s;
  }

  struct Offsets {
    int64_t val = 0, idx = 0, src = 0;
  };
  Offsets offsets(int64_t r) const {
    Offsets o;
    for (size_t d = outer.size(); d-- > 0;) {
      const int64_t i = r % outer[d];
      r /= outer[d];
      o.val += i * o_val[d];
      o.idx += i * o_idx[d];
      o.src += i * o_src[d];
    }
    return o;
  }
};

template <class T, class P>
void sort_rows(const RowGeometry& g, const StridedArray& values, const StridedArray& indices,
               const StridedArray& src, const SortParams& p) {
  using Entry = typename P::Entry;
  const T* s = static_cast<const T*>(src.data);
  T* v = static_cast<T*>(values.data);
  int64_t* ix = static_cast<int64_t*>(indices.data);
  const int64_t n = g.n, m = g.m;
  // Complementing every key reverses the value order and keeps the index order of ties.
  const key_type<T> flip = p.descending ? ~key_type<T>(0) : 0;
  constexpr bool can_nan = std::is_floating_point_v<compute_t<T>>;
  const bool nan_wins = can_nan && p.select && p.nan_wins;

  parallel_for(0, g.rows, std::max<int64_t>(1, kSortGrain / std::max<int64_t>(n, 1)),
               [&](int64_t b, int64_t e) {
                 // Not zero-filled: every entry is written before it is read. A row of a
                 // broadcast input can be longer than memory: an OutOfMemory error then.
                 const auto buf = scratch_array<Entry>(n, "sort");
                 const auto tmp = scratch_array<Entry>(m == n && n >= kRadixMin ? n : 0, "sort");
                 for (int64_t r = b; r < e; ++r) {
                   const RowGeometry::Offsets off = g.offsets(r);
                   const T* row = s + off.src;
                   int64_t first_nan = -1;
                   for (int64_t i = 0; i < n; ++i) {
                     const auto x = static_cast<compute_t<T>>(row[i * g.s_src]);
                     if constexpr (can_nan) {
                       if (nan_wins && first_nan < 0 && x != x) first_nan = i;
                     }
                     buf[static_cast<size_t>(i)] = P::make(ascending_key<T>(x) ^ flip, i);
                   }
                   Entry* const first = buf.get();
                   Entry* const last = first + n;
                   const auto write = [&](int64_t j, int64_t at) {
                     ix[off.idx + j * g.s_idx] = at;
                     if (v) v[off.val + j * g.s_val] = row[at * g.s_src];
                   };
                   if (p.select) {
                     if (first_nan >= 0) {
                       write(0, first_nan);
                       continue;
                     }
                     std::nth_element(first, first + p.k, last);
                     write(0, P::index(buf[static_cast<size_t>(p.k)]));
                     continue;
                   }
                   if (m == n && n >= kRadixMin) {
                     radix_sort<P, sizeof(key_type<T>)>(first, tmp.get(), n);
                   } else {
                     if (m < n) std::nth_element(first, first + m, last);
                     std::sort(first, first + m);
                   }
                   for (int64_t j = 0; j < m; ++j) write(j, P::index(buf[static_cast<size_t>(j)]));
                 }
               });
}

}  // namespace

void sort(const StridedArray& values, const StridedArray& indices, const StridedArray& src,
          const SortParams& params) {
  if (indices.numel() == 0) return;
  OX_ASSERT(indices.dtype == kI64 && (!values.data || values.dtype == src.dtype),
            "sort writes i64 indices and values of the source dtype");
  const RowGeometry g(values, indices, src);
  OX_ASSERT(g.m <= g.n && (!params.select || (g.m == 1 && params.k >= 0 && params.k < g.n)),
            "sort: output row of ", g.m, " for a row of ", g.n);
  dispatch_dtype(src.dtype, [&]<class T>() {
    // A 32-bit key packs with an index below 2^32 into one word.
    if (sizeof(key_type<T>) == 4 && g.n <= (int64_t(1) << 32)) {
      sort_rows<T, PackedKey>(g, values, indices, src, params);
    } else {
      sort_rows<T, Wide>(g, values, indices, src, params);
    }
  });
}

}  // namespace ox::cpu
