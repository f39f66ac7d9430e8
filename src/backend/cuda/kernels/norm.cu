// Fused row kernels (Backend contracts in src/backend/backend.h; the CPU's in
// src/backend/cpu/softmax_norm.cpp and loss.cpp): rows of contiguous [rows, n] arrays, one block
// per row (blocks loop over rows beyond the grid), blockDim.x a power of two from 32 to 256 that
// the launcher picks from n alone. A row's sums are per-thread serial sums over its strided
// elements, then a fixed shared-memory tree: the same bits on every run. 16-bit rows compute in
// f32 (C), the statistics of layer norm and the losses in f64, as the CPU; every operation the
// CPU rounds separately is rounded separately here (rounding.cuh: no FMA contraction).
//   ox_norm_softmax_<dt>(dst, src, rows, n, is_log)
//   ox_norm_softmax_backward_<dt>(grad_in, grad_out, y, rows, n, is_log)
//   ox_norm_layer_norm_<dt>(dst, mean, rstd, src, weight, bias, rows, n, eps, rms)
//   ox_norm_layer_norm_backward_<dt>(grad_in, grad_out, src, mean, rstd, weight, rows, n, rms)
//   ox_norm_layer_norm_partials_<dt>(partial_w, partial_b, grad_out, src, mean, rstd, rows, n,
//                                    rms): f64 sums of blocks of kRowBlock rows, per column
//   ox_norm_column_sum_<dt>(out, partial, blocks, n): the partials summed in block order
//   ox_norm_cross_entropy_<dt>(loss, row_weight, logits, target, weight, rows, classes, ignore,
//                              smoothing, check_word, site)
//   ox_norm_cross_entropy_backward_<dt>(grad, grad_loss, logits, target, weight, weight_total,
//                                       rows, classes, ignore, smoothing)
//   ox_norm_weight_total_<dt>(out, weight, classes): the class weights' f64 sum, in class order
// (mean and rstd are f32 for 16-bit rows, else the row dtype; weight, bias, mean, weight_total:
// null when absent.)

#include <cstdint>
#include <type_traits>

#include "backend/cuda/kernels/check.cuh"
#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/rounding.cuh"

OXMERA_DEFINE_KERNEL_STAMP;

using namespace ox::cuda::kernels;

namespace {

constexpr int kMaxThreads = 256;
// Rows per partial sum of the weight and bias gradients: the CPU backend's blocks.
constexpr int64_t kRowBlock = 64;

// The compute type: f32 for f32 and the 16-bit floats, f64 for f64 (also the stats dtype).
template <class T>
using compute_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
__device__ inline compute_t<T> load(const T* p, int64_t i) {
  if constexpr (std::is_same_v<T, F16>) {
    return ox::detail::half_bits_to_float(p[i].bits);
  } else if constexpr (std::is_same_v<T, BF16>) {
    return ox::detail::bfloat16_bits_to_float(p[i].bits);
  } else {
    return p[i];
  }
}
// Stores v (f32 or f64) as T, as the CPU's convert<T>: 16-bit floats through f32.
template <class T, class V>
__device__ inline void store(T* p, int64_t i, V v) {
  p[i] = from_double<T>(static_cast<double>(v));
}

__device__ inline float exp_c(float x) { return expf(x); }
__device__ inline double exp_c(double x) { return exp(x); }
__device__ inline float log_c(float x) { return logf(x); }
__device__ inline double log_c(double x) { return log(x); }

template <class V>
__device__ inline V infinity_c() {
  return std::is_same_v<V, float> ? V(__int_as_float(0x7f800000))
                                  : V(__longlong_as_double(0x7ff0000000000000LL));
}
template <class V>
__device__ inline V quiet_nan_c() {
  return std::is_same_v<V, float> ? V(__int_as_float(0x7fc00000))
                                  : V(__longlong_as_double(0x7ff8000000000000LL));
}

struct Pair {
  double a, b;
};

// The block's values combined by `op` in a fixed tree over thread indices (blockDim.x a power of
// two, at most kMaxThreads); every thread gets the result. All threads of the block must call.
template <class V, class Op>
__device__ V block_reduce(V v, Op op) {
  __shared__ V shared[kMaxThreads];
  const unsigned tid = threadIdx.x;
  shared[tid] = v;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (tid < stride) shared[tid] = op(shared[tid], shared[tid + stride]);
    __syncthreads();
  }
  const V result = shared[0];
  __syncthreads();  // the next reduction of this type reuses `shared`
  return result;
}

