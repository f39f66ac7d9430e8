// Fused row kernels: softmax / log_softmax and layer / RMS normalization, forward and
// backward. One task per block of rows; every row is reduced serially in a fixed order, so
// results do not depend on the thread count.

#include <cmath>
#include <vector>

#include "backend/cpu/elementwise.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/simd/simd.h"

namespace ox::cpu {

namespace {

// Rows per task: about 32K elements.
int64_t row_grain(int64_t n) { return std::max<int64_t>(1, 32768 / std::max<int64_t>(n, 1)); }

int64_t rows_of(const StridedArray& a) {
  const int64_t n = a.shape.empty() ? 1 : a.shape.back();
  return n == 0 ? 0 : a.numel() / n;
}

// A row of T in the compute type: 16-bit rows are widened into scratch (and narrowed back after).
template <class T>
struct ComputeRow {
  using C = compute_t<T>;
  static constexpr bool kDirect = std::is_same_v<T, C>;
  std::vector<C> scratch;
  explicit ComputeRow(int64_t n) : scratch(kDirect ? 0 : size_t(n)) {}
  const C* in(const T* row, int64_t n) {
    if constexpr (kDirect) {
      return row;
    } else {
      simd::widen(row, scratch.data(), n);
      return scratch.data();
    }
  }
  C* out(T* row) {
    if constexpr (kDirect) {
      return row;
    } else {
      return scratch.data();
    }
  }
  void store(T* row, int64_t n) {
    if constexpr (!kDirect) simd::narrow(scratch.data(), row, n);
  }
};

template <class T>
void softmax_rows(const StridedArray& dst, const StridedArray& src, bool log) {
  const int64_t n = src.shape.back(), rows = rows_of(src);
  const T* in = static_cast<const T*>(src.data);
  T* out = static_cast<T*>(dst.data);
  parallel_for(0, rows, row_grain(n), [&](int64_t r0, int64_t r1) {
    ComputeRow<T> row(n);
    for (int64_t r = r0; r < r1; ++r) {
      simd::softmax_row(row.in(in + r * n, n), row.out(out + r * n), n, log);
      row.store(out + r * n, n);
    }
  });
}

template <class T>
void softmax_backward_rows(const StridedArray& gi, const StridedArray& go, const StridedArray& yv,
                           bool log) {
  using C = compute_t<T>;
  const int64_t n = go.shape.back(), rows = rows_of(go);
  const T* g = static_cast<const T*>(go.data);
  const T* y = static_cast<const T*>(yv.data);
  T* out = static_cast<T*>(gi.data);
  parallel_for(0, rows, row_grain(n), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T *gr = g + r * n, *yr = y + r * n;
      T* o = out + r * n;
      double dot = 0;
      if (log) {
        for (int64_t i = 0; i < n; ++i) dot += C(gr[i]);
        for (int64_t i = 0; i < n; ++i) o[i] = convert<T>(C(gr[i]) - std::exp(C(yr[i])) * C(dot));
      } else {
        for (int64_t i = 0; i < n; ++i)
          dot += static_cast<double>(C(gr[i])) * static_cast<double>(C(yr[i]));
        for (int64_t i = 0; i < n; ++i) o[i] = convert<T>(C(yr[i]) * (C(gr[i]) - C(dot)));
      }
    }
  });
}

// The statistics are accumulated in f64: a row with mean 1e6 and spread 1e-3 keeps its
// variance, which f32 sums would round away.
template <class T>
void layer_norm_rows(const StridedArray& dst, const StridedArray& mean, const StridedArray& rstd,
                     const StridedArray& src, const StridedArray& weight, const StridedArray& bias,
                     double eps, bool rms) {
  using C = compute_t<T>;
  using S = std::conditional_t<std::is_same_v<T, double>, double, float>;  // stats dtype
  const int64_t n = src.shape.back(), rows = rows_of(src);
  const T* in = static_cast<const T*>(src.data);
  T* out = static_cast<T*>(dst.data);
  S* mean_out = static_cast<S*>(mean.data);
  S* rstd_out = static_cast<S*>(rstd.data);
  // Weight and bias in the compute type, widened once.
  ComputeRow<T> w_row(weight.data ? n : 0), b_row(bias.data ? n : 0);
  const C* w = weight.data ? w_row.in(static_cast<const T*>(weight.data), n) : nullptr;
  const C* b = bias.data ? b_row.in(static_cast<const T*>(bias.data), n) : nullptr;
  parallel_for(0, rows, row_grain(n), [&](int64_t r0, int64_t r1) {
    ComputeRow<T> row(n);
    for (int64_t r = r0; r < r1; ++r) {
      const C* x = row.in(in + r * n, n);
      const simd::Moments m = simd::row_moments(x, n, rms);
      const double inv = 1.0 / std::sqrt(m.var + eps);
      if (mean_out && !rms) mean_out[r] = S(m.mean);
      rstd_out[r] = S(inv);
      simd::normalize_row(x, row.out(out + r * n), n, m.mean, inv, w, b);
      row.store(out + r * n, n);
    }
  });
}

