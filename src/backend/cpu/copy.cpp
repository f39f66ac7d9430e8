// Strided copy with dtype conversion, fill, and the evenly spaced sequences.

#include <cstring>

#include "backend/cpu/convert.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/loops.h"
#include "core/dispatch.h"

namespace ox::cpu {

namespace {

template <class To, class From>
void convert_run(char* dst, int64_t dst_step, const char* src, int64_t src_step, int64_t n) {
  if (dst_step == sizeof(To) && src_step == sizeof(From)) {
    if constexpr (std::is_same_v<To, From>) {
      std::memcpy(dst, src, n * sizeof(To));
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

template <class T>
T scalar_as(const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::Float:
      return convert<T>(s.to_double());
    case Scalar::Kind::Int:
      return convert<T>(s.to_int());
    case Scalar::Kind::Bool:
      return convert<T>(s.to_int() != 0);
  }
  return T{};
}

}  // namespace

void copy(const StridedArray& dst, const StridedArray& src) {
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