struct AddOp {
  template <class V>
  __device__ V operator()(V a, V b) const {
    return rn::add(a, b);
  }
  __device__ Pair operator()(Pair x, Pair y) const {
    return {rn::add(x.a, y.a), rn::add(x.b, y.b)};
  }
};
// max where any NaN wins (which NaN is unspecified: the callers replace it).
struct NanMaxOp {
  template <class V>
  __device__ V operator()(V a, V b) const {
    return (b > a || b != b) ? b : a;
  }
};

// The log-sum-exp of a row in C, as the CPU's row_logsumexp: an infinite max is returned as
// it is (all -inf: -inf; any +inf without NaN: +inf), a NaN anywhere gives NaN.
template <class T>
__device__ compute_t<T> row_logsumexp(const T* x, int64_t n) {
  using C = compute_t<T>;
  C max = -infinity_c<C>();
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) max = NanMaxOp{}(max, load(x, i));
  max = block_reduce(max, NanMaxOp{});
  if (max == infinity_c<C>() || max == -infinity_c<C>()) return max;
  C sum = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    sum = rn::add(sum, exp_c(rn::sub(load(x, i), max)));
  sum = block_reduce(sum, AddOp{});
  return rn::add(max, log_c(sum));
}

template <class T>
__device__ void softmax_rows(T* dst, const T* src, int64_t rows, int64_t n, int32_t is_log) {
  using C = compute_t<T>;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* x = src + r * n;
    T* y = dst + r * n;
    C max = -infinity_c<C>();
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) max = NanMaxOp{}(max, load(x, i));
    max = block_reduce(max, NanMaxOp{});
    if (max != max) max = quiet_nan_c<C>();
    // With max = -inf (an all -inf row) x - max is NaN, and so is the row, as PyTorch gives.
    C sum = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
      sum = rn::add(sum, exp_c(rn::sub(load(x, i), max)));
    sum = block_reduce(sum, AddOp{});
    if (is_log) {
      // (x - max) - log(sum), not x - (max + log(sum)): a huge max would absorb the log.
      const C log_sum = log_c(sum);
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        store(y, i, rn::sub(rn::sub(load(x, i), max), log_sum));
    } else {
      const C inv = rn::div(C(1), sum);
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        store(y, i, rn::mul(exp_c(rn::sub(load(x, i), max)), inv));
    }
  }
}

template <class T>
__device__ void softmax_backward_rows(T* gi, const T* go, const T* yv, int64_t rows, int64_t n,
                                      int32_t is_log) {
  using C = compute_t<T>;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* g = go + r * n;
    const T* y = yv + r * n;
    T* o = gi + r * n;
    double dot = 0;
    if (is_log) {
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        dot = rn::add(dot, static_cast<double>(load(g, i)));
    } else {
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        dot =
            rn::add(dot, rn::mul(static_cast<double>(load(g, i)), static_cast<double>(load(y, i))));
    }
    const C d = C(block_reduce(dot, AddOp{}));
    if (is_log) {
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        store(o, i, rn::sub(load(g, i), rn::mul(exp_c(load(y, i)), d)));
    } else {
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        store(o, i, rn::mul(load(y, i), rn::sub(load(g, i), d)));
    }
  }
}

