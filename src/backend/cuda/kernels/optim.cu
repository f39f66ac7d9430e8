// The fused optimizer steps (Backend::optim_step) on contiguous f32/f64 parameters: one thread
// per element in a grid-stride loop, the arithmetic of kernels/optim_math.cuh (the CPU's, bit
// for bit). Null state buffers are never read: the switches in OptimScalars keep them out.
//   ox_optim_adam_<dtype>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, n, scalars)
//   ox_optim_sgd_<dtype>(param, grad, momentum_buffer, n, scalars)

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/optim_math.cuh"

OXMERA_DEFINE_KERNEL_STAMP;

using namespace ox::cuda::kernels;

#define OX_OPTIM(NAME, T)                                                                         \
  extern "C" __global__ void ox_optim_adam_##NAME(T* param, const T* __restrict__ grad,           \
                                                  T* exp_avg, T* exp_avg_sq, T* max_exp_avg_sq,   \
                                                  int64_t n, OptimScalars<T> s) {                 \
    grid_stride(n, [&](int64_t i) {                                                               \
      adam_element<T>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, i, s);                    \
    });                                                                                           \
  }                                                                                               \
  extern "C" __global__ void ox_optim_sgd_##NAME(T* param, const T* __restrict__ grad, T* buffer, \
                                                 int64_t n, OptimScalars<T> s) {                  \
    grid_stride(n, [&](int64_t i) { sgd_element<T>(param, grad, buffer, i, s); });                \
  }
OX_OPTIM(f32, float)
OX_OPTIM(f64, double)
#undef OX_OPTIM
