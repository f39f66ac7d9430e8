// Strided copy with dtype conversion, fill, and the evenly spaced sequences.

#include <algorithm>
#include <cstring>
#include <optional>
#include <type_traits>
#include <utility>

#include "backend/cpu/convert.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/loops.h"
#include "backend/cpu/simd/simd.h"
#include "core/dispatch.h"

namespace ox::cpu {

namespace {

template <class To, class From>
void convert_run(char* dst, int64_t dst_step, const char* src, int64_t src_step, int64_t n) {
  if (dst_step == sizeof(To) && src_step == sizeof(From)) {
    if constexpr (std::is_same_v<To, From>) {
      std::memcpy(dst, src, n * sizeof(To));
    } else if constexpr (std::is_same_v<To, float> && is_half_v<From>) {
      simd::widen(reinterpret_cast<const From*>(src), reinterpret_cast<float*>(dst), n);
    } else if constexpr (is_half_v<To> && std::is_same_v<From, float>) {
      simd::narrow(reinterpret_cast<const float*>(src), reinterpret_cast<To*>(dst), n);
    } else {
      To* d = reinterpret_cast<To*>(dst);
      const From* s = reinterpret_cast<const From*>(src);
      for (int64_t i = 0; i < n; ++i) d[i] = convert<To>(s[i]);
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    *reinterpret_cast<To*>(dst + i * dst_step) =
        convert<To>(*reinterpret_cast<const From*>(src + i * src_step));
}

// ---- Transposing copies --------------------------------------------------------------------
// When dst is unit-stride along one merged dim (q) and src along another (p), the run-wise walk
// reads one element per cache line and per page. Instead the (p, q) plane is cut into
// kSuperTile-square items (whose pages stay in the TLB) and those into blocks that read whole
// src lines and write whole dst lines. Other dims are batch dims. Same-dtype copies move bits:
// V x V blocks of unsigned integers transposed in 16-byte vectors (V = 16 / element size).

inline constexpr int64_t kSuperTile = 256;

template <class T>
using uint_of_size =
    std::conditional_t<sizeof(T) == 1, uint8_t,
                       std::conditional_t<sizeof(T) == 2, uint16_t,
                                          std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;

#if defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
#define OX_COPY_VECTOR_TRANSPOSE 1
#endif
#endif

#ifdef OX_COPY_VECTOR_TRANSPOSE
inline constexpr bool kVectorTranspose = true;
template <class U>
struct Vec16 {
  typedef U type __attribute__((vector_size(16)));
};
template <class U>
inline constexpr size_t kLanes = 16 / sizeof(U);

// Interleaves of the low / high halves of a and b: {a0, b0, a1, b1, ...} / {aV/2, bV/2, ...}.
template <class U, size_t... I>
inline typename Vec16<U>::type zip_lo(typename Vec16<U>::type a, typename Vec16<U>::type b,
                                      std::index_sequence<I...>) {
  return __builtin_shufflevector(a, b, (I % 2 ? kLanes<U> + I / 2 : I / 2)...);
}
template <class U, size_t... I>
inline typename Vec16<U>::type zip_hi(typename Vec16<U>::type a, typename Vec16<U>::type b,
                                      std::index_sequence<I...>) {
  constexpr size_t h = kLanes<U> / 2;
  return __builtin_shufflevector(a, b, (I % 2 ? kLanes<U> + h + I / 2 : h + I / 2)...);
}

// d(r, c) = s(r, c) for r, c < V, with d(r, c) at d[r * drs + c] and s(r, c) at s[r + c * scs]:
// log2(V) rounds of the perfect shuffle out[2i], out[2i+1] = zip_lo/hi(in[i], in[i + V/2]).
template <class U>
inline void transpose_vv(U* d, int64_t drs, const U* s, int64_t scs) {
  using V = typename Vec16<U>::type;
  constexpr size_t n = kLanes<U>;
  V x[n], y[n];
  for (size_t c = 0; c < n; ++c) std::memcpy(&x[c], s + int64_t(c) * scs, 16);
  for (size_t round = 1; round < n; round *= 2) {
    for (size_t i = 0; i < n / 2; ++i) {
      y[2 * i] = zip_lo<U>(x[i], x[i + n / 2], std::make_index_sequence<n>{});
      y[2 * i + 1] = zip_hi<U>(x[i], x[i + n / 2], std::make_index_sequence<n>{});
    }
    std::memcpy(x, y, sizeof(x));
  }
  for (size_t r = 0; r < n; ++r) std::memcpy(d + int64_t(r) * drs, &x[r], 16);
}
#else
inline constexpr bool kVectorTranspose = false;
template <class U>
inline constexpr size_t kLanes = 16 / sizeof(U);
template <class U>
inline void transpose_vv(U*, int64_t, const U*, int64_t) {}
#endif

// The elementwise rest: d(r, c) = convert(s(r, c)) over [r0, r1) x [c0, c1), in line-sized
// blocks so that the strided side stays within a few cache lines.
template <class To, class From>
void transpose_scalar(To* __restrict d, int64_t drs, const From* __restrict s, int64_t scs,
                      int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  constexpr int64_t B = 16;
  for (int64_t rb = r0; rb < r1; rb += B)
    for (int64_t cb = c0; cb < c1; cb += B)
      for (int64_t r = rb; r < std::min(rb + B, r1); ++r)
        for (int64_t c = cb; c < std::min(cb + B, c1); ++c)
          d[r * drs + c] = convert<To>(s[r + c * scs]);
}

// One item: rows x cols elements.
template <class To, class From>
void transpose_tile(To* __restrict d, int64_t drs, const From* __restrict s, int64_t scs,
                    int64_t rows, int64_t cols) {
  if constexpr (kVectorTranspose && std::is_same_v<To, From> &&
                std::is_same_v<To, uint_of_size<To>>) {
    constexpr int64_t V = int64_t(kLanes<To>), L = std::max<int64_t>(V, 64 / sizeof(To));
    const int64_t rv = rows / V * V, cv = cols / V * V;
    for (int64_t rb = 0; rb < rv; rb += L)
      for (int64_t cb = 0; cb < cv; cb += L)
        for (int64_t r = rb; r < std::min(rb + L, rv); r += V)
          for (int64_t c = cb; c < std::min(cb + L, cv); c += V)
            transpose_vv<To>(d + r * drs + c, drs, s + r + c * scs, scs);
    transpose_scalar<To, From>(d, drs, s, scs, 0, rv, cv, cols);
    transpose_scalar<To, From>(d, drs, s, scs, rv, rows, 0, cols);
  } else {
    transpose_scalar<To, From>(d, drs, s, scs, 0, rows, 0, cols);
  }
}

struct TransposePlan {
  size_t p = 0, q = 0;  // src's and dst's unit-stride merged dims
  MergedDims<2> m;
};

std::optional<TransposePlan> transpose_plan(const StridedArray& dst, const StridedArray& src) {
  bool dst_unit = false, src_unit = false;  // a cheap look before merging, for ordinary copies
  for (size_t d = 0; d < dst.shape.size(); ++d) {
    if (dst.shape[d] <= 1) continue;
    dst_unit |= dst.strides[d] == 1 && src.strides[d] != 1;
    src_unit |= src.strides[d] == 1 && dst.strides[d] != 1;
  }
  if (!dst_unit || !src_unit) return std::nullopt;
  TransposePlan plan;
  plan.m = merge_dims<2>(dst.shape, {&dst.strides, &src.strides});
  const auto& ds = plan.m.strides[0];
  const auto& ss = plan.m.strides[1];
  const size_t nd = plan.m.shape.size();
  size_t q = nd;
  for (size_t d = 0; d < nd && q == nd; ++d)
    if (ds[d] == 1) q = d;
  if (q == nd || ss[q] == 1) return std::nullopt;  // no unit dst dim, or the runs are contiguous
  for (size_t d = 0; d < nd; ++d)
    if (d != q && ss[d] == 1) {
      plan.p = d, plan.q = q;
      return plan;
    }
  return std::nullopt;
}

template <class To, class From>
void transpose_copy(const TransposePlan& plan, void* dst, const void* src) {
  const MergedDims<2>& m = plan.m;
  const int64_t R = m.shape[plan.p], C = m.shape[plan.q];
  const int64_t drs = m.strides[0][plan.p], scs = m.strides[1][plan.q];
  Dims bshape, bdst, bsrc;  // batch dims, outermost first
  for (size_t d = 0; d < m.shape.size(); ++d)
    if (d != plan.p && d != plan.q) {
      bshape.push_back(m.shape[d]);
      bdst.push_back(m.strides[0][d]);
      bsrc.push_back(m.strides[1][d]);
    }
  int64_t batches = 1;
  for (int64_t s : bshape) batches *= s;
  const int64_t T = kSuperTile, tr = (R + T - 1) / T, tc = (C + T - 1) / T, per = tr * tc;
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / (std::min(R, T) * std::min(C, T)));
  To* d = static_cast<To*>(dst);
  const From* s = static_cast<const From*>(src);
  parallel_for(0, batches * per, grain, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      int64_t rest = item / per, od = 0, os = 0;
      for (size_t k = bshape.size(); k-- > 0;) {
        const int64_t i = rest % bshape[k];
        rest /= bshape[k];
        od += i * bdst[k], os += i * bsrc[k];
      }
      const int64_t t = item % per, r0 = t / tc * T, c0 = t % tc * T;
      transpose_tile<To, From>(d + od + r0 * drs + c0, drs, s + os + r0 + c0 * scs, scs,
                               std::min(T, R - r0), std::min(T, C - c0));
    }
  });
}

}  // namespace

