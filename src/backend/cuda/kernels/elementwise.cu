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
#include "backend/cuda/kernels/elementwise_ops.cuh"
#include "backend/cuda/kernels/offsets.cuh"
#include "core/elementwise_ops.h"

OXMERA_DEFINE_KERNEL_STAMP;

namespace {

using namespace ox::cuda::kernels;

// dst[i] = op(src[i]) (op: an ew::UnaryElement): a 1-d walk (strides 1 taken apart) when the
// layout merged into at most one dim, else each element's offsets from the layout.
template <class Out, class T, class Op>
__device__ inline void unary_body(Out* dst, const T* src, int64_t n, const Offsets<2>& o, Op op) {
  if (o.ndim <= 1) {
    const int64_t sd = o.ndim == 1 ? o.strides[0][0] : 0;
    const int64_t ss = o.ndim == 1 ? o.strides[1][0] : 0;
    if (sd == 1 && ss == 1) {
      grid_stride(n, [&](int64_t i) { dst[i] = op(src[i]); });
    } else {
      grid_stride(n, [&](int64_t i) { dst[i * sd] = op(src[i * ss]); });
    }
    return;
  }
  grid_stride(n, [&](int64_t i) {
    int64_t off[2];
    o.get(i, off);
    dst[off[0]] = op(src[off[1]]);
  });
}

// dst[i] = op(a[i], b[i]) (op: an ew::BinaryElement); a or b may broadcast (stride 0).
template <class Out, class T, class Op>
__device__ inline void binary_body(Out* dst, const T* a, const T* b, int64_t n, const Offsets<3>& o,
                                   Op op) {
  if (o.ndim <= 1) {
    const int64_t sd = o.ndim == 1 ? o.strides[0][0] : 0;
    const int64_t sa = o.ndim == 1 ? o.strides[1][0] : 0;
    const int64_t sb = o.ndim == 1 ? o.strides[2][0] : 0;
    if (sd == 1 && sa == 1 && sb == 1) {
      grid_stride(n, [&](int64_t i) { dst[i] = op(a[i], b[i]); });
    } else {
      grid_stride(n, [&](int64_t i) { dst[i * sd] = op(a[i * sa], b[i * sb]); });
    }
    return;
  }
  grid_stride(n, [&](int64_t i) {
    int64_t off[3];
    o.get(i, off);
    dst[off[0]] = op(a[off[1]], b[off[2]]);
  });
}

template <ox::UnaryOp kOp, template <class> class F, class T>
__device__ inline void unary_kernel(void* dst, const T* src, int64_t n, const Offsets<2>& o,
                                    const ox::UnaryParams& p) {
  using Op = ew::UnaryElement<kOp, F, T>;
  unary_body(static_cast<typename Op::Out*>(dst), src, n, o, Op(p));
}

// Add and Sub multiply b by alpha where the CPU does (ew::binary_uses_alpha).
template <ox::BinaryOp kOp, template <class> class F, class T>
__device__ inline void binary_kernel(void* dst, const T* a, const T* b, int64_t n,
                                     const Offsets<3>& o, double alpha) {
  using Op = ew::BinaryElement<kOp, F, T, false>;
  using Out = typename Op::Out;
  if constexpr (ox::binary_takes_alpha(kOp) && !std::is_same_v<ew::compute_of<T>, bool>) {
    if (ew::binary_uses_alpha<kOp, T>(alpha)) {
      binary_body(static_cast<Out*>(dst), a, b, n, o, ew::BinaryElement<kOp, F, T, true>(alpha));
      return;
    }
  }
  binary_body(static_cast<Out*>(dst), a, b, n, o, Op(alpha));
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
