// Var, std, logsumexp and the p-norms, floating dtypes (Backend::reduce; plans and bodies in
// reduce_common.cuh). Var/Std/Norm accumulate in f64 as the CPU backend does.
//   ox_reduce_var_mean_<dtype>(ReduceArgs)   Var's first pass: the f64 mean, to a dense scratch
//   ox_reduce_{var,std}_<dtype>(ReduceArgs)  squared deviations from param (f64 means) / max(n -
//                                            correction, 0); std: its square root
//   ox_reduce_lse_<dtype>(ReduceArgs)        sum of exp(x - m) in the compute type, m from param
//                                            (the max, src dtype, from ox_reduce_max_<dtype>):
//                                            m + log(sum), or m itself when m is not finite
//   ox_reduce_norm{0,1,2,_inf,_ninf,_p}_<dtype>(ReduceArgs)  count of nonzeros, sum |x|,
//                                            sqrt(sum x^2), max |x|, min |x|, (sum |x|^p)^(1/p)

#include <cmath>
#include <type_traits>

#include "backend/cuda/kernels/reduce_common.cuh"

OXMERA_DEFINE_KERNEL_STAMP;

using namespace ox::cuda::kernels;

namespace {

__device__ inline float exp_of(float x) { return expf(x); }
__device__ inline double exp_of(double x) { return exp(x); }
__device__ inline float log_of(float x) { return logf(x); }
__device__ inline double log_of(double x) { return log(x); }

// Sums in f64 of f(x): the mean (Var's first pass), squared deviations, and the norms.
enum class F64Sum { Mean, SqDev, Nonzero, Abs, Square, Pow };

template <class T, F64Sum K, bool Sqrt = false>
struct SumF64 {
  using In = T;
  using C = compute_of<T>;
  using Acc = double;
  static constexpr bool kParam = K == F64Sum::SqDev;
  using ParamStore = double;
  double p, correction;
  __device__ explicit SumF64(const ReduceArgs& a) : p(a.p), correction(a.correction) {}
  __device__ Acc init() const { return 0.0; }
  template <class P>
  __device__ Acc map(C x, int64_t, P mean) const {
    const double v = static_cast<double>(x);
    if constexpr (K == F64Sum::SqDev) {
      const double d = v - mean;
      return d * d;
    } else if constexpr (K == F64Sum::Nonzero) {
      return x != C(0) ? 1.0 : 0.0;
    } else if constexpr (K == F64Sum::Abs) {
      return fabs(v);
    } else if constexpr (K == F64Sum::Square) {
      return v * v;
    } else if constexpr (K == F64Sum::Pow) {
      return pow(fabs(v), p);
    } else {
      return v;
    }
  }
  __device__ Acc combine(Acc a, Acc b) const { return a + b; }
  template <class P>
  __device__ void finish(const ReduceArgs& a, int64_t o, const int64_t (&off)[3], Acc acc,
                         P) const {
    if constexpr (K == F64Sum::Mean) {
      out_at<double>(a, o, off) = acc / static_cast<double>(a.n_red);
      return;
    } else {
      double r = acc;
      if constexpr (K == F64Sum::SqDev) {
        const double n = static_cast<double>(a.n_red);
        r = acc / fmax(n - correction, 0.0);
      } else if constexpr (K == F64Sum::Pow) {
        r = pow(acc, 1.0 / p);
      }
      if constexpr (Sqrt || K == F64Sum::Square) r = sqrt(r);
      out_at<T>(a, o, off) = from_double<T>(r);
    }
  }
};

// max |x| (inf norm, from 0) and min |x| (-inf norm, from +inf) in f64; NaN propagates.
template <class T, bool IsMax>
struct AbsExtreme {
  using In = T;
  using C = compute_of<T>;
  using Acc = double;
  static constexpr bool kParam = false;
  using ParamStore = void;
  __device__ explicit AbsExtreme(const ReduceArgs&) {}
  __device__ Acc init() const { return IsMax ? 0.0 : __longlong_as_double(0x7ff0000000000000LL); }
  __device__ Acc map(C x, int64_t, NoParam) const { return fabs(static_cast<double>(x)); }
  __device__ Acc combine(Acc a, Acc b) const {
    const bool take = (IsMax ? (b > a) : (b < a)) || b != b;
    return take ? b : a;
  }
  __device__ void finish(const ReduceArgs& a, int64_t o, const int64_t (&off)[3], Acc acc,
                         NoParam) const {
    out_at<T>(a, o, off) = from_double<T>(acc != acc ? quiet_nan_of<double>() : acc);
  }
};

// logsumexp's second pass: sum of exp(x - m) in the compute type.
template <class T>
struct LogSumExp {
  using In = T;
  using C = compute_of<T>;
  using Acc = C;
  static constexpr bool kParam = true;
  using ParamStore = T;
  __device__ explicit LogSumExp(const ReduceArgs&) {}
  __device__ Acc init() const { return C(0); }
  __device__ Acc map(C x, int64_t, C m) const { return exp_of(x - m); }
  __device__ Acc combine(Acc a, Acc b) const { return a + b; }
  __device__ void finish(const ReduceArgs& a, int64_t o, const int64_t (&off)[3], Acc s,
                         C m) const {
    out_at<T>(a, o, off) = store_compute<T>(isfinite(m) ? m + log_of(s) : m);
  }
};

}  // namespace

#define OX_REDUCE_KERNEL(NAME, SUFFIX, ...)                               \
  extern "C" __global__ void __launch_bounds__(kReduceBlock)              \
      ox_reduce_##NAME##_##SUFFIX(const __grid_constant__ ReduceArgs a) { \
    reduce_body<__VA_ARGS__>(a);                                          \
  }

#define OX_STATS_ALL(SUFFIX, T)                                 \
  OX_REDUCE_KERNEL(var_mean, SUFFIX, SumF64<T, F64Sum::Mean>)   \
  OX_REDUCE_KERNEL(var, SUFFIX, SumF64<T, F64Sum::SqDev>)       \
  OX_REDUCE_KERNEL(std, SUFFIX, SumF64<T, F64Sum::SqDev, true>) \
  OX_REDUCE_KERNEL(lse, SUFFIX, LogSumExp<T>)                   \
  OX_REDUCE_KERNEL(norm0, SUFFIX, SumF64<T, F64Sum::Nonzero>)   \
  OX_REDUCE_KERNEL(norm1, SUFFIX, SumF64<T, F64Sum::Abs>)       \
  OX_REDUCE_KERNEL(norm2, SUFFIX, SumF64<T, F64Sum::Square>)    \
  OX_REDUCE_KERNEL(norm_inf, SUFFIX, AbsExtreme<T, true>)       \
  OX_REDUCE_KERNEL(norm_ninf, SUFFIX, AbsExtreme<T, false>)     \
  OX_REDUCE_KERNEL(norm_p, SUFFIX, SumF64<T, F64Sum::Pow>)

OXMERA_FOR_EACH_FLOAT_DTYPE(OX_STATS_ALL)