void copy(const StridedArray& dst, const StridedArray& src) {
  if (dst.numel() == 0) return;
  if (const auto plan = transpose_plan(dst, src)) {
    if (dst.dtype == src.dtype) {
      dispatch_dtype(dst.dtype, [&]<class T>() {
        using U = uint_of_size<T>;
        transpose_copy<U, U>(*plan, dst.data, src.data);
      });
    } else {
      dispatch_dtype(dst.dtype, [&]<class To>() {
        dispatch_dtype(src.dtype,
                       [&]<class From>() { transpose_copy<To, From>(*plan, dst.data, src.data); });
      });
    }
    return;
  }
  dispatch_dtype(dst.dtype, [&]<class To>() {
    dispatch_dtype(src.dtype, [&]<class From>() {
      parallel_runs<2>({&dst, &src},
                       [](const std::array<char*, 2>& p, const std::array<int64_t, 2>& step,
                          int64_t n) { convert_run<To, From>(p[0], step[0], p[1], step[1], n); });
    });
  });
}

void fill(const StridedArray& dst, const Scalar& value) {
  dispatch_dtype(dst.dtype, [&]<class T>() {
    const T v = scalar_as<T>(value);
    parallel_runs<1>(
        {&dst}, [v](const std::array<char*, 1>& p, const std::array<int64_t, 1>& step, int64_t n) {
          if (step[0] == sizeof(T)) {
            T* d = reinterpret_cast<T*>(p[0]);
            std::fill(d, d + n, v);
          } else {
            for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(p[0] + i * step[0]) = v;
          }
        });
  });
}

