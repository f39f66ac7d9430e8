// fill, arange and linspace (Backend contracts in src/backend/backend.h) on contiguous memory.
// Kernels are extern "C" so that the module loader finds them by these names:
//   ox_fill_w{1,2,4,8}(dst, n, bits)           every element gets the value's bits (the host
//                                               converts the Scalar as the CPU backend does)
//   ox_arange_<dtype>(dst, n, start, step)     integer and bool dtypes: start + i * step modulo
//                                               2^64 (start, step: i64 bits); floating dtypes:
//                                               start + i * step in f64
//   ox_linspace_<dtype>(dst, n, start, end)    each half counts from its own end
// The f64 products are rounded before the sums (the _rn intrinsics): nvcc would otherwise fuse
// them into one multiply-add, which the CPU backend (built without FMA) does not.

#include <type_traits>

#include "backend/cuda/kernels/common.cuh"

OXMERA_DEFINE_KERNEL_STAMP;

using namespace ox::cuda::kernels;

#define OX_FILL(WIDTH, T)                                                               \
  extern "C" __global__ void ox_fill_w##WIDTH(T* __restrict__ dst, int64_t n, T bits) { \
    grid_stride(n, [&](int64_t i) { dst[i] = bits; });                                  \
  }
OX_FILL(1, uint8_t)
OX_FILL(2, uint16_t)
OX_FILL(4, uint32_t)
OX_FILL(8, uint64_t)
#undef OX_FILL

#define OX_ARANGE_INT(NAME, T)                                                                    \
  extern "C" __global__ void ox_arange_##NAME(T* __restrict__ dst, int64_t n, uint64_t start,     \
                                              uint64_t step) {                                    \
    grid_stride(n,                                                                                \
                [&](int64_t i) { dst[i] = from_int64<T>(int64_t(start + uint64_t(i) * step)); }); \
  }
#define OX_ARANGE_FLOAT(NAME, T)                                                            \
  extern "C" __global__ void ox_arange_##NAME(T* __restrict__ dst, int64_t n, double start, \
                                              double step) {                                \
    grid_stride(n, [&](int64_t i) {                                                         \
      dst[i] = from_double<T>(__dadd_rn(start, __dmul_rn(double(i), step)));                \
    });                                                                                     \
  }
OXMERA_FOR_EACH_FLOAT_DTYPE(OX_ARANGE_FLOAT)
OXMERA_FOR_EACH_INT_DTYPE(OX_ARANGE_INT)
#undef OX_ARANGE_INT
#undef OX_ARANGE_FLOAT

#define OX_LINSPACE(NAME, T)                                                                  \
  extern "C" __global__ void ox_linspace_##NAME(T* __restrict__ dst, int64_t n, double start, \
                                                double end) {                                 \
    const double step = (end - start) / double(n - 1);                                        \
    const int64_t half = n / 2;                                                               \
    grid_stride(n, [&](int64_t i) {                                                           \
      dst[i] = from_double<T>(i < half ? __dadd_rn(start, __dmul_rn(step, double(i)))         \
                                       : __dsub_rn(end, __dmul_rn(step, double(n - 1 - i)))); \
    });                                                                                       \
  }
OXMERA_FOR_EACH_FLOAT_DTYPE(OX_LINSPACE)
OXMERA_FOR_EACH_INT_DTYPE(OX_LINSPACE)
#undef OX_LINSPACE