// Blocks of rows whose weight/bias gradient partials are summed in block order.
constexpr int64_t kNormRowBlock = 64;

template <class T>
void layer_norm_backward_rows(const StridedArray& gi, const StridedArray& gw,
                              const StridedArray& gb, const StridedArray& go,
                              const StridedArray& src, const StridedArray& mean,
                              const StridedArray& rstd, const StridedArray& weight, bool rms) {
  using C = compute_t<T>;
  using S = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t n = src.shape.back(), rows = rows_of(src);
  const T* x = static_cast<const T*>(src.data);
  const T* g = static_cast<const T*>(go.data);
  const T* w = static_cast<const T*>(weight.data);
  const S* mu = static_cast<const S*>(mean.data);
  const S* rs = static_cast<const S*>(rstd.data);
  T* dx = static_cast<T*>(gi.data);
  const bool want_w = gw.data != nullptr, want_b = gb.data != nullptr;
  const int64_t blocks = (rows + kNormRowBlock - 1) / kNormRowBlock;
  std::vector<double> partial_w(want_w ? blocks * n : 0), partial_b(want_b ? blocks * n : 0);
  parallel_for(
      0, blocks, std::max<int64_t>(1, row_grain(n) / kNormRowBlock), [&](int64_t b0, int64_t b1) {
        for (int64_t blk = b0; blk < b1; ++blk) {
          for (int64_t r = blk * kNormRowBlock; r < std::min(rows, (blk + 1) * kNormRowBlock);
               ++r) {
            const T *xr = x + r * n, *gr = g + r * n;
            const double m = rms || !mu ? 0.0 : double(mu[r]), inv = double(rs[r]);
            // xhat = (x - m) * inv; gx = g * w; dx = inv * (gx - mean(gx) - xhat * mean(gx*xhat))
            double sum_g = 0, sum_gx = 0;
            for (int64_t i = 0; i < n; ++i) {
              const double xhat = (static_cast<double>(C(xr[i])) - m) * inv;
              const double gxi =
                  static_cast<double>(C(gr[i])) * (w ? static_cast<double>(C(w[i])) : 1.0);
              sum_g += gxi;
              sum_gx += gxi * xhat;
              if (want_w) partial_w[blk * n + i] += static_cast<double>(C(gr[i])) * xhat;
              if (want_b) partial_b[blk * n + i] += static_cast<double>(C(gr[i]));
            }
            if (!gi.data) continue;
            const double mean_g = rms ? 0.0 : sum_g / double(n), mean_gx = sum_gx / double(n);
            T* dr = dx + r * n;
            for (int64_t i = 0; i < n; ++i) {
              const double xhat = (static_cast<double>(C(xr[i])) - m) * inv;
              const double gxi =
                  static_cast<double>(C(gr[i])) * (w ? static_cast<double>(C(w[i])) : 1.0);
              dr[i] = convert<T>(inv * (gxi - mean_g - xhat * mean_gx));
            }
          }
        }
      });
  const auto finish = [&](const std::vector<double>& partial, const StridedArray& out) {
    T* o = static_cast<T*>(out.data);
    for (int64_t i = 0; i < n; ++i) {
      double total = 0;
      for (int64_t blk = 0; blk < blocks; ++blk) total += partial[blk * n + i];
      o[i] = convert<T>(total);
    }
  };
  if (want_w) finish(partial_w, gw);
  if (want_b) finish(partial_b, gb);
}

}  // namespace

void softmax(const StridedArray& dst, const StridedArray& src, bool log) {
  dispatch_floating(src.dtype, [&]<class T>() { softmax_rows<T>(dst, src, log); });
}

void softmax_backward(const StridedArray& gi, const StridedArray& go, const StridedArray& y,
                      bool log) {
  dispatch_floating(go.dtype, [&]<class T>() { softmax_backward_rows<T>(gi, go, y, log); });
}

void layer_norm(const StridedArray& dst, const StridedArray& mean, const StridedArray& rstd,
                const StridedArray& src, const StridedArray& weight, const StridedArray& bias,
                double eps, bool rms) {
  dispatch_floating(src.dtype, [&]<class T>() {
    layer_norm_rows<T>(dst, mean, rstd, src, weight, bias, eps, rms);
  });
}

void layer_norm_backward(const StridedArray& gi, const StridedArray& gw, const StridedArray& gb,
                         const StridedArray& go, const StridedArray& src, const StridedArray& mean,
                         const StridedArray& rstd, const StridedArray& weight, bool rms) {
  dispatch_floating(src.dtype, [&]<class T>() {
    layer_norm_backward_rows<T>(gi, gw, gb, go, src, mean, rstd, weight, rms);
  });
}

}  // namespace ox::cpu
