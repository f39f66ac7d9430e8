// Vector row kernels for reductions and normalization, compiled once per Highway target.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/simd/rows.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format off: foreach_target.h must come first
#include "hwy/highway.h"
// clang-format on

#include <algorithm>
#include <type_traits>

#include "backend/cpu/simd/simd.h"

HWY_BEFORE_NAMESPACE();
namespace ox::cpu::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// kSumLanes accumulators as kSumLanes / lanes vectors: vector k, lane j is accumulator
// k * lanes + j, which is what the scalar loop's lane i % 16 is.
template <class T>
void AddLanes(const T* x, int64_t n, T* acc) {
  const hn::CappedTag<T, kSumLanes> d;
  constexpr size_t kVecs = kSumLanes / hn::MaxLanes(d);
  static_assert(kVecs * hn::MaxLanes(d) == kSumLanes);
  const size_t lanes = hn::Lanes(d);
  HWY_ASSUME(lanes == hn::MaxLanes(d));  // x86 vectors have a fixed width
  hn::Vec<decltype(d)> a[kVecs];
  for (size_t k = 0; k < kVecs; ++k) a[k] = hn::LoadU(d, acc + k * lanes);
  for (int64_t i = 0; i < n; i += kSumLanes)
    for (size_t k = 0; k < kVecs; ++k) a[k] = hn::Add(a[k], hn::LoadU(d, x + i + k * lanes));
  for (size_t k = 0; k < kVecs; ++k) hn::StoreU(a[k], d, acc + k * lanes);
}
void AddLanesF32(const float* x, int64_t n, float* acc) { AddLanes(x, n, acc); }
void AddLanesF64(const double* x, int64_t n, double* acc) { AddLanes(x, n, acc); }

// The sums of kGroup consecutive chunks at x into partial[0..kGroup), each as AddLanes from zero
// and then the reduction engine's lane tree (reduce_engine.h), bitwise.
template <int kGroup, class T>
void SumChunkGroup(const T* x, int64_t chunk, T* partial) {
  const hn::CappedTag<T, kSumLanes> d;
  constexpr size_t kVecs = kSumLanes / hn::MaxLanes(d);
  const size_t lanes = hn::Lanes(d);
  HWY_ASSUME(lanes == hn::MaxLanes(d));
  hn::Vec<decltype(d)> a[kGroup][kVecs];
  for (int g = 0; g < kGroup; ++g)
    for (size_t k = 0; k < kVecs; ++k) a[g][k] = hn::Zero(d);
  for (int64_t i = 0; i < chunk; i += kSumLanes)
    for (int g = 0; g < kGroup; ++g)
      for (size_t k = 0; k < kVecs; ++k)
        a[g][k] = hn::Add(a[g][k], hn::LoadU(d, x + g * chunk + i + k * lanes));
  for (int g = 0; g < kGroup; ++g) {
    HWY_ALIGN T acc[kSumLanes];
    for (size_t k = 0; k < kVecs; ++k) hn::Store(a[g][k], d, acc + k * lanes);
    for (int s = 1; s < kSumLanes; s *= 2)
      for (int l = 0; l < kSumLanes; l += 2 * s) acc[l] += acc[l + s];
    partial[g] = acc[0];
  }
}

// partial[c] = the sum of x's chunk c, as SumChunkGroup computes it. One call for a run of
// chunks, so that a memory-bound sum keeps streaming instead of returning to the engine every
// few KiB (20.8 -> 25 GB/s on one core), and chunks taken four at a time: a chunk's kVecs
// dependency chains alone leave a sum from cache bound by the add latency, and four streams
// keep more of DRAM's bandwidth busy than two (36-40 -> 39-46 GB/s on two cores).
template <class T>
void SumChunks(const T* x, int64_t chunk, int64_t count, T* partial) {
  int64_t c = 0;
  for (; c + 4 <= count; c += 4) SumChunkGroup<4>(x + c * chunk, chunk, partial + c);
  for (; c + 2 <= count; c += 2) SumChunkGroup<2>(x + c * chunk, chunk, partial + c);
  if (c < count) SumChunkGroup<1>(x + c * chunk, chunk, partial + c);
}
void SumChunksF32(const float* x, int64_t chunk, int64_t count, float* partial) {
  SumChunks(x, chunk, count, partial);
}
void SumChunksF64(const double* x, int64_t chunk, int64_t count, double* partial) {
  SumChunks(x, chunk, count, partial);
}