// The CPU's corrected two-pass moments (simd::row_moments) in f64, then its normalization:
// (x - mean) * rstd in f64, narrowed to C, then * weight and + bias in C (not fused).
template <class T>
__device__ void layer_norm_rows(T* dst, compute_t<T>* mean_out, compute_t<T>* rstd_out,
                                const T* src, const T* w, const T* b, int64_t rows, int64_t n,
                                double eps, int32_t rms) {
  using C = compute_t<T>;
  const double count = double(n);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* x = src + r * n;
    T* y = dst + r * n;
    double mean = 0;
    if (!rms) {
      double sum = 0;
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        sum = rn::add(sum, static_cast<double>(load(x, i)));
      mean = rn::div(block_reduce(sum, AddOp{}), count);
    }
    Pair part{0, 0};  // a: the centred sum, b: the sum of squares
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const double c = rn::sub(static_cast<double>(load(x, i)), mean);
      part.a = rn::add(part.a, c);
      part.b = rn::add(part.b, rn::mul(c, c));
    }
    part = block_reduce(part, AddOp{});
    const double shift = rms ? 0.0 : part.a;
    const double m = rn::add(mean, rn::div(shift, count));
    const double spread = rn::sub(part.b, rn::div(rn::mul(shift, shift), count));
    const double var = rn::div(0.0 < spread ? spread : 0.0, count);  // std::max(0.0, spread)
    const double inv = rn::div(1.0, rn::sqrt(rn::add(var, eps)));
    if (threadIdx.x == 0) {
      if (mean_out != nullptr && !rms) mean_out[r] = C(m);
      if (rstd_out != nullptr) rstd_out[r] = C(inv);
    }
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      C v = C(rn::mul(rn::sub(static_cast<double>(load(x, i)), m), inv));
      if (w != nullptr) v = rn::mul(v, load(w, i));
      if (b != nullptr) v = rn::add(v, load(b, i));
      store(y, i, v);
    }
  }
}

// x_hat and g * w of element i, in f64 as the CPU's layer_norm_backward_rows.
template <class T>
__device__ inline double x_hat(const T* x, int64_t i, double m, double inv) {
  return rn::mul(rn::sub(static_cast<double>(load(x, i)), m), inv);
}
template <class T>
__device__ inline double g_times_w(const T* g, const T* w, int64_t i) {
  return rn::mul(static_cast<double>(load(g, i)), w ? static_cast<double>(load(w, i)) : 1.0);
}

template <class T>
__device__ void layer_norm_backward_rows(T* gi, const T* go, const T* src, const compute_t<T>* mu,
                                         const compute_t<T>* rs, const T* w, int64_t rows,
                                         int64_t n, int32_t rms) {
  const double count = double(n);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* x = src + r * n;
    const T* g = go + r * n;
    T* dx = gi + r * n;
    const double m = rms || mu == nullptr ? 0.0 : static_cast<double>(mu[r]);
    const double inv = static_cast<double>(rs[r]);
    // dx = inv * (gx - mean(gx) - xhat * mean(gx * xhat)), gx = g * w
    Pair part{0, 0};  // a: sum of gx, b: sum of gx * xhat
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const double gx = g_times_w(g, w, i);
      part.a = rn::add(part.a, gx);
      part.b = rn::add(part.b, rn::mul(gx, x_hat(x, i, m, inv)));
    }
    part = block_reduce(part, AddOp{});
    const double mean_g = rms ? 0.0 : rn::div(part.a, count);
    const double mean_gx = rn::div(part.b, count);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const double gx = g_times_w(g, w, i);
      store(dx, i,
            rn::mul(inv, rn::sub(rn::sub(gx, mean_g), rn::mul(x_hat(x, i, m, inv), mean_gx))));
    }
  }
}

