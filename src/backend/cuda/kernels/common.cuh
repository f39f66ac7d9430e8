#pragma once
// What every kernel family (kernels/*.cu) shares: the stamp the module loader checks, the
// grid-stride loop, and the storage types and conversions of storage.cuh.
//
// A family may include only headers under src/backend/cuda/kernels/, src/core/ and
// include/oxmera/core/ besides the toolkit's: the fingerprint hashes those folders, and the
// build fails when a kernel includes anything else from the source tree (cmake/cuda_kernel.cmake).

#include <cstdint>
#include <type_traits>

#include "backend/cuda/kernels/storage.cuh"

#ifndef OXMERA_KERNEL_STAMP
#error "OXMERA_KERNEL_STAMP is defined by the build (cmake/cuda_kernel.cmake)"
#endif

// The stamp of this family's sources, nvcc version, flags and targets. The module loader reads
// it back (cuModuleGetGlobal) and refuses a module whose stamp is not the one the host expects.
#define OXMERA_DEFINE_KERNEL_STAMP \
  extern "C" __device__ const char oxmera_kernel_stamp[] = OXMERA_KERNEL_STAMP

namespace ox::cuda::kernels {

// Element i of a grid-stride loop over n elements: any grid covers any n.
template <class F>
__device__ inline void grid_stride(int64_t n, F&& f) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) f(i);
}

}  // namespace ox::cuda::kernels

// Instantiate MACRO(suffix, storage type) for each dtype, named as DType names them.
#define OXMERA_FOR_EACH_FLOAT_DTYPE(MACRO) \
  MACRO(f32, float)                        \
  MACRO(f64, double)                       \
  MACRO(f16, ox::cuda::kernels::F16)       \
  MACRO(bf16, ox::cuda::kernels::BF16)
#define OXMERA_FOR_EACH_INT_DTYPE(MACRO) \
  MACRO(i64, int64_t)                    \
  MACRO(i32, int32_t)                    \
  MACRO(i16, int16_t)                    \
  MACRO(i8, int8_t)                      \
  MACRO(u8, uint8_t)                     \
  MACRO(bool, bool)
