// Max, min, argmax and argmin (Backend::reduce; plans and bodies in reduce_common.cuh).
//   ox_reduce_{max,min}_<dtype>(ReduceArgs)        dst: src dtype; NaN propagates (a quiet NaN)
//   ox_reduce_{argmax,argmin}_<dtype>(ReduceArgs)  dst i64: the first index of the extreme, or
//                                                  of the first NaN; values (when not null): the
//                                                  element at that index
// The (value, index) pairs combine by a total order (NaN first, then the extreme, then the
// lower index), so the index is the CPU backend's whatever the plan.

#include <type_traits>

#include "backend/cuda/kernels/reduce_common.cuh"

OXMERA_DEFINE_KERNEL_STAMP;

using namespace ox::cuda::kernels;

namespace {

template <class C, bool IsMax>
__device__ inline C extreme_init() {
  if constexpr (std::is_same_v<C, float>) {
    return IsMax ? -__int_as_float(0x7f800000) : __int_as_float(0x7f800000);
  } else if constexpr (std::is_same_v<C, double>) {
    return IsMax ? -__longlong_as_double(0x7ff0000000000000LL)
                 : __longlong_as_double(0x7ff0000000000000LL);
  } else if constexpr (std::is_same_v<C, bool>) {
    return !IsMax;
  } else if constexpr (std::is_signed_v<C>) {
    constexpr C top = C(~(std::make_unsigned_t<C>(1) << (sizeof(C) * 8 - 1)));
    return IsMax ? C(-top - 1) : top;
  } else {
    return IsMax ? C(0) : C(~C(0));
  }
}

template <class T, bool IsMax>
struct Extreme {
  using In = T;
  using C = compute_of<T>;
  using Acc = C;
  static constexpr bool kParam = false;
  using ParamStore = void;
  __device__ explicit Extreme(const ReduceArgs&) {}
  __device__ Acc init() const { return extreme_init<C, IsMax>(); }
  __device__ Acc map(C x, int64_t, NoParam) const { return x; }
  __device__ Acc combine(Acc a, Acc b) const {
    const bool take = (IsMax ? (b > a) : (b < a)) || nan_of(b);
    return take ? b : a;
  }
  __device__ void finish(const ReduceArgs& a, int64_t o, const int64_t (&off)[3], Acc acc,
                         NoParam) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (acc != acc) acc = quiet_nan_of<C>();  // the CPU's canonical NaN
    }
    out_at<T>(a, o, off) = store_compute<T>(acc);
  }
};

template <class C>
struct ValueIndex {
  C v;
  int64_t i;
};

template <class T, bool IsMax>
struct ArgExtreme {
  using In = T;
  using C = compute_of<T>;
  using Acc = ValueIndex<C>;
  static constexpr bool kParam = false;
  using ParamStore = void;
  static constexpr int64_t kNone = 0x7fffffffffffffffLL;
  __device__ explicit ArgExtreme(const ReduceArgs&) {}
  __device__ Acc init() const { return {extreme_init<C, IsMax>(), kNone}; }
  __device__ Acc map(C x, int64_t i, NoParam) const { return {x, i}; }
  __device__ Acc combine(Acc a, Acc b) const {
    return arg_first<IsMax>(b.v, b.i, a.v, a.i) ? b : a;
  }
  __device__ void finish(const ReduceArgs& a, int64_t o, const int64_t (&off)[3], Acc acc,
                         NoParam) const {
    out_at<int64_t>(a, o, off) = acc.i;
    if (a.values != nullptr) {
      const T* src = static_cast<const T*>(a.src);
      static_cast<T*>(a.values)[off[2]] = src[off[1] + reduced_offset(a.red, acc.i)];
    }
  }
};

}  // namespace

#define OX_REDUCE_KERNEL(NAME, SUFFIX, ...)                               \
  extern "C" __global__ void __launch_bounds__(kReduceBlock)              \
      ox_reduce_##NAME##_##SUFFIX(const __grid_constant__ ReduceArgs a) { \
    reduce_body<__VA_ARGS__>(a);                                          \
  }

#define OX_EXTREME_ALL(SUFFIX, T)                       \
  OX_REDUCE_KERNEL(max, SUFFIX, Extreme<T, true>)       \
  OX_REDUCE_KERNEL(min, SUFFIX, Extreme<T, false>)      \
  OX_REDUCE_KERNEL(argmax, SUFFIX, ArgExtreme<T, true>) \
  OX_REDUCE_KERNEL(argmin, SUFFIX, ArgExtreme<T, false>)

OXMERA_FOR_EACH_FLOAT_DTYPE(OX_EXTREME_ALL)
OXMERA_FOR_EACH_INT_DTYPE(OX_EXTREME_ALL)