// One thread per (block of kRowBlock rows, column): the block's sums of g * x_hat (weight) and g
// (bias) in row order, as the CPU's partials. partial_w / partial_b: [blocks, n], null when not
// wanted.
template <class T>
__device__ void layer_norm_partials(double* partial_w, double* partial_b, const T* go, const T* src,
                                    const compute_t<T>* mu, const compute_t<T>* rs, int64_t rows,
                                    int64_t n, int32_t rms) {
  const int64_t blocks = (rows + kRowBlock - 1) / kRowBlock;
  grid_stride(blocks * n, [&](int64_t j) {
    const int64_t blk = j / n, i = j % n;
    const int64_t end = rows < (blk + 1) * kRowBlock ? rows : (blk + 1) * kRowBlock;
    double sum_w = 0, sum_b = 0;
    for (int64_t r = blk * kRowBlock; r < end; ++r) {
      const double m = rms || mu == nullptr ? 0.0 : static_cast<double>(mu[r]);
      const double inv = static_cast<double>(rs[r]);
      const double g = static_cast<double>(load(go, r * n + i));
      if (partial_w != nullptr) sum_w = rn::add(sum_w, rn::mul(g, x_hat(src, r * n + i, m, inv)));
      if (partial_b != nullptr) sum_b = rn::add(sum_b, g);
    }
    if (partial_w != nullptr) partial_w[j] = sum_w;
    if (partial_b != nullptr) partial_b[j] = sum_b;
  });
}

template <class T>
__device__ void column_sum(T* out, const double* partial, int64_t blocks, int64_t n) {
  grid_stride(n, [&](int64_t i) {
    double total = 0;
    for (int64_t blk = 0; blk < blocks; ++blk) total = rn::add(total, partial[blk * n + i]);
    store(out, i, total);
  });
}

template <class T>
__device__ void cross_entropy_rows(T* loss, T* row_weight, const T* logits, const int64_t* target,
                                   const T* w, int64_t rows, int64_t classes, int64_t ignore,
                                   double smoothing, CheckWord* word, int32_t site) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t t = target[r];  // the same in every thread: the branches below are uniform
    if (t == ignore) {
      if (threadIdx.x == 0) {
        store(loss, r, 0.0);
        store(row_weight, r, 0.0);
      }
      continue;
    }
    if (t < 0 || t >= classes) {
      if (threadIdx.x == 0) report_check(word, site, t, r, classes);
      continue;
    }
    const T* x = logits + r * classes;
    const double lse = static_cast<double>(row_logsumexp(x, classes));
    const double wt = w ? static_cast<double>(load(w, t)) : 1.0;
    double l = rn::mul(rn::mul(rn::sub(1.0, smoothing), wt),
                       rn::sub(lse, static_cast<double>(load(x, t))));
    if (smoothing > 0) {
      double smooth = 0;
      for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
        smooth = rn::add(smooth, rn::mul(w ? static_cast<double>(load(w, c)) : 1.0,
                                         rn::sub(lse, static_cast<double>(load(x, c)))));
      smooth = block_reduce(smooth, AddOp{});
      l = rn::add(l, rn::mul(rn::div(smoothing, double(classes)), smooth));
    }
    if (threadIdx.x == 0) {
      store(loss, r, l);
      store(row_weight, r, wt);
    }
  }
}

template <class T>
__device__ void cross_entropy_backward_rows(T* grad, const T* grad_loss, const T* logits,
                                            const int64_t* target, const T* w,
                                            const double* weight_total, int64_t rows,
                                            int64_t classes, int64_t ignore, double smoothing) {
  // Without class weights the total is classes ones, exactly.
  const double total = weight_total ? *weight_total : double(classes);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t t = target[r];  // uniform over the block
    T* gr = grad + r * classes;
    if (t == ignore) {
      for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) store(gr, c, 0.0);
      continue;
    }
    const T* x = logits + r * classes;
    const double lse = static_cast<double>(row_logsumexp(x, classes));
    // A target out of range (the forward pass reports it) gives NaN rather than a stray read.
    const bool valid = t >= 0 && t < classes;
    const double wt = !valid ? quiet_nan_c<double>() : w ? static_cast<double>(load(w, t)) : 1.0;
    const double scale = static_cast<double>(load(grad_loss, r));
    const double keep = rn::mul(rn::sub(1.0, smoothing), wt);
    const double spread = rn::div(smoothing, double(classes));
    // d/dx_c: (1-s) w_t (p_c - [c == t]) + (s / C) (W p_c - w_c), W the weight total.
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      const double p = exp(rn::sub(static_cast<double>(load(x, c)), lse));
      double d = rn::mul(keep, rn::sub(p, c == t ? 1.0 : 0.0));
      if (smoothing > 0)
        d = rn::add(d, rn::mul(spread, rn::sub(rn::mul(total, p),
                                               w ? static_cast<double>(load(w, c)) : 1.0)));
      store(gr, c, rn::mul(d, scale));
    }
  }
}

