// Strided copy with dtype conversion on one device (Backend::copy; the host side in
// src/backend/cuda/elementwise.cpp also stages copies to and from the host and between devices
// through it). One kernel per (dst dtype, src dtype):
//   ox_copy_<to>_<from>(To* dst, const From* src, int64_t n, Offsets<2> layout)
// dst[i] = convert(src[i]) as the CPU converts (kernels/convert.cuh); the same dtype copies the
// bits. Operand 0 of the layout is dst.

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/convert.cuh"
#include "backend/cuda/kernels/offsets.cuh"

OXMERA_DEFINE_KERNEL_STAMP;

namespace {

using namespace ox::cuda::kernels;

template <class To, class From>
__device__ inline void copy_body(To* dst, const From* src, int64_t n, const Offsets<2>& o) {
  if (o.ndim <= 1) {
    const int64_t sd = o.ndim == 1 ? o.strides[0][0] : 0;
    const int64_t ss = o.ndim == 1 ? o.strides[1][0] : 0;
    if (sd == 1 && ss == 1) {
      grid_stride(n, [&](int64_t i) { dst[i] = ew::convert_element<To>(src[i]); });
    } else {
      grid_stride(n, [&](int64_t i) { dst[i * sd] = ew::convert_element<To>(src[i * ss]); });
    }
    return;
  }
  grid_stride(n, [&](int64_t i) {
    int64_t off[2];
    o.get(i, off);
    dst[off[0]] = ew::convert_element<To>(src[off[1]]);
  });
}

}  // namespace

#define OX_COPY_KERNEL(to, To, from, From)                                              \
  extern "C" __global__ void ox_copy_##to##_##from(To* dst, const From* src, int64_t n, \
                                                   Offsets<2> layout) {                 \
    copy_body<To, From>(dst, src, n, layout);                                           \
  }
// Every source dtype for each destination dtype (the outer list is spelled out: a macro does
// not expand inside its own expansion).
#define OX_COPY_TO(to, To) OX_EW_ALL(OX_COPY_KERNEL, to, To)
OX_COPY_TO(f32, float)
OX_COPY_TO(f64, double)
OX_COPY_TO(f16, ew::F16)
OX_COPY_TO(bf16, ew::BF16)
OX_COPY_TO(i64, int64_t)
OX_COPY_TO(i32, int32_t)
OX_COPY_TO(i16, int16_t)
OX_COPY_TO(i8, int8_t)
OX_COPY_TO(u8, uint8_t)
OX_COPY_TO(bool, bool)
#undef OX_COPY_TO
#undef OX_COPY_KERNEL
