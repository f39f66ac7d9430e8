// The elementwise kernels (Backend::unary, binary, where and fill on strided memory; contracts
// in src/backend/backend.h). Each row of OX_UNARY_OPS / OX_BINARY_OPS (core/elementwise_ops.h)
// gets one kernel per dtype its class takes, running the row's shared functor (core/ops/) on
// the compute type (f32 for f16/bf16), named:
//   ox_unary_<Code>_<dtype>(Out* dst, const T* src, int64_t n, Offsets<2> layout,
//                           UnaryParams params)                     Out: bool for AnyToBool rows
//   ox_binary_<Code>_<dtype>(Out* dst, const T* a, const T* b, int64_t n, Offsets<3> layout,
//                            double alpha)                          Out: bool for AnyToBool rows
//   ox_where_w{1,2,4,8}(U* dst, const bool* cond, const U* a, const U* b, int64_t n,
//                       Offsets<4> layout)                          elements moved as bits
//   ox_fill_strided_w{1,2,4,8}(U* dst, int64_t n, Offsets<1> layout, U bits)
// <Code> is the row's code (Neg, GeluErf, ...): unique, where some rows share a public name.
// Operand 0 of every layout is dst. Each element is computed by one thread with no shared
// state, so results do not depend on the launch configuration.

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/convert.cuh"
#include "backend/cuda/kernels/offsets.cuh"
#include "core/elementwise_ops.h"
#include "core/ops/binary_math.h"
#include "core/ops/unary_math.h"

OXMERA_DEFINE_KERNEL_STAMP;

namespace {

using namespace ox::cuda::kernels;
using ew::compute_of;
using ew::load_value;
using ew::store_value;

// dst[i] = f(src[i]): a 1-d walk (strides 1 taken apart) when the layout merged into at most one
// dim, else each element's offsets from the layout.
template <class Out, class T, class F>
__device__ inline void unary_body(Out* dst, const T* src, int64_t n, const Offsets<2>& o, F f) {
  if (o.ndim <= 1) {
    const int64_t sd = o.ndim == 1 ? o.strides[0][0] : 0;
    const int64_t ss = o.ndim == 1 ? o.strides[1][0] : 0;
    if (sd == 1 && ss == 1) {
      grid_stride(n, [&](int64_t i) { dst[i] = store_value<Out>(f(load_value(src[i]))); });
    } else {
      grid_stride(n,
                  [&](int64_t i) { dst[i * sd] = store_value<Out>(f(load_value(src[i * ss]))); });
    }
    return;
  }
  grid_stride(n, [&](int64_t i) {
    int64_t off[2];
    o.get(i, off);
    dst[off[0]] = store_value<Out>(f(load_value(src[off[1]])));
  });
}

// dst[i] = f(a[i], b[i]); a or b may broadcast (stride 0).
template <class Out, class T, class F>
__device__ inline void binary_body(Out* dst, const T* a, const T* b, int64_t n, const Offsets<3>& o,
                                   F f) {
  if (o.ndim <= 1) {
    const int64_t sd = o.ndim == 1 ? o.strides[0][0] : 0;
    const int64_t sa = o.ndim == 1 ? o.strides[1][0] : 0;
    const int64_t sb = o.ndim == 1 ? o.strides[2][0] : 0;
    if (sd == 1 && sa == 1 && sb == 1) {
      grid_stride(
          n, [&](int64_t i) { dst[i] = store_value<Out>(f(load_value(a[i]), load_value(b[i]))); });
    } else {
      grid_stride(n, [&](int64_t i) {
        dst[i * sd] = store_value<Out>(f(load_value(a[i * sa]), load_value(b[i * sb])));
      });
    }
    return;
  }
  grid_stride(n, [&](int64_t i) {
    int64_t off[3];
    o.get(i, off);
    dst[off[0]] = store_value<Out>(f(load_value(a[off[1]]), load_value(b[off[2]])));
  });
}

template <ox::UnaryOp kOp, template <class> class F, class T>
__device__ inline void unary_kernel(void* dst, const T* src, int64_t n, const Offsets<2>& o,
                                    const ox::UnaryParams& p) {
  using C = compute_of<T>;
  using Out = std::conditional_t<ox::unary_class(kOp) == ox::DTypeClass::AnyToBool, bool, T>;
  unary_body(static_cast<Out*>(dst), src, n, o, ox::elementwise::make_unary<F, C>(p));
}

// The product a * b rounded on its own: nvcc contracts a * b + c into one fused multiply-add
// (--fmad=true), which the CPU (built without FMA) never does; the _rn intrinsics are never
// contracted.
template <class C>
__device__ inline C mul_rounded(C a, C b) {
  if constexpr (std::is_same_v<C, float>) {
    return __fmul_rn(a, b);
  } else if constexpr (std::is_same_v<C, double>) {
    return __dmul_rn(a, b);
  } else {
    return ox::elementwise::Mul<C>{}(a, b);  // integers wrap
  }
}

// elementwise::WithAlpha, F(x, alpha * y), with the product rounded before F adds it.
template <template <class> class F, class C>
struct WithAlphaRounded {
  C alpha;
  __device__ explicit WithAlphaRounded(double a) : alpha(ox::elementwise::alpha_as<C>(a)) {}
  __device__ C operator()(C x, C y) const { return F<C>{}(x, mul_rounded(alpha, y)); }
};

// As the CPU (backend/cpu/binary.cpp): Add and Sub with alpha != 1 take alpha, except for bool,
// which ignores it.
template <ox::BinaryOp kOp, template <class> class F, class T>
__device__ inline void binary_kernel(void* dst, const T* a, const T* b, int64_t n,
                                     const Offsets<3>& o, double alpha) {
  using C = compute_of<T>;
  using Out = std::conditional_t<ox::binary_returns_bool(kOp), bool, T>;
  if constexpr (ox::binary_takes_alpha(kOp) && !std::is_same_v<C, bool>) {
    if (alpha != 1) {
      binary_body(static_cast<Out*>(dst), a, b, n, o, WithAlphaRounded<F, C>(alpha));
      return;
    }
  }
  binary_body(static_cast<Out*>(dst), a, b, n, o, F<C>{});
}

}  // namespace

