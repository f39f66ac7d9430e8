// Fused row kernels: softmax / log_softmax and layer / RMS normalization, forward and
// backward. One task per block of rows; every row is reduced serially in a fixed order, so
// results do not depend on the thread count.

#include <cmath>
#include <vector>

#include "backend/cpu/elementwise.h"
#include "backend/cpu/kernels.h"

namespace ox::cpu {

namespace {

// Rows per task: about 32K elements.
int64_t row_grain(int64_t n) { return std::max<int64_t>(1, 32768 / std::max<int64_t>(n, 1)); }

int64_t rows_of(const StridedArray& a) {
  const int64_t n = a.shape.empty() ? 1 : a.shape.back();
  return n == 0 ? 0 : a.numel() / n;
}

// A row of T as compute-type values: 16-bit rows are widened into `scratch`.
template <class T>
const compute_t<T>* widen(const T* row, int64_t n, std::vector<float>& scratch) {
  if constexpr (std::is_same_v<T, compute_t<T>>) {
    return row;
  } else {
    scratch.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) scratch[i] = static_cast<float>(row[i]);
    return scratch.data();
  }
}

template <class T>
void softmax_rows(const StridedArray& dst, const StridedArray& src, bool log) {
  using C = compute_t<T>;
  const int64_t n = src.shape.back(), rows = rows_of(src);
  const T* in = static_cast<const T*>(src.data);
  T* out = static_cast<T*>(dst.data);
  parallel_for(0, rows, row_grain(n), [&](int64_t r0, int64_t r1) {
    std::vector<float> scratch;
    for (int64_t r = r0; r < r1; ++r) {
      const C* x = widen(in + r * n, n, scratch);
      T* y = out + r * n;
      C max = -INFINITY;
      for (int64_t i = 0; i < n; ++i) max = (x[i] > max || x[i] != x[i]) ? x[i] : max;
      C sum = 0;
      if (log) {
        for (int64_t i = 0; i < n; ++i) sum += std::exp(x[i] - max);
        // (x - max) - log(sum), not x - (max + log(sum)): a huge max would absorb the log.
        const C log_sum = std::log(sum);
        for (int64_t i = 0; i < n; ++i) y[i] = convert<T>((x[i] - max) - log_sum);
      } else {
        // exp(x - max) is stored first and scaled after, so exp runs once per element.
        std::vector<C> e(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) sum += (e[i] = std::exp(x[i] - max));
        const C inv = C(1) / sum;
        for (int64_t i = 0; i < n; ++i) y[i] = convert<T>(e[i] * inv);
      }
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
  const T* w = static_cast<const T*>(weight.data);
  const T* b = static_cast<const T*>(bias.data);
  T* out = static_cast<T*>(dst.data);
  S* mean_out = static_cast<S*>(mean.data);
  S* rstd_out = static_cast<S*>(rstd.data);
  parallel_for(0, rows, row_grain(n), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* x = in + r * n;
      double mu = 0, var = 0;
      if (!rms) {
        for (int64_t i = 0; i < n; ++i) mu += static_cast<double>(C(x[i]));
        mu /= double(n);
      }
      for (int64_t i = 0; i < n; ++i) {
        const double d = static_cast<double>(C(x[i])) - mu;
        var += d * d;
      }
      var /= double(n);
      const double inv = 1.0 / std::sqrt(var + eps);
      if (mean_out && !rms) mean_out[r] = S(mu);
      rstd_out[r] = S(inv);
      T* y = out + r * n;
      for (int64_t i = 0; i < n; ++i) {
        C v = C((static_cast<double>(C(x[i])) - mu) * inv);
        if (w) v *= C(w[i]);
        if (b) v += C(b[i]);
        y[i] = convert<T>(v);
      }
    }
  });
}

// Blocks of rows whose weight/bias gradient partials are summed in block order.
constexpr int64_t kRowBlock = 64;

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
  const int64_t blocks = (rows + kRowBlock - 1) / kRowBlock;
  std::vector<double> partial_w(want_w ? blocks * n : 0), partial_b(want_b ? blocks * n : 0);
  parallel_for(
      0, blocks, std::max<int64_t>(1, row_grain(n) / kRowBlock), [&](int64_t b0, int64_t b1) {
        for (int64_t blk = b0; blk < b1; ++blk) {
          for (int64_t r = blk * kRowBlock; r < std::min(rows, (blk + 1) * kRowBlock); ++r) {
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