// Calls block(offset, d64, dt, count) over [0, n) in vectors of f64 lanes; a last partial
// block has count < lanes and the callee reads and writes through padded copies.
template <class T, class Block>
void f64_blocks(int64_t n, Block&& block) {
  const hn::ScalableTag<double> d64;
  const hn::Rebind<T, decltype(d64)> dt;
  const int64_t lanes = int64_t(hn::Lanes(d64));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) block(i, d64, dt, lanes);
  if (i < n) block(i, d64, dt, n - i);
}

template <class D64, class DT, class T>
hn::Vec<D64> load_f64(D64 d64, DT dt, const T* p) {
  if constexpr (std::is_same_v<T, double>) {
    return hn::LoadU(d64, p);
  } else {
    return hn::PromoteTo(d64, hn::LoadU(dt, p));
  }
}

// Reads `count` elements of p as a full vector (zeros past count).
template <class D64, class DT, class T>
hn::Vec<D64> load_part(D64 d64, DT dt, const T* p, int64_t count) {
  if (count == int64_t(hn::Lanes(d64))) return load_f64(d64, dt, p);
  HWY_ALIGN T buf[hn::MaxLanes(d64)] = {};
  for (int64_t j = 0; j < count; ++j) buf[j] = p[j];
  return load_f64(d64, dt, buf);
}

template <class T>
Moments RowMoments(const T* x, int64_t n, bool rms) {
  const hn::ScalableTag<double> d64;
  double mean = 0;
  if (!rms) {
    auto sum = hn::Zero(d64);
    f64_blocks<T>(n, [&](int64_t i, auto d, auto dt, int64_t count) {
      sum = hn::Add(sum, load_part(d, dt, x + i, count));
    });
    mean = hn::GetLane(hn::SumOfLanes(d64, sum)) / double(n);
  }
  // Corrected two-pass: the centred sum fixes the mean's rounding (a row at 1e6 with spread
  // 1e-3 would otherwise carry it into every output), and is taken out of the variance.
  auto centred_sum = hn::Zero(d64), squares = hn::Zero(d64);
  const auto mean_v = hn::Set(d64, mean);
  f64_blocks<T>(n, [&](int64_t i, auto d, auto dt, int64_t count) {
    auto c = hn::Sub(load_part(d, dt, x + i, count), mean_v);
    // Padding lanes are 0 - mean: keep them out of the sums.
    if (count < int64_t(hn::Lanes(d))) c = hn::IfThenElseZero(hn::FirstN(d, count), c);
    centred_sum = hn::Add(centred_sum, c);
    squares = hn::Add(squares, hn::Mul(c, c));
  });
  const double shift = rms ? 0.0 : hn::GetLane(hn::SumOfLanes(d64, centred_sum));
  const double sum_squares = hn::GetLane(hn::SumOfLanes(d64, squares));
  return {mean + shift / double(n),
          std::max(0.0, sum_squares - shift * shift / double(n)) / double(n)};
}
Moments RowMomentsF32(const float* x, int64_t n, bool rms) { return RowMoments(x, n, rms); }
Moments RowMomentsF64(const double* x, int64_t n, bool rms) { return RowMoments(x, n, rms); }