// The kernels, generated from the tables for the dtypes of each row's class (convert.cuh).
#define OX_UNARY_KERNEL(code, functor, suffix, T)                                              \
  extern "C" __global__ void ox_unary_##code##_##suffix(                                       \
      void* dst, const T* src, int64_t n, Offsets<2> layout, ox::UnaryParams params) {         \
    unary_kernel<ox::UnaryOp::code, ox::elementwise::functor, T>(dst, src, n, layout, params); \
  }
#define OX_UNARY_ROW(code, name, cls, functor) OX_EW_CLASS_##cls(OX_UNARY_KERNEL, code, functor)
OX_UNARY_OPS(OX_UNARY_ROW)
#undef OX_UNARY_ROW
#undef OX_UNARY_KERNEL

#define OX_BINARY_KERNEL(code, functor, suffix, T)                                               \
  extern "C" __global__ void ox_binary_##code##_##suffix(                                        \
      void* dst, const T* a, const T* b, int64_t n, Offsets<3> layout, double alpha) {           \
    binary_kernel<ox::BinaryOp::code, ox::elementwise::functor, T>(dst, a, b, n, layout, alpha); \
  }
#define OX_BINARY_ROW(code, name, cls, functor) OX_EW_CLASS_##cls(OX_BINARY_KERNEL, code, functor)
OX_BINARY_OPS(OX_BINARY_ROW)
#undef OX_BINARY_ROW
#undef OX_BINARY_KERNEL

// where and strided fill move elements as unsigned integers of their width.
#define OX_WHERE(WIDTH, U)                                                                       \
  extern "C" __global__ void ox_where_w##WIDTH(U* dst, const bool* cond, const U* a, const U* b, \
                                               int64_t n, Offsets<4> o) {                        \
    grid_stride(n, [&](int64_t i) {                                                              \
      int64_t off[4];                                                                            \
      o.get(i, off);                                                                             \
      dst[off[0]] = cond[off[1]] ? a[off[2]] : b[off[3]];                                        \
    });                                                                                          \
  }                                                                                              \
  extern "C" __global__ void ox_fill_strided_w##WIDTH(U* dst, int64_t n, Offsets<1> o, U bits) { \
    grid_stride(n, [&](int64_t i) {                                                              \
      int64_t off[1];                                                                            \
      o.get(i, off);                                                                             \
      dst[off[0]] = bits;                                                                        \
    });                                                                                          \
  }
OX_WHERE(1, uint8_t)
OX_WHERE(2, uint16_t)
OX_WHERE(4, uint32_t)
OX_WHERE(8, uint64_t)
#undef OX_WHERE
