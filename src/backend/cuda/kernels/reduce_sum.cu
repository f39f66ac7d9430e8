// Sum, prod, mean, count_nonzero, all and any (Backend::reduce; plans and bodies in
// reduce_common.cuh). Accumulators as the CPU backend's: the compute type for floating sources
// (f32 for f16/bf16), i64 wrapping for integer and bool sources; all/any in u8.
//   ox_reduce_{sum,prod}_<dtype>(ReduceArgs)       dst: src dtype (floating) or i64
//   ox_reduce_mean_<floating dtype>(ReduceArgs)    sum / n in the compute type
//   ox_reduce_count_nonzero_<dtype>(ReduceArgs)    dst i64
//   ox_reduce_{all,any}_<dtype>(ReduceArgs)        dst bool or u8 (0 or 1 either way)

#include <type_traits>

#include "backend/cuda/kernels/reduce_common.cuh"

OXMERA_DEFINE_KERNEL_STAMP;

using namespace ox::cuda::kernels;

namespace {

template <class C>
using acc_of = std::conditional_t<std::is_floating_point_v<C>, C, int64_t>;

enum class Kind { Sum, Prod, Mean };

template <class T, Kind K>
struct SumLike {
  using In = T;
  using C = compute_of<T>;
  using Acc = acc_of<C>;
  using Out = std::conditional_t<std::is_floating_point_v<C>, T, int64_t>;
  static constexpr bool kParam = false;
  using ParamStore = void;
  __device__ explicit SumLike(const ReduceArgs&) {}
  __device__ Acc init() const { return K == Kind::Prod ? Acc(1) : Acc(0); }
  __device__ Acc map(C x, int64_t, NoParam) const { return static_cast<Acc>(x); }
  __device__ Acc combine(Acc a, Acc b) const {
    if constexpr (std::is_integral_v<Acc>) {
      return K == Kind::Prod ? wrap_mul(a, b) : wrap_add(a, b);
    } else {
      return K == Kind::Prod ? a * b : a + b;
    }
  }
  __device__ void finish(const ReduceArgs& a, int64_t o, const int64_t (&off)[3], Acc acc,
                         NoParam) const {
    if constexpr (std::is_floating_point_v<C>) {
      const C r = K == Kind::Mean ? acc / static_cast<C>(a.n_red) : acc;
      out_at<Out>(a, o, off) = store_compute<T>(r);
    } else {
      out_at<Out>(a, o, off) = acc;
    }
  }
};

template <class T>
struct CountNonzero {
  using In = T;
  using C = compute_of<T>;
  using Acc = int64_t;
  static constexpr bool kParam = false;
  using ParamStore = void;
  __device__ explicit CountNonzero(const ReduceArgs&) {}
  __device__ Acc init() const { return 0; }
  __device__ Acc map(C x, int64_t, NoParam) const { return x != C(0) ? 1 : 0; }
  __device__ Acc combine(Acc a, Acc b) const { return a + b; }
  __device__ void finish(const ReduceArgs& a, int64_t o, const int64_t (&off)[3], Acc acc,
                         NoParam) const {
    out_at<int64_t>(a, o, off) = acc;
  }
};

template <class T, bool IsAll>
struct Logical {
  using In = T;
  using C = compute_of<T>;
  using Acc = uint8_t;
  static constexpr bool kParam = false;
  using ParamStore = void;
  __device__ explicit Logical(const ReduceArgs&) {}
  __device__ Acc init() const { return IsAll ? 1 : 0; }
  __device__ Acc map(C x, int64_t, NoParam) const { return x != C(0) ? 1 : 0; }
  __device__ Acc combine(Acc a, Acc b) const { return IsAll ? (a & b) : (a | b); }
  __device__ void finish(const ReduceArgs& a, int64_t o, const int64_t (&off)[3], Acc acc,
                         NoParam) const {
    out_at<uint8_t>(a, o, off) = acc;  // bool and u8 alike: one byte, 0 or 1
  }
};

}  // namespace

#define OX_REDUCE_KERNEL(NAME, SUFFIX, ...)                               \
  extern "C" __global__ void __launch_bounds__(kReduceBlock)              \
      ox_reduce_##NAME##_##SUFFIX(const __grid_constant__ ReduceArgs a) { \
    reduce_body<__VA_ARGS__>(a);                                          \
  }

#define OX_SUM_ALL(SUFFIX, T)                              \
  OX_REDUCE_KERNEL(sum, SUFFIX, SumLike<T, Kind::Sum>)     \
  OX_REDUCE_KERNEL(prod, SUFFIX, SumLike<T, Kind::Prod>)   \
  OX_REDUCE_KERNEL(count_nonzero, SUFFIX, CountNonzero<T>) \
  OX_REDUCE_KERNEL(all, SUFFIX, Logical<T, true>)          \
  OX_REDUCE_KERNEL(any, SUFFIX, Logical<T, false>)
#define OX_MEAN(SUFFIX, T) OX_REDUCE_KERNEL(mean, SUFFIX, SumLike<T, Kind::Mean>)

OXMERA_FOR_EACH_FLOAT_DTYPE(OX_SUM_ALL)
OXMERA_FOR_EACH_INT_DTYPE(OX_SUM_ALL)
OXMERA_FOR_EACH_FLOAT_DTYPE(OX_MEAN)
