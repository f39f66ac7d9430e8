#pragma once
// The layout a kernel walks: one shape and, per operand, strides in elements (0 where an operand
// broadcasts, negative ones too). Plain C++ shared by the host, which builds it
// (backend/cuda/launch.h: make_offsets merges dims first), and the kernels, which read it as a
// by-value kernel parameter; tests/backend/cuda_offsets_test.cpp checks it on the CPU.

#include <cstdint>

#include "core/host_device.h"

namespace ox::cuda::kernels {

// PyTorch's limit for CUDA kernels too: 25 dims after merging, so the parameter block of a
// 4-operand layout stays near 1 KiB (kernel parameters are limited to 4 KiB on older drivers).
inline constexpr int kMaxDims = 25;

template <int N>
struct Offsets {
  int32_t ndim = 0;  // 0: one element
  int64_t sizes[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};

  // The element offsets of row-major index i (0 <= i < numel) of each operand.
  OX_HOST_DEVICE void get(int64_t i, int64_t (&offset)[N]) const {
    for (int k = 0; k < N; ++k) offset[k] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t size = sizes[d];
      const int64_t q = i / size;
      const int64_t r = i - q * size;
      i = q;
      for (int k = 0; k < N; ++k) offset[k] += r * strides[k][d];
    }
  }
};

}  // namespace ox::cuda::kernels