template <class T>
__device__ void weight_total(double* out, const T* w, int64_t classes) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  double total = 0;
  for (int64_t c = 0; c < classes; ++c) total = rn::add(total, static_cast<double>(load(w, c)));
  *out = total;
}

}  // namespace

#define OX_NORM(NAME, T)                                                                           \
  extern "C" __global__ void ox_norm_softmax_##NAME(T* dst, const T* src, int64_t rows, int64_t n, \
                                                    int32_t is_log) {                              \
    softmax_rows<T>(dst, src, rows, n, is_log);                                                    \
  }                                                                                                \
  extern "C" __global__ void ox_norm_softmax_backward_##NAME(                                      \
      T* grad_in, const T* grad_out, const T* y, int64_t rows, int64_t n, int32_t is_log) {        \
    softmax_backward_rows<T>(grad_in, grad_out, y, rows, n, is_log);                               \
  }                                                                                                \
  extern "C" __global__ void ox_norm_layer_norm_##NAME(                                            \
      T* dst, compute_t<T>* mean, compute_t<T>* rstd, const T* src, const T* weight,               \
      const T* bias, int64_t rows, int64_t n, double eps, int32_t rms) {                           \
    layer_norm_rows<T>(dst, mean, rstd, src, weight, bias, rows, n, eps, rms);                     \
  }                                                                                                \
  extern "C" __global__ void ox_norm_layer_norm_backward_##NAME(                                   \
      T* grad_in, const T* grad_out, const T* src, const compute_t<T>* mean,                       \
      const compute_t<T>* rstd, const T* weight, int64_t rows, int64_t n, int32_t rms) {           \
    layer_norm_backward_rows<T>(grad_in, grad_out, src, mean, rstd, weight, rows, n, rms);         \
  }                                                                                                \
  extern "C" __global__ void ox_norm_layer_norm_partials_##NAME(                                   \
      double* partial_w, double* partial_b, const T* grad_out, const T* src,                       \
      const compute_t<T>* mean, const compute_t<T>* rstd, int64_t rows, int64_t n, int32_t rms) {  \
    layer_norm_partials<T>(partial_w, partial_b, grad_out, src, mean, rstd, rows, n, rms);         \
  }                                                                                                \
  extern "C" __global__ void ox_norm_column_sum_##NAME(T* out, const double* partial,              \
                                                       int64_t blocks, int64_t n) {                \
    column_sum<T>(out, partial, blocks, n);                                                        \
  }                                                                                                \
  extern "C" __global__ void ox_norm_cross_entropy_##NAME(                                         \
      T* loss, T* row_weight, const T* logits, const int64_t* target, const T* weight,             \
      int64_t rows, int64_t classes, int64_t ignore, double smoothing, CheckWord* word,            \
      int32_t site) {                                                                              \
    cross_entropy_rows<T>(loss, row_weight, logits, target, weight, rows, classes, ignore,         \
                          smoothing, word, site);                                                  \
  }                                                                                                \
  extern "C" __global__ void ox_norm_cross_entropy_backward_##NAME(                                \
      T* grad, const T* grad_loss, const T* logits, const int64_t* target, const T* weight,        \
      const double* weight_total, int64_t rows, int64_t classes, int64_t ignore,                   \
      double smoothing) {                                                                          \
    cross_entropy_backward_rows<T>(grad, grad_loss, logits, target, weight, weight_total, rows,    \
                                   classes, ignore, smoothing);                                    \
  }                                                                                                \
  extern "C" __global__ void ox_norm_weight_total_##NAME(double* out, const T* weight,             \
                                                         int64_t classes) {                        \
    weight_total<T>(out, weight, classes);                                                         \
  }
OXMERA_FOR_EACH_FLOAT_DTYPE(OX_NORM)
#undef OX_NORM