template <class T>
void NormalizeRow(const T* x, T* y, int64_t n, double mean, double rstd, const T* w, const T* b) {
  const hn::ScalableTag<double> d64;
  const auto mean_v = hn::Set(d64, mean), rstd_v = hn::Set(d64, rstd);
  f64_blocks<T>(n, [&](int64_t i, auto d, auto dt, int64_t count) {
    const auto z = hn::Mul(hn::Sub(load_part(d, dt, x + i, count), mean_v), rstd_v);
    auto v = [&] {
      if constexpr (std::is_same_v<T, double>) {
        return z;
      } else {
        return hn::DemoteTo(dt, z);
      }
    }();
    // The affine part in T, as the scalar kernel: multiply, then add (not fused).
    const auto load_t = [&](const T* p) {
      HWY_ALIGN T buf[hn::MaxLanes(d64)] = {};
      if (count == int64_t(hn::Lanes(d))) return hn::LoadU(dt, p);
      for (int64_t j = 0; j < count; ++j) buf[j] = p[j];
      return hn::Load(dt, buf);
    };
    if (w) v = hn::Mul(v, load_t(w + i));
    if (b) v = hn::Add(v, load_t(b + i));
    if (count == int64_t(hn::Lanes(d))) {
      hn::StoreU(v, dt, y + i);
    } else {
      HWY_ALIGN T buf[hn::MaxLanes(d64)];
      hn::Store(v, dt, buf);
      for (int64_t j = 0; j < count; ++j) y[i + j] = buf[j];
    }
  });
}
void NormalizeRowF32(const float* x, float* y, int64_t n, double mean, double rstd, const float* w,
                     const float* b) {
  NormalizeRow(x, y, n, mean, rstd, w, b);
}
void NormalizeRowF64(const double* x, double* y, int64_t n, double mean, double rstd,
                     const double* w, const double* b) {
  NormalizeRow(x, y, n, mean, rstd, w, b);
}

}  // namespace HWY_NAMESPACE
}  // namespace ox::cpu::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ox::cpu::simd {

HWY_EXPORT(AddLanesF32);
HWY_EXPORT(AddLanesF64);
HWY_EXPORT(SumChunksF32);
HWY_EXPORT(SumChunksF64);
HWY_EXPORT(RowMomentsF32);
HWY_EXPORT(RowMomentsF64);
HWY_EXPORT(NormalizeRowF32);
HWY_EXPORT(NormalizeRowF64);

void add_lanes(const float* x, int64_t n, float* acc) {
  HWY_DYNAMIC_DISPATCH(AddLanesF32)(x, n, acc);
}
void add_lanes(const double* x, int64_t n, double* acc) {
  HWY_DYNAMIC_DISPATCH(AddLanesF64)(x, n, acc);
}
void sum_chunks(const float* x, int64_t chunk, int64_t count, float* partial) {
  HWY_DYNAMIC_DISPATCH(SumChunksF32)(x, chunk, count, partial);
}
void sum_chunks(const double* x, int64_t chunk, int64_t count, double* partial) {
  HWY_DYNAMIC_DISPATCH(SumChunksF64)(x, chunk, count, partial);
}
Moments row_moments(const float* x, int64_t n, bool rms) {
  return HWY_DYNAMIC_DISPATCH(RowMomentsF32)(x, n, rms);
}
Moments row_moments(const double* x, int64_t n, bool rms) {
  return HWY_DYNAMIC_DISPATCH(RowMomentsF64)(x, n, rms);
}
void normalize_row(const float* x, float* y, int64_t n, double mean, double rstd, const float* w,
                   const float* b) {
  HWY_DYNAMIC_DISPATCH(NormalizeRowF32)(x, y, n, mean, rstd, w, b);
}
void normalize_row(const double* x, double* y, int64_t n, double mean, double rstd, const double* w,
                   const double* b) {
  HWY_DYNAMIC_DISPATCH(NormalizeRowF64)(x, y, n, mean, rstd, w, b);
}

}  // namespace ox::cpu::simd
#endif
