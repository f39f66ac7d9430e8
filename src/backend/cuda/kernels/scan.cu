// Inclusive scans along the last dim (Backend::scan; plan and body in reduce_common.cuh).
//   ox_scan_{sum,prod}_<dtype>(ScanArgs)  running sum/product in f64 (floating; dst of src dtype)
//                                         or wrapping i64 (integer and bool; dst i64)
//   ox_scan_{max,min}_<dtype>(ScanArgs)   running max/min (dst: src dtype) and its i64 index in
//                                         idx: a NaN is always taken, a tie moves the index to
//                                         the later element (the CPU backend's rule)
// A running (value, index) over a chunk combines with the carry before it exactly as the
// sequential scan would continue, so cummax/cummin are the CPU's bits for any plan.

#include <type_traits>

#include "backend/cuda/kernels/reduce_common.cuh"

OXMERA_DEFINE_KERNEL_STAMP;

using namespace ox::cuda::kernels;

namespace {

template <class T, bool IsProd>
struct Accumulate {
  using In = T;
  using C = compute_of<T>;
  using State = std::conditional_t<std::is_floating_point_v<C>, double, int64_t>;
  using Out = std::conditional_t<std::is_floating_point_v<C>, T, int64_t>;
  __device__ static State identity() { return IsProd ? State(1) : State(0); }
  __device__ static State combine(State a, State b) {
    if constexpr (std::is_integral_v<State>) {
      return IsProd ? wrap_mul(a, b) : wrap_add(a, b);
    } else {
      return IsProd ? a * b : a + b;
    }
  }
  __device__ static State step(State s, C x, int64_t) { return combine(s, static_cast<State>(x)); }
  __device__ static void write(const ScanArgs& a, int64_t d, int64_t, State s) {
    if constexpr (std::is_floating_point_v<C>) {
      static_cast<Out*>(a.dst)[d] = from_double<T>(s);
    } else {
      static_cast<Out*>(a.dst)[d] = s;
    }
  }
};

template <class T, bool IsMax>
struct RunningExtreme {
  using In = T;
  using C = compute_of<T>;
  using State = Running<C>;
  __device__ static State identity() { return {C(0), -1}; }
  __device__ static State step(State s, C x, int64_t i) { return running_step<IsMax>(s, x, i); }
  __device__ static State combine(State carry, State total) {
    return running_combine<IsMax>(carry, total);
  }
  __device__ static void write(const ScanArgs& a, int64_t d, int64_t ix, State s) {
    static_cast<T*>(a.dst)[d] = store_compute<T>(s.v);
    a.idx[ix] = s.i;
  }
};

}  // namespace

#define OX_SCAN_KERNEL(NAME, SUFFIX, ...)                                                    \
  extern "C" __global__ void ox_scan_##NAME##_##SUFFIX(const __grid_constant__ ScanArgs a) { \
    scan_body<__VA_ARGS__>(a);                                                               \
  }

#define OX_SCAN_ALL(SUFFIX, T)                         \
  OX_SCAN_KERNEL(sum, SUFFIX, Accumulate<T, false>)    \
  OX_SCAN_KERNEL(prod, SUFFIX, Accumulate<T, true>)    \
  OX_SCAN_KERNEL(max, SUFFIX, RunningExtreme<T, true>) \
  OX_SCAN_KERNEL(min, SUFFIX, RunningExtreme<T, false>)

OXMERA_FOR_EACH_FLOAT_DTYPE(OX_SCAN_ALL)
OXMERA_FOR_EACH_INT_DTYPE(OX_SCAN_ALL)
