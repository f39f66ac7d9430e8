// Convolution windows and pooling (Backend contracts in src/backend/backend.h, "NN kernels"):
// one thread per output element runs the body of kernels/conv.cuh (which the host tests run on
// the CPU), except where a sum has no cheap gather form:
//   ox_conv_im2col_<dt>                    one thread per dst element (a copy or 0)
//   ox_conv_col2im_<dt>                    one thread per dst element: a gather over the taps
//   ox_conv_depthwise_forward_<dt>         one thread per output element
//   ox_conv_depthwise_input_grad_<dt>      one thread per input element: a gather
//   ox_conv_depthwise_weight_grad_<dt>     one thread per weight element, sequential over
//                                          (n, oh, ow) in the CPU backend's lanes
//   ox_conv_pool_{max,avg,adaptive_avg}_<dt>            one thread per output element
//   ox_conv_pool_{avg,adaptive_avg}_backward_<dt>       one thread per input element: a gather
//   ox_conv_pool_max_backward_zero_<dt>    zeroes the accumulator (grad_src, or f32 scratch for
//                                          16-bit dtypes) and sets the first-bad slot to INT64_MAX
//   ox_conv_pool_max_backward_<dt>         one thread per (n, c) plane scatters its gradients in
//                                          row-major order; the smallest bad position by atomicMin
//   ox_conv_pool_max_backward_finish_<dt>  rounds a 16-bit accumulator into grad_src; reports the
//                                          smallest bad index (so the report is deterministic)

#include "backend/cuda/kernels/check.cuh"
#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/conv.cuh"

OXMERA_DEFINE_KERNEL_STAMP;

using namespace ox::cuda::kernels;

namespace {
constexpr long long kNoBad = 0x7fffffffffffffffLL;
}