void arange(const StridedArray& dst, const Scalar& start, const Scalar& step) {
  dispatch_dtype(dst.dtype, [&]<class T>() {
    T* d = static_cast<T*>(dst.data);
    parallel_for(0, dst.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      if constexpr (std::is_integral_v<T>) {
        // Modulo 2^64: i * step may overflow int64 (arange(INT64_MIN, INT64_MAX, INT64_MAX)
        // ends at 2 * INT64_MAX + INT64_MIN) although every element fits.
        const uint64_t s0 = uint64_t(start.to_int()), s = uint64_t(step.to_int());
        for (int64_t i = b; i < e; ++i) d[i] = convert<T>(int64_t(s0 + uint64_t(i) * s));
      } else {
        const double s0 = start.to_double(), s = step.to_double();
        for (int64_t i = b; i < e; ++i) d[i] = convert<T>(s0 + double(i) * s);
      }
    });
  });
}

void linspace(const StridedArray& dst, double start, double end) {
  const int64_t n = dst.numel();
  const double step = (end - start) / double(n - 1);
  dispatch_dtype(dst.dtype, [&]<class T>() {
    T* d = static_cast<T*>(dst.data);
    // Each half counts from its own end, so both endpoints come out exact (as PyTorch).
    const int64_t half = n / 2;
    parallel_for(0, n, kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        d[i] = convert<T>(i < half ? start + step * double(i) : end - step * double(n - 1 - i));
    });
  });
}

}  // namespace ox::cpu
