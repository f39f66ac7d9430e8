#pragma once
// OX_HOST_DEVICE marks a function that every backend compiles: plain C++ for the CPU, and
// __host__ __device__ under nvcc, so a CUDA kernel calls the very definition the CPU uses
// (philox.h, the elementwise functors of core/ops/). Such functions use no exceptions, no
// std::function, no I/O, and only the <cmath> functions CUDA provides for device code.

#ifdef __CUDACC__
#define OX_HOST_DEVICE __host__ __device__
#else
#define OX_HOST_DEVICE
#endif

#include <cstdint>

namespace ox {

// Blocks of b that cover a (a >= 0, b > 0): launch grids, tiles, chunks.
OX_HOST_DEVICE constexpr int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

}  // namespace ox