#define OX_CONV_KERNELS(NAME, T)                                                                   \
  extern "C" __global__ void ox_conv_im2col_##NAME(T* __restrict__ dst, Strides6 ds,               \
                                                   const T* __restrict__ src, Strides6 ss,         \
                                                   ConvGeom g, int64_t n) {                        \
    grid_stride(n, [&](int64_t i) { im2col_at<T>(dst, ds, src, ss, g, i); });                      \
  }                                                                                                \
  extern "C" __global__ void ox_conv_col2im_##NAME(T* __restrict__ dst, const T* __restrict__ src, \
                                                   Strides6 cs, ConvGeom g, int64_t n) {           \
    grid_stride(n, [&](int64_t i) { col2im_at<T>(dst, src, cs, g, i); });                          \
  }                                                                                                \
  extern "C" __global__ void ox_conv_depthwise_forward_##NAME(                                     \
      T* __restrict__ dst, const T* __restrict__ a, Strides6 as, const T* __restrict__ b,          \
      Strides6 bs, const T* __restrict__ bias, int64_t bias_stride, ConvGeom g, int64_t n) {       \
    grid_stride(n, [&](int64_t i) {                                                                \
      depthwise_forward_at<T>(dst, a, as, b, bs, bias, bias_stride, g, i);                         \
    });                                                                                            \
  }                                                                                                \
  extern "C" __global__ void ox_conv_depthwise_input_grad_##NAME(                                  \
      T* __restrict__ dst, const T* __restrict__ a, Strides6 as, const T* __restrict__ b,          \
      Strides6 bs, const T* __restrict__ bias, int64_t bias_stride, ConvGeom g, int64_t n) {       \
    grid_stride(n, [&](int64_t i) { depthwise_input_grad_at<T>(dst, a, as, b, bs, g, i); });       \
  }                                                                                                \
  extern "C" __global__ void ox_conv_depthwise_weight_grad_##NAME(                                 \
      T* __restrict__ dst, const T* __restrict__ a, Strides6 as, const T* __restrict__ b,          \
      Strides6 bs, const T* __restrict__ bias, int64_t bias_stride, ConvGeom g, int64_t n) {       \
    grid_stride(n, [&](int64_t i) { depthwise_weight_grad_at<T>(dst, a, as, b, bs, g, i); });      \
  }                                                                                                \
  extern "C" __global__ void ox_conv_pool_max_##NAME(                                              \
      T* __restrict__ dst, int64_t* __restrict__ indices, const T* __restrict__ src, Strides6 ss,  \
      ConvGeom g, int64_t n) {                                                                     \
    grid_stride(n, [&](int64_t i) { pool_forward_at<T, kMax>(dst, indices, src, ss, g, i); });     \
  }                                                                                                \
  extern "C" __global__ void ox_conv_pool_avg_##NAME(                                              \
      T* __restrict__ dst, int64_t* __restrict__ indices, const T* __restrict__ src, Strides6 ss,  \
      ConvGeom g, int64_t n) {                                                                     \
    grid_stride(n, [&](int64_t i) { pool_forward_at<T, kAvg>(dst, indices, src, ss, g, i); });     \
  }                                                                                                \
  extern "C" __global__ void ox_conv_pool_adaptive_avg_##NAME(                                     \
      T* __restrict__ dst, int64_t* __restrict__ indices, const T* __restrict__ src, Strides6 ss,  \
      ConvGeom g, int64_t n) {                                                                     \
    grid_stride(                                                                                   \
        n, [&](int64_t i) { pool_forward_at<T, kAdaptiveAvg>(dst, indices, src, ss, g, i); });     \
  }                                                                                                \
  extern "C" __global__ void ox_conv_pool_avg_backward_##NAME(                                     \
      T* __restrict__ grad_src, const T* __restrict__ gd, Strides6 gs, ConvGeom g, int64_t n) {    \
    grid_stride(n, [&](int64_t i) { pool_avg_backward_at<T, kAvg>(grad_src, gd, gs, g, i); });     \
  }                                                                                                \
  extern "C" __global__ void ox_conv_pool_adaptive_avg_backward_##NAME(                            \
      T* __restrict__ grad_src, const T* __restrict__ gd, Strides6 gs, ConvGeom g, int64_t n) {    \
    grid_stride(                                                                                   \
        n, [&](int64_t i) { pool_avg_backward_at<T, kAdaptiveAvg>(grad_src, gd, gs, g, i); });     \
  }                                                                                                \
  extern "C" __global__ void ox_conv_pool_max_backward_zero_##NAME(                                \
      acc_t<T>* __restrict__ acc, int64_t n, long long* __restrict__ first_bad) {                  \
    if (blockIdx.x == 0 && threadIdx.x == 0) *first_bad = kNoBad;                                  \
    grid_stride(n, [&](int64_t i) { acc[i] = acc_t<T>(0); });                                      \
  }                                                                                                \
  extern "C" __global__ void ox_conv_pool_max_backward_##NAME(                                     \
      acc_t<T>* __restrict__ acc, const T* __restrict__ gd, Strides6 gs,                           \
      const int64_t* __restrict__ indices, Strides6 is, ConvGeom g, long long* first_bad,          \
      int64_t planes) {                                                                            \
    grid_stride(planes, [&](int64_t p) {                                                           \
      const int64_t bad = pool_max_backward_plane<T>(acc, gd, gs, indices, is, g, p);              \
      if (bad >= 0) atomicMin(first_bad, (long long)bad);                                          \
    });                                                                                            \
  }                                                                                                \
  extern "C" __global__ void ox_conv_pool_max_backward_finish_##NAME(                              \
      T* __restrict__ grad_src, const acc_t<T>* __restrict__ acc, int64_t n_convert,               \
      const long long* __restrict__ first_bad, const int64_t* __restrict__ indices, Strides6 is,   \
      ConvGeom g, CheckWord* word, int32_t site) {                                                 \
    if (blockIdx.x == 0 && threadIdx.x == 0 && *first_bad != kNoBad) {                             \
      const int64_t position = *first_bad;                                                         \
      report_check(word, site, indices[pool_index_offset(position, is, g)], position, g.h* g.w);   \
    }                                                                                              \
    grid_stride(n_convert, [&](int64_t i) { grad_src[i] = from_acc<T>(acc[i]); });                 \
  }

OX_CONV_KERNELS(f32, float)
OX_CONV_KERNELS(f64, double)
OX_CONV_KERNELS(f16, ox::Half)
OX_CONV_KERNELS(bf16, ox::BFloat16)
#undef OX_CONV_KERNELS
